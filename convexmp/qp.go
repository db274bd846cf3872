package convexmp

import (
	"math"
	"slices"

	"github.com/ddrun/ddrun/solver"
)

// The min-norm QP of the paper's Corollary 2. At lam, every max-function r
// of the dual (a variable i with thetaHat_i, a factor a with thetaHat_a)
// contributes the polytope of its eps-maximising beliefs
//
//	P_r = { b_r >= 0, sum b_r = 1, b_r . thetaHat_r >= max thetaHat_r - eps }
//	    = { b_r in the simplex, sum_j gap_j b_r(j) <= eps },  gap_j = max - thetaHat_r(j)
//
// and the approximate eps-subdifferential is the set of marginalisation
// disagreements d = A b of beliefs b in the product of the P_r (Claim 3):
//
//	(A b)_{i->a}(x_i) = sum_{x_a \ x_i} b_a(x_a) - b_i(x_i).
//
// The QP finds its element of least norm, min_{b in prod P_r} F(b) =
// ||A b||^2 / 2, by accelerated projected gradient (FISTA with
// function-value restarts; step 1/L with L = lambda_max(A^T A) from power
// iteration). The projection onto P_r is exact (projectMargin). The
// Frank-Wolfe gap, sum_r max_{v in P_r} grad_r . (b_r - v), bounds F(b) - F*
// and certifies the answer: when it is below ||d||^2/2, g.d >= ||d||^2/2 > 0
// for every g in the set, so -d is a direction of eps-descent (along it the
// dual drops by more than eps, Claim 2).

// qpState holds the QP at one (lam, eps).
type qpState struct {
	p      *problem
	eps    float64
	regVar []int // variable of each variable region (regions 0..len-1)
	// Region r's entries are at [off[r], off[r+1]) of val, gap, b.
	off []int
	val []float64 // thetaHat_r
	gap []float64 // max thetaHat_r - thetaHat_r (+Inf for -Inf entries)
	b   []float64 // beliefs
	// ord lists each region's finite-gap entries by increasing gap, at
	// [ordOff[r], ordOff[r+1]).
	ord    []int
	ordOff []int
	d      []float64 // A b, laid out like lam
	lip    float64   // L >= lambda_max(A^T A)
	warm   bool      // b holds a previous solution to start from
	nu     []float64 // per region: margin multiplier of the last projection
	hull   []int
	ps     projScratch
	// FISTA buffers.
	x, y, g []float64
	dx, dy  []float64
	grad    []float64
}

func newQP(p *problem) *qpState {
	q := &qpState{p: p}
	for i, inc := range p.inc {
		if len(inc) > 0 {
			q.regVar = append(q.regVar, i)
		}
	}
	nr := len(q.regVar) + len(p.facs)
	q.off = make([]int, nr+1)
	for r := 0; r < nr; r++ {
		q.off[r+1] = q.off[r] + q.regionSize(r)
	}
	n := q.off[nr]
	q.val = make([]float64, n)
	q.gap = make([]float64, n)
	q.b = make([]float64, n)
	q.ord = make([]int, 0, n)
	q.ordOff = make([]int, nr+1)
	q.nu = make([]float64, nr)
	q.d = make([]float64, p.lamSize)
	q.x = make([]float64, n)
	q.y = make([]float64, n)
	q.g = make([]float64, n)
	q.dx = make([]float64, p.lamSize)
	q.dy = make([]float64, p.lamSize)
	q.grad = make([]float64, p.maxTable+p.maxCard)
	q.lip = q.lipschitz()
	return q
}

func (q *qpState) numRegions() int { return len(q.off) - 1 }

func (q *qpState) regionSize(r int) int {
	if r < len(q.regVar) {
		return q.p.cards[q.regVar[r]]
	}
	return len(q.p.facs[r-len(q.regVar)].table)
}

