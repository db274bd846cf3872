package learn

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
)

// BCFW trains by block-coordinate Frank-Wolfe on the structural SVM dual
// (Lacoste-Julien, Jaggi, Schmidt, Pletscher, ICML 2013, Alg. 4), one block
// per sentence or example, in this package's scaling (doc.go):
//
//	max_beta D(beta) = sum_i l_i - 1/2 ||w||^2,  w = sum_i w_i,
//	w_i = C phi(x_i, ybar_i) - C E_{beta_i}[phi(x_i, y)],  l_i = C E_{beta_i}[Hamming(y, ybar_i)],
//	beta_i a distribution over the labellings of example i.
//
// (Alg. 4 with lambda = 1/(C n) and its objective multiplied by C n.)
// A block is stored as its marginals scaled by C: mu_t over labels per
// token and mu_e over label pairs per link (sequences), mu_l per label and
// mu_ab per label pair (multilabel), so w_i and l_i are linear in them and
// never stored densely. A step calls the loss-augmented oracle y* (Viterbi
// on loss-augmented emissions for sequences; MLHinge's maximisation for
// multilabel), takes the block gap
//
//	g_i = C * aug(y*) - E_{mu_i}[aug(y)],  aug(y) = <w, phi(x_i, y)> + Hamming(y, ybar_i)
//
// (which is (l_s - l_i) - <w, w_s - w_i> of Alg. 4 written through the
// oracle's maximum), and moves beta_i towards the point mass C e_{y*}
// with the exact line search gamma = min(1, g_i / ||w_i - w_s||^2).
// Blocks are visited in a random permutation per pass (Seed).
//
// Each evaluation rebuilds w from the marginals (no drift), computes the
// primal with Primal and the dual D(beta) exactly: the gap Primal - Dual
// is the sum of the block gaps at the current w, an honest bound on the
// distance of the primal to the optimum. The weights returned are those
// of the smallest primal evaluated. Options.RegEmit and RegTrans are
// honoured through BlockRegularized.
func BCFW(ctx context.Context, d *Data, o Options) (*Weights, Result, error) {
	return BlockRegularized(bcfw)(ctx, d, o)
}

// blockSolver is one block-coordinate dual method (BCFW, SSG).
type blockSolver interface {
	blocks() int
	// step processes block i; it returns the block's oracle error.
	step(ctx context.Context, i int) error
	// eval prepares the weights to evaluate and returns them and a
	// lower bound on the primal optimum (-Inf when none).
	eval() (*Weights, float64)
}

func bcfw(ctx context.Context, d *Data, o Options) (*Weights, Result, error) {
	if err := o.Validate(); err != nil {
		return nil, Result{}, err
	}
	if err := CheckData(d); err != nil {
		return nil, Result{}, err
	}
	var s blockSolver
	if d.Seq != nil {
		s = newBCFWSeq(d.Seq, o.C)
	} else {
		s = newBCFWML(d.ML, o.C)
	}
	return runBlocks(ctx, "bcfw", s, d, o)
}

