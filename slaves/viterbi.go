package slaves

import "math"

// viterbi maximises phi(y) + w.y by the plain Viterbi (max-product)
// recursion in O(sum_k cards[k] cards[k+1]): with
//
//	alpha_0(x) = 0,  alpha_{k+1}(x') = max_x alpha_k(x) + theta_k(x) + tau_k(x, x')
//
// (Belanger et al. 2012, eq. 8, theta = emissions + w), the maximum is
// max_x alpha_{n-1}(x) + theta_{n-1}(x) and the maximiser is decoded
// backwards from the argmaxes. The loops run over contiguous table rows.
// Ties go to the smallest state. It returns -Inf (y all zeros) when no
// configuration is feasible.
func (c *Chain) viterbi(w []float64, y []int) float64 {
	n, off, cards := c.n, c.off, c.cards
	a, arg, emis := c.av, c.arg, c.emis
	for x := range a[:cards[0]] {
		a[x] = 0
	}
	for k := 0; k+1 < n; k++ {
		o0, o1 := off[k], off[k+1]
		L1 := cards[k+1]
		dst := a[o1 : o1+L1 : o1+L1]
		dArg := arg[o1 : o1+L1 : o1+L1]
		for j := range dst {
			dst[j] = math.Inf(-1)
			dArg[j] = 0
		}
		tab := c.trans[k]
		src := a[o0:o1:o1]
		e, wk := emis[o0:o1:o1], w[o0:o1:o1]
		for x, ax := range src {
			base := ax + e[x] + wk[x]
			if base < -math.MaxFloat64 {
				continue
			}
			row := tab[x*L1 : x*L1+L1 : x*L1+L1]
			x32 := int32(x)
			for j, t := range row {
				if v := base + t; v > dst[j] {
					dst[j] = v
					dArg[j] = x32
				}
			}
		}
	}
	last := off[n-1]
	best, bx := math.Inf(-1), 0
	for x := 0; x < cards[n-1]; x++ {
		if v := a[last+x] + emis[last+x] + w[last+x]; v > best {
			best, bx = v, x
		}
	}
	if best < -math.MaxFloat64 {
		for k := range y {
			y[k] = 0
		}
		return math.Inf(-1)
	}
	y[n-1] = bx
	for k := n - 1; k > 0; k-- {
		y[k-1] = int(arg[off[k]+y[k]])
	}
	return best
}