// reset sets the QP up at lam and eps. The beliefs start from the previous
// solution projected onto the new polytopes, or at each region's maximising
// corner.
func (q *qpState) reset(lam []float64, eps float64) {
	q.eps = eps
	p := q.p
	q.ord = q.ord[:0]
	for r := 0; r < q.numRegions(); r++ {
		val := q.val[q.off[r]:q.off[r+1]]
		if r < len(q.regVar) {
			p.unaryRep(q.regVar[r], lam, val)
		} else {
			p.factorRep(r-len(q.regVar), lam, val)
		}
		gap := q.gap[q.off[r]:q.off[r+1]]
		m := maxOf(val)
		best := -1
		start := len(q.ord)
		for j, v := range val {
			if math.IsInf(v, -1) {
				gap[j] = math.Inf(1)
				continue
			}
			gap[j] = m - v
			if best < 0 && v == m {
				best = j
			}
			q.ord = append(q.ord, j)
		}
		slices.SortStableFunc(q.ord[start:], func(a, b int) int {
			switch {
			case gap[a] < gap[b]:
				return -1
			case gap[a] > gap[b]:
				return 1
			}
			return 0
		})
		q.ordOff[r+1] = len(q.ord)
		b := q.b[q.off[r]:q.off[r+1]]
		q.nu[r] = 0
		if q.warm {
			q.nu[r] = q.ps.projectMargin(b, gap, eps, 0, nil)
		} else {
			clear(b)
			b[best] = 1
		}
	}
	q.warm = true
	q.applyA(q.b, q.d)
}

// applyA writes A v into out (laid out like lam), for v laid out like b.
func (q *qpState) applyA(v, out []float64) {
	p := q.p
	clear(out)
	for a := range p.facs {
		f := &p.facs[a]
		r := len(q.regVar) + a
		vr := v[q.off[r]:q.off[r+1]]
		for k := range f.vars {
			sumMarginal(f, k, vr, out[f.lamOff[k]:])
		}
	}
	for r, i := range q.regVar {
		vr := v[q.off[r]:q.off[r+1]]
		for _, in := range p.inc[i] {
			o := out[p.facs[in.a].lamOff[in.k]:]
			for s, x := range vr {
				o[s] -= x
			}
		}
	}
}

// gradientOf writes region r's part of A^T w into g.
func (q *qpState) gradientOf(r int, w, g []float64) []float64 {
	p := q.p
	g = g[:q.regionSize(r)]
	clear(g)
	if r < len(q.regVar) {
		for _, in := range p.inc[q.regVar[r]] {
			o := w[p.facs[in.a].lamOff[in.k]:]
			for s := range g {
				g[s] -= o[s]
			}
		}
		return g
	}
	addMessages(&p.facs[r-len(q.regVar)], w, 1, g)
	return g
}

// applyAT writes A^T w into out (laid out like b), for w laid out like lam.
func (q *qpState) applyAT(w, out []float64) {
	for r := 0; r < q.numRegions(); r++ {
		q.gradientOf(r, w, out[q.off[r]:q.off[r+1]])
	}
}

// lipschitz bounds lambda_max(A^T A) by power iteration (with a margin),
// capped by the Schur bound max column sum * max row sum of |A|.
func (q *qpState) lipschitz() float64 {
	p := q.p
	colMax, rowMax := 1.0, 1.0
	for _, f := range p.facs {
		colMax = max(colMax, float64(len(f.vars)))
		for _, c := range f.cards {
			rowMax = max(rowMax, float64(len(f.table)/c+1))
		}
	}
	for _, inc := range p.inc {
		colMax = max(colMax, float64(len(inc)))
	}
	schur := colMax * rowMax
	n := len(q.b)
	if n == 0 {
		return 1
	}
	v := make([]float64, n)
	w := make([]float64, p.lamSize)
	for j := range v {
		v[j] = 1 + 0.5*math.Sin(float64(j)*0.7)
	}
	l := 0.0
	for range 60 {
		nv := math.Sqrt(dot(v, v))
		if nv == 0 {
			break
		}
		for j := range v {
			v[j] /= nv
		}
		q.applyA(v, w)
		l = dot(w, w)
		q.applyAT(w, v)
	}
	return max(min(1.1*l, schur), 1e-12)
}

