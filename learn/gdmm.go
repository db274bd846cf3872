package learn

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
)

// GDMM trains a sequence labeller by the Greedy Direction Method of
// Multipliers of Yen et al. (NIPS 2016, Alg. 1) on the factorwise dual of
// the structural SVM:
//
//	min_beta  G(beta) = 1/2 ||w(beta)||^2 - sum_j delta_j' beta_j
//	s.t.      beta_f in C * simplex(Y_f) for every unigram (token) and bigram (link) factor f,
//	          M_jf beta_f = beta_j  (the link's marginals equal its tokens'),
//
// with w(beta) = sum_f Phi_f' (C e_{ybar_f} - beta_f) (eq. 10 with alpha_f
// = C e_{ybar_f} - beta_f) and delta_j the Hamming loss. Each pass
// minimises the augmented Lagrangian (eq. 12, penalty Rho) greedily, one
// factor at a time, by away-step Frank-Wolfe (Alg. 2: the greedy direction
// from the factorwise maximization oracle, eq. 15, the away direction from
// the factor's active states, eq. 16, exact line search, repeated until a
// non-drop step), then steps the multipliers (eq. 13, step Eta). Before
// its Frank-Wolfe steps a link's block also steps (exact line search)
// towards the pair marginal consistent with its tokens' (couple): on
// tagged text the links otherwise trail their tokens by many passes (the
// iterate's transitions stay near 0 while the emissions learn). Every
// factor's dual variables and messages live on its active labels only.
//
// With Options.Sublinear the oracles are Sect. 3.2's: the emission
// (inner-product) oracle searches one of SampleParts random label subsets
// plus the active labels (eq. 21); the transition (indicator) oracle
// compares the four cases of active and inactive endpoints over ordered
// views of the transition table (snapshots sorted by value, with the
// entries changed since the last snapshot checked apart), exact.
//
// The reported dual is honest: the iterate's marginals are made
// consistent (every token's marginal kept, each link given a pair
// marginal with those rows and columns, as close to its own as fits: a
// point of the scaled marginal polytope, which for a chain is the
// structured SVM's dual domain; see dual), and its dual objective
// sum_j delta_j' mu_j - 1/2 ||w(mu)||^2 is a lower bound on the primal
// optimum. The primal is evaluated at w(beta); the weights returned are
// those of the smallest primal seen.
func GDMM(ctx context.Context, d *Data, o Options) (*Weights, Result, error) {
	if err := o.Validate(); err != nil {
		return nil, Result{}, err
	}
	if err := CheckData(d); err != nil {
		return nil, Result{}, err
	}
	if d.ML != nil {
		return trainGDMMML(ctx, d.ML, o)
	}
	g := newGDMM(d.Seq, o)
	st, cancel := newStopper(ctx, &o)
	defer cancel()
	st.reserveFirstEval(d, 2)
	g.st = st
	res := Result{Run: Run{Algo: "gdmm", Primal: math.Inf(1)}, Objective: ObjectiveExact, Dual: math.Inf(-1), Gap: math.Inf(1), PrimalExact: true}
	var best *Weights
	err := st.loop(&res, g.pass, func() (float64, error) {
		dual, _ := g.dual()
		// The primal at w(beta) only: at w(mu) it was 100-200 times
		// larger on Brown (807,093 against 6,580 at pass 3, 837,071
		// against 3,853 at pass 12): consistent links carry the token
		// marginals' wrong mass into large transitions. Evaluating it
		// doubled the evaluation, a Viterbi pass over the data.
		p, _, err := Primal(st.ctx, g.w, d, o.C, o.Threads)
		if err != nil && st.ctx.Err() == nil {
			return 0, err
		}
		if err == nil && p < res.Primal {
			res.Primal, best = p, g.w.copyInto(best)
		}
		return dual, nil
	})
	if err != nil {
		return nil, res, err
	}
	return st.finish(best, d, &res), res, nil
}

