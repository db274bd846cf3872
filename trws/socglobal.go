package trws

// This file is the SOC dual's global tangent step (docs/soc.md, "The
// global step"). The triangles' block-coordinate steps (soc.go) can stop
// above the LP-S + SOC optimum: at such a point the messages are optimal
// for the tangents held (TestSOCStallIsInTheTangents) and no single
// triangle's tangents can move, yet the tangents of several triangles
// together can. The step takes as its block all the tangents at once.
//
// With the SOC multipliers w = (u_tl, s_tl) and theta' the model's
// potentials (under LP-C + SOC: the current tables with the held tangents
// put back, which hold the cycles' multipliers too), the dual minimised
// over the messages is
//
//	G(w) = LP-S(theta' - A^T w) + sum_tl u_tl r(s_tl)
//
// (docs/soc.md, "The dual"). The step minimises G over w: it solves the
// primal, max theta'.mu over the local polytope of the whole model cut by
// tangents of Q_l >= f(P_l) on every triangle and label, by Kelley's
// cutting planes (add the tangent at the current P_l of every constraint
// violated by more than socTol, solve again; the constraint is Kumar,
// Kolmogorov and Torr's SOCP-Q clique constraint, JMLR 10, 2009, in the
// variables of their eq. 7), the weighted tangents of each (triangle,
// label) aggregated into one after each LP. By LP duality an LP's value
// equals sum_s z_s + sum_q u_q r_q at its row duals (z normalisations,
// y consistency, u tangents), and its dual feasibility says that
//
//	theta'_e(i,j) - y_eu(i) - y_ev(j) + sum_q u_q [i = j = l_q] <= 0
//	theta'_s(i) + sum_e y_es(i) - sum_q u_q s_q [i = l_q]      <= z_s,
//
// so with those tables and unaries, the tangents merged per (triangle,
// label) (soc.go: the same A^T w, a constant no larger) and the messages
// zero, the bound (sum over chains of their maxima, each chain holding
// gamma_s of every node and its edges whole) is at most the LP's value:
// within the cutting planes' tolerance of the LP-S + SOC optimum once the
// cuts converge, and TRW-S's passes do not raise it (Kolmogorov, PAMI
// 2006: the bound of the sequential passes is monotone).
//
// smalllp's dense Bland tableau is not exact on these LPs: Kelley's
// tangents cluster near the optimum, and the later rounds' vertices are
// degenerate enough that a solve can run into its pivot limit (it is then
// retried with each tangent loosened by a different tiny amount, which
// keeps it valid) or return inaccurate duals. So no LP is trusted: every
// LP solved gives a candidate whose dual value is evaluated exactly on
// the tables it makes (evaluate: the sum over nodes and edges of their
// maxima, plus the tangents' constant), the best candidate is kept, and
// it is committed only when it is below the current bound. The cuts start
// from none, or every other step from the held tangents.
//
// Validity does not depend on any of this (docs/soc.md, "Why the bound is
// valid"): the committed tables are theta' reparameterised minus
// nonnegative combinations of valid tangents, their constant is in
// graph.shift, and every bound the passes report is an upper bound on
// the MAP (TestSOCEveryPassValid checks every pass against brute force).
//
// Schedule: after a sweep, when the bound has not moved for two sweeps
// (maybeGlobal), and when the run's stall rule fires (onStall, before it
// ends the run); at most every tenth sweep, and not after three steps in
// a row found nothing lower. The LP is dense: columns are the live node
// states and edge entries of the whole model, rows one per node, one per
// edge state (consistency) and one per tangent; the step runs only on
// models whose tableau stays under socGlobalMaxCells entries (about 80
// binary variables of a triangulated grid, 50 of three labels); larger
// models keep the triangle steps alone and their stall (docs/soc.md).

import (
	"math"

	"github.com/ddrun/ddrun/internal/smalllp"
)

// socGlobalMaxCells bounds the global step's LP: rows times columns of
// its tableau (8 bytes each).
const socGlobalMaxCells = 1 << 21

// maxGlobalRounds bounds the cutting-plane LPs of one global step.
const maxGlobalRounds = 200

// globalCut is a tangent s P_l - Q_l <= r of triangle tri.
type globalCut struct {
	tri  int32
	l    int8
	s, r float64
}

