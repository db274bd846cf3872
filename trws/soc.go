package trws

// This file is TRW-S with the SOC constraints (Kumar and Torr, ICML 2008,
// Sect. 4; the constraints are the SOCP-Q clique constraints of Kumar,
// Kolmogorov and Torr, "An analysis of convex relaxations for MAP
// estimation", NIPS 2007 / JMLR 10, 2009), on every triangle of the graph
// and every label: the relaxation LP-S + SOC. docs/soc.md derives it; in
// short:
//
// Constraint. With P_l = mu_a(l) + mu_b(l) + mu_c(l) and Q_l = mu_ab(l,l) +
// mu_bc(l,l) + mu_ac(l,l) the clique constraint on triangle {a, b, c} and
// label l, (sum x_a(l))^2 <= 3 + 2 sum X_ab(l,l) in the paper's variables,
// reads Q_l >= f(P_l) = (P_l^2 - P_l)/2. Its conic dual is the family of
// its tangent planes: for a slope s,
//
//	s P_l - Q_l <= r(s) = (s + 1/2)^2 / 2,
//
// the tangent of f at P = s + 1/2, valid for every integral point (there it
// is (P - s - 1/2)^2/2 >= 0). A nonnegative combination of tangents of one
// (triangle, label) with total weight alpha and sum of weights times slopes
// beta is dominated by the single tangent of slope beta/alpha with weight
// alpha (r is convex: Jensen), which is how the dual holds it: one pair
// (u = alpha >= 0, s) per triangle and label, u r(s) being the perspective
// of f's conjugate, the SOC's dual cone.
//
// Dual. Exactly as TRW-S(LP-C) holds its cycle inequalities (cycles.go):
// effective edge tables theta + sum_t (R_t - A_t^T u_t), R_t a
// reparameterisation along t's edges and u_t the tangents' weights, and the
// constant K = sum_t sum_l u_tl r(s_tl) added to the bound. For a feasible
// labelling x, R_t sums to zero and u (A y(x)) <= u r, so the TRW-S bound on
// the effective tables plus K bounds the MAP score from above: at every
// iteration, whatever the multipliers, and it is the exact value of the
// dual at the current messages.
//
// Step. A triangle's block (its R, u and s) is minimised exactly on the
// chains' max-marginals: with m the max-marginals with t's old tangents
// taken out, the step solves max sum m.y over t's local polytope cut by
// Q_l >= f(P_l) by cutting planes (smalllp; tangents at the current P_l
// until none is violated by more than socTol), and moves the dual of the
// last LP into the tables. When two of the triangle's edges are
// consecutive in one chain (on complete graphs every chain through a node
// closes a triangle), their chain's maximum is not separable over the two
// edges; the step then works on the chain's max-marginal over the three
// variables (a table of L^3 entries) and the third edge's, and splits its
// reparameterisation between the two edges. So, unlike cycles.go, no
// triangle is skipped. The step is kept only if it lowers the bound.
//
// Schedule: the SOC steps are part of the cycle sweep (lpc.sweep), after
// the cycles' steps, on the same schedule (CycleStart, SweepEvery).
//
// Convergence: the steps never raise the bound and the reported bound is
// the lowest seen, so it converges; but, like TRW-S at weak tree agreement,
// the triangle steps can stop above the LP-S + SOC optimum, where every
// triangle's step agrees with the chains (0.1% to 4% above on K5 and small
// triangulated grids). The global step (socglobal.go) moves all the
// tangents at once there and reaches the optimum on models small enough
// for its LP (docs/soc.md, TestSOCOracle).

import (
	"math"

	"github.com/ddrun/ddrun/internal/smalllp"
)

// SOCStats describes the SOC constraints of a run (Options.SOC).
type SOCStats struct {
	Triangles int // triangles with the constraints (variables of 2 to 8 states)
	Joint     int // of which two edges lie in one chain (the step's joint table)
	Steps     int // steps that lowered the bound
	Agreed    int // steps skipped without an LP: no step can lower the bound
	Failed    int // LPs that failed numerically (the step is skipped)
	LPs       int // cutting-plane LPs solved
	Active    int // (triangle, label) tangents with a positive weight at the end
	Globals   int // global steps (socglobal.go) run
}