// svec is a sparse vector over a small active set (linear search).
type svec struct {
	k []int32
	v []float64
}

func (s *svec) get(k int32) float64 {
	for i, x := range s.k {
		if x == k {
			return s.v[i]
		}
	}
	return 0
}

func (s *svec) add(k int32, v float64) {
	for i, x := range s.k {
		if x == k {
			s.v[i] += v
			return
		}
	}
	s.k = append(s.k, k)
	s.v = append(s.v, v)
}

// prune drops entries below eps (numerical zeros of the simplex).
func (s *svec) prune(eps float64) {
	n := 0
	for i := range s.k {
		if math.Abs(s.v[i]) > eps {
			s.k[n], s.v[n] = s.k[i], s.v[i]
			n++
		}
	}
	s.k, s.v = s.k[:n], s.v[:n]
}

// gdmmRun is the state that both GDMM trainers (gdmm on sequences,
// gdmmML on multilabel data) keep beside their data and factors.
type gdmmRun struct {
	o   Options
	L   int
	C   float64
	w   *Weights
	wmu *Weights // the repaired dual point's weights, reused
	rng *rand.Rand
	st  *stopper // the run's limits, asked between examples (nil: none)
}

// newGDMMRun starts a run on L labels and the given features, its random
// stream told apart from the other trainer's by stream.
func newGDMMRun(o Options, kind Kind, L, features int, stream uint64) gdmmRun {
	o.Eta = o.gdmmEta(kind == KindMultilabel)
	return gdmmRun{o: o, L: L, C: o.C, w: NewWeights(kind, L, features),
		rng: rand.New(rand.NewPCG(uint64(o.Seed), stream))}
}

type gdmm struct {
	d *SeqData
	gdmmRun

	uni    []svec // per token: beta_j over labels
	bi     []svec // per link (token t and t+1, indexed by t): beta_e over a*L+b
	lamL   []svec // per link: multiplier of the left marginal
	lamR   []svec // per link: multiplier of the right marginal
	link   []bool // token t has a link to t+1
	xnorm2 []float64

	// scratch
	g      []float64 // L: gradient of a unigram block
	mL, mR []float64 // L: dense messages of a link
	dir    svec
	tgt    svec
	sub    []int32
	view   *transView
	umsg   []float64 // L: a token's summed messages, zero outside usup
	usup   []int32
	order  []int     // the sentences, in this pass's order
	peer   *gdmm     // the parallel pass's second stage (nil: none yet)
	steps  int       // Frank-Wolfe steps of a gdmm without stopper (a peer)
	mark   []bool    // L: addMsg's support marks, false between calls
	msgL   []float64 // L: rho times a link's message to its left token, zero outside supL
	msgR   []float64 // L: the same to its right token
	supL   []int32
	supR   []int32
}

func newGDMM(d *SeqData, o Options) *gdmm {
	L := d.Labels
	n := len(d.Y)
	g := &gdmm{d: d, gdmmRun: newGDMMRun(o, KindSequence, L, d.Features, 0x6d),
		uni: make([]svec, n), bi: make([]svec, n), lamL: make([]svec, n), lamR: make([]svec, n),
		link: make([]bool, n), xnorm2: make([]float64, n),
		g: make([]float64, L), mL: make([]float64, L), mR: make([]float64, L), umsg: make([]float64, L),
		mark: make([]bool, L), msgL: make([]float64, L), msgR: make([]float64, L),
		order: make([]int, d.Sentences())}
	for i := range g.order {
		g.order[i] = i
	}
	for s := 0; s < d.Sentences(); s++ {
		for t := d.Start[s]; t < d.Start[s+1]; t++ {
			g.uni[t].add(d.Y[t], g.C)
			if t+1 < d.Start[s+1] {
				g.link[t] = true
				g.bi[t].add(d.Y[t]*int32(L)+d.Y[t+1], g.C)
			}
			_, val := d.X.Row(t)
			for _, v := range val {
				g.xnorm2[t] += v * v
			}
		}
	}
	if o.Sublinear {
		g.view = newTransView(g.w.Trans, L)
	}
	return g
}

