package trws

// This file is TRW-S(LP-C), Table 2 of Kumar and Torr (ICML 2008): TRW-S
// on the dual (11) of the local polytope appended with cycle inequalities,
// alternating the TRW-S passes with one step per cycle that solves the
// cycle's small problem (12) exactly.
//
// Cycle inequalities (Barahona and Mahjoub 1986; Kumar and Torr eq. 10).
// For a cycle C = (v_0, ..., v_{c-1}), one label l_k per variable and an
// odd set F of its edges, let s_k = [x_{v_k} = l_k] and cut_k = [s_k !=
// s_{k+1}] for edge k = (v_k, v_{k+1 mod c}); every labelling satisfies
//
//	sum_{k in F} cut_k - sum_{k not in F} cut_k <= |F| - 1,
//
// and with cut_k = sum_{ij} y_k(i, j) [[i = l_k] != [j = l_{k+1}]] over the
// edge's pairwise marginals y_k this is linear in the relaxation's
// variables. On binary variables all label choices give the same family
// (flipping l_k swaps the F-membership of the two edges at v_k), so the
// 2^(c-1) inequalities of one labelling are all of them; with more labels
// the h^c * 2^(c-1) inequalities are separated on the fly.
//
// The step (problem (12), in scores). The dual is held as TRW-S messages
// over effective edge tables theta + sum_C (R_C - A_C^T u_C), where R_C is
// a reparameterisation along C's edges and u_C >= 0 are C's multipliers,
// plus the constant K = sum_C u_C.(|F| - 1) added to the bound. For any
// feasible labelling x the effective score plus K is at least the score of
// x (R_C sums to zero on x, and u_C.(A_C y(x)) <= u_C.(|F| - 1)), so the
// TRW-S bound on the effective tables plus K is an upper bound on the MAP
// score for any such R, u. The messages define monotonic chains (each
// edge in one chain, n_s chains through s, unary gamma_s hat_s, pairwise
// theta_eff - M - M); when C's edges lie in distinct chains, changing
// edge k's table by D_k changes its chain's maximum from max mm_k to
// max (mm_k + D_k), where mm_k is the chain's max-marginal on edge k,
// computed exactly by dynamic programming along the chain. With
// m_k = mm_k + (A_C^T u_C)_k (C's old multipliers taken out), the best
// step is the LP
//
//	min sum_k z_k + sum_q u_q (|F_q| - 1)
//	s.t. z_k >= m_k(i,j) - R_k(i,j) - sum_q u_q a_q(k,i,j),  u >= 0,
//
// over z, the reparameterisation R (one multiplier per cycle node and
// state, moving mass between the node's two cycle edges) and u: the dual of
// max sum_k m_k.y_k over the cycle's local polytope cut by its cycle
// inequalities. smalllp solves that primal; its row duals are z, R and u.
// The new tables are m_k - R_k - A^T u, and the step is kept only if the
// bound it gives, sum_k max_ij of them plus sum_q u_q (|F_q| - 1), is below
// the old one (it always is, up to rounding, since the old R = 0, u_old is
// feasible). A cycle with two edges in one chain is skipped: its chain's
// maximum is not separable over the edges.
//
// Schedule: TRW-S runs alone until it slows down: its bound improved over
// the last BoundWindow iterations by at most Options.CycleStart (1%) of
// what it improved since the first iteration, or stalled by BoundTol. From
// then on every SweepEvery-th iteration (a forward and a backward pass;
// default 5) is followed by one sweep over all cycles, in order of their
// smallest variable, and a repair of the changed edges' backward messages
// (lpc.repair). The sweep visits the cycles in an order which
// lets the chains' forward and backward tables be extended lazily instead
// of recomputed after every step. Starting the cycles late spends no LPs
// while TRW-S alone still makes fast progress and, on small models, keeps
// the bound at least as good as TRW-S's. The start must not wait for the
// BoundTol stall alone: on large mixed-sign grids TRW-S creeps down by
// 1e-6 (relative) per iteration for thousands of iterations, and under
// BoundTol 0 (the coordinator's --tol 0) never stalls, so the sweeps never
// started (TestLPCBelowTRWSOnGrids). Table 2 interleaves the cycles with
// the node updates instead; both alternate exact block steps on the same
// dual.
//
// Monotonicity. The sweep's steps are exact and never raise the bound, but
// the TRW-S pass right after a sweep can (TestLPCPassesAfterSweep: 4% of
// the passes, by at most 2% relative; 26% and 3.6% when sweeping after
// every iteration without the repair): the messages on the edges the
// sweep changed no longer equal their chains' max-marginals, which
// Kolmogorov's monotonicity argument for the message form needs; Table 2
// is stated with explicit tree parameters, where this does not arise. The
// reported bound is the lowest exact bound seen, so it never rises.
// Sweeping after every iteration without the repair let the rises cancel
// the sweeps' gains: on the 300x300 4-label mixed-sign Potts grid the bound
// stopped at 72733.9 after 6 s (TRW-S: 72803.5), on a 40x40 one at 1284.0;
// the repair and 4 TRW-S iterations between sweeps reach 72691.2 and
// 1283.68 (binary 40x40: 830.2, against 829.5 when sweeping every
// iteration without the repair: the schedule is a heuristic, and DD-ADMM
// on the cycle factors gets to 828.2 there).