// socTol is the largest violation of a clique constraint a step's cutting
// planes leave (in the marginals' units).
const socTol = 1e-9

// maxSOCRounds bounds a step's cutting-plane LPs; the tangents kept carry
// over to the next step of the triangle.
const maxSOCRounds = 30

// socCut is a tangent s P_l - Q_l <= r with weight u.
type socCut struct {
	l       int8
	s, r, u float64
}

// coef is the cut's coefficient on entry (i, j) of the triangle's edge k
// (rows the edge's first variable, k): s [i = l] - [i = l, j = l]; each
// variable's mu(l) is counted on the edge it starts.
func (q *socCut) coef(i, j int) float64 {
	if i != int(q.l) {
		return 0
	}
	if j == int(q.l) {
		return q.s - 1
	}
	return q.s
}

// socTri is one triangle: edge k joins vars[k] and vars[k+1 mod 3] and is
// graph edge edges[k], stored with vars[k] as its u unless flip[k]. When
// joint, edges 0 and 1 are consecutive in one chain (through vars[1]).
type socTri struct {
	vars  [3]int32
	edges [3]int32
	flip  [3]bool
	joint bool
	held  []socCut // at most one per label, u > 0
	// hint holds the tangents the last LP used (weight 0: not part of
	// the dual), to start the next step's cutting planes near where the
	// last ones ended.
	hint []socCut
}

// socState is the SOC part of the dual; it uses the chains of its lpc.
type socState struct {
	c     *lpc
	tris  []socTri
	stats SOCStats
	// global is the global tangent step (socglobal.go), nil when the
	// model is too large for it.
	global *socGlobal

	// Scratch: per edge max-marginals (cycle orientation) and changes,
	// the joint table, the LP.
	mm, dl [3][]float64
	jt     []float64
	work   []socCut
	colP   []int8    // LP column -> part
	colS   [][3]int8 // LP column -> states of the three variables
	colV   []float64 // LP column -> m value
	y      [3][]float64
	lp     smalllp.LP
	sol    smalllp.Solution
	solver smalllp.Solver
}

// newSOC takes the triangles of c's cycles (including those cycles.go
// skips for sharing a chain).
func newSOC(c *lpc) *socState {
	s := &socState{c: c}
	for cy := range c.skip {
		lo := int(c.coff[cy])
		if int(c.coff[cy+1])-lo != 3 {
			continue
		}
		var t socTri
		r := 0
		if c.skip[cy] {
			ch := func(k int) int32 { return c.chainOf[c.cedge[lo+k]] }
			switch {
			case ch(0) == ch(1):
				r = 0
			case ch(1) == ch(2):
				r = 1
			default:
				r = 2
			}
			t.joint = true
			s.stats.Joint++
		}
		for k := range 3 {
			t.vars[k] = c.cvar[lo+(k+r)%3]
			t.edges[k] = c.cedge[lo+(k+r)%3]
			t.flip[k] = c.cflip[lo+(k+r)%3]
		}
		s.tris = append(s.tris, t)
	}
	s.stats.Triangles = len(s.tris)
	const k2 = maxCycleCard * maxCycleCard
	for k := range 3 {
		s.mm[k], s.dl[k], s.y[k] = make([]float64, k2), make([]float64, k2), make([]float64, k2)
	}
	s.jt = make([]float64, k2*maxCycleCard)
	s.global = newGlobal(s)
	return s
}

// sweep runs one step on every triangle (after lpc.sweep prepared the
// chains) and returns how much the steps lowered the bound.
func (s *socState) sweep() float64 {
	dec := 0.0
	for t := range s.tris {
		dec += s.step(&s.tris[t])
	}
	return dec
}

// active counts the tangents held at the end.
func (s *socState) active() int {
	n := 0
	for t := range s.tris {
		n += len(s.tris[t].held)
	}
	return n
}