// addMsg adds link e's message towards its left (left=true: token e) or
// right token (e+1), m_{jf}(y) = (M_jf beta_e)(y) - beta_j(y) +
// lambda_jf(y) (without lambda when !withLam: the residual of eq. 13),
// into the dense m, appending the labels of its support not yet in sup
// (g.mark marks sup's labels; the caller clears the marks): one pass over
// the link's, the token's and the multiplier's active entries.
func (g *gdmm) addMsg(e int, left, withLam bool, m []float64, sup []int32) []int32 {
	L := int32(g.L)
	mark := g.mark
	b := &g.bi[e]
	for i, ab := range b.k {
		y := ab % L
		if left {
			y = ab / L
		}
		if !mark[y] {
			mark[y] = true
			sup = append(sup, y)
		}
		m[y] += b.v[i]
	}
	tok, lam := &g.uni[e], &g.lamL[e]
	if !left {
		tok, lam = &g.uni[e+1], &g.lamR[e]
	}
	for i, y := range tok.k {
		if !mark[y] {
			mark[y] = true
			sup = append(sup, y)
		}
		m[y] -= tok.v[i]
	}
	if withLam {
		for i, y := range lam.k {
			if !mark[y] {
				mark[y] = true
				sup = append(sup, y)
			}
			m[y] += lam.v[i]
		}
	}
	return sup
}

// unmark clears g.mark on sup.
func (g *gdmm) unmark(sup []int32) {
	for _, y := range sup {
		g.mark[y] = false
	}
}

// linkMsgs sets g.msgL and g.msgR to rho times link e's messages towards
// its tokens (dense, zero outside g.supL and g.supR).
func (g *gdmm) linkMsgs(e int) {
	for _, y := range g.supL {
		g.msgL[y] = 0
	}
	for _, y := range g.supR {
		g.msgR[y] = 0
	}
	g.supL = g.addMsg(e, true, true, g.msgL, g.supL[:0])
	g.unmark(g.supL)
	g.supR = g.addMsg(e, false, true, g.msgR, g.supR[:0])
	g.unmark(g.supR)
	rho := g.o.Rho
	for _, y := range g.supL {
		g.msgL[y] *= rho
	}
	for _, y := range g.supR {
		g.msgR[y] *= rho
	}
}

// pass is one GDMM iteration: away-step Frank-Wolfe on every factor
// (Alg. 2), a sentence at a time: its tokens, then its links, then its
// multipliers (eq. 13). A pass cut by the run's limits stops between
// sentences.
//
// With Options.Threads >= 2 (0: every core) the pass is a two-stage
// pipeline with the same iterates: the tokens of a sentence on one
// goroutine while another steps the links and multipliers of the
// sentence before. A token's block reads and writes only the emissions
// and its own sentence's blocks and multipliers, a link's only the
// transitions and its own sentence's, so the two stages touch disjoint
// data and commute: the order of the steps on every datum is the
// sequential pass's.
func (g *gdmm) pass() {
	if g.view != nil {
		g.view.rebuild()
	}
	// The sentences in a new random order each pass, as BCFW's blocks:
	// in the corpus' order (sentences of a genre together, the same
	// order every pass) GDMM's primal after 30 passes at 105 tags was
	// 3,082 where shuffled it was 2,045 (docs/learning.md).
	g.rng.Shuffle(len(g.order), func(a, b int) { g.order[a], g.order[b] = g.order[b], g.order[a] })
	threads := threadsOr(g.o.Threads)
	if threads < 2 || len(g.order) < 2 {
		for k, s := range g.order {
			if g.st != nil && k%stopCheckEvery == 0 && g.st.stop() {
				return
			}
			g.tokens(s)
			g.links(s)
		}
		return
	}
	if g.peer == nil {
		g.peer = g.newPeer()
	}
	peer, prev := g.peer, -1
	var wg sync.WaitGroup
	for k, s := range g.order {
		if g.st != nil && k%stopCheckEvery == 0 && g.st.stop() {
			break
		}
		if prev >= 0 {
			wg.Add(1)
			go func(p int) {
				defer wg.Done()
				peer.links(p)
			}(prev)
		}
		g.tokens(s)
		wg.Wait()
		prev = s
	}
	if prev >= 0 {
		g.links(prev)
	}
	if g.st != nil {
		g.st.steps += peer.steps
	}
	peer.steps = 0
}