import (
	"math"
	"math/bits"

	"github.com/ddrun/ddrun/internal/smalllp"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/tighten"
)

// CycleStats describes the cycle constraints of a TRW-S(LP-C) run.
type CycleStats struct {
	Cycles   int // cycles found (triangles and chordless squares)
	Shared   int // cycles skipped because two of their edges share a chain
	Steps    int // cycle steps that lowered the bound
	Agreed   int // cycle steps skipped without an LP: no step can lower the bound
	Failed   int // cycle LPs that failed numerically (the step is skipped)
	Active   int // cycle inequalities with a positive multiplier at the end
	MaxIneqs int // most inequalities held by one cycle
}

// ineq is one cycle inequality of a cycle: a label per cycle variable,
// the set F as a bit mask over the cycle's edges, and its multiplier u.
type ineq struct {
	lab  [4]int8
	mask uint8
	u    float64
}

// rhs is |F| - 1.
func (q *ineq) rhs() float64 { return float64(bits.OnesCount8(q.mask) - 1) }

// coef is the inequality's coefficient a_q(k, i, j) on entry (i, j) of the
// cycle's edge k (of n): +-1 (the sign says whether k is in F) when exactly
// one of i = l_k, j = l_{k+1} holds, else 0.
func (q *ineq) coef(n, k, i, j int) float64 {
	if (i == int(q.lab[k])) == (j == int(q.lab[(k+1)%n])) {
		return 0
	}
	if q.mask>>k&1 == 1 {
		return 1
	}
	return -1
}

// lpc is the state of the cycle constraints.
type lpc struct {
	g *graph
	// Cycle c has variables cvar[coff[c]:coff[c+1]]; its edge k joins
	// variables k and k+1 (mod len) and is graph edge cedge[coff[c]+k],
	// stored with the cycle's variable k as the edge's u unless cflip.
	coff  []int32
	cvar  []int32
	cedge []int32
	cflip []bool
	skip  []bool   // two edges in one chain
	held  [][]ineq // per cycle, the inequalities with u > 0
	work  []ineq   // the working set of the current step

	// Chains: positions p in chain k are cpos[k]..cpos[k+1]-1, node
	// chainNode[p], edge chainEdge[p] to the next position (-1 at the
	// end); edgeAt[e] is the position of edge e's first node.
	cpos      []int32
	chainNode []int32
	chainEdge []int32
	edgeAt    []int32
	chainOf   []int32 // chain of each edge
	// Forward and backward max-marginal tables per position (offsets
	// foff), valid for positions < fEnd[k] and >= bStart[k].
	foff         []int
	fw, bw       []float64
	fEnd, bStart []int32

	hatAll []float64 // hat_s of every node, at uoff
	dirty  []bool    // edges whose tables the last sweep changed
	sc     *scratch
	solver smalllp.Solver
	stats  CycleStats
	soc    *socState // the SOC constraints (soc.go), or nil

	// Scratch, per cycle edge kmax^2 entries.
	mm, m, nw []float64
	lp        smalllp.LP
	sol       smalllp.Solution
	colK      []int32 // LP column -> cycle edge
	colX      []int32 // LP column -> entry i*b + j
}