// socGlobal is the global step's LP layout and its working state.
type socGlobal struct {
	ncol      int
	roff      []int   // per edge the offset of its rows in crow
	crow      []int32 // per edge, states of u then of v: the consistency row, or -1
	nodeCol   []int32 // per node state (at uoff) its column, -1 if dead
	eoff      []int   // per edge the offset of its entries in edgeCol
	edgeCol   []int32 // per edge entry (row u, column v) its column, -1 if dead
	colCost   []float64
	nfix      int // rows before the tangents
	cuts      []globalCut
	fresh     []globalCut // separate's new tangents
	agg       []int32     // separate's scratch: per (triangle, label) its aggregated tangent
	newHeld   [][]socCut  // per triangle its tangents from the LP
	newTab    []float64   // the tables they make (at eoff)
	newTheta  []float64   // and the unaries
	bestHeld  [][]socCut  // the best of them so far (keepBest)
	bestTab   []float64
	bestTheta []float64
	base      []float64 // theta' per edge entry (at eoff)
	baseTheta []float64 // and its unaries
	lp        smalllp.LP
	sol       smalllp.Solution
	solver    smalllp.Solver
	lastV     float64 // the best dual value the last global step found (evaluated)
	triedAt   float64 // the bound when the last global step ran
	moved     bool    // a global step moved the tangents since onStall last ran
	stallRun  int     // consecutive sweeps without progress
	prev      float64 // the bound at the previous sweep
	wait      int     // sweeps before the next global step may run
	futile    int     // global steps in a row that found no lower bound
}

// newGlobal lays out the global LP, or returns nil when the model is too
// large for it (or has no triangle).
func newGlobal(s *socState) *socGlobal {
	g := s.c.g
	if len(s.tris) == 0 {
		return nil
	}
	// Before allocating anything of the model's size: at least a
	// column per live node state, a row per node and per edge state.
	cols, rows := 0, g.n
	for _, v := range g.theta {
		if v != negInf {
			cols++
		}
	}
	for e := range g.eu {
		rows += g.card[g.eu[e]] + g.card[g.ev[e]]
	}
	if cols*rows > socGlobalMaxCells {
		return nil
	}
	gl := &socGlobal{prev: math.Inf(1), lastV: math.Inf(1), triedAt: math.NaN()}
	gl.nodeCol = make([]int32, len(g.theta))
	for s := 0; s < g.n; s++ {
		for i := range g.card[s] {
			gl.nodeCol[g.uoff[s]+i] = -1
			if g.theta[g.uoff[s]+i] != negInf {
				gl.nodeCol[g.uoff[s]+i] = int32(gl.ncol)
				gl.ncol++
			}
		}
	}
	gl.eoff = make([]int, len(g.eu)+1)
	gl.roff = make([]int, len(g.eu)+1)
	rows = g.n
	for e := range g.eu {
		u, v := g.eu[e], g.ev[e]
		ku, kv := g.card[u], g.card[v]
		gl.eoff[e+1] = gl.eoff[e] + ku*kv
		gl.roff[e+1] = gl.roff[e] + ku + kv
		// A row per live state of u and of v (one of them is implied
		// by the others and the normalisations: dropping it made the
		// tableau's pivots fail more often, not less).
		for x := range ku + kv {
			col := -1
			if x < ku {
				col = int(gl.nodeCol[g.uoff[u]+x])
			} else {
				col = int(gl.nodeCol[g.uoff[v]+x-ku])
			}
			row := int32(-1)
			if col >= 0 {
				row = int32(rows)
				rows++
			}
			gl.crow = append(gl.crow, row)
		}
	}
	gl.edgeCol = make([]int32, gl.eoff[len(g.eu)])
	gl.base = make([]float64, gl.eoff[len(g.eu)])
	for e := range g.eu {
		u, v := g.eu[e], g.ev[e]
		ku, kv := g.card[u], g.card[v]
		tab := g.data[g.toff[e] : g.toff[e]+ku*kv]
		for i := range ku {
			for j := range kv {
				x := gl.eoff[e] + i*kv + j
				gl.edgeCol[x] = -1
				if tab[i*kv+j] != negInf && gl.nodeCol[g.uoff[u]+i] >= 0 && gl.nodeCol[g.uoff[v]+j] >= 0 {
					gl.edgeCol[x] = int32(gl.ncol)
					gl.ncol++
				}
			}
		}
	}
	gl.nfix = rows
	// Room for a tangent per triangle and label beside the fixed rows.
	if (rows+len(s.tris)*maxCycleCard)*gl.ncol > socGlobalMaxCells {
		return nil
	}
	gl.colCost = make([]float64, gl.ncol)
	return gl
}