// runBlocks runs passes of s over its blocks in random permutations,
// evaluating when due (Options.EvalEvery) and after the last pass, until o's limits; a
// pass stops between blocks when the limits say so (stopper.stop).
func runBlocks(ctx context.Context, name string, s blockSolver, d *Data, o Options) (*Weights, Result, error) {
	st, cancel := newStopper(ctx, &o)
	defer cancel()
	st.reserveFirstEval(d, 1)
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0xbcf))
	res := Result{Run: Run{Algo: name, Primal: math.Inf(1)}, Dual: math.Inf(-1), Gap: math.Inf(1), PrimalExact: true}
	order := make([]int, s.blocks())
	for i := range order {
		order[i] = i
	}
	var best *Weights
	var stepErr error
	bo, batched := s.(batchOracle)
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	// Mini-batches when they are a small part of a pass: on a few blocks
	// stale oracles only slow the pass down.
	batched = batched && d.Seq != nil && threads > 1 && len(order) >= 8*batchPerThread*threads
	var slots [][]int32
	var scs []SeqScratch
	if batched {
		maxLen := 0
		for i := 0; i < d.Seq.Sentences(); i++ {
			maxLen = max(maxLen, d.Seq.Start[i+1]-d.Seq.Start[i])
		}
		slots = make([][]int32, batchPerThread*threads)
		for k := range slots {
			slots[k] = make([]int32, maxLen)
		}
		scs = make([]SeqScratch, threads)
	}
	pass := func() {
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		if batched {
			// Wang et al. 2014's mini-batch: the batch's oracles on
			// threads goroutines at one w, then its steps in order.
			for start := 0; start < len(order); start += len(slots) {
				if st.stop() {
					return
				}
				batch := order[start:min(start+len(slots), len(order))]
				parallel(len(batch), threads, func(worker, lo, hi int) error {
					for k := lo; k < hi; k++ {
						bo.oracleInto(batch[k], slots[k], &scs[worker])
					}
					return nil
				})
				for k, i := range batch {
					bo.moveTo(i, slots[k])
					st.steps++
				}
			}
			return
		}
		for k, i := range order {
			if k%stopCheckEvery == 0 && st.stop() {
				return
			}
			if err := s.step(st.ctx, i); err != nil {
				if st.ctx.Err() == nil {
					stepErr = err
				}
				return
			}
			st.steps++
		}
	}
	err := st.loop(&res, pass, func() (float64, error) {
		if stepErr != nil {
			return 0, stepErr
		}
		w, dual := s.eval()
		p, exactly, err := Primal(st.ctx, w, d, o.C, o.Threads)
		if err != nil {
			if st.ctx.Err() != nil {
				return math.Inf(-1), nil // cut by the deadline or the context
			}
			return 0, err
		}
		if p < res.Primal {
			res.Primal, best = p, w.copyInto(best)
			res.PrimalExact = exactly
		}
		return dual, nil
	})
	if err != nil {
		return nil, res, err
	}
	return st.finish(best, d, &res), res, nil
}

// batchOracle is a block solver whose oracle can run apart from its step:
// runBlocks then runs a pass in mini-batches of batchPerThread blocks per
// thread (Options.Threads >= 2, 0 meaning every core, and at least 8
// batches a pass), the batch's oracles on the threads at
// one w, its steps one after another, each with its line search at the
// current w (Wang, Sadhanala, Dai, Neiswanger, Sra, Xing, "Parallel and
// distributed block-coordinate Frank-Wolfe algorithms", ICML 2016): the
// dual stays feasible (its bound valid) and never decreases.
type batchOracle interface {
	oracleInto(i int, ys []int32, sc *SeqScratch)
	moveTo(i int, ys []int32)
}

// batchPerThread is the mini-batch's blocks per thread: one. Staleness
// costs: on Brown (105 tags, 2,000 sentences) 8 per thread left the primal
// at 3,659 after 10 passes where the sequential pass has 2,837 (1 per
// thread: 2,841).
const batchPerThread = 1

// bcfwSeq is BCFW on sequences.
type bcfwSeq struct {
	d    *SeqData
	L    int
	C    float64
	w    *Weights
	mu   []svec    // per token: C times its label marginal
	pm   []svec    // per link (token t and t+1, indexed by t): keys a*L+b
	loss []float64 // per sentence: l_i
	sc   SeqScratch
	ys   []int32   // the oracle's labelling
	gram []float64 // n x n token inner products of a sentence
	lab  []float64 // L: dense scratch of one token's marginal
	tacc []float64 // L*L: the step's transition direction, zero between steps
	tmrk []bool
	tlst []int32
}

func newBCFWSeq(d *SeqData, C float64) *bcfwSeq {
	L := d.Labels
	n := len(d.Y)
	b := &bcfwSeq{d: d, L: L, C: C, w: NewWeights(KindSequence, L, d.Features),
		mu: make([]svec, n), pm: make([]svec, n), loss: make([]float64, d.Sentences()),
		lab: make([]float64, L), tacc: make([]float64, L*L), tmrk: make([]bool, L*L)}
	for s := 0; s < d.Sentences(); s++ {
		for t := d.Start[s]; t < d.Start[s+1]; t++ {
			b.mu[t].add(d.Y[t], C)
			if t+1 < d.Start[s+1] {
				b.pm[t].add(d.Y[t]*int32(L)+d.Y[t+1], C)
			}
		}
	}
	return b // w = 0: every block at its truth
}

func (b *bcfwSeq) blocks() int { return b.d.Sentences() }

// rowDot returns <x_t, x_u> of two sorted sparse rows.
func rowDot(X *Rows, t, u int) float64 {
	ia, va := X.Row(t)
	ib, vb := X.Row(u)
	s := 0.0
	for i, j := 0, 0; i < len(ia) && j < len(ib); {
		switch {
		case ia[i] < ib[j]:
			i++
		case ia[i] > ib[j]:
			j++
		default:
			s += va[i] * vb[j]
			i++
			j++
		}
	}
	return s
}