// maxCycleCard bounds the cardinalities of the cycle variables, so that a
// cycle's LP stays small.
const maxCycleCard = 8

// newLPC finds the cycles of the reduced model m (as laid out in g) and
// prepares the chains. g must be densified.
func newLPC(g *graph, m *model.Model, maxCycles int) (*lpc, error) {
	cyc, _, err := tighten.FindCycles(m, tighten.Options{MaxTable: maxCycleCard * maxCycleCard * maxCycleCard * maxCycleCard, MaxCycles: maxCycles})
	if err != nil {
		return nil, err
	}
	c := &lpc{g: g}
	idx := make(map[[2]int32]int32, len(g.eu))
	for e := range g.eu {
		idx[[2]int32{g.eu[e], g.ev[e]}] = int32(e)
	}
	adjacent := func(a, b int32) bool {
		_, ok := idx[[2]int32{min(a, b), max(a, b)}]
		return ok
	}
	c.buildChains(adjacent)
	c.coff = append(c.coff, 0)
	for _, cy := range cyc {
		if g.pos != nil { // model variables to nodes
			for k, v := range cy {
				cy[k] = int(g.pos[v])
			}
		}
		ok := true
		for _, v := range cy {
			if g.card[v] > maxCycleCard || g.card[v] < 2 {
				ok = false
			}
		}
		if !ok {
			continue
		}
		seen := map[int32]bool{}
		shared := false
		for k, v := range cy {
			w := cy[(k+1)%len(cy)]
			e := idx[[2]int32{int32(min(v, w)), int32(max(v, w))}]
			c.cvar = append(c.cvar, int32(v))
			c.cedge = append(c.cedge, e)
			c.cflip = append(c.cflip, v > w)
			if seen[c.chainOf[e]] {
				shared = true
			}
			seen[c.chainOf[e]] = true
		}
		c.coff = append(c.coff, int32(len(c.cvar)))
		c.skip = append(c.skip, shared)
		if shared {
			c.stats.Shared++
		}
	}
	c.stats.Cycles = len(c.skip)
	c.held = make([][]ineq, len(c.skip))
	c.hatAll = make([]float64, len(g.theta))
	c.dirty = make([]bool, len(g.eu))
	c.sc = g.newScratch()
	k2 := maxCycleCard * maxCycleCard
	c.mm, c.m, c.nw = make([]float64, 4*k2), make([]float64, 4*k2), make([]float64, 4*k2)
	return c, nil
}

