package consensus

import "math"

// The per-variable steps of the master, shared by the workers (for their
// interior variables) and the coordinator (for boundary variables), so that
// both modes do the same arithmetic on each variable.

// varScratch is one goroutine's scratch for a variable update.
type varScratch struct {
	nm, ls []float64
}

func newVarScratch(maxCard int) *varScratch {
	return &varScratch{nm: padded(maxCard), ls: padded(maxCard)}
}

// updateVariable is lines 7-8 of Alg. 2 for one variable whose replicas
// start at the offsets reps of nu and lambda (int32 on a worker, int on
// the coordinator's boundary): the consensus mu is the mean
// of the replicas (eq. 10 with sum_a lambda^a = 0), the multipliers move by
// eq. (11) (step = tau*eta; 0 defers the move, as DD-subgradient does) and
// are re-centred so that sum_a lambda^a = 0 holds up to rounding (the dual
// bound needs it). Only variables whose replicas moved are re-centred, so
// unchanged multipliers stay bitwise unchanged and slave caches stay valid.
// It returns the variable's parts of the primal and dual residuals and of
// the relaxed objective, the decoded state argmax mu (ties to the larger
// unary), and whether the multipliers and the marginal changed at all (the
// slaves' caches depend on it).
func updateVariable[R int | int32](mu, th, nu, lambda []float64, reps []R, d, step float64, sc *varScratch) (pres, dres, rel float64, best int, moved, muChanged bool) {
	nm, ls := sc.nm[:len(mu)], sc.ls[:len(mu)]
	clear(nm)
	for _, rr := range reps {
		r := int(rr)
		for k, v := range nu[r : r+len(nm)] {
			nm[k] += v
		}
	}
	bestV := math.Inf(-1)
	for k := range nm {
		v := nm[k] * d
		nm[k] = v
		diff := v - mu[k]
		muChanged = muChanged || diff != 0
		dres += float64(len(reps)) * diff * diff
		mu[k] = v
		rel += th[k] * v
		ls[k] = 0
		if v > bestV || (v == bestV && th[k] > th[best]) {
			best, bestV = k, v
		}
	}
	for _, rr := range reps {
		r := int(rr)
		nr := nu[r : r+len(nm)]
		lam := lambda[r : r+len(nm)]
		for k, v := range nm {
			if e := nr[k] - v; e != 0 {
				moved = true
				pres += e * e
				lam[k] -= step * e
			}
			ls[k] += lam[k]
		}
	}
	if moved {
		recentre(lambda, reps, ls, d)
	}
	return pres, dres, rel, best, moved, muChanged
}

// stepVariable is line 9 of Alg. 1 for one variable: lambda^a -= step *
// (nu^a - mu), re-centred like updateVariable. It reports whether the
// multipliers changed.
func stepVariable[R int | int32](mu, nu, lambda []float64, reps []R, d, step float64, sc *varScratch) (moved bool) {
	ls := sc.ls[:len(mu)]
	clear(ls)
	for _, rr := range reps {
		r := int(rr)
		nr := nu[r : r+len(mu)]
		lam := lambda[r : r+len(mu)]
		for k, v := range mu {
			if e := nr[k] - v; e != 0 {
				moved = true
				lam[k] -= step * e
			}
			ls[k] += lam[k]
		}
	}
	if moved {
		recentre(lambda, reps, ls, d)
	}
	return moved
}

// recentre subtracts the mean d*sum (ls holds the per-state sums) from every
// replica's multipliers.
func recentre[R int | int32](lambda []float64, reps []R, ls []float64, d float64) {
	for k := range ls {
		ls[k] *= d
	}
	for _, rr := range reps {
		r := int(rr)
		lam := lambda[r : r+len(ls)]
		for k, l := range ls {
			lam[k] -= l
		}
	}
}

// isolatedVariable handles a variable in no slave: its marginal is the
// indicator of its best unary state, which is also its term of the dual and
// of the relaxed objective.
func isolatedVariable(mu, th []float64) (rel float64, best int) {
	best = bestState(th)
	clear(mu)
	mu[best] = 1
	return th[best], best
}

// bestState returns the first state of largest unary.
func bestState(th []float64) int {
	best := 0
	for k := range th {
		if th[k] > th[best] {
			best = k
		}
	}
	return best
}
