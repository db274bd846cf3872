// Package slavetest holds brute-force references for testing slaves: every
// configuration of a small scope, the exact MAP by enumeration, and a
// reference solution of the QUAD subproblem (AD3, Martins et al. ICML 2011,
// eq. 12 divided by eta) computed by an algorithm independent of the slaves'
// own (accelerated projected gradient on the distribution q over the feasible
// configurations, run to a certified duality gap).
//
// Conventions follow package slaves: a scope is given by its cardinalities,
// per-variable vectors are flattened in scope order (variable k occupies
// off[k]:off[k+1], off the prefix sums of cards), and a factor is given by its
// score function phi(y), which may be -Inf on infeasible configurations.
//
// The helpers here favour clarity over speed and may allocate freely; they are
// meant for scopes with at most a few hundred configurations.
package slavetest

import (
	"fmt"
	"math"
	"sort"
	"testing"
)

// Trials returns n, or short under go test -short: the number of random
// cases of a test.
func Trials(n, short int) int {
	if testing.Short() {
		return short
	}
	return n
}

// offsets returns the prefix sums of cards.
func offsets(cards []int) []int {
	off := make([]int, len(cards)+1)
	for k, c := range cards {
		off[k+1] = off[k] + c
	}
	return off
}

// EnumerateConfigs returns every configuration of a scope with the given
// cardinalities, in lexicographic order (the last variable changes fastest).
// An empty scope has one (empty) configuration; a scope with a cardinality
// of 0 has none.
func EnumerateConfigs(cards []int) [][]int {
	n := 1
	for _, c := range cards {
		if c <= 0 {
			return nil
		}
		n *= c
	}
	out := make([][]int, 0, n)
	y := make([]int, len(cards))
	for {
		out = append(out, append([]int(nil), y...))
		k := len(cards) - 1
		for ; k >= 0; k-- {
			y[k]++
			if y[k] < cards[k] {
				break
			}
			y[k] = 0
		}
		if k < 0 {
			return out
		}
	}
}

// Linear returns sum_k w[off_k + y_k], the value of the flattened
// per-variable scores w at configuration y.
func Linear(cards []int, w []float64, y []int) float64 {
	off := 0
	s := 0.0
	for k, c := range cards {
		s += w[off+y[k]]
		off += c
	}
	return s
}

// BruteMAP maximises score(y) + sum_k w[off_k + y_k] over all configurations
// by enumeration. It returns the maximum and the first maximiser in
// EnumerateConfigs order, or (-Inf, nil) when score is -Inf everywhere.
func BruteMAP(cards []int, score func(y []int) float64, w []float64) (best float64, y []int) {
	best = math.Inf(-1)
	for _, cfg := range EnumerateConfigs(cards) {
		s := score(cfg)
		if math.IsInf(s, -1) {
			continue
		}
		v := s + Linear(cards, w, cfg)
		if y == nil || v > best {
			best, y = v, cfg
		}
	}
	return best, y
}

// QUADObjective returns the QUAD objective of a candidate solution:
// 1/2 sum_k ||u_k - c_k||^2 - phiq/eta.
func QUADObjective(c []float64, eta float64, u []float64, phiq float64) float64 {
	s := 0.0
	for i := range c {
		d := u[i] - c[i]
		s += d * d
	}
	return 0.5*s - phiq/eta
}

// FWGap returns the Frank-Wolfe (duality) gap of a candidate QUAD solution
// (u, phiq):
//
//	max_y [score(y)/eta + sum_k (c_k - u_k)(y_k)] - [phiq/eta + sum_k (c_k - u_k) . u_k].
//
// If (u, phiq) is attainable (u = M q and phiq = phi . q for a distribution q
// on the feasible configurations) the gap is >= 0, and it is 0 exactly when
// q is optimal (first-order optimality of the projection over the convex
// hull); it then bounds the objective's suboptimality, and 1/2||u - u*||^2.
// A negative gap means phiq is larger than any q with marginals u allows.
func FWGap(cards []int, score func(y []int) float64, c []float64, eta float64, u []float64, phiq float64) float64 {
	d := make([]float64, len(c))
	base := phiq / eta
	for i := range c {
		d[i] = c[i] - u[i]
		base += d[i] * u[i]
	}
	best := math.Inf(-1)
	for _, y := range EnumerateConfigs(cards) {
		s := score(y)
		if math.IsInf(s, -1) {
			continue
		}
		if v := s/eta + Linear(cards, d, y); v > best {
			best = v
		}
	}
	return best - base
}

