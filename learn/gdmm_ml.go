package learn

import (
	"context"
	"math"
	"slices"
)

// trainGDMMML is GDMM on multilabel data (Yen et al. NIPS 2016, Alg. 1 with Alg. 3's
// block-greedy coordinate descent). The factor graph of example i has one
// binary variable per label l (its unigram factor, features x_i, loss
// [y_l != ybar_l]) and one pairwise factor per label pair (a, b) with four
// states, whose only feature is the indicator of state (1,1) (weight
// Pair[a*L+b]). In beta = C e_ybar - alpha form (see GDMM), the unigram
// block of label l is u_l = beta_l(1) in [0, C]; the pair block is
// beta_f in C * simplex over {00, 01, 10, 11}, q_f = beta_f(11); the
// consistency constraints M_jf beta_f = beta_j read beta_f(1.) = u_a and
// beta_f(.1) = u_b (the state-0 rows are implied by the simplex), one
// scalar multiplier each. The dual objective
//
//	D(beta) = sum_i sum_l loss_il(u_il) - 1/2 ||w(beta)||^2,
//	W_l = sum_i x_i (C ybar_il - u_il),  Pair_ab = sum_i (C ybar_ia ybar_ib - q_iab),
//
// maximised over the scaled local polytope, is the dual of the LP-relaxed
// structural SVM (eq. 5): the objective GDMM reports on multilabel data is
// PrimalLP, not the exact Primal (the two agree where the LP relaxation of
// the loss-augmented maximisation is tight; the LP one is never smaller).
//
// Active sets. Example i keeps an active label set S_i (its positives at
// first); the unigram blocks of S_i and the pair blocks of S_i x S_i are
// explicit (stored, with their multipliers). Every other factor is
// implicit and exactly consistent at q = 0: a pair with an endpoint b
// outside S_i has u_b = 0 (b is a negative label never activated), so
// beta_f(11) = 0, beta_f(10) = u_a, beta_f(00) = C - u_a is consistent,
// contributes nothing to w and nothing to the augmented Lagrangian.
//
// A pass, for every example: (1) the joint FMO (eq. 18) over the implicit
// factors picks the label b outside S_i whose activation has the steepest
// ascent of the dual, s_b + 1 + sum_{a in S_i} c_ab (s_b = <W_b, x_i>, the
// pair term c_ab = Pair_ab where u_a = C, max(0, Pair_ab) where 0 < u_a <
// C, 0 where u_a = 0), and activates it when that slope is positive; with
// Options.Sublinear the search covers one random part of SampleParts
// label parts (Sect. 3.2's partition sampling for inner-product factors,
// cost O(nnz L / nu)); (2) every explicit block takes one step of eq. 19:
// the unigram blocks an exact coordinate minimisation of the augmented
// Lagrangian (eq. 12; curvature ||x_i||^2 + rho deg), the pair blocks a
// projected gradient step onto the simplex with exact line search; (3)
// the multipliers step (eq. 13). Since the multipliers of example i enter
// only example i's blocks, stepping them right after its blocks equals
// Alg. 1's step 2 after the pass.
//
// Column generation: each evaluation computes the LP-relaxed
// loss-augmented maximiser of every example (PrimalLP needs it anyway);
// the first label of its support outside S_i is activated. This covers
// directions the single-label FMO cannot see (two inactive labels that pay
// only together, through a positive Pair) and makes the fixed point the
// optimum of the LP-relaxed problem.
//
// Honest dual: the iterate is made feasible (u clamped to [0, C], each
// explicit q clamped to its local-polytope interval [max(0, u_a+u_b-C),
// min(u_a, u_b)]), w recomputed from scratch, and D of that point
// reported (the best so far). The primal PrimalLP is evaluated at both the
// iterate's w and the repaired point's; the smaller is kept.
func trainGDMMML(ctx context.Context, d *MLData, o Options) (*Weights, Result, error) {
	g := newGDMMML(d, o)
	st, cancel := newStopper(ctx, &o)
	defer cancel()
	g.st = st
	res := Result{Run: Run{Algo: "gdmm", Primal: math.Inf(1)}, Objective: ObjectiveLP, Dual: math.Inf(-1), Gap: math.Inf(1), PrimalExact: true}
	var best *Weights
	supp := make([][]int32, d.Examples())
	err := st.loop(&res, g.pass, func() (float64, error) {
		dual, wmu := g.dual()
		for k, w := range []*Weights{g.w, wmu} {
			var sp [][]int32
			if k == 0 {
				sp = supp
			}
			p, err := PrimalLP(st.ctx, w, d, o.C, o.Threads, sp, maxSuppLabels)
			if err != nil {
				if st.ctx.Err() == nil {
					return 0, err
				}
				continue
			}
			if k == 0 {
				g.prune()
				g.activateSupport(supp)
			}
			if p < res.Primal {
				res.Primal, best = p, w.copyInto(best)
			}
		}
		return dual, nil
	})
	if err != nil {
		return nil, res, err
	}
	return st.finish(best, &Data{ML: d}, &res), res, nil
}