// lmo returns min over the vertices v of P_r of g . v. P_r's vertices are
// the corners e_j with gap_j <= eps and, for gap_j <= eps < gap_k, the
// point of the edge [e_j, e_k] where the margin is tight; the minimum is
// read off the lower convex hull of the points (gap_j, g_j).
func (q *qpState) lmo(r int, g []float64) float64 {
	ord := q.ord[q.ordOff[r]:q.ordOff[r+1]]
	gap := q.gap[q.off[r]:q.off[r+1]]
	h := q.hull[:0]
	for _, j := range ord {
		x, y := gap[j], g[j]
		if n := len(h); n > 0 && gap[h[n-1]] == x {
			if g[h[n-1]] <= y {
				continue
			}
			h = h[:n-1]
		}
		for n := len(h); n >= 2; n = len(h) {
			o, a := h[n-2], h[n-1]
			if (gap[a]-gap[o])*(y-g[o])-(g[a]-g[o])*(x-gap[o]) > 0 {
				break
			}
			h = h[:n-1]
		}
		h = append(h, j)
	}
	q.hull = h
	lo := 0
	for t := 1; t < len(h); t++ {
		if g[h[t]] < g[h[lo]] {
			lo = t
		}
	}
	if gap[h[lo]] <= q.eps {
		return g[h[lo]]
	}
	// The hull decreases up to lo: the minimum over gap <= eps is where it
	// crosses gap = eps (h[0] has gap 0).
	a := 0
	for a+1 < lo && gap[h[a+1]] <= q.eps {
		a++
	}
	j, k := h[a], h[a+1]
	w := (gap[k] - q.eps) / (gap[k] - gap[j])
	return w*g[j] + (1-w)*g[k]
}

// exactGap returns the Frank-Wolfe gap sum_r (g_r . b_r - min_{v in P_r} g_r . v)
// at the current point, g = A^T d.
func (q *qpState) exactGap() float64 {
	gap := 0.0
	for r := 0; r < q.numRegions(); r++ {
		g := q.gradientOf(r, q.d, q.grad)
		gap += dot(g, q.b[q.off[r]:q.off[r+1]]) - q.lmo(r, g)
	}
	return max(gap, 0)
}

// qpResult is the outcome of solve.
type qpResult struct {
	norm2 float64 // ||d||^2
	fwGap float64 // Frank-Wolfe gap when last computed
	iters int
	zero  bool // ||d|| is negligible: 0 is (numerically) in the set
	cert  bool // fwGap < ||d||^2/2: -d is a certified eps-descent direction
}

// zeroTol is the root-mean-square disagreement (per entry of d) treated as
// zero: the beliefs are then consistent to that accuracy.
const zeroTol = 1e-9