// tokens steps the token blocks of sentence s.
func (g *gdmm) tokens(s int) {
	for t := g.d.Start[s]; t < g.d.Start[s+1]; t++ {
		g.unigram(t)
	}
}

// links steps the link blocks of sentence s, then its multipliers: they
// enter only its own factors, so stepping them now is Alg. 1's step 2
// for them.
func (g *gdmm) links(s int) {
	t0, t1 := g.d.Start[s], g.d.Start[s+1]
	for t := t0; t < t1; t++ {
		if g.link[t] {
			g.bigram(t)
		}
	}
	g.multipliers(t0, t1)
}

// newPeer returns the pipeline's second stage: g's blocks, multipliers,
// weights and transition view, its own scratch, no stopper (its steps
// counted in steps).
func (g *gdmm) newPeer() *gdmm {
	p := *g
	L := g.L
	p.st = nil
	p.dir, p.tgt, p.sub, p.usup, p.supL, p.supR = svec{}, svec{}, nil, nil, nil, nil
	p.g, p.mL, p.mR, p.umsg = make([]float64, L), make([]float64, L), make([]float64, L), make([]float64, L)
	p.msgL, p.msgR, p.mark = make([]float64, L), make([]float64, L), make([]bool, L)
	p.peer = nil
	return &p
}

// coupleStep moves link e's block towards the pair marginal consistent
// with its tokens (couple), with exact line search on the augmented
// Lagrangian, when that descends: a feasible direction of the block
// besides Alg. 2's vertices.
func (g *gdmm) coupleStep(e int, grad func(int32) float64, curv func(*svec) float64) {
	b := &g.bi[e]
	g.couple(e, &g.tgt)
	dir := &g.dir
	dir.k, dir.v = dir.k[:0], dir.v[:0]
	for i, ab := range b.k {
		dir.add(ab, -b.v[i])
	}
	for i, ab := range g.tgt.k {
		dir.add(ab, g.tgt.v[i])
	}
	slope := 0.0
	for i, ab := range dir.k {
		slope += dir.v[i] * grad(ab)
	}
	if !(slope < 0) {
		return
	}
	h := curv(dir)
	gamma := 1.0
	if h > 0 {
		gamma = min(1, -slope/h)
	}
	T := g.w.Trans
	for i, ab := range dir.k {
		dv := gamma * dir.v[i]
		if dv == 0 {
			continue
		}
		b.add(ab, dv)
		T[ab] -= dv
		if g.view != nil {
			g.view.touch(ab)
		}
	}
	b.prune(1e-12 * g.C)
}

// multipliers steps the multipliers of the links among tokens t0..t1
// (eq. 13).
func (g *gdmm) multipliers(t0, t1 int) {
	eta := g.o.Eta
	sup, r := g.sub, g.umsg
	for e := t0; e < t1; e++ {
		if !g.link[e] {
			continue
		}
		for _, left := range [2]bool{true, false} {
			sup = g.addMsg(e, left, false, r, sup[:0])
			g.unmark(sup)
			lam := &g.lamL[e]
			if !left {
				lam = &g.lamR[e]
			}
			for _, y := range sup {
				if r[y] != 0 {
					lam.add(y, eta*r[y])
				}
				r[y] = 0
			}
			lam.prune(1e-12 * g.C)
		}
	}
	g.sub = sup
}

