package learn

import (
	"math"
	"testing"
)

// nextTuple advances y to the next tuple of {0, ..., base-1}^len(y), the
// first entry changing fastest, and reports false after the last one (y is
// then all zeros again).
func nextTuple(y []int, base int) bool {
	k := 0
	for k < len(y) && y[k] == base-1 {
		y[k] = 0
		k++
	}
	if k == len(y) {
		return false
	}
	y[k]++
	return true
}

// bracketed returns a Progress callback that fails the test when a report
// has its dual above its primal, its dual above the optimum's bracket's hi
// or its primal below lo, and appends each primal to *primals.
func bracketed(t *testing.T, seed int64, lo, hi float64, primals *[]float64) func(Result) {
	return func(r Result) {
		if r.Dual > r.Primal+1e-9 {
			t.Errorf("seed %d: dual %v above primal %v", seed, r.Dual, r.Primal)
		}
		if r.Dual > hi+1e-6 {
			t.Errorf("seed %d: dual %v above the optimum %v", seed, r.Dual, hi)
		}
		if r.Primal < lo-1e-6 {
			t.Errorf("seed %d: primal %v below the optimum %v", seed, r.Primal, lo)
		}
		*primals = append(*primals, r.Primal)
	}
}

// labelling is one labelling of an example for referenceEnumerated: psi
// its joint features subtracted from the truth's, loss its loss.
type labelling struct {
	psi  []float64
	loss float64
}

// referenceEnumerated is referenceBCFW over examples whose labellings are
// all listed (all[i] for example i): the oracle picks the first labelling
// with the largest loss - <w, psi>.
func referenceEnumerated(t *testing.T, all [][]labelling, dim int, C, tol float64, maxIter int) (lo, hi float64) {
	t.Helper()
	return referenceBCFW(t, len(all), dim, C, tol, maxIter, func(w []float64, i int) (float64, []float64, float64) {
		best, bi := math.Inf(-1), 0
		for k, l := range all[i] {
			if v := l.loss - dot(w, l.psi); v > best {
				best, bi = v, k
			}
		}
		return best, all[i][bi].psi, all[i][bi].loss
	})
}

// referenceBCFW solves a structural SVM dual independently of the
// package's solvers, for the tests' optima: n blocks over dim features,
// block i's oracle returning max_y loss_i(y) - <w, psi_i(y)> with the
// maximiser's psi and loss. It runs block-coordinate Frank-Wolfe with exact
// line search from beta_i = C on the truth (w = 0), at most maxIter passes,
// until the certified gap (primal from the oracle minus the dual) is at
// most tol, and returns the bracket [dual, primal].
func referenceBCFW(t *testing.T, n, dim int, C, tol float64, maxIter int, oracle func(w []float64, i int) (float64, []float64, float64)) (lo, hi float64) {
	t.Helper()
	w := make([]float64, dim)
	wi := make([][]float64, n) // block contributions
	li := make([]float64, n)
	for i := range wi {
		wi[i] = make([]float64, dim)
	}
	ws := make([]float64, dim)
	for it := 0; it < maxIter; it++ {
		primal, dual := 0.5*dot(w, w), -0.5*dot(w, w)
		for i := 0; i < n; i++ {
			v, _, _ := oracle(w, i)
			primal += C * v
			dual += li[i]
		}
		if primal-dual <= tol {
			return dual, primal
		}
		for i := 0; i < n; i++ {
			_, psi, loss := oracle(w, i)
			// Block FW step towards C e_y: ws = C psi, ls = C loss.
			for j := range ws {
				ws[j] = C*psi[j] - wi[i][j]
			}
			ls := C*loss - li[i]
			num, den := ls-dot(w, ws), dot(ws, ws)
			if den <= 0 || num <= 0 {
				continue
			}
			g := min(1, num/den)
			for j := range w {
				w[j] += g * ws[j]
				wi[i][j] += g * ws[j]
			}
			li[i] += g * ls
		}
	}
	t.Fatalf("reference solver did not converge")
	return math.NaN(), math.NaN()
}

// dot is the inner product of two vectors of one length.
func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
