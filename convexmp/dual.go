package convexmp

import "math"

// The dual (the paper's eq. 3, with the sign convention of its Claim 1):
//
//	q(lam) = const + sum_i max_{x_i} thetaHat_i(x_i) + sum_a max_{x_a} thetaHat_a(x_a)
//	thetaHat_i(x_i) = theta_i(x_i) - sum_{a in N(i)} lam_{i->a}(x_i)
//	thetaHat_a(x_a) = theta_a(x_a) + sum_{i in N(a)} lam_{i->a}(x_i)
//
// For every lam, q(lam) bounds the LP optimum (hence the MAP score) from
// above. Its subgradients with respect to lam_{i->a}(x_i) are the
// marginalisation disagreements sum_{x_a \ x_i} b_a(x_a) - b_i(x_i) of
// beliefs supported on the maximisers (Claim 1).

// addMessages adds lam's block of factor f at every position to out (the
// factor's table layout): out(x_a) += sum_k lam_{k}(x_k), with scale s.
func addMessages(f *factor, lam []float64, scale float64, out []float64) {
	size := len(f.table)
	for k, c := range f.cards {
		st := f.strides[k]
		l := lam[f.lamOff[k] : f.lamOff[k]+c]
		for o := 0; o < size; o += st * c {
			for x := 0; x < c; x++ {
				v := scale * l[x]
				b := o + x*st
				seg := out[b : b+st]
				for j := range seg {
					seg[j] += v
				}
			}
		}
	}
}

// maxMarginal sets mm[x] = max over the entries of t whose position-k state
// is x.
func maxMarginal(f *factor, k int, t []float64, mm []float64) {
	st, c := f.strides[k], f.cards[k]
	mm = mm[:c]
	for x := range mm {
		mm[x] = math.Inf(-1)
	}
	for o := 0; o < len(t); o += st * c {
		for x := 0; x < c; x++ {
			b := o + x*st
			m := mm[x]
			for _, v := range t[b : b+st] {
				if v > m {
					m = v
				}
			}
			mm[x] = m
		}
	}
}

// sumMarginal adds to out[x] the sum of the entries of t whose position-k
// state is x.
func sumMarginal(f *factor, k int, t []float64, out []float64) {
	st, c := f.strides[k], f.cards[k]
	for o := 0; o < len(t); o += st * c {
		for x := 0; x < c; x++ {
			b := o + x*st
			sum := 0.0
			for _, v := range t[b : b+st] {
				sum += v
			}
			out[x] += sum
		}
	}
}

// factorRep writes thetaHat_a into out[:len(table)].
func (p *problem) factorRep(a int, lam []float64, out []float64) []float64 {
	f := &p.facs[a]
	out = out[:len(f.table)]
	copy(out, f.table)
	addMessages(f, lam, 1, out)
	return out
}

// unaryRep writes thetaHat_i into out[:card].
func (p *problem) unaryRep(i int, lam []float64, out []float64) []float64 {
	out = out[:p.cards[i]]
	copy(out, p.unary[p.uoff[i]:p.uoff[i+1]])
	for _, in := range p.inc[i] {
		l := lam[p.facs[in.a].lamOff[in.k]:]
		for s := range out {
			out[s] -= l[s]
		}
	}
	return out
}

func maxOf(t []float64) float64 {
	m := math.Inf(-1)
	for _, v := range t {
		if v > m {
			m = v
		}
	}
	return m
}

// dual returns q(lam), computed from scratch.
func (p *problem) dual(lam []float64, buf []float64) float64 {
	q := p.constant
	for i := range p.cards {
		q += maxOf(p.unaryRep(i, lam, buf))
	}
	for a := range p.facs {
		q += maxOf(p.factorRep(a, lam, buf))
	}
	return q
}

// cmpScratch holds the buffers of a block coordinate descent sweep.
type cmpScratch struct {
	buf, mm, sum, mu []float64
}

func newCMPScratch(p *problem) *cmpScratch {
	maxDeg := 0
	for _, in := range p.inc {
		maxDeg = max(maxDeg, len(in))
	}
	return &cmpScratch{
		buf: make([]float64, p.maxTable+p.maxCard),
		mm:  make([]float64, p.maxCard),
		sum: make([]float64, p.maxCard),
		mu:  make([]float64, maxDeg*p.maxCard),
	}
}

// sweep runs one convex max-product sweep: for every variable i in turn,
// the exact minimisation of q over the block {lam_{i->a}: a in N(i)}
// (Meltzer et al.; the paper's update rules after eq. 3):
//
//	mu_{a->i}(x_i)  = max_{x_a \ x_i} theta_a(x_a) + sum_{j in N(a)\i} lam_{j->a}(x_j)
//	lam_{i->a}(x_i) = (theta_i(x_i) + sum_{b in N(i)} mu_{b->i}(x_i)) / (1+|N(i)|) - mu_{a->i}(x_i)
//
// after which thetaHat_i and every max-marginal of thetaHat_a on x_i equal
// (theta_i + sum_b mu_{b->i}) / (1+|N(i)|). Each block minimisation is
// exact, so q never increases.
func (p *problem) sweep(lam []float64, sc *cmpScratch) {
	for i := range p.cards {
		inc := p.inc[i]
		if len(inc) == 0 {
			continue
		}
		c := p.cards[i]
		sum := sc.sum[:c]
		copy(sum, p.unary[p.uoff[i]:p.uoff[i+1]])
		for j, in := range inc {
			f := &p.facs[in.a]
			t := p.factorRep(in.a, lam, sc.buf)
			mu := sc.mu[j*c : (j+1)*c]
			maxMarginal(f, in.k, t, mu)
			l := lam[f.lamOff[in.k]:]
			for s := range mu {
				mu[s] -= l[s]
				sum[s] += mu[s]
			}
		}
		inv := 1 / float64(1+len(inc))
		for j, in := range inc {
			mu := sc.mu[j*c : (j+1)*c]
			l := lam[p.facs[in.a].lamOff[in.k]:]
			for s := range mu {
				l[s] = sum[s]*inv - mu[s]
			}
		}
	}
}