// ProjectSimplex returns the Euclidean projection of v onto the probability
// simplex {x >= 0, sum x = 1} (sort-based, Duchi et al. 2008).
func ProjectSimplex(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Sort(sort.Reverse(sort.Float64Slice(s)))
	cum, theta := 0.0, 0.0
	for j, x := range s {
		cum += x
		t := (cum - 1) / float64(j+1)
		if x-t > 0 {
			theta = t
		}
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Max(x-theta, 0)
	}
	return out
}

// QUADResult is the reference solution of a QUAD subproblem.
type QUADResult struct {
	// U holds the optimal marginals, flattened in scope order.
	U []float64
	// PhiQ is phi . q at the solution.
	PhiQ float64
	// Obj is the optimal objective 1/2||U - c||^2 - PhiQ/eta.
	Obj float64
	// Gap is the certified Frank-Wolfe (duality) gap of the returned
	// solution: Obj exceeds the true optimum by at most Gap, and U is within
	// sqrt(2 Gap) of the optimal marginals.
	Gap float64
	// Iters is the number of gradient iterations used.
	Iters int
	// Configs and Q are the feasible configurations and their weights.
	Configs [][]int
	Q       []float64
}

// RefQUAD returns the reference solution of the QUAD subproblem
//
//	minimise 1/2 sum_k ||u_k - c_k||^2 - (1/eta) sum_y q_y score(y)
//
// over distributions q on the feasible configurations (score > -Inf), with
// u_k the marginals of q. It returns u, phiq = sum_y q_y score(y) and the
// objective at the solution. With no feasible configuration it returns
// (nil, -Inf, +Inf). See RefQUADFull for the certificate.
func RefQUAD(cards []int, score func(y []int) float64, c []float64, eta float64) (u []float64, phiq float64, obj float64) {
	r := RefQUADFull(cards, score, c, eta)
	return r.U, r.PhiQ, r.Obj
}

// Tolerances of the reference solver.
const (
	// refGapTol is the duality gap RefQUADFull aims for, relative to the
	// data's scale: about rounding level.
	refGapTol = 1e-16
	// refStall stops the iterations when the best gap has not improved by
	// 10% for this many iterations (rounding noise).
	refStall = 2000
	// refMaxIters bounds the accelerated projected gradient iterations.
	refMaxIters = 200000
)

// RefQUADFull is RefQUAD returning the full result with its certificate.
//
// Algorithm: FISTA (accelerated projected gradient) on q over the probability
// simplex, with the exact sort-based simplex projection, a step 1/L where L
// bounds the Hessian M^T M on the simplex's tangent space (power iteration,
// then backtracking), and O'Donoghue-Candes gradient restarts. The objective
// is a strongly convex function of u = M q plus a linear term in q, so it
// grows quadratically away from the solution set and restarted FISTA
// converges linearly. It stops when the Frank-Wolfe gap, which equals the
// duality gap of the problem, is at rounding level (or stalls), and
// returns the iterate with the smallest gap seen. It panics if
// score(y) is +Inf or NaN.
func RefQUADFull(cards []int, score func(y []int) float64, c []float64, eta float64) QUADResult {
	p := newQUADProblem(cards, score, c, eta)
	if p.n == 0 {
		return QUADResult{PhiQ: math.Inf(-1), Obj: math.Inf(1)}
	}
	q, gap, iters := p.fista(p.lipschitz())
	best := QUADResult{Gap: gap, Iters: iters, Q: q, Configs: p.ys, U: make([]float64, p.dim)}
	p.mul(q, best.U)
	for j, w := range q {
		best.PhiQ += w * p.raw[j]
	}
	best.Obj = QUADObjective(c, eta, best.U, best.PhiQ)
	return best
}