// edgeMM writes the max-marginal of the triangle's edge k in cycle
// orientation into s.mm[k].
func (s *socState) edgeMM(t *socTri, k int) {
	g := s.c.g
	a, b := g.card[t.vars[k]], g.card[t.vars[(k+1)%3]]
	mm := s.mm[k][:a*b]
	if !t.flip[k] {
		s.c.maxMarginal(t.edges[k], mm)
		return
	}
	tmp := s.dl[k][:a*b]
	s.c.maxMarginal(t.edges[k], tmp)
	for i := 0; i < a; i++ {
		for j := 0; j < b; j++ {
			mm[i*b+j] = tmp[j*a+i]
		}
	}
}

// joint writes the max-marginal of the chain through edges 0 and 1 over
// (vars[0], vars[1], vars[2]) into s.jt (last variable fastest).
func (s *socState) joint(t *socTri) {
	c, g := s.c, s.c.g
	k := c.chainOf[t.edges[0]]
	p := min(c.edgeAt[t.edges[0]], c.edgeAt[t.edges[1]])
	e1, e2 := c.chainEdge[p], c.chainEdge[p+1]
	c.forwardTo(k, p)
	c.backwardTo(k, p+2)
	f := c.fw[c.foff[p]:c.foff[p+1]]
	b := c.bw[c.foff[p+2]:c.foff[p+3]]
	mid := s.dl[2][:c.foff[p+2]-c.foff[p+1]]
	c.unary(p+1, mid)
	direct := c.chainNode[p] == t.vars[0]
	c0, c1, c2 := g.card[t.vars[0]], g.card[t.vars[1]], g.card[t.vars[2]]
	for i := 0; i < c0; i++ {
		for j := 0; j < c1; j++ {
			for l := 0; l < c2; l++ {
				ia, ib := i, l // states of the chain's first and last node
				if !direct {
					ia, ib = l, i
				}
				v := negInf
				if f[ia] != negInf && mid[j] != negInf && b[ib] != negInf {
					v = f[ia] + c.pair(e1, ia, j) + mid[j] + c.pair(e2, j, ib) + b[ib]
				}
				s.jt[(i*c1+j)*c2+l] = v
			}
		}
	}
}

// cutSum is sum_q u_q a_q(k, i, j) over cuts.
func cutSum(cuts []socCut, i, j int) float64 {
	v := 0.0
	for q := range cuts {
		if cuts[q].u > 0 {
			v += cuts[q].u * cuts[q].coef(i, j)
		}
	}
	return v
}