func (b *bcfwSeq) step(_ context.Context, s int) error {
	d, L, w := b.d, b.L, b.w
	n := d.Start[s+1] - d.Start[s]
	aug := SeqEmissions(w, d, s, true, &b.sc)
	if cap(b.ys) < n {
		b.ys = make([]int32, n)
	}
	ys := b.ys[:n]
	best := Viterbi(aug, w.Trans, n, L, ys, &b.sc)
	b.move(s, ys, aug, best)
	return nil
}

// oracleInto computes sentence s's loss-augmented Viterbi labelling into
// ys on the scratch sc, reading w only (the batched pass runs it on
// several goroutines).
func (b *bcfwSeq) oracleInto(s int, ys []int32, sc *SeqScratch) {
	n := b.d.Start[s+1] - b.d.Start[s]
	aug := SeqEmissions(b.w, b.d, s, true, sc)
	Viterbi(aug, b.w.Trans, n, b.L, ys[:n], sc)
}

// moveTo steps sentence s towards the labelling ys, an oracle answer of
// an earlier w: its gap and line search are taken at the current w, so
// the step is a Frank-Wolfe step towards a vertex of the block (not the
// best one when w moved since), never increasing the objective (a
// negative gap steps 0).
func (b *bcfwSeq) moveTo(s int, ys []int32) {
	d, L, w := b.d, b.L, b.w
	n := d.Start[s+1] - d.Start[s]
	aug := SeqEmissions(w, d, s, true, &b.sc)
	best := 0.0
	for t, y := range ys[:n] {
		best += aug[t*L+int(y)]
		if t+1 < n {
			best += w.Trans[int(y)*L+int(ys[t+1])]
		}
	}
	b.move(s, ys[:n], aug, best)
}

// move is BCFW's step on sentence s towards labelling ys, whose
// loss-augmented score at w is best (aug: the loss-augmented emissions at
// w).
func (b *bcfwSeq) move(s int, ys []int32, aug []float64, best float64) {
	d, L, C, w := b.d, b.L, b.C, b.w
	t0, t1 := d.Start[s], d.Start[s+1]
	n := t1 - t0
	// E_mu[aug]: token marginals on the loss-augmented emissions, link
	// marginals on the transitions.
	emu := 0.0
	for t := 0; t < n; t++ {
		m := &b.mu[t0+t]
		for k, y := range m.k {
			emu += m.v[k] * aug[t*L+int(y)]
		}
		if t+1 < n {
			p := &b.pm[t0+t]
			for k, ab := range p.k {
				emu += p.v[k] * w.Trans[ab]
			}
		}
	}
	gap := C*best - emu
	if !(gap > 0) {
		return
	}
	ham := 0
	for t, y := range ys {
		if y != d.Y[t0+t] {
			ham++
		}
	}
	// ||w_i - w_s||^2: the direction is Phi(mu - C e_{y*}); its emission
	// part sum_t x_t (x) d_t has norm sum_{t,u} <x_t,x_u> <d_t,d_u>.
	if cap(b.gram) < n*n {
		b.gram = make([]float64, n*n)
	}
	norm2 := 0.0
	for t := 0; t < n; t++ {
		mt := &b.mu[t0+t]
		for k, y := range mt.k {
			b.lab[y] = mt.v[k]
		}
		at := ys[t]
		for u := t; u < n; u++ {
			g := rowDot(&d.X, t0+t, t0+u)
			if g == 0 {
				continue
			}
			mu := &b.mu[t0+u]
			au := ys[u]
			dd := 0.0
			for k, y := range mu.k { // <mu_t, mu_u>
				dd += b.lab[y] * mu.v[k]
			}
			dd -= C*mu.get(at) + C*b.lab[au]
			if at == au {
				dd += C * C
			}
			if u == t {
				norm2 += g * dd
			} else {
				norm2 += 2 * g * dd
			}
		}
		for _, y := range mt.k {
			b.lab[y] = 0
		}
	}
	b.tlst = b.tlst[:0]
	tadd := func(ab int32, v float64) {
		if !b.tmrk[ab] {
			b.tmrk[ab] = true
			b.tlst = append(b.tlst, ab)
		}
		b.tacc[ab] += v
	}
	for t := 0; t+1 < n; t++ {
		p := &b.pm[t0+t]
		for k, ab := range p.k {
			tadd(ab, p.v[k])
		}
		tadd(ys[t]*int32(L)+ys[t+1], -C)
	}
	for _, ab := range b.tlst {
		norm2 += b.tacc[ab] * b.tacc[ab]
	}
	gamma := 1.0
	if norm2 > 0 {
		gamma = min(1, gap/norm2)
	}
	// w += gamma * Phi(mu - C e_{y*}).
	for t := 0; t < n; t++ {
		idx, val := d.X.Row(t0 + t)
		mt := &b.mu[t0+t]
		upd := func(y int32, dv float64) {
			for k, f := range idx {
				if int(f) < w.Features {
					w.Emit[int(f)*L+int(y)] += gamma * dv * val[k]
				}
			}
		}
		for k, y := range mt.k {
			upd(y, mt.v[k])
		}
		upd(ys[t], -C)
	}
	for _, ab := range b.tlst {
		w.Trans[ab] += gamma * b.tacc[ab]
		b.tacc[ab], b.tmrk[ab] = 0, false
	}
	// beta_i <- (1-gamma) beta_i + gamma C e_{y*}.
	eps := 1e-12 * C
	for t := 0; t < n; t++ {
		mixIn(&b.mu[t0+t], ys[t], gamma, C, eps)
		if t+1 < n {
			mixIn(&b.pm[t0+t], ys[t]*int32(L)+ys[t+1], gamma, C, eps)
		}
	}
	b.loss[s] = (1-gamma)*b.loss[s] + gamma*C*float64(ham)
}