// maxSuppLabels bounds the LP support labels read per example and
// evaluation.
const maxSuppLabels = 64

// mlEx is one example's explicit blocks.
type mlEx struct {
	lab []int32   // S_i: the active labels (positives first)
	pos []bool    // lab[k] is a positive label
	u   []float64 // u_k = beta_k(1)
	// Pair blocks of positions k < m at offset o = m(m-1)/2 + k: beta at
	// pb[4o:4o+4] (states 2 y_k + y_m: 00, 01, 10, 11), the multipliers
	// of the constraints beta(1.) = u_k and beta(.1) = u_m at lam[2o],
	// lam[2o+1].
	pb  []float64
	lam []float64
}

type gdmmML struct {
	d *MLData
	gdmmRun

	ex     []mlEx
	xnorm2 []float64
	in     []bool    // L: scratch membership of S_i
	s      []float64 // L: scratch scores
}

func newGDMMML(d *MLData, o Options) *gdmmML {
	L := d.Labels
	n := d.Examples()
	g := &gdmmML{d: d, gdmmRun: newGDMMRun(o, KindMultilabel, L, d.Features, 0x3d),
		ex: make([]mlEx, n), xnorm2: make([]float64, n), in: make([]bool, L), s: make([]float64, L)}
	for i := range g.ex {
		_, val := d.X.Row(i)
		for _, v := range val {
			g.xnorm2[i] += v * v
		}
		e := &g.ex[i]
		for _, y := range d.Positive(i) {
			if int(y) >= L {
				continue
			}
			e.lab = append(e.lab, y)
			e.pos = append(e.pos, true)
			e.u = append(e.u, g.C)
			for range len(e.lab) - 1 {
				e.pb = append(e.pb, 0, 0, 0, g.C) // both on, as the truth
				e.lam = append(e.lam, 0, 0)
			}
		}
	}
	return g
}

func pairOff(k, m int) int { return m*(m-1)/2 + k }

func (g *gdmmML) pidx(a, b int32) int {
	return int(min(a, b))*g.L + int(max(a, b))
}

// activate appends label b (outside S_i, u_b = 0) to example i's active
// set with its pair blocks at q = 0, consistent with the current u.
func (g *gdmmML) activate(e *mlEx, b int32) {
	for k := range e.lab {
		e.pb = append(e.pb, g.C-e.u[k], 0, e.u[k], 0)
		e.lam = append(e.lam, 0, 0)
	}
	e.lab = append(e.lab, b)
	e.pos = append(e.pos, false)
	e.u = append(e.u, 0)
}

// activateSupport activates, per example, the first LP-support label
// outside its active set (column generation; see gdmmML).
func (g *gdmmML) activateSupport(supp [][]int32) {
	for i := range g.ex {
		e := &g.ex[i]
		for _, b := range supp[i] {
			if !slices.Contains(e.lab, b) {
				g.activate(e, b)
				break
			}
		}
	}
}

// prune drops from every active set the negative labels that are dead:
// u = 0, no pair block with mass on their state 1 (so the implicit
// completion q = 0 is exactly the explicit blocks' state) and no positive
// activation slope (the FMO would not pick them again). Their pair blocks
// and multipliers go with them: the multipliers restart at 0 if the label
// is activated again. This bounds the active sets by the labels that
// matter at the current iterate instead of every label ever activated.
func (g *gdmmML) prune() {
	for i := range g.ex {
		e := &g.ex[i]
		for k := len(e.lab) - 1; k >= 0; k-- {
			if e.pos[k] || e.u[k] != 0 || !g.deadPairs(e, k) || g.slope(i, k) > 0 {
				continue
			}
			g.drop(e, k)
		}
	}
}

// deadPairs reports whether no pair block of position k has mass on k's state 1.
func (g *gdmmML) deadPairs(e *mlEx, k int) bool {
	for m := range e.lab {
		switch {
		case m < k:
			o := pairOff(m, k)
			if e.pb[4*o+1] != 0 || e.pb[4*o+3] != 0 {
				return false
			}
		case m > k:
			o := pairOff(k, m)
			if e.pb[4*o+2] != 0 || e.pb[4*o+3] != 0 {
				return false
			}
		}
	}
	return true
}