// buildChains pairs, at every node, its edges to earlier nodes with its
// edges to later ones (as many pairs as the smaller count, so that n_s
// chains pass through s), preferring straight continuations (t - s = s - u:
// the rows and columns of a row-major grid) and then pairs that do not
// close a triangle, and lays the chains out.
func (c *lpc) buildChains(adjacent func(a, b int32) bool) {
	g := c.g
	ne := len(g.eu)
	next, prev := make([]int32, ne), make([]int32, ne)
	for e := range next {
		next[e], prev[e] = -1, -1
	}
	for s := 0; s < g.n; s++ {
		in := g.inE[g.inOff[s]:g.inOff[s+1]]
		pair := func(accept func(ei, eo int32) bool) {
			for _, ei := range in {
				if next[ei] >= 0 {
					continue
				}
				for eo := int32(g.outOff[s]); eo < int32(g.outOff[s+1]); eo++ {
					if prev[eo] < 0 && accept(ei, eo) {
						next[ei], prev[eo] = eo, ei
						break
					}
				}
			}
		}
		pair(func(ei, eo int32) bool { return g.ev[eo]-int32(s) == int32(s)-g.eu[ei] })
		pair(func(ei, eo int32) bool { return !adjacent(g.eu[ei], g.ev[eo]) })
		pair(func(ei, eo int32) bool { return true })
	}
	c.chainOf = make([]int32, ne)
	c.edgeAt = make([]int32, ne)
	c.cpos = append(c.cpos, 0)
	for e := range ne {
		if prev[e] >= 0 {
			continue
		}
		k := int32(len(c.cpos) - 1)
		c.chainNode = append(c.chainNode, g.eu[e])
		for f := int32(e); f >= 0; f = next[f] {
			c.chainOf[f] = k
			c.edgeAt[f] = int32(len(c.chainEdge))
			c.chainEdge = append(c.chainEdge, f)
			c.chainNode = append(c.chainNode, g.ev[f])
		}
		c.chainEdge = append(c.chainEdge, -1)
		c.cpos = append(c.cpos, int32(len(c.chainNode)))
	}
	np := len(c.chainNode)
	c.foff = make([]int, np+1)
	for p, s := range c.chainNode {
		c.foff[p+1] = c.foff[p] + g.card[s]
	}
	c.fw, c.bw = make([]float64, c.foff[np]), make([]float64, c.foff[np])
	nk := len(c.cpos) - 1
	c.fEnd, c.bStart = make([]int32, nk), make([]int32, nk)
}

// gatherAll gathers every node's hat_s after a backward pass into hatAll
// and resets each chain's forward and backward frontiers to its ends.
func (c *lpc) gatherAll() {
	g := c.g
	for s := 0; s < g.n; s++ {
		k := g.card[s]
		g.gatherAfterBackward(s, c.hatAll[g.uoff[s]:g.uoff[s]+k])
	}
	for k := range c.fEnd {
		c.fEnd[k], c.bStart[k] = c.cpos[k], c.cpos[k+1]
	}
}

// sweep runs one step on every cycle, at the current messages, and
// returns how much the steps lowered the bound. Right after a pass the
// bound is the sum of the chains' maxima (pass.go), and each step lowers
// it by exactly its oldV - newV.
func (c *lpc) sweep() float64 {
	c.gatherAll()
	dec := 0.0
	for cy := range c.skip {
		if !c.skip[cy] {
			dec += c.step(cy)
		}
	}
	if c.soc != nil {
		dec += c.soc.sweep()
	}
	return dec
}

// unary writes gamma_s hat_s of chain position p into dst.
func (c *lpc) unary(p int32, dst []float64) {
	s := c.chainNode[p]
	_, gm, _, _ := c.g.weights(int(s))
	for i, h := range c.hatAll[c.g.uoff[s] : c.g.uoff[s]+len(dst)] {
		if h == negInf {
			dst[i] = negInf
		} else {
			dst[i] = gm * h
		}
	}
}

// pair returns the chain's pairwise term of edge e (u < v) at (i, j):
// theta_eff(i, j) - M_{u->v}(j) - M_{v->u}(i); callers skip dead states,
// whose messages may be -Inf.
func (c *lpc) pair(e int32, i, j int) float64 {
	g := c.g
	kv := g.card[g.ev[e]]
	// Right after a backward pass the edge holds M_{v->u}; fwd holds the
	// forward pass's M_{u->v}.
	return g.data[g.toff[e]+i*kv+j] - g.fwd[g.moff[e]+j] - g.data[g.moff[e]+i]
}

// forwardTo makes the forward table of position p of chain k valid.
func (c *lpc) forwardTo(k, p int32) {
	for ; c.fEnd[k] <= p; c.fEnd[k]++ {
		q := c.fEnd[k]
		cur := c.fw[c.foff[q]:c.foff[q+1]]
		c.unary(q, cur)
		if q == c.cpos[k] {
			continue
		}
		prev := c.fw[c.foff[q-1]:c.foff[q]]
		e := c.chainEdge[q-1]
		for j, uj := range cur {
			if uj == negInf {
				continue
			}
			best := negInf
			for i, fi := range prev {
				if fi != negInf {
					best = max(best, fi+c.pair(e, i, j))
				}
			}
			cur[j] = uj + best
		}
	}
}