// quadProblem is RefQUADFull's problem over the n allowed configurations
// of a scope: minimise over q in the simplex
// 1/2 ||M q - c||^2 - s.q, M the dim x n 0/1 matrix whose column j marks
// the states of configuration ys[j] (u = M q are q's marginals), s the
// scores over eta.
type quadProblem struct {
	ys     [][]int
	raw, s []float64 // score(ys[j]) and score(ys[j])/eta
	c      []float64
	n, dim int
	// idx[j][k] = off[k] + ys[j][k], the flattened positions of
	// configuration j: the nonzero rows of column j of M.
	idx [][]int
	// scale of the data (c and s), times the scope size plus one, for
	// relative tolerances.
	scale float64
	uu    []float64 // scratch of length dim
}

// newQUADProblem enumerates the configurations of the scope, leaves out
// those that score -Inf and panics on a score of +Inf or NaN or on a c of
// the wrong length.
func newQUADProblem(cards []int, score func(y []int) float64, c []float64, eta float64) *quadProblem {
	off := offsets(cards)
	if len(c) != off[len(cards)] {
		panic(fmt.Sprintf("slavetest: len(c) = %d, scope needs %d", len(c), off[len(cards)]))
	}
	p := &quadProblem{c: c, dim: len(c)}
	for _, y := range EnumerateConfigs(cards) {
		v := score(y)
		if math.IsNaN(v) || math.IsInf(v, 1) {
			panic(fmt.Sprintf("slavetest: score(%v) = %v", y, v))
		}
		if math.IsInf(v, -1) {
			continue
		}
		p.ys = append(p.ys, y)
		p.raw = append(p.raw, v)
		p.s = append(p.s, v/eta)
	}
	p.n = len(p.ys)
	p.idx = make([][]int, p.n)
	for j, y := range p.ys {
		p.idx[j] = make([]int, len(cards))
		for k := range cards {
			p.idx[j][k] = off[k] + y[k]
		}
	}
	p.scale = 1.0
	for _, v := range c {
		p.scale = math.Max(p.scale, math.Abs(v))
	}
	for _, v := range p.s {
		p.scale = math.Max(p.scale, math.Abs(v))
	}
	p.scale *= float64(len(cards) + 1)
	p.uu = make([]float64, p.dim)
	return p
}

// mul sets u = M q.
func (p *quadProblem) mul(q, u []float64) {
	for i := range u {
		u[i] = 0
	}
	for j, w := range q {
		if w != 0 {
			for _, i := range p.idx[j] {
				u[i] += w
			}
		}
	}
}

// mulT sets g = M^T v.
func (p *quadProblem) mulT(v, g []float64) {
	for j := range g {
		t := 0.0
		for _, i := range p.idx[j] {
			t += v[i]
		}
		g[j] = t
	}
}

// grad sets u = M q and g = M^T(u - c) - s, the objective's gradient at q.
func (p *quadProblem) grad(q, u, g []float64) {
	p.mul(q, u)
	for i := range u {
		p.uu[i] = u[i] - p.c[i]
	}
	p.mulT(p.uu, g)
	for j := range g {
		g[j] -= p.s[j]
	}
}

// frankWolfeGap returns sum_j q_j (g_j - min g), the Frank-Wolfe gap at q
// with gradient g (the problem's duality gap), accurate near 0.
func frankWolfeGap(q, g []float64) float64 {
	mn := math.Inf(1)
	for j := range q {
		mn = math.Min(mn, g[j])
	}
	gap := 0.0
	for j := range q {
		gap += q[j] * (g[j] - mn)
	}
	return gap
}

// centre subtracts the mean of x from its entries.
func centre(x []float64) {
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	for j := range x {
		x[j] -= m
	}
}

// lipschitz returns L, the largest eigenvalue of P M^T M P (P the centring
// projection onto the simplex's tangent space) by 100 steps of power
// iteration, with a 2% margin: FISTA's first step is 1/L.
func (p *quadProblem) lipschitz() float64 {
	d := make([]float64, p.n)
	hd := make([]float64, p.n)
	for j := range d {
		d[j] = math.Sin(float64(j)*1.7 + 0.3)
	}
	lip := 0.0
	for it := 0; it < 100; it++ {
		centre(d)
		nrm := 0.0
		for _, v := range d {
			nrm += v * v
		}
		nrm = math.Sqrt(nrm)
		if nrm == 0 {
			break
		}
		for j := range d {
			d[j] /= nrm
		}
		p.mul(d, p.uu)
		p.mulT(p.uu, hd)
		lip = 0
		for j := range d {
			lip += d[j] * hd[j]
		}
		copy(d, hd)
	}
	return math.Max(lip*1.02, 1e-12)
}