// step runs the SOC step of triangle t and returns how much it lowered the
// bound.
func (s *socState) step(t *socTri) float64 {
	g := s.c.g
	card := func(k int) int { return g.card[t.vars[k%3]] }
	oldV := 0.0
	for _, q := range t.held {
		oldV += q.u * q.r
	}
	first := 0 // the first edge with a part of its own
	if t.joint {
		first = 2 // edge 2 alone; edges 0 and 1 through the joint table
		s.joint(t)
		best := negInf
		for _, v := range s.jt[:card(0)*card(1)*card(2)] {
			best = max(best, v)
		}
		if best == negInf {
			return 0
		}
		oldV += best
	}
	for k := first; k < 3; k++ {
		s.edgeMM(t, k)
		best := negInf
		for _, v := range s.mm[k][:card(k)*card(k+1)] {
			best = max(best, v)
		}
		if best == negInf {
			return 0 // an infeasible chain: the bound is -Inf already
		}
		oldV += best
	}
	if s.agrees(t) {
		s.stats.Agreed++
		return 0
	}
	phi, ok := s.solve(t)
	if !ok {
		s.stats.Failed++
		return 0
	}
	t.hint = t.hint[:0]
	for _, q := range s.work {
		if q.u > 0 && len(t.hint) < 4*maxCycleCard {
			q.u = 0
			t.hint = append(t.hint, q)
		}
	}
	// Merge the weighted tangents per label into one (see the file
	// comment): the same A^T u, a constant no larger.
	var merged []socCut
	for _, q := range s.work {
		if q.u <= 0 {
			continue
		}
		found := false
		for i := range merged {
			if merged[i].l == q.l {
				// Hold the sum of u s in s until normalised below.
				merged[i].s += q.u * q.s
				merged[i].u += q.u
				found = true
			}
		}
		if !found {
			merged = append(merged, socCut{l: q.l, s: q.u * q.s, u: q.u})
		}
	}
	newK := 0.0
	for i := range merged {
		q := &merged[i]
		q.s /= q.u
		q.r = (q.s + 0.5) * (q.s + 0.5) / 2
		newK += q.u * q.r
	}
	// Changes per edge: D_k (old cuts minus new) and the consistency
	// duals at the junctions (vars[1] is none when joint).
	for k := range 3 {
		a, b := card(k), card(k+1)
		for i := 0; i < a; i++ {
			for j := 0; j < b; j++ {
				d := cutSum(t.held, i, j) - cutSum(merged, i, j) + phi(k, i) - phi((k+1)%3, j)
				s.dl[k][i*b+j] = d
			}
		}
	}
	newV := newK
	if t.joint {
		c1, c2 := card(1), card(2)
		best := negInf
		for i := 0; i < card(0); i++ {
			for j := 0; j < c1; j++ {
				for l := 0; l < c2; l++ {
					if v := s.jt[(i*c1+j)*c2+l]; v != negInf {
						best = max(best, v+s.dl[0][i*c1+j]+s.dl[1][j*c2+l])
					}
				}
			}
		}
		newV += best
	}
	for k := first; k < 3; k++ {
		best := negInf
		for x, v := range s.mm[k][:card(k)*card(k+1)] {
			if v != negInf {
				best = max(best, v+s.dl[k][x])
			}
		}
		newV += best
	}
	if !(newV < oldV-1e-12*(1+math.Abs(oldV))) {
		return 0
	}
	s.stats.Steps++
	oldK := 0.0
	for _, q := range t.held {
		oldK += q.u * q.r
	}
	g.shift += newK - oldK
	t.held = append(t.held[:0], merged...)
	if t.joint {
		s.liveJoint(t)
	}
	for k := range 3 {
		e := t.edges[k]
		a, b := card(k), card(k+1)
		tab := g.data[g.toff[e]:]
		for i := 0; i < a; i++ {
			for j := 0; j < b; j++ {
				x := i*b + j
				if (k < first && s.y[k][x] == 0) || (k >= first && s.mm[k][x] == negInf) {
					continue // a dead entry: leave it
				}
				if t.flip[k] {
					tab[j*a+i] += s.dl[k][x]
				} else {
					tab[x] += s.dl[k][x]
				}
			}
		}
		s.c.touched(e)
	}
	return oldV - newV
}

// liveJoint marks in s.y[0] and s.y[1] (1: live) the entries of edges 0
// and 1 on which the joint table is finite somewhere.
func (s *socState) liveJoint(t *socTri) {
	g := s.c.g
	c0, c1, c2 := g.card[t.vars[0]], g.card[t.vars[1]], g.card[t.vars[2]]
	clear(s.y[0][:c0*c1])
	clear(s.y[1][:c1*c2])
	for i := 0; i < c0; i++ {
		for j := 0; j < c1; j++ {
			for l := 0; l < c2; l++ {
				if s.jt[(i*c1+j)*c2+l] != negInf {
					s.y[0][i*c1+j], s.y[1][j*c2+l] = 1, 1
				}
			}
		}
	}
}