// backwardTo makes the backward table of position p of chain k valid.
func (c *lpc) backwardTo(k, p int32) {
	for c.bStart[k] > p {
		c.bStart[k]--
		q := c.bStart[k]
		cur := c.bw[c.foff[q]:c.foff[q+1]]
		c.unary(q, cur)
		if q == c.cpos[k+1]-1 {
			continue
		}
		nxt := c.bw[c.foff[q+1]:c.foff[q+2]]
		e := c.chainEdge[q]
		for i, ui := range cur {
			if ui == negInf {
				continue
			}
			best := negInf
			for j, bj := range nxt {
				if bj != negInf {
					best = max(best, c.pair(e, i, j)+bj)
				}
			}
			cur[i] = ui + best
		}
	}
}

// maxMarginal writes the max-marginal of edge e in its chain into dst,
// rows u's states (-Inf on dead states).
func (c *lpc) maxMarginal(e int32, dst []float64) {
	k, p := c.chainOf[e], c.edgeAt[e]
	c.forwardTo(k, p)
	c.backwardTo(k, p+1)
	f := c.fw[c.foff[p]:c.foff[p+1]]
	b := c.bw[c.foff[p+1]:c.foff[p+2]]
	kv := len(b)
	for i, fi := range f {
		for j, bj := range b {
			v := negInf
			if fi != negInf && bj != negInf {
				v = fi + c.pair(e, i, j) + bj
			}
			dst[i*kv+j] = v
		}
	}
}

// touched invalidates the chain tables that depend on edge e's table.
func (c *lpc) touched(e int32) {
	c.dirty[e] = true
	k, p := c.chainOf[e], c.edgeAt[e]
	c.fEnd[k] = min(c.fEnd[k], p+1)
	c.bStart[k] = max(c.bStart[k], p+1)
}

// repair recomputes, after a sweep, the backward message M_{v->u} of every
// edge the sweep changed from its new table, as the backward pass would at
// v (in decreasing order of v, so that a changed message into v is in
// hat_v before v sends), and forgets the changes. Without it the next
// forward pass reaches u with M_{v->u} computed from the old table: it no
// longer summarises the chain beyond u, and the pass averages stale
// max-marginals into hat_u (see Monotonicity in the file comment). Any
// messages define a valid dual, and the next pass evaluates it exactly.
func (c *lpc) repair() {
	g := c.g
	for v := g.n - 1; v >= 0; v-- {
		in := g.inE[g.inOff[v]:g.inOff[v+1]]
		changed := false
		for _, e := range in {
			changed = changed || c.dirty[e]
		}
		if !changed {
			continue
		}
		k := g.card[v]
		hat, a := c.sc.hat[:k], c.sc.a[:k]
		g.gatherAfterBackward(v, hat)
		_, gm, _, _ := g.weights(v)
		for _, e := range in {
			if c.dirty[e] {
				prepare(a, hat, g.fwd[g.moff[e]:], gm)
				g.sendFromV(int(e), a, c.sc)
			}
		}
	}
	clear(c.dirty)
}