// solve runs FISTA until ||d|| is negligible, the direction is certified,
// maxIter iterations, or stop (polled every few iterations; nil: never)
// says so. On return b and d = A b hold the best point.
func (q *qpState) solve(maxIter int, stop func() bool) qpResult {
	var res qpResult
	zero := zeroTol * zeroTol * float64(max(len(q.d), 1))
	x, y, g, dx, dy := q.x, q.y, q.g, q.dx, q.dy
	copy(x, q.b)
	copy(dx, q.d)
	fx := dot(dx, dx) / 2
	res.norm2 = 2 * fx
	if res.norm2 <= zero {
		res.zero = true
		return res
	}
	copy(y, x)
	copy(dy, dx)
	t := 1.0
	inv := 1 / q.lip
	for res.iters < maxIter {
		if res.iters%16 == 15 && stop != nil && stop() {
			break
		}
		res.iters++
		// b = P(y - grad F(y) / L); d = A b.
		q.applyAT(dy, g)
		for j := range q.b {
			q.b[j] = y[j] - inv*g[j]
		}
		for r := 0; r < q.numRegions(); r++ {
			lo, hi := q.off[r], q.off[r+1]
			q.nu[r] = q.ps.projectMargin(q.b[lo:hi], q.gap[lo:hi], q.eps, q.nu[r], x[lo:hi])
		}
		q.applyA(q.b, q.d)
		fn := dot(q.d, q.d) / 2
		if fn > fx {
			// Restart: drop the momentum, take a plain step from x.
			t = 1
			copy(y, x)
			copy(dy, dx)
			copy(q.b, x)
			copy(q.d, dx)
			continue
		}
		tn := (1 + math.Sqrt(1+4*t*t)) / 2
		mom := (t - 1) / tn
		for j := range y {
			y[j] = q.b[j] + mom*(q.b[j]-x[j])
		}
		for j := range dy {
			dy[j] = q.d[j] + mom*(q.d[j]-dx[j])
		}
		copy(x, q.b)
		copy(dx, q.d)
		fx, t = fn, tn
		res.norm2 = 2 * fn
		if res.norm2 <= zero {
			res.zero = true
			return res
		}
		if res.iters%5 == 0 {
			res.fwGap = q.exactGap()
			if res.fwGap < res.norm2/2 {
				res.cert = true
				return res
			}
		}
	}
	return res
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// lineSearch minimises phi(t) = sum_r max_j (val_rj - t*grad_rj) over
// t >= 0, grad = A^T d: the dual along lam - t*d, up to the constant and the
// variables in no factor. phi is convex and piecewise linear; its minimiser
// is bracketed by doubling from eps/||d||^2 and found by bisection on the
// sign of the right derivative. It returns 0 when phi does not decrease.
func (q *qpState) lineSearch(norm2 float64) float64 {
	sl := q.g
	q.applyAT(q.d, sl)
	deriv := func(t float64) float64 {
		d := 0.0
		for r := 0; r < q.numRegions(); r++ {
			val, s := q.val[q.off[r]:q.off[r+1]], sl[q.off[r]:q.off[r+1]]
			best, bs := math.Inf(-1), math.Inf(-1)
			for j, v := range val {
				x := v - t*s[j]
				if x > best || (x == best && -s[j] > bs) {
					best, bs = x, -s[j]
				}
			}
			d += bs
		}
		return d
	}
	phi := func(t float64) float64 {
		f := 0.0
		for r := 0; r < q.numRegions(); r++ {
			val, s := q.val[q.off[r]:q.off[r+1]], sl[q.off[r]:q.off[r+1]]
			best := math.Inf(-1)
			for j, v := range val {
				best = max(best, v-t*s[j])
			}
			f += best
		}
		return f
	}
	t0 := q.eps / norm2
	if !(t0 > 0) || math.IsInf(t0, 0) {
		t0 = 1
	}
	var lo, hi float64
	if deriv(t0) < 0 {
		lo, hi = t0, 2*t0
		for i := 0; deriv(hi) < 0; i++ {
			if i > 200 {
				return hi // unbounded below: impossible for a bounded dual
			}
			lo, hi = hi, 2*hi
		}
	} else {
		lo, hi = t0/2, t0
		for deriv(lo) >= 0 {
			if lo < t0*1e-30 {
				return 0
			}
			lo, hi = lo/2, lo
		}
	}
	for range 100 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if deriv(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	if phi(hi) < phi(lo) {
		return hi
	}
	return lo
}

// beliefValue returns the LP objective of the current beliefs (with
// variables in no factor at their best state): const + sum_i b_i . theta_i +
// sum_a b_a . theta_a.
func (q *qpState) beliefValue() float64 {
	p := q.p
	v := p.constant
	inRegion := make([]bool, p.numVars())
	for r, i := range q.regVar {
		inRegion[i] = true
		b := q.b[q.off[r]:q.off[r+1]]
		for s, u := range p.unary[p.uoff[i]:p.uoff[i+1]] {
			v += b[s] * u
		}
	}
	for i := range p.cards {
		if !inRegion[i] {
			v += maxOf(p.unary[p.uoff[i]:p.uoff[i+1]])
		}
	}
	for a := range p.facs {
		r := len(q.regVar) + a
		b := q.b[q.off[r]:q.off[r+1]]
		for e, t := range p.facs[a].table {
			if b[e] != 0 { // -Inf entries have b = 0
				v += b[e] * t
			}
		}
	}
	return v
}

// residual returns max |d|.
func (q *qpState) residual() float64 {
	m := 0.0
	for _, v := range q.d {
		m = max(m, math.Abs(v))
	}
	return m
}

// decode writes argmax b_i into x (the best unary for variables in no
// factor).
func (q *qpState) decode(x []int) {
	p := q.p
	for i := range p.cards {
		x[i] = solver.Argmax(p.unary[p.uoff[i]:p.uoff[i+1]])
	}
	for r, i := range q.regVar {
		x[i] = solver.Argmax(q.b[q.off[r]:q.off[r+1]])
	}
}