// slope is the FMO's activation slope of position k's label against the
// other active labels of example i.
func (g *gdmmML) slope(i, k int) float64 {
	e := &g.ex[i]
	b := e.lab[k]
	idx, val := g.d.X.Row(i)
	s := 1.0
	for j, f := range idx {
		if int(f) < g.w.Features {
			s += val[j] * g.w.Emit[int(f)*g.L+int(b)]
		}
	}
	for m, a := range e.lab {
		if m == k {
			continue
		}
		p := g.w.Pair[g.pidx(a, b)]
		switch u := e.u[m]; {
		case u >= g.C:
			s += p
		case u > 0:
			s += max(0, p)
		}
	}
	return s
}

// drop removes position k from e, compacting the pair storage.
func (g *gdmmML) drop(e *mlEx, k int) {
	n := len(e.lab)
	pb, lam := e.pb[:0], e.lam[:0]
	// Offsets are increasing in (m, then k'): compact in order.
	for m := 1; m < n; m++ {
		for j := 0; j < m; j++ {
			if j == k || m == k {
				continue
			}
			o := pairOff(j, m)
			pb = append(pb, e.pb[4*o:4*o+4]...)
			lam = append(lam, e.lam[2*o:2*o+2]...)
		}
	}
	e.pb, e.lam = pb, lam
	e.lab = slices.Delete(e.lab, k, k+1)
	e.pos = slices.Delete(e.pos, k, k+1)
	e.u = slices.Delete(e.u, k, k+1)
}

// fmo is the joint FMO of example i over its implicit factors: the label
// outside S_i of steepest dual ascent and that slope (see gdmmML).
func (g *gdmmML) fmo(i int) (int32, float64) {
	L, C := g.L, g.C
	e := &g.ex[i]
	idx, val := g.d.X.Row(i)
	for _, a := range e.lab {
		g.in[a] = true
	}
	step, first := 1, 0
	if g.o.Sublinear && g.o.SampleParts > 1 {
		step = g.o.SampleParts
		first = g.rng.IntN(step)
	}
	best, arg := 0.0, int32(-1)
	P := g.w.Pair
	for b := first; b < L; b += step {
		if g.in[b] {
			continue
		}
		s := 1.0
		if step == 1 {
			if b == first {
				g.w.scores(idx, val, g.s)
			}
			s += g.s[b]
		} else {
			for k, f := range idx {
				if int(f) < g.w.Features {
					s += val[k] * g.w.Emit[int(f)*L+b]
				}
			}
		}
		for k, a := range e.lab {
			p := P[g.pidx(a, int32(b))]
			switch u := e.u[k]; {
			case u >= C:
				s += p
			case u > 0:
				s += max(0, p)
			}
		}
		if s > best {
			best, arg = s, int32(b)
		}
	}
	for _, a := range e.lab {
		g.in[a] = false
	}
	return arg, best
}

// pass is one GDMM iteration (see gdmmML).
func (g *gdmmML) pass() {
	for i := range g.ex {
		if g.st != nil && i%stopCheckEvery == 0 && g.st.stop() {
			return
		}
		if b, slope := g.fmo(i); b >= 0 && slope > 1e-12 {
			g.activate(&g.ex[i], b)
		}
		g.sweep(i)
		if g.st != nil {
			g.st.steps++
		}
	}
}