// step runs the cycle step of cycle cy (see the file comment) and returns
// how much it lowered the bound.
func (c *lpc) step(cy int) float64 {
	g := c.g
	lo, hi := int(c.coff[cy]), int(c.coff[cy+1])
	n := hi - lo
	vars := c.cvar[lo:hi]
	card := func(k int) int { return g.card[vars[k%n]] }
	const k2 = maxCycleCard * maxCycleCard
	// Max-marginals in cycle orientation (rows: variable k, columns:
	// variable k+1), and m: the same with the cycle's multipliers taken out.
	oldV := 0.0
	for k := 0; k < n; k++ {
		e := c.cedge[lo+k]
		a, b := card(k), card(k+1)
		mm := c.mm[k*k2 : k*k2+a*b]
		if c.cflip[lo+k] { // the edge is stored (v_{k+1}, v_k)
			tmp := c.nw[k*k2 : k*k2+a*b]
			c.maxMarginal(e, tmp)
			for i := 0; i < a; i++ {
				for j := 0; j < b; j++ {
					mm[i*b+j] = tmp[j*a+i]
				}
			}
		} else {
			c.maxMarginal(e, mm)
		}
		best := negInf
		for _, v := range mm {
			best = max(best, v)
		}
		if best == negInf {
			return 0 // an infeasible chain: the bound is -Inf already
		}
		oldV += best
		m := c.m[k*k2 : k*k2+a*b]
		copy(m, mm)
		for q := range c.held[cy] {
			h := &c.held[cy][q]
			for i := 0; i < a; i++ {
				for j := 0; j < b; j++ {
					if m[i*b+j] != negInf {
						m[i*b+j] += h.u * h.coef(n, k, i, j)
					}
				}
			}
		}
	}
	for q := range c.held[cy] {
		oldV += c.held[cy][q].u * c.held[cy][q].rhs()
	}
	if c.agrees(cy, n, card) {
		c.stats.Agreed++
		return 0
	}
	sol, ok := c.solveCycle(cy, n, card)
	if !ok {
		c.stats.Failed++
		return 0
	}
	// The new tables m_k - R_k - A^T u and the bound they give.
	newV := 0.0
	for q := range c.work {
		newV += c.work[q].u * c.work[q].rhs()
	}
	for k := 0; k < n; k++ {
		a, b := card(k), card(k+1)
		m, nw := c.m[k*k2:k*k2+a*b], c.nw[k*k2:k*k2+a*b]
		best := negInf
		for i := 0; i < a; i++ {
			for j := 0; j < b; j++ {
				x := i*b + j
				if m[x] == negInf {
					nw[x] = negInf
					continue
				}
				v := m[x] - c.consDual(sol.Dual, n, card, (k+1)%n, j) + c.consDual(sol.Dual, n, card, k, i)
				for q := range c.work {
					if w := &c.work[q]; w.u > 0 {
						v -= w.u * w.coef(n, k, i, j)
					}
				}
				nw[x] = v
				best = max(best, v)
			}
		}
		newV += best
	}
	if !(newV < oldV-1e-12*(1+math.Abs(oldV))) {
		return 0
	}
	c.stats.Steps++
	oldK, newK := 0.0, 0.0
	for q := range c.held[cy] {
		oldK += c.held[cy][q].u * c.held[cy][q].rhs()
	}
	for q := range c.work {
		newK += c.work[q].u * c.work[q].rhs()
	}
	g.shift += newK - oldK
	c.held[cy] = c.held[cy][:0]
	for _, w := range c.work {
		if w.u > 0 {
			c.held[cy] = append(c.held[cy], w)
		}
	}
	for k := 0; k < n; k++ {
		e := c.cedge[lo+k]
		a, b := card(k), card(k+1)
		mm, nw := c.mm[k*k2:k*k2+a*b], c.nw[k*k2:k*k2+a*b]
		t := g.data[g.toff[e]:]
		for i := 0; i < a; i++ {
			for j := 0; j < b; j++ {
				x := i*b + j
				if mm[x] == negInf {
					continue
				}
				d := nw[x] - mm[x]
				if c.cflip[lo+k] {
					t[j*a+i] += d
				} else {
					t[x] += d
				}
			}
		}
		c.touched(e)
	}
	return oldV - newV
}

// agrees reports whether some labelling x of cycle cy's variables attains
// the maximum of every edge's max-marginal (c.mm) and makes every held
// inequality tight. The cycle's LP optimum is then its old value (x is a
// vertex of the LP worth sum_k max mm_k + sum_q u_q (|F_q| - 1), and no
// point is worth more), so the step could not lower the bound and its LP
// is skipped.
func (c *lpc) agrees(cy, n int, card func(int) int) bool {
	const k2 = maxCycleCard * maxCycleCard
	var top [4]float64
	for k := 0; k < n; k++ {
		top[k] = negInf
		for _, v := range c.mm[k*k2 : k*k2+card(k)*card(k+1)] {
			top[k] = max(top[k], v)
		}
		top[k] -= 1e-12 * (1 + math.Abs(top[k]))
	}
	var x [4]int
	for {
		ok := true
		for k := 0; k < n && ok; k++ {
			b := card(k + 1)
			ok = c.mm[k*k2+x[k]*b+x[(k+1)%n]] >= top[k]
		}
		for q := 0; q < len(c.held[cy]) && ok; q++ {
			h := &c.held[cy][q]
			sum := 0.0
			for k := 0; k < n; k++ {
				sum += h.coef(n, k, x[k], x[(k+1)%n])
			}
			ok = sum == h.rhs()
		}
		if ok {
			return true
		}
		if !nextLabelling(&x, n, card) {
			return false
		}
	}
}