// unigram runs away-step Frank-Wolfe on token t's block.
func (g *gdmm) unigram(t int) {
	L, rho := g.L, g.o.Rho
	d := g.d
	idx, val := d.X.Row(t)
	ybar := d.Y[t]
	deg := 0.0
	if g.link[t] {
		deg++
	}
	if t > 0 && g.link[t-1] {
		deg++
	}
	// ms: the messages of both links at the current block, dense (zero
	// outside usup, where they vanish), recomputed before each step.
	ms := g.umsg
	grad := func(y int32, s float64) float64 {
		v := -s - rho*ms[y]
		if y != ybar {
			v--
		}
		return v
	}
	defer func() {
		for _, y := range g.usup {
			ms[y] = 0
		}
	}()
	score := func(y int32) float64 {
		s := 0.0
		for k, f := range idx {
			if int(f) < g.w.Features {
				s += val[k] * g.w.Emit[int(f)*L+int(y)]
			}
		}
		return s
	}
	curv := g.xnorm2[t] + rho*deg
	b := &g.uni[t]
	for step := 0; step < 2*len(b.k)+2; step++ {
		for _, y := range g.usup {
			ms[y] = 0
		}
		g.usup = g.usup[:0]
		if g.link[t] {
			g.usup = g.addMsg(t, true, true, ms, g.usup)
		}
		if t > 0 && g.link[t-1] {
			g.usup = g.addMsg(t-1, false, true, ms, g.usup)
		}
		g.unmark(g.usup)
		// FMO (eq. 15): the label of least gradient.
		yPlus, gPlus := int32(-1), math.Inf(1)
		if g.o.Sublinear && g.o.SampleParts > 1 {
			// Sect. 3.2, eq. 21: one random subset of the labels, plus
			// the labels with messages or mass (exact on those).
			part := g.rng.IntN(g.o.SampleParts)
			for y := int32(part); int(y) < L; y += int32(g.o.SampleParts) {
				if v := grad(y, score(y)); v < gPlus {
					yPlus, gPlus = y, v
				}
			}
			g.sub = append(append(g.sub[:0], g.usup...), b.k...)
			for _, y := range g.sub {
				if v := grad(y, score(y)); v < gPlus {
					yPlus, gPlus = y, v
				}
			}
		} else {
			g.w.scores(idx, val, g.g)
			for y := 0; y < L; y++ {
				if v := grad(int32(y), g.g[y]); v < gPlus {
					yPlus, gPlus = int32(y), v
				}
			}
		}
		if !g.afwStep(b, yPlus, gPlus, func(y int32) float64 { return grad(y, score(y)) },
			func(dir *svec) float64 { return curv * sqnorm(dir) },
			func(y int32, dv float64) {
				// w = sum (C e_ybar - beta): Emit[f, y] -= dv x_f.
				for k, f := range idx {
					if int(f) < g.w.Features {
						g.w.Emit[int(f)*L+int(y)] -= dv * val[k]
					}
				}
			}) {
			break
		}
	}
}

func sqnorm(s *svec) float64 {
	v := 0.0
	for _, x := range s.v {
		v += x * x
	}
	return v
}

