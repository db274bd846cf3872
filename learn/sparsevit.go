package learn

import (
	"cmp"
	"math"
	"slices"
)

// sparseViterbi is an exact Viterbi for transition tables with few
// nonzero entries, which is what GDMM's iterates have (w's transitions are
// sum_links (C e_ybar - beta_link): nonzero only at the true bigrams and
// the links' active states). Per token, with the forward scores alpha
// sorted once (O(L log L)), the best predecessor of label b is the better
// of the nonzero entries of column b (alpha[a] + T[a,b]) and the best
// alpha[a] over the rows a where T[a,b] is zero: the first row of the
// sorted order not among column b's nonzeros. A token costs O(L log L +
// nnz(T)) instead of O(L^2).
type sparseViterbi struct {
	L        int
	colStart []int32 // column b's nonzeros: rows[colStart[b]:colStart[b+1]]
	rows     []int32
	vals     []float64
	mark     []bool
	order    []int32
	alpha    []float64
	next     []float64
	arg      []int32
	sc       SeqScratch
}

// sparseMaxFill is the largest fill nnz(T)/L^2 for which build accepts a
// table.
const sparseMaxFill = 1.0 / 16

// build indexes w's transitions by column; it reports false (and keeps
// nothing) when they are too dense for the sparse recursion to pay.
func (v *sparseViterbi) build(w *Weights) bool {
	L := w.Labels
	nnz := 0
	for _, t := range w.Trans {
		if t != 0 {
			nnz++
		}
	}
	if float64(nnz) > sparseMaxFill*float64(L)*float64(L) {
		return false
	}
	v.L = L
	v.colStart = make([]int32, L+1)
	for i, t := range w.Trans {
		if t != 0 {
			v.colStart[i%L+1]++
		}
	}
	for b := 0; b < L; b++ {
		v.colStart[b+1] += v.colStart[b]
	}
	v.rows, v.vals = make([]int32, nnz), make([]float64, nnz)
	fill := append([]int32(nil), v.colStart[:L]...)
	for i, t := range w.Trans {
		if t != 0 {
			b := i % L
			v.rows[fill[b]], v.vals[fill[b]] = int32(i/L), t
			fill[b]++
		}
	}
	v.mark, v.order = make([]bool, L), make([]int32, L)
	v.alpha, v.next = make([]float64, L), make([]float64, L)
	return true
}

// viterbi maximises sum_t theta[t*L+y_t] + sum_t T[y_t, y_t+1] over
// sequences of n labels (T the table given to build), writes the
// maximiser into y and returns the maximum.
func (v *sparseViterbi) viterbi(theta []float64, n int, y []int32) float64 {
	L := v.L
	if cap(v.arg) < n*L {
		v.arg = make([]int32, n*L)
	}
	arg := v.arg[:n*L]
	alpha, next, order := v.alpha, v.next, v.order
	copy(alpha, theta[:L])
	for t := 1; t < n; t++ {
		for a := range order {
			order[a] = int32(a)
		}
		slices.SortFunc(order, func(i, j int32) int { return cmp.Compare(alpha[j], alpha[i]) })
		ar := arg[t*L : t*L+L]
		th := theta[t*L : t*L+L]
		for b := 0; b < L; b++ {
			best, ba := math.Inf(-1), int32(-1)
			col := v.rows[v.colStart[b]:v.colStart[b+1]]
			vals := v.vals[v.colStart[b]:v.colStart[b+1]]
			for k, a := range col {
				v.mark[a] = true
				if s := alpha[a] + vals[k]; s > best {
					best, ba = s, a
				}
			}
			for _, a := range order {
				if !v.mark[a] {
					if alpha[a] > best {
						best, ba = alpha[a], a
					}
					break
				}
			}
			for _, a := range col {
				v.mark[a] = false
			}
			next[b], ar[b] = best+th[b], ba
		}
		alpha, next = next, alpha
	}
	best, bx := math.Inf(-1), 0
	for x, s := range alpha {
		if s > best {
			best, bx = s, x
		}
	}
	v.alpha, v.next = alpha, next
	y[n-1] = int32(bx)
	for t := n - 1; t > 0; t-- {
		y[t-1] = arg[t*L+int(y[t])]
	}
	return best
}

// hinge is SeqHinge through the sparse recursion (build(w) must have
// reported true).
func (v *sparseViterbi) hinge(w *Weights, d *SeqData, s int) float64 {
	n := d.Start[s+1] - d.Start[s]
	theta := SeqEmissions(w, d, s, true, &v.sc)
	best := v.viterbi(theta, n, v.sc.y[:n])
	return hingeOf(best, w, d, s, theta)
}