// sweep steps every explicit block of example i, then its multipliers.
func (g *gdmmML) sweep(i int) {
	L, C, rho := g.L, g.C, g.o.Rho
	e := &g.ex[i]
	idx, val := g.d.X.Row(i)
	n := len(e.lab)
	// Unigram blocks: exact minimisation of the augmented Lagrangian in u.
	for k := 0; k < n; k++ {
		l := int(e.lab[k])
		s := 0.0
		for j, f := range idx {
			if int(f) < g.w.Features {
				s += val[j] * g.w.Emit[int(f)*L+l]
			}
		}
		gr := -s - 1
		if e.pos[k] {
			gr = -s + 1
		}
		deg := 0
		for m := 0; m < n; m++ {
			if m == k {
				continue
			}
			var r float64
			if m < k { // pair (m, k): k is the second endpoint
				o := pairOff(m, k)
				b := e.pb[4*o : 4*o+4]
				r = b[1] + b[3] - e.u[k] + e.lam[2*o+1]
			} else {
				o := pairOff(k, m)
				b := e.pb[4*o : 4*o+4]
				r = b[2] + b[3] - e.u[k] + e.lam[2*o]
			}
			gr -= rho * r
			deg++
		}
		h := g.xnorm2[i] + rho*float64(deg)
		var nu float64
		switch {
		case h > 0:
			nu = min(C, max(0, e.u[k]-gr/h))
		case gr < 0:
			nu = C
		case gr > 0:
			nu = 0
		default:
			nu = e.u[k]
		}
		if dv := nu - e.u[k]; dv != 0 {
			e.u[k] = nu
			for j, f := range idx {
				if int(f) < g.w.Features {
					g.w.Emit[int(f)*L+l] -= dv * val[j]
				}
			}
		}
	}
	// Pair blocks: a projected gradient step (eq. 19) with exact line search.
	P := g.w.Pair
	Q := 1 + 2*rho
	var t [4]float64
	for m := 1; m < n; m++ {
		for k := 0; k < m; k++ {
			o := pairOff(k, m)
			b := e.pb[4*o : 4*o+4]
			pi := g.pidx(e.lab[k], e.lab[m])
			ra := b[2] + b[3] - e.u[k] + e.lam[2*o]
			rb := b[1] + b[3] - e.u[m] + e.lam[2*o+1]
			gr := [4]float64{0, rho * rb, rho * ra, -P[pi] + rho*(ra+rb)}
			for j := range t {
				t[j] = b[j] - gr[j]/Q
			}
			projSimplex4(&t, C)
			var dd [4]float64
			slope := 0.0
			for j := range dd {
				dd[j] = t[j] - b[j]
				slope += gr[j] * dd[j]
			}
			if slope >= 0 {
				continue
			}
			curv := dd[3]*dd[3] + rho*(dd[2]+dd[3])*(dd[2]+dd[3]) + rho*(dd[1]+dd[3])*(dd[1]+dd[3])
			gamma := 1.0
			if curv > 0 {
				gamma = min(1, -slope/curv)
			}
			for j := range dd {
				b[j] = max(0, b[j]+gamma*dd[j])
			}
			P[pi] -= gamma * dd[3]
		}
	}
	// Multipliers (eq. 13).
	eta := g.o.Eta
	for m := 1; m < n; m++ {
		for k := 0; k < m; k++ {
			o := pairOff(k, m)
			b := e.pb[4*o : 4*o+4]
			e.lam[2*o] += eta * (b[2] + b[3] - e.u[k])
			e.lam[2*o+1] += eta * (b[1] + b[3] - e.u[m])
		}
	}
}

// projSimplex4 projects t onto {x >= 0, sum x = C} (Euclidean).
func projSimplex4(t *[4]float64, C float64) {
	v := *t
	// Sort descending (4 entries).
	for i := 1; i < 4; i++ {
		for j := i; j > 0 && v[j] > v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
	sum, theta := 0.0, 0.0
	for j := 0; j < 4; j++ {
		sum += v[j]
		if th := (sum - C) / float64(j+1); v[j]-th > 0 {
			theta = th
		}
	}
	for j := range t {
		t[j] = max(0, t[j]-theta)
	}
}

// dual returns the dual objective of the iterate made feasible (see
// gdmmML) and the weights of that point.
func (g *gdmmML) dual() (float64, *Weights) {
	L, C := g.L, g.C
	w := g.wmu.reset(KindMultilabel, L, g.d.Features)
	g.wmu = w
	lin := 0.0
	for i := range g.ex {
		e := &g.ex[i]
		idx, val := g.d.X.Row(i)
		n := len(e.lab)
		for k := 0; k < n; k++ {
			u := min(C, max(0, e.u[k]))
			c := -u
			if e.pos[k] {
				c = C - u
				lin += C - u
			} else {
				lin += u
			}
			l := int(e.lab[k])
			for j, f := range idx {
				if int(f) < w.Features {
					w.Emit[int(f)*L+l] += c * val[j]
				}
			}
		}
		for m := 1; m < n; m++ {
			for k := 0; k < m; k++ {
				o := pairOff(k, m)
				ua, ub := min(C, max(0, e.u[k])), min(C, max(0, e.u[m]))
				q := min(min(ua, ub), max(max(0, ua+ub-C), e.pb[4*o+3]))
				c := -q
				if e.pos[k] && e.pos[m] {
					c += C
				}
				w.Pair[g.pidx(e.lab[k], e.lab[m])] += c
			}
		}
	}
	return lin - 0.5*w.SqNorm(), w
}