// agrees reports whether some labelling of the triangle attains the
// maximum of every part (the joint table or the edges' max-marginals) and
// makes every held tangent tight: it is then a point of the step's
// feasible set worth the old value, so no step can lower the bound.
func (s *socState) agrees(t *socTri) bool {
	g := s.c.g
	c0, c1, c2 := g.card[t.vars[0]], g.card[t.vars[1]], g.card[t.vars[2]]
	top := func(v []float64) float64 {
		b := negInf
		for _, x := range v {
			b = max(b, x)
		}
		return b - 1e-12*(1+math.Abs(b))
	}
	var tj float64
	var te [3]float64
	if t.joint {
		tj = top(s.jt[:c0*c1*c2])
		te[2] = top(s.mm[2][:c2*c0])
	} else {
		te[0], te[1], te[2] = top(s.mm[0][:c0*c1]), top(s.mm[1][:c1*c2]), top(s.mm[2][:c2*c0])
	}
	for i := 0; i < c0; i++ {
		for j := 0; j < c1; j++ {
			for l := 0; l < c2; l++ {
				if t.joint {
					if s.jt[(i*c1+j)*c2+l] < tj || s.mm[2][l*c0+i] < te[2] {
						continue
					}
				} else if s.mm[0][i*c1+j] < te[0] || s.mm[1][j*c2+l] < te[1] || s.mm[2][l*c0+i] < te[2] {
					continue
				}
				ok := true
				for _, q := range t.held {
					lhs := q.coef(i, j) + q.coef(j, l) + q.coef(l, i)
					ok = ok && math.Abs(lhs-q.r) <= 1e-12
				}
				if ok {
					return true
				}
			}
		}
	}
	return false
}

// solve solves the step's problem, max sum_parts m.y over the triangle's
// local polytope (the joint table replacing edges 0 and 1 when joint) cut
// by tangents of Q_l >= f(P_l), adding the tangent at the current P_l of
// every constraint violated by more than socTol. It leaves the tangents in
// s.work with their duals as weights and returns the consistency duals:
// phi(k, i) of variable k's state i (0 for a last state and, when joint,
// for variable 1).
func (s *socState) solve(t *socTri) (phi func(k, i int) float64, ok bool) {
	g := s.c.g
	card := func(k int) int { return g.card[t.vars[k%3]] }
	const k2 = maxCycleCard * maxCycleCard
	labels := min(card(0), card(1), card(2))
	s.work = append(s.work[:0], t.held...)
	s.work = append(s.work, t.hint...)
	// Parts: joint: part 0 the joint table over (0, 1, 2), part 1 edge 2;
	// else part k edge k. m = max-marginal + held cuts (taken out).
	s.colP, s.colS, s.colV = s.colP[:0], s.colS[:0], s.colV[:0]
	if t.joint {
		c1, c2 := card(1), card(2)
		for i := 0; i < card(0); i++ {
			for j := 0; j < c1; j++ {
				for l := 0; l < c2; l++ {
					if v := s.jt[(i*c1+j)*c2+l]; v != negInf {
						v += cutSum(t.held, i, j) + cutSum(t.held, j, l)
						s.colP, s.colS, s.colV = append(s.colP, 0), append(s.colS, [3]int8{int8(i), int8(j), int8(l)}), append(s.colV, v)
					}
				}
			}
		}
	}
	first := 0
	if t.joint {
		first = 2
	}
	for k := first; k < 3; k++ {
		a, b := card(k), card(k+1)
		for x, v := range s.mm[k][:a*b] {
			if v == negInf {
				continue
			}
			i, j := x/b, x%b
			var st [3]int8
			st[k], st[(k+1)%3] = int8(i), int8(j)
			p := int8(k)
			if t.joint {
				p = 1
			}
			s.colP, s.colS, s.colV = append(s.colP, p), append(s.colS, st), append(s.colV, v+cutSum(t.held, i, j))
		}
	}
	nparts := 3
	if t.joint {
		nparts = 2
	}
	// first and last variable of each part.
	fv := func(p int) int {
		if t.joint {
			return []int{0, 2}[p]
		}
		return p
	}
	lv := func(p int) int {
		if t.joint {
			return []int{2, 0}[p]
		}
		return (p + 1) % 3
	}
	junction := func(v int) bool { return !t.joint || v != 1 }
	// Rows: normalisations, then per junction variable its states but the
	// last, then the cuts.
	var rowOf [3]int
	nfix := nparts
	for v := range 3 {
		rowOf[v] = -1
		if junction(v) {
			rowOf[v] = nfix
			nfix += card(v) - 1
		}
	}
	consRow := func(v, st int) int {
		if rowOf[v] < 0 || st == card(v)-1 {
			return -1
		}
		return rowOf[v] + st
	}
	// coefficient of column col on cut q.
	cutCoef := func(col int, q *socCut) float64 {
		st := s.colS[col]
		if t.joint && s.colP[col] == 0 {
			return q.coef(int(st[0]), int(st[1])) + q.coef(int(st[1]), int(st[2]))
		}
		k := int(s.colP[col])
		if t.joint {
			k = 2
		}
		return q.coef(int(st[k]), int(st[(k+1)%3]))
	}
	nc := len(s.colP)
	sol := &s.sol
	for round := 0; ; round++ {
		nr := nfix + len(s.work)
		lp := &s.lp
		resetLP(lp, nr, nc)
		for col := range nc {
			p := int(s.colP[col])
			st := s.colS[col]
			lp.C[col] = s.colV[col]
			lp.A[p*nc+col] = 1
			lp.B[p] = 1
			if r := consRow(lv(p), int(st[lv(p)])); r >= 0 {
				lp.A[r*nc+col] += 1
			}
			if r := consRow(fv(p), int(st[fv(p)])); r >= 0 {
				lp.A[r*nc+col] -= 1
			}
			for q := range s.work {
				lp.A[(nfix+q)*nc+col] = cutCoef(col, &s.work[q])
			}
		}
		for q := range s.work {
			lp.Sense[nfix+q] = smalllp.Le
			lp.B[nfix+q] = s.work[q].r
		}
		s.stats.LPs++
		if err := s.solver.SolveTo(lp, sol); err != nil {
			return nil, false
		}
		if round == maxSOCRounds || !s.separate(t, sol.X, labels) {
			break
		}
	}
	for q := range s.work {
		s.work[q].u = max(sol.Dual[nfix+q], 0)
	}
	dual := sol.Dual
	return func(k, i int) float64 {
		if r := consRow(k, i); r >= 0 {
			return dual[r]
		}
		return 0
	}, true
}

