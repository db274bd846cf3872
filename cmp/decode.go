package cmp

// decodeRep writes argmax thetaHat_i into x.
func (p *problem) decodeRep(lam []float64, buf []float64, x []int) {
	for i := range p.cards {
		x[i] = argmax(p.unaryRep(i, lam, buf))
	}
}

// icm improves x by iterated conditional modes: each variable in turn moves
// to its best state given the others, until no variable moves or after
// sweeps sweeps. Ties keep the current state, so the score never drops.
func (p *problem) icm(x []int, sweeps int, buf []float64) {
	for range sweeps {
		moved := false
		for i := range p.cards {
			c := p.cards[i]
			if c == 1 {
				continue
			}
			sc := buf[:c]
			copy(sc, p.unary[p.uoff[i]:p.uoff[i+1]])
			for _, in := range p.inc[i] {
				f := &p.facs[in.a]
				e := 0
				for k, v := range f.vars {
					if k != in.k {
						e += x[v] * f.strides[k]
					}
				}
				st := f.strides[in.k]
				for s := range sc {
					sc[s] += f.table[e+s*st]
				}
			}
			best := x[i]
			for s, v := range sc {
				if v > sc[best] {
					best = s
				}
			}
			if best != x[i] {
				x[i] = best
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}