// maybeGlobal runs the global step after a sweep when the bound has not
// moved for two sweeps (relative 1e-9), at most every tenth sweep and
// not after three in a row found nothing lower; dual is the lowest bound
// so far. It reports whether it changed the tables.
func (s *socState) maybeGlobal(dual float64) bool {
	if s == nil || s.global == nil {
		return false
	}
	gl := s.global
	scale := max(1, math.Abs(dual))
	if gl.prev-dual > 1e-9*scale {
		gl.stallRun = 0
	} else {
		gl.stallRun++
	}
	gl.prev = dual
	if gl.wait > 0 {
		gl.wait--
		return false
	}
	if gl.stallRun < 2 || dual == gl.triedAt || gl.futile >= 3 {
		return false
	}
	return s.globalStep(dual)
}

// onStall runs the global step when the run's convergence rule fires
// (the bound stalled), unless one already ran at this bound: the run goes
// on when it reports true.
func (s *socState) onStall(dual float64) bool {
	if s == nil || s.global == nil {
		return false
	}
	gl := s.global
	if gl.moved { // a step after a sweep moved the tangents since
		gl.moved = false
		return true
	}
	if dual == gl.triedAt || gl.futile >= 3 {
		return false
	}
	moved := s.globalStep(dual)
	gl.moved = false
	return moved
}

// globalStep solves the whole model's LP-S + tangents LP by cutting planes
// and, when its value is below dual, moves its tangents into the tables.
func (s *socState) globalStep(dual float64) bool {
	g, gl := s.c.g, s.global
	s.stats.Globals++
	gl.triedAt, gl.wait = dual, 10
	// theta': the model's own tables and unaries (g.orig, origTheta)
	// with LP-S + SOC: the current ones differ from them by
	// reparameterisations and the held tangents, and the model's are
	// the better conditioned LP (a reparameterised one ties many
	// entries, which the tableau's pivots wander on). With cycles, the
	// current tables with the held tangents put back (they hold the
	// cycles' multipliers as well).
	oldK := 0.0
	gl.baseTheta = g.theta
	if len(s.c.skip) == 0 {
		if g.origTheta != nil {
			gl.baseTheta = g.origTheta
		}
		for e := range g.eu {
			ku, kv := g.card[g.eu[e]], g.card[g.ev[e]]
			copy(gl.base[gl.eoff[e]:gl.eoff[e+1]], g.orig[g.toff[e]:g.toff[e]+ku*kv])
		}
		for ti := range s.tris {
			for _, q := range s.tris[ti].held {
				oldK += q.u * q.r
			}
		}
	} else {
		for e := range g.eu {
			ku, kv := g.card[g.eu[e]], g.card[g.ev[e]]
			copy(gl.base[gl.eoff[e]:gl.eoff[e+1]], g.data[g.toff[e]:g.toff[e]+ku*kv])
		}
		for ti := range s.tris {
			t := &s.tris[ti]
			for _, q := range t.held {
				oldK += q.u * q.r
				gl.addCut(s, t, &q, q.u)
			}
		}
	}
	// Kelley's cutting planes from no tangent at all, or every other
	// step from the held ones: those start near the optimum, but once
	// they are nearly optimal the new tangents come nearly parallel to
	// them and the tableau's pivots fail; from none they fail later.
	gl.cuts = gl.cuts[:0]
	if s.stats.Globals%2 == 0 {
		for ti := range s.tris {
			for _, q := range s.tris[ti].held {
				gl.cuts = append(gl.cuts, globalCut{tri: int32(ti), l: q.l, s: q.s, r: q.r})
			}
		}
	}
	nc := gl.ncol
	for x, col := range gl.nodeCol {
		if col >= 0 {
			gl.colCost[col] = gl.baseTheta[x]
		}
	}
	for x, col := range gl.edgeCol {
		if col >= 0 {
			gl.colCost[col] = gl.base[x]
		}
	}
	sol := &gl.sol
	// Every LP solved gives a candidate: its duals make a dual of
	// LP-S + SOC whose value (evaluate) is exact whatever the LP's
	// accuracy. The best one is kept: the tableau's solutions of the
	// later, degenerate rounds can be far off.
	best, bestK := math.Inf(1), 0.0
	for round := 0; ; round++ {
		nr := gl.nfix + len(gl.cuts)
		if nr*nc > socGlobalMaxCells {
			break
		}
		lp := &gl.lp
		resetLP(lp, nr, nc)
		copy(lp.C, gl.colCost)
		gl.fixedRows(g, lp)
		for q := range gl.cuts {
			gl.cutRow(s, &gl.cuts[q], lp.A[(gl.nfix+q)*nc:(gl.nfix+q+1)*nc])
			lp.Sense[gl.nfix+q] = smalllp.Le
		}
		var err error
		for try := range 3 {
			// On failure each tangent is loosened by a different
			// tiny amount (which keeps it valid) and the LP solved
			// again: Kelley's tangents cluster near the optimum, and
			// Bland's pivots can run into the tableau's limit on
			// the degenerate vertices they make.
			loosen := 0.0
			if try > 0 {
				loosen = math.Pow(10, float64(-12+2*try))
			}
			for q := range gl.cuts {
				lp.B[gl.nfix+q] = gl.cuts[q].r + loosen*float64(q+1)/float64(len(gl.cuts))
			}
			s.stats.LPs++
			if err = gl.solver.SolveTo(lp, sol); err == nil {
				break
			}
		}
		if err != nil {
			s.stats.Failed++
			break
		}
		if v, k := gl.evaluate(s, sol.Dual[:nr]); v < best {
			best, bestK = v, k
			gl.keepBest(len(s.tris))
		}
		if round == maxGlobalRounds || !gl.separate(s, sol.X) {
			break
		}
	}
	V := best + g.constant + g.shift - oldK
	gl.lastV = V
	if !(V < dual-1e-12*max(1, math.Abs(dual))) {
		gl.futile++
		return false
	}
	if V < dual-1e-9*max(1, math.Abs(dual)) {
		gl.futile = 0 // else it counts as found nothing: at most rounding
	} else {
		gl.futile++
	}
	gl.commit(s)
	g.shift += bestK - oldK
	return true
}