// bigram runs away-step Frank-Wolfe on link e's block (L^2 states).
func (g *gdmm) bigram(e int) {
	L, rho := g.L, g.o.Rho
	Li := int32(L)
	T := g.w.Trans
	b := &g.bi[e]
	// The gradient at the block where linkMsgs was last called.
	grad := func(ab int32) float64 {
		return -T[ab] + g.msgL[ab/Li] + g.msgR[ab%Li]
	}
	curv := func(dir *svec) float64 {
		// ||d||^2 from T, plus rho ||M_L d||^2 + rho ||M_R d||^2.
		v := sqnorm(dir)
		for _, left := range []bool{true, false} {
			for i, ab := range dir.k {
				key := ab % Li
				if left {
					key = ab / Li
				}
				first := true
				for j := 0; j < i; j++ {
					k2 := dir.k[j] % Li
					if left {
						k2 = dir.k[j] / Li
					}
					if k2 == key {
						first = false
						break
					}
				}
				if !first {
					continue
				}
				s := 0.0
				for j := i; j < len(dir.k); j++ {
					k2 := dir.k[j] % Li
					if left {
						k2 = dir.k[j] / Li
					}
					if k2 == key {
						s += dir.v[j]
					}
				}
				v += rho * s * s
			}
		}
		return v
	}
	g.linkMsgs(e)
	g.coupleStep(e, grad, curv)
	for step := 0; step < 2*len(b.k)+2; step++ {
		g.linkMsgs(e)
		var ab int32
		var gv float64
		if g.view != nil {
			ab, gv = g.view.argmin(g.msgL, g.msgR, g.supL, g.supR)
		} else {
			ab, gv = fmoDense(T, L, g.msgL, g.msgR)
		}
		more := g.afwStep(b, ab, gv, grad, curv, func(ab int32, dv float64) {
			T[ab] -= dv
			if g.view != nil {
				g.view.touch(ab)
			}
		})
		if !more {
			break
		}
	}
	for _, y := range g.supL {
		g.msgL[y] = 0
	}
	for _, y := range g.supR {
		g.msgR[y] = 0
	}
	g.supL, g.supR = g.supL[:0], g.supR[:0]
}

// fmoDense is the exact transition oracle: argmin over (a, b) of
// -T[a,b] + mL[a] + mR[b], O(L^2).
func fmoDense(T []float64, L int, mL, mR []float64) (int32, float64) {
	best, arg := math.Inf(1), int32(0)
	for a := 0; a < L; a++ {
		row := T[a*L : a*L+L]
		ma := mL[a]
		for b, tv := range row {
			if v := ma + mR[b] - tv; v < best {
				best, arg = v, int32(a*L+b)
			}
		}
	}
	return arg, best
}

// afwStep does one away-step Frank-Wolfe step (Alg. 2, eqs. 15-17) on a
// block beta (sum C) with FMO vertex yPlus (gradient gPlus); grad gives the
// gradient at an active state, curv the curvature d'Hd of a direction,
// apply the change of w for a change dv of beta at a state. It reports
// whether the step was a drop step (the caller repeats then).
func (g *gdmm) afwStep(b *svec, yPlus int32, gPlus float64, grad func(int32) float64, curv func(*svec) float64, apply func(int32, float64)) (drop bool) {
	C := g.C
	if g.st != nil {
		g.st.steps++
	} else {
		g.steps++
	}
	// <grad, beta> and the away vertex (eq. 16).
	gb, yMinus, gMinus := 0.0, int32(-1), math.Inf(-1)
	for i, y := range b.k {
		gy := grad(y)
		gb += gy * b.v[i]
		if gy > gMinus {
			yMinus, gMinus = y, gy
		}
	}
	fwGap := gb - C*gPlus  // <grad, beta - C e+> = -<grad, d_F>
	awGap := C*gMinus - gb // -<grad, d_A>
	dir := &g.dir
	dir.k, dir.v = dir.k[:0], dir.v[:0]
	var gmax float64
	var slope float64
	if fwGap >= awGap || yMinus < 0 || b.get(yMinus) >= C*(1-1e-12) {
		if fwGap <= 1e-12*C {
			return false
		}
		// d_F = C e+ - beta.
		for i, y := range b.k {
			dir.add(y, -b.v[i])
		}
		dir.add(yPlus, C)
		gmax, slope = 1, -fwGap
	} else {
		if awGap <= 1e-12*C {
			return false
		}
		// d_A = beta - C e-, gamma <= c/(1-c) with c = beta(y-)/C.
		for i, y := range b.k {
			dir.add(y, b.v[i])
		}
		dir.add(yMinus, -C)
		c := b.get(yMinus) / C
		gmax, slope = c/(1-c), -awGap
	}
	h := curv(dir)
	gamma := gmax
	if h > 0 {
		gamma = min(gmax, -slope/h)
	}
	if gamma <= 0 {
		return false
	}
	for i, y := range dir.k {
		dv := gamma * dir.v[i]
		if dv == 0 {
			continue
		}
		b.add(y, dv)
		apply(y, dv)
	}
	b.prune(1e-12 * C)
	return gamma >= gmax && gmax < 1
}