// fista runs restarted FISTA (Beck & Teboulle 2009, with O'Donoghue &
// Candes 2015 gradient restarts) from the uniform q, with the step 1/lip
// doubled by backtracking where needed, until the Frank-Wolfe gap is at
// rounding level (refGapTol), stalls (refStall) or refMaxIters pass. It
// returns the iterate with the smallest gap, that gap and the iterations.
func (p *quadProblem) fista(lip float64) (bestQ []float64, bestGap float64, iters int) {
	n := p.n
	x := make([]float64, n)
	xPrev := make([]float64, n)
	yv := make([]float64, n)
	gy := make([]float64, n)
	gx := make([]float64, n)
	ux := make([]float64, p.dim)
	uy := make([]float64, p.dim)
	for j := range x {
		x[j] = 1 / float64(n)
	}
	copy(yv, x)
	copy(xPrev, x)
	theta := 1.0
	bestGap = math.Inf(1)
	bestQ = make([]float64, n)
	tol := refGapTol * p.scale
	lastGain := 0
	step := p.newProjStep(n)
	for iters = 0; iters < refMaxIters; iters++ {
		p.grad(x, ux, gx)
		g := frankWolfeGap(x, gx)
		if g < bestGap {
			if g < bestGap*0.9 {
				lastGain = iters
			}
			bestGap = g
			copy(bestQ, x)
		}
		if g <= tol || iters-lastGain > refStall {
			break
		}
		p.grad(yv, uy, gy)
		var xn []float64
		xn, lip = step.take(yv, gy, lip)
		// Gradient restart (O'Donoghue & Candes 2015).
		restart := 0.0
		for j := range xn {
			restart += (yv[j] - xn[j]) * (xn[j] - x[j])
		}
		copy(xPrev, x)
		copy(x, xn)
		if restart > 0 {
			theta = 1
			copy(yv, x)
			continue
		}
		thetaN := (1 + math.Sqrt(1+4*theta*theta)) / 2
		beta := (theta - 1) / thetaN
		theta = thetaN
		for j := range yv {
			yv[j] = x[j] + beta*(x[j]-xPrev[j])
		}
		// Keep the extrapolated point usable: it may leave the simplex
		// slightly (negative entries); that is fine for the gradient step,
		// which projects.
	}
	return bestQ, bestGap, iters
}

// projStep is FISTA's projected gradient step with its scratch.
type projStep struct {
	p      *quadProblem
	tmp, d []float64
}

func (p *quadProblem) newProjStep(n int) projStep {
	return projStep{p: p, tmp: make([]float64, n), d: make([]float64, n)}
}

// take returns the projection onto the simplex of yv - gy/L, doubling L
// (from lip) until the step decreases the quadratic enough,
// ||M dd||^2 <= L ||dd||^2 for dd the step, and the L it used.
func (st projStep) take(yv, gy []float64, lip float64) ([]float64, float64) {
	d, uu := st.d, st.p.uu
	for {
		for j := range st.tmp {
			st.tmp[j] = yv[j] - gy[j]/lip
		}
		xn := ProjectSimplex(st.tmp)
		dn := 0.0
		for j := range xn {
			d[j] = xn[j] - yv[j]
			dn += d[j] * d[j]
		}
		st.p.mul(d, uu)
		mn := 0.0
		for _, v := range uu {
			mn += v * v
		}
		if mn <= lip*dn*(1+1e-12) || dn == 0 {
			return xn, lip
		}
		lip *= 2
	}
}