// evaluate makes from an LP's row duals y the new tangents (newHeld: the
// tangents' weights merged per triangle and label) and their tables
// (prepare), and returns the value of that dual without the graph's
// constant and shift, and the tangents' constant.
func (gl *socGlobal) evaluate(s *socState, y []float64) (v, k float64) {
	if len(gl.newHeld) < len(s.tris) {
		gl.newHeld = make([][]socCut, len(s.tris))
		gl.bestHeld = make([][]socCut, len(s.tris))
	}
	for ti := range s.tris {
		gl.newHeld[ti] = gl.newHeld[ti][:0]
	}
	for q, c := range gl.cuts {
		u := y[gl.nfix+q]
		if !(u > 0) {
			continue
		}
		h := &gl.newHeld[c.tri]
		found := false
		for i := range *h {
			if (*h)[i].l == c.l {
				(*h)[i].s += u * c.s // sum u s until normalised below
				(*h)[i].u += u
				found = true
			}
		}
		if !found {
			*h = append(*h, socCut{l: c.l, s: u * c.s, u: u})
		}
	}
	for ti := range s.tris {
		for i := range gl.newHeld[ti] {
			q := &gl.newHeld[ti][i]
			q.s /= q.u
			q.r = (q.s + 0.5) * (q.s + 0.5) / 2
			k += q.u * q.r
		}
	}
	return gl.prepare(s, y) + k, k
}

// keepBest copies evaluate's tangents and tables as the best so far.
func (gl *socGlobal) keepBest(ntri int) {
	for ti := range ntri {
		gl.bestHeld[ti] = append(gl.bestHeld[ti][:0], gl.newHeld[ti]...)
	}
	gl.bestTab = append(gl.bestTab[:0], gl.newTab...)
	gl.bestTheta = append(gl.bestTheta[:0], gl.newTheta...)
}