// dual returns the dual objective of the iterate made consistent and
// the weights w(mu) of that point. The consistent point keeps every
// token's marginal beta_t (so w(mu)'s emissions are w(beta)'s and the
// loss term is the iterate's) and gives each link a pair marginal mu_e
// whose rows sum to beta_t and columns to beta_{t+1}: beta_e's mass where
// it fits (mu_e(a,b) = min(beta_e(a,b), what row a and column b have
// left), greedily), the rest the product of the rows' and columns'
// remainders over their total. Locally consistent marginals of a chain
// (a tree) are marginals of a distribution over its labellings (C times
// one), so mu is a point of the structural SVM's dual domain and
// sum_j delta_j' mu_j - 1/2 ||w(mu)||^2 a lower bound on the primal
// optimum; only the transitions differ from w(beta), by how far the
// links are from their tokens.
func (g *gdmm) dual() (float64, *Weights) {
	d, L, C := g.d, g.L, g.C
	w := g.wmu.reset(KindSequence, L, d.Features)
	g.wmu = w
	copy(w.Emit, g.w.Emit)
	lin := 0.0
	var mu svec
	for t, ybar := range d.Y {
		for i, y := range g.uni[t].k {
			if y != ybar {
				lin += g.uni[t].v[i]
			}
		}
		if !g.link[t] {
			continue
		}
		w.Trans[int(ybar)*L+int(d.Y[t+1])] += C
		g.couple(t, &mu)
		for i, ab := range mu.k {
			w.Trans[ab] -= mu.v[i]
		}
	}
	return lin - 0.5*w.SqNorm(), w
}

// couple sets mu to the pair marginal of link e consistent with its
// tokens' marginals (rows beta_e's token, columns the next token's) that
// keeps as much of beta_e as fits: mu(a,b) = min(beta_e(a,b), what row a
// and column b have left), greedily, plus the product of the rows' and
// columns' remainders over their total.
func (g *gdmm) couple(e int, mu *svec) {
	Li := int32(g.L)
	row, col := g.mL, g.mR // dense scratch, zero outside the active labels
	p, q := &g.uni[e], &g.uni[e+1]
	mu.k, mu.v = mu.k[:0], mu.v[:0]
	for i, a := range p.k {
		row[a] = p.v[i]
	}
	for i, b := range q.k {
		col[b] = q.v[i]
	}
	for i, ab := range g.bi[e].k {
		a, b := ab/Li, ab%Li
		if m := min(g.bi[e].v[i], row[a], col[b]); m > 0 {
			mu.k, mu.v = append(mu.k, ab), append(mu.v, m)
			row[a] -= m
			col[b] -= m
		}
	}
	cs := 0.0
	for _, b := range q.k {
		cs += max(col[b], 0)
	}
	if cs > 0 {
		for _, a := range p.k {
			ra := max(row[a], 0)
			if ra == 0 {
				continue
			}
			for _, b := range q.k {
				if cb := max(col[b], 0); cb > 0 {
					mu.add(a*Li+b, ra*cb/cs)
				}
			}
		}
	}
	for _, a := range p.k {
		row[a] = 0
	}
	for _, b := range q.k {
		col[b] = 0
	}
}
