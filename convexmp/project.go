package convexmp

import "math"

// projScratch holds the buffers of projectMargin.
type projScratch struct {
	z   []float64
	idx []int
}

// simplexTau returns tau with sum_j max(0, z_j - tau) = 1 over the entries
// listed in idx (the threshold of the Euclidean projection onto the
// simplex), by Michelot's algorithm: drop the entries at or below the
// running threshold until none is. It reorders idx.
func simplexTau(z []float64, idx []int) float64 {
	sum := 0.0
	for _, j := range idx {
		sum += z[j]
	}
	for {
		tau := (sum - 1) / float64(len(idx))
		k := 0
		for _, j := range idx {
			if z[j] > tau {
				idx[k] = j
				k++
			} else {
				sum -= z[j]
			}
		}
		if k == len(idx) || k == 0 {
			return tau
		}
		idx = idx[:k]
	}
}

// projectMargin overwrites y with its Euclidean projection onto
//
//	P = { b >= 0, sum_j b_j = 1, sum_j g_j b_j <= eps }
//
// (g >= 0 with a zero entry; entries with g = +Inf are fixed to 0), the
// eps-margin polytope of one max-function, and returns the multiplier nu of
// the margin constraint. KKT: b_j = max(0, y_j - tau - nu*g_j) with nu >= 0;
// nu = 0 when the simplex projection already satisfies the margin, else nu
// solves h(nu) = g.b(nu) = eps, h being continuous, decreasing and piecewise
// linear: safeguarded Newton steps (exact on each linear piece) inside a
// bracket, from nuHint (the multiplier of a nearby projection; 0 for none).
// When prev (the result of a nearby projection, or nil) is given, its
// support and nuHint are tried first: the KKT system restricted to them is
// 2x2 (1x1 when nuHint = 0), and a solution that satisfies every KKT
// condition is the projection.
func (ps *projScratch) projectMargin(y, g []float64, eps, nuHint float64, prev []float64) float64 {
	if prev != nil {
		if nu, ok := supportSolve(y, g, eps, nuHint > 0, prev); ok {
			return nu
		}
	}
	if cap(ps.z) < len(y) {
		ps.z = make([]float64, len(y))
		ps.idx = make([]int, len(y))
	}
	z := ps.z[:len(y)]
	// h returns h(nu), its slope on the current piece and tau(nu).
	h := func(nu float64) (hv, slope, tau float64) {
		idx := ps.idx[:0]
		for j, v := range y {
			if !math.IsInf(g[j], 1) {
				z[j] = v - nu*g[j]
				idx = append(idx, j)
			}
		}
		tau = simplexTau(z, idx)
		var n, g1, g2 float64
		for j := range y {
			if math.IsInf(g[j], 1) {
				continue
			}
			if b := z[j] - tau; b > 0 {
				hv += g[j] * b
				n++
				g1 += g[j]
				g2 += g[j] * g[j]
			}
		}
		return hv, g1*g1/n - g2, tau
	}
	apply := func(nu, tau float64) float64 {
		sum := 0.0
		for j, v := range y {
			if math.IsInf(g[j], 1) {
				y[j] = 0
			} else {
				y[j] = max(0, v-nu*g[j]-tau)
				sum += y[j]
			}
		}
		if sum > 0 && sum != 1 { // rounding of large nu*g
			for j := range y {
				y[j] /= sum
			}
		}
		return nu
	}
	tol := 1e-12*eps + 1e-300
	lo, hi, nu := 0.0, math.Inf(1), 0.0 // h(lo) > eps >= h(hi) once zeroKnown
	zeroKnown := false                  // h(0) > eps was checked
	var hv, slope, tau float64
	if nuHint > 0 {
		nu = nuHint
		hv, slope, tau = h(nu)
		if math.Abs(hv-eps) <= tol {
			return apply(nu, tau)
		}
		if hv > eps {
			lo, zeroKnown = nu, true
		} else {
			hi = nu
		}
	} else {
		hv, slope, tau = h(0)
		if hv <= eps {
			return apply(0, tau)
		}
		zeroKnown = true
	}
	for range 200 {
		next := math.NaN()
		if slope < 0 {
			next = nu + (eps-hv)/slope
		}
		if !zeroKnown && !(next > 0) {
			// The root may be at nu = 0 (margin not tight).
			if hv0, s0, t0 := h(0); hv0 <= eps {
				return apply(0, t0)
			} else {
				nu, hv, slope, tau, zeroKnown = 0, hv0, s0, t0, true
				continue
			}
		}
		if !(next > lo && next < hi) {
			if math.IsInf(hi, 1) {
				next = max(2*lo, 1)
			} else {
				next = lo + (hi-lo)/2
			}
		}
		nu = next
		hv, slope, tau = h(nu)
		if math.Abs(hv-eps) <= tol {
			break
		}
		if hv > eps {
			lo = nu
		} else {
			hi = nu
		}
		if !math.IsInf(hi, 1) && hi-lo <= 1e-15*hi {
			if hv > eps { // end on the feasible side
				nu = hi
				_, _, tau = h(nu)
			}
			break
		}
	}
	return apply(nu, tau)
}

// supportSolve solves the projection's KKT system on the support of prev,
// with the margin tight or not, and writes the projection into y when every
// KKT condition holds.
func supportSolve(y, g []float64, eps float64, tight bool, prev []float64) (float64, bool) {
	var n, sy, sg, sg2, sgy float64
	for j, v := range prev {
		if v > 0 && !math.IsInf(g[j], 1) {
			n++
			sy += y[j]
			sg += g[j]
			sg2 += g[j] * g[j]
			sgy += g[j] * y[j]
		}
	}
	if n == 0 {
		return 0, false
	}
	var tau, nu float64
	if tight {
		det := n*sg2 - sg*sg
		if !(det > 1e-12*n*sg2) {
			return 0, false
		}
		tau = ((sy-1)*sg2 - (sgy-eps)*sg) / det
		nu = (n*(sgy-eps) - sg*(sy-1)) / det
		if !(nu >= 0) {
			return 0, false
		}
	} else {
		tau = (sy - 1) / n
	}
	margin := 0.0
	for j, v := range prev {
		if math.IsInf(g[j], 1) {
			continue
		}
		b := y[j] - tau - nu*g[j]
		if (v > 0) != (b > 0) {
			return 0, false
		}
		if b > 0 {
			margin += g[j] * b
		}
	}
	if !tight && margin > eps {
		return 0, false
	}
	sum := 0.0
	for j := range y {
		if math.IsInf(g[j], 1) || !(prev[j] > 0) {
			y[j] = 0
			continue
		}
		y[j] = max(0, y[j]-tau-nu*g[j])
		sum += y[j]
	}
	if sum != 1 {
		for j := range y {
			y[j] /= sum
		}
	}
	return nu, true
}