// prepare writes into newTab and newTheta the last LP's dual solution:
// the new tangents (newHeld) and the local polytope's multipliers (a
// reparameterisation). With z_s the node rows' duals, y the consistency
// rows' and u the tangents', dual feasibility of the LP says that every
// entry of
//
//	theta'_e(i,j) - y_eu(i) - y_ev(j) + sum_q u_q [i = j = l_q]
//
// is <= 0 and every state of theta_s(i) + sum_e y_es(i) - sum_q u_q s_q
// [i = l_q] is <= z_s, where sum_s z_s + sum_q u_q r_q is the LP's value
// (the tangents are written with their P terms on the nodes: a
// reparameterisation of soc.go's form, which counts them on the edges).
// It returns what the tables make of that, sum over nodes and edges of
// their maxima (at most sum_s z_s, up to the LP's numerical error): with
// zero messages each chain holds gamma_s of each node's potential and its
// edges whole, so the chains' maxima sum to at most this.
func (gl *socGlobal) prepare(s *socState, y []float64) float64 {
	g := s.c.g
	gl.newTab = append(gl.newTab[:0], gl.base...)
	gl.newTheta = append(gl.newTheta[:0], gl.baseTheta...)
	nt, th := gl.newTab, gl.newTheta
	dual := func(e, x int) float64 {
		if r := gl.crow[gl.roff[e]+x]; r >= 0 {
			return y[r]
		}
		return 0
	}
	for e := range g.eu {
		u, v := g.eu[e], g.ev[e]
		ku, kv := g.card[u], g.card[v]
		tab := nt[gl.eoff[e]:gl.eoff[e+1]]
		for i := range ku {
			yi := dual(e, i)
			for j := range kv {
				tab[i*kv+j] -= yi + dual(e, ku+j)
			}
			th[g.uoff[u]+i] += yi
		}
		for j := range kv {
			th[g.uoff[v]+j] += dual(e, ku+j)
		}
	}
	for ti := range s.tris {
		t := &s.tris[ti]
		for _, q := range gl.newHeld[ti] {
			l := int(q.l)
			for k := range 3 {
				th[g.uoff[t.vars[k]]+l] -= q.u * q.s
				e := t.edges[k]
				nt[gl.eoff[e]+l*g.card[g.ev[e]]+l] += q.u
			}
		}
	}
	sum := 0.0
	for v := 0; v < g.n; v++ {
		sum += maxOf(th[g.uoff[v]:g.uoff[v+1]])
	}
	for e := range g.eu {
		sum += maxOf(nt[gl.eoff[e]:gl.eoff[e+1]])
	}
	return sum
}

// commit moves prepare's tables, unaries and tangents into the graph and
// resets the messages to zero, so that the bound of the next pass is at
// most prepare's value: TRW-S's passes never raise the bound (Kolmogorov,
// PAMI 2006: the bound of the passes is monotone). The unaries change, so the graph keeps the
// model's for the scores.
func (gl *socGlobal) commit(s *socState) {
	g := s.c.g
	if g.origTheta == nil {
		g.origTheta = g.theta
		g.theta = append([]float64(nil), g.theta...)
	}
	copy(g.theta, gl.bestTheta)
	for e := range g.eu {
		ku, kv := g.card[g.eu[e]], g.card[g.ev[e]]
		copy(g.data[g.toff[e]:g.toff[e]+ku*kv], gl.bestTab[gl.eoff[e]:gl.eoff[e+1]])
		clear(g.data[g.moff[e] : g.moff[e]+max(ku, kv)])
		clear(g.fwd[g.moff[e] : g.moff[e]+max(ku, kv)])
	}
	for ti := range s.tris {
		t := &s.tris[ti]
		t.held = append(t.held[:0], gl.bestHeld[ti]...)
		t.hint = t.hint[:0]
	}
	clear(s.c.dirty)
	gl.moved = true
}

// addCut adds w times tangent q's coefficients on triangle t's edges to
// base (in each edge's own orientation).
func (gl *socGlobal) addCut(s *socState, t *socTri, q *socCut, w float64) {
	g := s.c.g
	for k := range 3 {
		e := t.edges[k]
		a, b := g.card[t.vars[k]], g.card[t.vars[(k+1)%3]]
		for i := range a {
			for j := range b {
				c := q.coef(i, j)
				if c == 0 {
					continue
				}
				x := i*b + j
				if t.flip[k] {
					x = j*a + i
				}
				if gl.base[gl.eoff[e]+x] != negInf {
					gl.base[gl.eoff[e]+x] += w * c
				}
			}
		}
	}
}