// mixIn sets m <- (1-gamma) m + gamma C e_k, dropping entries below eps.
func mixIn(m *svec, k int32, gamma, C, eps float64) {
	for i := range m.v {
		m.v[i] *= 1 - gamma
	}
	m.add(k, gamma*C)
	m.prune(eps)
}

// eval rebuilds w from the marginals and returns it with D(beta).
func (b *bcfwSeq) eval() (*Weights, float64) {
	d, L, C, w := b.d, b.L, b.C, b.w
	clear(w.Emit)
	clear(w.Trans)
	lsum := 0.0
	for s := 0; s < d.Sentences(); s++ {
		lsum += b.loss[s]
		for t := d.Start[s]; t < d.Start[s+1]; t++ {
			idx, val := d.X.Row(t)
			m := &b.mu[t]
			for j, f := range idx {
				if int(f) >= w.Features {
					continue
				}
				row := w.Emit[int(f)*L : int(f)*L+L]
				row[d.Y[t]] += C * val[j]
				for k, y := range m.k {
					row[y] -= m.v[k] * val[j]
				}
			}
			if t+1 < d.Start[s+1] {
				w.Trans[int(d.Y[t])*L+int(d.Y[t+1])] += C
				p := &b.pm[t]
				for k, ab := range p.k {
					w.Trans[ab] -= p.v[k]
				}
			}
		}
	}
	return w, lsum - 0.5*w.SqNorm()
}

// bcfwML is BCFW on multilabel data: per example, the label marginals
// mu_l and the pair marginals mu_ab (a < b), scaled by C.
type bcfwML struct {
	d    *MLData
	L    int
	C    float64
	w    *Weights
	mu   []svec
	pm   []svec
	loss []float64
	xn2  []float64
	sc   MLScratch
	on   []int32
	pacc []float64 // L*L, zero between steps
	pmrk []bool
	plst []int32
	lacc []float64 // L, zero between steps
	lmrk []bool
	llst []int32
}

func newBCFWML(d *MLData, C float64) *bcfwML {
	L := d.Labels
	n := d.Examples()
	b := &bcfwML{d: d, L: L, C: C, w: NewWeights(KindMultilabel, L, d.Features),
		mu: make([]svec, n), pm: make([]svec, n), loss: make([]float64, n), xn2: make([]float64, n),
		pacc: make([]float64, L*L), pmrk: make([]bool, L*L), lacc: make([]float64, L), lmrk: make([]bool, L)}
	for i := 0; i < n; i++ {
		pos := b.known(d.Positive(i))
		for k, a := range pos {
			b.mu[i].add(a, C)
			for _, c := range pos[k+1:] {
				b.pm[i].add(a*int32(L)+c, C)
			}
		}
		_, val := d.X.Row(i)
		for _, v := range val {
			b.xn2[i] += v * v
		}
	}
	return b
}

// known returns the positives below L (labels the weights know), in
// b.on's storage.
func (b *bcfwML) known(pos []int32) []int32 {
	b.on = b.on[:0]
	for _, y := range pos {
		if int(y) < b.L {
			b.on = append(b.on, y)
		}
	}
	return b.on
}