// separate adds to s.work the tangent at the current P_l of every label
// whose constraint the LP solution x violates by more than socTol, and
// reports whether it added any.
func (s *socState) separate(t *socTri, x []float64, labels int) bool {
	g := s.c.g
	card := func(k int) int { return g.card[t.vars[k%3]] }
	for k := range 3 {
		clear(s.y[k][:card(k)*card(k+1)])
	}
	for col, v := range x {
		st := s.colS[col]
		if t.joint && s.colP[col] == 0 {
			s.y[0][int(st[0])*card(1)+int(st[1])] += v
			s.y[1][int(st[1])*card(2)+int(st[2])] += v
			continue
		}
		k := int(s.colP[col])
		if t.joint {
			k = 2
		}
		s.y[k][int(st[k])*card(k+1)+int(st[(k+1)%3])] += v
	}
	added := false
	for l := range labels {
		P, Q := 0.0, 0.0
		for k := range 3 {
			b := card(k + 1)
			for j := range b {
				P += s.y[k][l*b+j]
			}
			Q += s.y[k][l*b+l]
		}
		if Q-(P*P-P)/2 < -socTol {
			s.work = append(s.work, socCut{l: int8(l), s: P - 0.5, r: P * P / 2})
			added = true
		}
	}
	return added
}

// withSOC adds the SOC constraints to c, on the triangles among its
// cycles; without cycles (LP-S + SOC) c keeps no cycle of its own.
func (c *lpc) withSOC(cycles bool) {
	c.soc = newSOC(c)
	if !cycles {
		c.coff, c.cvar, c.cedge, c.cflip = c.coff[:1], nil, nil, nil
		c.skip, c.held = nil, nil
		c.stats = CycleStats{}
	}
}