// fixedRows writes the local polytope's rows: per node sum mu = 1, per
// edge and state of each end sum of the edge's entries = the node's.
func (gl *socGlobal) fixedRows(g *graph, lp *smalllp.LP) {
	nc := gl.ncol
	for s := 0; s < g.n; s++ {
		lp.B[s] = 1
		for i := range g.card[s] {
			if col := gl.nodeCol[g.uoff[s]+i]; col >= 0 {
				lp.A[s*nc+int(col)] = 1
			}
		}
	}
	for e := range g.eu {
		u, v := g.eu[e], g.ev[e]
		ku, kv := g.card[u], g.card[v]
		row := gl.crow[gl.roff[e]:gl.roff[e+1]]
		for i := range ku {
			if r := row[i]; r >= 0 {
				lp.A[int(r)*nc+int(gl.nodeCol[g.uoff[u]+i])] = -1
			}
		}
		for j := range kv {
			if r := row[ku+j]; r >= 0 {
				lp.A[int(r)*nc+int(gl.nodeCol[g.uoff[v]+j])] = -1
			}
		}
		for i := range ku {
			for j := range kv {
				col := gl.edgeCol[gl.eoff[e]+i*kv+j]
				if col < 0 {
					continue
				}
				if r := row[i]; r >= 0 {
					lp.A[int(r)*nc+int(col)] = 1
				}
				if r := row[ku+j]; r >= 0 {
					lp.A[int(r)*nc+int(col)] = 1
				}
			}
		}
	}
}

// cutRow writes tangent c's row: s on the three nodes' state l, -1 on the
// three edges' entry (l, l).
func (gl *socGlobal) cutRow(s *socState, c *globalCut, row []float64) {
	g := s.c.g
	t := &s.tris[c.tri]
	l := int(c.l)
	for k := range 3 {
		if col := gl.nodeCol[g.uoff[t.vars[k]]+l]; col >= 0 {
			row[col] += c.s
		}
		e := t.edges[k]
		kv := g.card[g.ev[e]]
		if col := gl.edgeCol[gl.eoff[e]+l*kv+l]; col >= 0 {
			row[col] -= 1
		}
	}
}

// separate adds the tangent at the current P_l of every (triangle,
// label) whose constraint the LP solution x violates by more than socTol,
// dropping first the tangents neither tight nor weighted at x, and
// reports whether it added any (it changes nothing when it does not).
func (gl *socGlobal) separate(s *socState, x []float64) bool {
	g := s.c.g
	val := func(col int32) float64 {
		if col < 0 {
			return 0
		}
		return x[col]
	}
	gl.fresh = gl.fresh[:0]
	for ti := range s.tris {
		t := &s.tris[ti]
		labels := min(g.card[t.vars[0]], g.card[t.vars[1]], g.card[t.vars[2]])
		for l := range labels {
			c := globalCut{tri: int32(ti), l: int8(l)}
			P, Q := gl.pq(s, &c, val)
			if Q-(P*P-P)/2 < -socTol {
				c.s, c.r = P-0.5, P*P/2
				gl.fresh = append(gl.fresh, c)
			}
		}
	}
	if len(gl.fresh) == 0 {
		return false
	}
	// Aggregate: the weighted tangents of each (triangle, label) become
	// the one tangent of their weighted mean slope (it dominates them,
	// see the file comment of soc.go, so the LP's value cannot rise), and
	// unweighted ones go. This keeps the LP small and free of the
	// near-parallel rows that Kelley's tangents pile up near the optimum.
	if len(gl.agg) < len(s.tris)*maxCycleCard {
		gl.agg = make([]int32, len(s.tris)*maxCycleCard)
	}
	for i := range gl.agg {
		gl.agg[i] = -1
	}
	kept := gl.cuts[:0]
	for q, c := range gl.cuts {
		u := gl.sol.Dual[gl.nfix+q]
		if !(u > 0) {
			continue
		}
		key := int(c.tri)*maxCycleCard + int(c.l)
		if a := gl.agg[key]; a >= 0 {
			kept[a].s += u * c.s
			kept[a].r += u // the weight, until normalised below
			continue
		}
		gl.agg[key] = int32(len(kept))
		c.s, c.r = u*c.s, u
		kept = append(kept, c)
	}
	for i := range kept {
		c := &kept[i]
		c.s /= c.r
		c.r = (c.s + 0.5) * (c.s + 0.5) / 2
	}
	gl.cuts = append(kept, gl.fresh...)
	return true
}

// pq returns P_l and Q_l of cut c's triangle and label at the columns'
// values val.
func (gl *socGlobal) pq(s *socState, c *globalCut, val func(int32) float64) (P, Q float64) {
	g := s.c.g
	t := &s.tris[c.tri]
	l := int(c.l)
	for k := range 3 {
		P += val(gl.nodeCol[g.uoff[t.vars[k]]+l])
		e := t.edges[k]
		kv := g.card[g.ev[e]]
		Q += val(gl.edgeCol[gl.eoff[e]+l*kv+l])
	}
	return P, Q
}