func (b *bcfwML) blocks() int { return b.d.Examples() }

func (b *bcfwML) step(ctx context.Context, i int) error {
	d, L, C, w := b.d, b.L, b.C, b.w
	c := mlUnary(w, d, i, true, &b.sc)
	best, _, err := mlDecode(ctx, w, &b.sc)
	if err != nil {
		return err
	}
	s := b.sc.s
	emu := C * c
	m, p := &b.mu[i], &b.pm[i]
	for k, y := range m.k {
		emu += m.v[k] * s[y]
	}
	for k, ab := range p.k {
		emu += p.v[k] * w.Pair[ab]
	}
	gap := C*(best+c) - emu
	if !(gap > 0) {
		return nil
	}
	var on []int32
	for l, v := range b.sc.y {
		if v {
			on = append(on, int32(l))
		}
	}
	pos := d.Positive(i)
	ham, q := 0, 0
	for l := 0; l < L; l++ {
		for q < len(pos) && int(pos[q]) < l {
			q++
		}
		truth := q < len(pos) && int(pos[q]) == l
		if truth != b.sc.y[l] {
			ham++
		}
	}
	b.llst, b.plst = b.llst[:0], b.plst[:0]
	ladd := func(l int32, v float64) {
		if !b.lmrk[l] {
			b.lmrk[l] = true
			b.llst = append(b.llst, l)
		}
		b.lacc[l] += v
	}
	padd := func(ab int32, v float64) {
		if !b.pmrk[ab] {
			b.pmrk[ab] = true
			b.plst = append(b.plst, ab)
		}
		b.pacc[ab] += v
	}
	for k, y := range m.k {
		ladd(y, m.v[k])
	}
	for k, ab := range p.k {
		padd(ab, p.v[k])
	}
	for k, a := range on {
		ladd(a, -C)
		for _, c := range on[k+1:] {
			padd(a*int32(L)+c, -C)
		}
	}
	nl, np := 0.0, 0.0
	for _, l := range b.llst {
		nl += b.lacc[l] * b.lacc[l]
	}
	for _, ab := range b.plst {
		np += b.pacc[ab] * b.pacc[ab]
	}
	norm2 := b.xn2[i]*nl + np
	gamma := 1.0
	if norm2 > 0 {
		gamma = min(1, gap/norm2)
	}
	idx, val := d.X.Row(i)
	for _, l := range b.llst {
		for k, f := range idx {
			if int(f) < w.Features {
				w.Emit[int(f)*L+int(l)] += gamma * b.lacc[l] * val[k]
			}
		}
		b.lacc[l], b.lmrk[l] = 0, false
	}
	for _, ab := range b.plst {
		w.Pair[ab] += gamma * b.pacc[ab]
		b.pacc[ab], b.pmrk[ab] = 0, false
	}
	eps := 1e-12 * C
	for k := range m.v {
		m.v[k] *= 1 - gamma
	}
	for k := range p.v {
		p.v[k] *= 1 - gamma
	}
	for k, a := range on {
		m.add(a, gamma*C)
		for _, c := range on[k+1:] {
			p.add(a*int32(L)+c, gamma*C)
		}
	}
	m.prune(eps)
	p.prune(eps)
	b.loss[i] = (1-gamma)*b.loss[i] + gamma*C*float64(ham)
	return nil
}

func (b *bcfwML) eval() (*Weights, float64) {
	d, L, C, w := b.d, b.L, b.C, b.w
	clear(w.Emit)
	clear(w.Pair)
	lsum := 0.0
	for i := 0; i < d.Examples(); i++ {
		lsum += b.loss[i]
		pos := b.known(d.Positive(i))
		idx, val := d.X.Row(i)
		m := &b.mu[i]
		for j, f := range idx {
			if int(f) >= w.Features {
				continue
			}
			row := w.Emit[int(f)*L : int(f)*L+L]
			for _, y := range pos {
				row[y] += C * val[j]
			}
			for k, y := range m.k {
				row[y] -= m.v[k] * val[j]
			}
		}
		for k, a := range pos {
			for _, c := range pos[k+1:] {
				w.Pair[int(a)*L+int(c)] += C
			}
		}
		p := &b.pm[i]
		for k, ab := range p.k {
			w.Pair[ab] -= p.v[k]
		}
	}
	return w, lsum - 0.5*w.SqNorm()
}