// CheckQUAD checks a slave's candidate QUAD solution (u, phiq) against the
// reference: each u_k lies in [0,1] and sums to 1 (within tol), u is within
// tol of the reference marginals, and the candidate's objective
// 1/2||u - c||^2 - phiq/eta is within objTol of the reference optimum (a value
// below it means the candidate is infeasible, one above it that it is
// suboptimal). It also checks the Frank-Wolfe gap of the candidate (see
// FWGap) lies in [-objTol, objTol]. It returns the reference result and the
// largest marginal error, for reporting.
func CheckQUAD(t testing.TB, cards []int, score func(y []int) float64, c []float64, eta float64, u []float64, phiq float64, tol, objTol float64) (ref QUADResult, uErr float64) {
	t.Helper()
	ref = RefQUADFull(cards, score, c, eta)
	off := offsets(cards)
	if len(u) != off[len(cards)] {
		t.Fatalf("len(u) = %d, want %d", len(u), off[len(cards)])
	}
	for k := range cards {
		sum := 0.0
		for i := off[k]; i < off[k+1]; i++ {
			if !(u[i] >= -tol && u[i] <= 1+tol) {
				t.Errorf("u[%d] = %v (variable %d) outside [0,1]", i, u[i], k)
			}
			sum += u[i]
		}
		if math.Abs(sum-1) > tol {
			t.Errorf("variable %d: marginals sum to %v", k, sum)
		}
	}
	for i := range u {
		e := math.Abs(u[i] - ref.U[i])
		if !(e <= tol) {
			t.Errorf("u[%d] = %.12g, reference %.12g (error %.3g, reference gap %.3g)", i, u[i], ref.U[i], e, ref.Gap)
		}
		if e > uErr || math.IsNaN(e) {
			uErr = e
		}
	}
	obj := QUADObjective(c, eta, u, phiq)
	if !(math.Abs(obj-ref.Obj) <= objTol+ref.Gap) {
		t.Errorf("objective %.15g, reference %.15g (diff %.3g); phiq %v reference %v", obj, ref.Obj, obj-ref.Obj, phiq, ref.PhiQ)
	}
	if g := FWGap(cards, score, c, eta, u, phiq); !(math.Abs(g) <= objTol) {
		t.Errorf("Frank-Wolfe gap of the candidate %.3g, want |gap| <= %.3g", g, objTol)
	}
	if t.Failed() {
		t.Logf("cards %v eta %v c %v\n  u   %v phiq %v\n  ref %v phiq %v", cards, eta, c, u, phiq, ref.U, ref.PhiQ)
	}
	return ref, uErr
}

// CheckKKT checks, without the reference solver, that a candidate QUAD
// solution (u, phiq) satisfies the first-order optimality condition of the
// projection: its Frank-Wolfe gap (FWGap) is at most tol, and not below -tol
// (which would mean phiq is unattainable with marginals u). It also checks
// each u_k is a distribution. It does not check u lies in the convex hull of
// the feasible configurations' marginals; see HullDistance.
func CheckKKT(t testing.TB, cards []int, score func(y []int) float64, c []float64, eta float64, u []float64, phiq float64, tol float64) float64 {
	t.Helper()
	off := offsets(cards)
	for k := range cards {
		sum := 0.0
		for i := off[k]; i < off[k+1]; i++ {
			if !(u[i] >= -tol && u[i] <= 1+tol) {
				t.Errorf("u[%d] = %v outside [0,1]", i, u[i])
			}
			sum += u[i]
		}
		if math.Abs(sum-1) > tol {
			t.Errorf("variable %d: marginals sum to %v", k, sum)
		}
	}
	g := FWGap(cards, score, c, eta, u, phiq)
	if !(math.Abs(g) <= tol) {
		t.Errorf("KKT: Frank-Wolfe gap %.3g, want |gap| <= %.3g (cards %v eta %v c %v u %v phiq %v)", g, tol, cards, eta, c, u, phiq)
	}
	return g
}

// HullDistance returns the Euclidean distance from u to the convex hull of
// the marginal vectors of the feasible configurations (score > -Inf), using
// the reference solver; +Inf when none is feasible.
func HullDistance(cards []int, score func(y []int) float64, u []float64) float64 {
	feasible := func(y []int) float64 {
		if math.IsInf(score(y), -1) {
			return math.Inf(-1)
		}
		return 0
	}
	p, _, _ := RefQUAD(cards, feasible, u, 1)
	if p == nil {
		return math.Inf(1)
	}
	s := 0.0
	for i := range u {
		d := p[i] - u[i]
		s += d * d
	}
	return math.Sqrt(s)
}