// nextLabelling advances x[:n] to the next labelling of a cycle's n nodes
// (node k has card(k) states, node 0 changes fastest) and reports false,
// x all zeros again, after the last one.
func nextLabelling(x *[4]int, n int, card func(int) int) bool {
	for k := 0; k < n; k++ {
		if x[k]++; x[k] < card(k) {
			return true
		}
		x[k] = 0
	}
	return false
}

// consRow returns the LP row of the consistency constraint of cycle node k
// (between edges k-1 and k) and state s, or -1 for the last state, whose
// constraint the normalisations imply.
func consRow(n int, card func(int) int, k, s int) int {
	if s == card(k)-1 {
		return -1
	}
	r := n
	for k2 := 0; k2 < k; k2++ {
		r += card(k2) - 1
	}
	return r + s
}

// consDual returns the dual value of consRow(n, card, k, s) (0 for none).
func (c *lpc) consDual(dual []float64, n int, card func(int) int, k, s int) float64 {
	if r := consRow(n, card, k, s); r >= 0 {
		return dual[r]
	}
	return 0
}

// Separation limits for cycles with more than two labels.
const (
	maxSepRounds = 10
	maxSepAdd    = 4  // inequalities added per round
	maxWork      = 64 // inequalities in one cycle's LP
)

// solveCycle solves max sum_k m_k.y_k over cycle cy's local polytope cut
// by its cycle inequalities, leaving the inequalities used in c.work with
// their duals as multipliers. Binary cycles take all 2^(n-1) inequalities;
// others start from the held ones and add the most violated ones found by
// enumerating the labellings, until none is violated.
func (c *lpc) solveCycle(cy, n int, card func(int) int) (*smalllp.Solution, bool) {
	const k2 = maxCycleCard * maxCycleCard
	binary := true
	for k := 0; k < n; k++ {
		binary = binary && card(k) == 2
	}
	c.work = c.work[:0]
	if binary {
		for mask := 1; mask < 1<<n; mask++ {
			if bits.OnesCount(uint(mask))%2 == 1 {
				c.work = append(c.work, ineq{mask: uint8(mask)})
			}
		}
	} else {
		c.work = append(c.work, c.held[cy]...)
	}
	// Columns: the finite entries of m.
	c.colK, c.colX = c.colK[:0], c.colX[:0]
	for k := 0; k < n; k++ {
		a, b := card(k), card(k+1)
		for x, v := range c.m[k*k2 : k*k2+a*b] {
			if v != negInf {
				c.colK = append(c.colK, int32(k))
				c.colX = append(c.colX, int32(x))
			}
		}
	}
	nc := len(c.colK)
	nfix := n
	for k := 0; k < n; k++ {
		nfix += card(k) - 1
	}
	sol := &c.sol
	for round := 0; ; round++ {
		nr := nfix + len(c.work)
		lp := &c.lp
		resetLP(lp, nr, nc)
		for col := range nc {
			k, x := int(c.colK[col]), int(c.colX[col])
			b := card(k + 1)
			i, j := x/b, x%b
			lp.C[col] = c.m[k*k2+x]
			lp.A[k*nc+col] = 1
			lp.B[k] = 1
			if r := consRow(n, card, (k+1)%n, j); r >= 0 {
				lp.A[r*nc+col] = 1
			}
			if r := consRow(n, card, k, i); r >= 0 {
				lp.A[r*nc+col] = -1
			}
			for q := range c.work {
				lp.A[(nfix+q)*nc+col] = c.work[q].coef(n, k, i, j)
			}
		}
		for q := range c.work {
			lp.Sense[nfix+q] = smalllp.Le
			lp.B[nfix+q] = c.work[q].rhs()
		}
		if err := c.solver.SolveTo(lp, sol); err != nil {
			return nil, false
		}
		if binary || round == maxSepRounds || len(c.work) >= maxWork || !c.separate(sol.X, n, card) {
			break
		}
	}
	for q := range c.work {
		c.work[q].u = max(sol.Dual[nfix+q], 0)
	}
	return sol, true
}

// separate adds to c.work up to maxSepAdd cycle inequalities that the
// cycle marginals x (LP columns) violate, the most violated first, and
// reports whether it added any. For every labelling (l_k) it takes the
// best odd F: the edges with cut_k > 1/2, with the one nearest 1/2 toggled
// when their number is even.
func (c *lpc) separate(x []float64, n int, card func(int) int) bool {
	const k2 = maxCycleCard * maxCycleCard
	y := c.nw[:n*k2]
	clear(y)
	for col, v := range x {
		y[int(c.colK[col])*k2+int(c.colX[col])] = v
	}
	type cand struct {
		q   ineq
		vio float64
	}
	var best [maxSepAdd]cand
	nb := 0
	var lab [4]int
	var cut [4]float64
	for {
		// cut_k = P(exactly one of x_k = l_k, x_{k+1} = l_{k+1}).
		for k := 0; k < n; k++ {
			a, b := card(k), card(k+1)
			la, lb := lab[k], lab[(k+1)%n]
			yk := y[k*k2 : k*k2+a*b]
			v := 0.0
			for j := 0; j < b; j++ {
				v += yk[la*b+j]
			}
			for i := 0; i < a; i++ {
				v += yk[i*b+lb]
			}
			cut[k] = v - 2*yk[la*b+lb]
		}
		var mask uint8
		near, nearK := math.Inf(1), 0
		for k := 0; k < n; k++ {
			if cut[k] > 0.5 {
				mask |= 1 << k
			}
			if d := math.Abs(2*cut[k] - 1); d < near {
				near, nearK = d, k
			}
		}
		if bits.OnesCount8(mask)%2 == 0 {
			mask ^= 1 << nearK
		}
		vio := 1 - float64(bits.OnesCount8(mask))
		for k := 0; k < n; k++ {
			if mask>>k&1 == 1 {
				vio += cut[k]
			} else {
				vio -= cut[k]
			}
		}
		if vio > 1e-7 {
			q := ineq{mask: mask}
			for k := 0; k < n; k++ {
				q.lab[k] = int8(lab[k])
			}
			// Insert into best, kept sorted by decreasing violation.
			pos := nb
			for pos > 0 && best[pos-1].vio < vio {
				pos--
			}
			if pos < maxSepAdd {
				if nb < maxSepAdd {
					nb++
				}
				copy(best[pos+1:nb], best[pos:nb-1])
				best[pos] = cand{q, vio}
			}
		}
		if !nextLabelling(&lab, n, card) {
			break
		}
	}
	added := false
	for _, b := range best[:nb] {
		dup := false
		for _, w := range c.work {
			if w.lab == b.q.lab && w.mask == b.q.mask {
				dup = true
			}
		}
		if !dup {
			c.work = append(c.work, b.q)
			added = true
		}
	}
	return added
}

// resetLP sizes lp to nr rows of nc columns, all zero and Eq.
func resetLP(lp *smalllp.LP, nr, nc int) {
	lp.C = grow(lp.C, nc)
	lp.A = grow(lp.A, nr*nc)
	lp.B = grow(lp.B, nr)
	if cap(lp.Sense) < nr {
		lp.Sense = make([]smalllp.Sense, nr)
	}
	lp.Sense = lp.Sense[:nr]
	for r := range nr {
		lp.Sense[r] = smalllp.Eq
	}
}

func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	b = b[:n]
	clear(b)
	return b
}
