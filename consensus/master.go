package consensus

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/solver"
)

// Chunk sizes are fixed, independent of the thread count, so that partial
// sums are reduced in the same order whatever the number of threads.
const (
	slaveChunk = 128
	varChunk   = 128
)

// cacheLine is a safe cache-line size (two lines on most x86 and ARM parts,
// which prefetch in pairs).
const cacheLine = 128

// padded returns n float64s in an allocation of at least a cache line,
// starting on a line of its own, with nothing else on its last line.
func padded(n int) []float64 {
	return make([]float64, n+2*cacheLine/8)[cacheLine/8 : cacheLine/8+n]
}

// WorkerLink carries one iteration to a worker and its answer back: a
// direct call in process, or messages over a transport.
type WorkerLink interface {
	Step(ctx context.Context, in *StepIn, out *StepOut) error
}

// LocalLink runs a Worker in this process.
type LocalLink struct{ W *Worker }

// Step implements WorkerLink.
func (l LocalLink) Step(_ context.Context, in *StepIn, out *StepOut) error {
	l.W.Step(in, out)
	return nil
}

// master is the coordinator's side of a run: it owns the boundary
// variables (their marginals, decoded states and the multipliers of their
// replicas), eta, the bounds and the stopping decision, and drives the
// workers through their links.
type master struct {
	m     *model.Model // the reduced model
	opts  Options
	b     *Boundary
	links []WorkerLink
	ins   []*StepIn
	outs  []*StepOut
	// scatterLen[w][k] is the length of worker w's k-th boundary replica.
	scatterLen [][]int
	// interior[w] lists worker w's interior variables (model numbering)
	// in the order of its StepOut.X.
	interior [][]int
	// shapes[w] is what worker w's answers must fit (check.go); checked:
	// every link is a CheckedLink; fixedDual: the isolated variables' and
	// the constant's share of the dual.
	shapes    []answerShape
	checked   bool
	fixedDual float64
	floor     float64 // a primal known before the first iteration (setFloor)
	// shards, in a sharded run, scores and improves the assignment on the
	// workers (shard.go); nil: the master does it on its whole model.
	shards *shardPrimal

	blam, bnu []float64 // boundary replicas, laid out by Boundary
	bmu       []float64 // boundary marginals: variable j at bmuOff[j]
	bmuOff    []int
	invDeg    []float64 // per boundary variable
	isolated  []int     // variables in no part (split runs only)
	x         []int     // the decoded assignment (model numbering)
	sc        *varScratch
	// pool runs the coordinator's own parallel loops (the primal checks):
	// the single in-process worker's pool, so that no goroutines compete
	// for the cores, or one of opts.Threads goroutines.
	pool *pool

	eta        float64
	prevStep   float64 // subgradient: the step to apply next iteration
	iter       int
	bestPrimal float64
	nextAdapt  int
	adaptWait  int
}

func newMaster(m *model.Model, opts Options, parts []*Part, b *Boundary, links []WorkerLink, pl *pool) *master {
	infos := make([]partInfo, len(parts))
	inPart := make([]bool, m.NumVars())
	for w, p := range parts {
		isB := map[int]bool{}
		for _, lv := range p.Boundary {
			isB[lv] = true
		}
		for lv, v := range p.Vars {
			inPart[v] = true
			if !isB[lv] {
				infos[w].interior = append(infos[w].interior, v)
			}
		}
		infos[w].lam, infos[w].mu = p.replicaEntries(), len(p.Model.Unary)
	}
	s := newMasterOf(m, opts, infos, b, links, pl)
	for v := range m.Cards {
		if !inPart[v] {
			s.isolated = append(s.isolated, v)
			th := m.Unaries(v)
			s.fixedDual += th[bestState(th)]
		}
	}
	return s
}

// partInfo is what the master knows of a part: its interior variables
// (model numbering, in StepOut.X order; none in a sharded run), and the
// lengths of its PartState.
type partInfo struct {
	interior []int
	lam, mu  int
}

// newMasterOf builds a master over the variables of m (the whole reduced
// model, or only the boundary variables of a sharded run), given what it
// knows of each part.
func newMasterOf(m *model.Model, opts Options, infos []partInfo, b *Boundary, links []WorkerLink, pl *pool) *master {
	s := &master{m: m, opts: opts, b: b, links: links, pool: pl,
		x: make([]int, m.NumVars()), eta: opts.Eta, bestPrimal: math.Inf(-1)}
	maxCard := 1
	for _, c := range m.Cards {
		maxCard = max(maxCard, c)
	}
	s.sc = newVarScratch(maxCard)
	s.blam = make([]float64, b.size)
	s.bnu = make([]float64, b.size)
	s.bmuOff = make([]int, len(b.vars)+1)
	s.invDeg = make([]float64, len(b.vars))
	for j, v := range b.vars {
		s.bmuOff[j+1] = s.bmuOff[j] + m.Cards[v]
		s.invDeg[j] = 1 / float64(b.repOff[j+1]-b.repOff[j])
	}
	s.bmu = make([]float64, s.bmuOff[len(b.vars)])
	for j, v := range b.vars {
		for k := s.bmuOff[j]; k < s.bmuOff[j+1]; k++ {
			s.bmu[k] = 1 / float64(m.Cards[v])
		}
	}
	s.interior = make([][]int, len(infos))
	s.fixedDual = m.Constant
	s.shapes = make([]answerShape, len(infos))
	for w, in := range infos {
		s.interior[w] = in.interior
		sh := &s.shapes[w]
		for _, v := range in.interior {
			sh.cards = append(sh.cards, m.Cards[v])
		}
		sh.stateLam, sh.stateMu = in.lam, in.mu
		if opts.Algo == Subgradient {
			sh.stateNu = sh.stateLam
		}
	}
	s.checked = len(links) > 0
	for _, l := range links {
		if _, ok := l.(CheckedLink); !ok {
			s.checked = false
		}
	}
	// Length of each boundary replica vector, by entry.
	lenAt := map[int]int{}
	for j, v := range b.vars {
		for _, e := range b.entry[b.repOff[j]:b.repOff[j+1]] {
			lenAt[e] = m.Cards[v]
		}
	}
	s.scatterLen = make([][]int, len(links))
	s.ins = make([]*StepIn, len(links))
	s.outs = make([]*StepOut, len(links))
	for w := range links {
		nb := 0
		for _, e := range b.scatter[w] {
			s.scatterLen[w] = append(s.scatterLen[w], lenAt[e])
			nb += lenAt[e]
		}
		nmu := 0
		for _, j := range b.varsOf[w] {
			nmu += m.Cards[b.vars[j]]
		}
		s.ins[w] = &StepIn{Lambda: make([]float64, 0, nb), Mu: make([]float64, 0, nmu)}
		s.outs[w] = &StepOut{Nu: make([]float64, 0, nb), X: make([]int32, 0, len(s.interior[w]))}
	}
	return s
}

type iterResult struct {
	dual, relaxed, primalRes, dualRes float64
	changed                           bool
}

// iterate runs one iteration on every worker and on the boundary.
func (s *master) iterate(ctx context.Context, gatherX, save bool) (iterResult, error) {
	b, m := s.b, s.m
	s.iter++
	// The previous subgradient step, on the boundary replicas (workers
	// apply it to theirs).
	if s.opts.Algo == Subgradient && s.prevStep > 0 {
		for j := range b.vars {
			stepVariable(s.bmu[s.bmuOff[j]:s.bmuOff[j+1]], s.bnu, s.blam, b.entry[b.repOff[j]:b.repOff[j+1]], s.invDeg[j], s.prevStep, s.sc)
		}
	}
	for w, in := range s.ins {
		in.Iter, in.Eta, in.PrevStep, in.GatherX, in.Save = s.iter, s.eta, s.prevStep, gatherX, save
		in.Lambda = in.Lambda[:0]
		for k, e := range b.scatter[w] {
			in.Lambda = append(in.Lambda, s.blam[e:e+s.scatterLen[w][k]]...)
		}
		in.Mu = in.Mu[:0]
		for _, j := range b.varsOf[w] {
			in.Mu = append(in.Mu, s.bmu[s.bmuOff[j]:s.bmuOff[j+1]]...)
		}
	}
	// The workers' answers, checked; an impossible bound asks them again
	// once (check.go).
	var r iterResult
	for attempt := 0; ; attempt++ {
		if err := s.stepWorkers(ctx); err != nil {
			return iterResult{}, err
		}
		if err := s.checkAnswers(ctx, gatherX, save); err != nil {
			return iterResult{}, err
		}
		r = s.gather(gatherX)
		if !s.impossible(r.dual) {
			break
		}
		if attempt > 0 {
			return r, &BoundError{Iter: s.iter, Dual: r.dual + s.fixedDual, Primal: s.bestPrimal}
		}
		s.reask()
	}
	// Boundary variables: the same update the workers run on theirs.
	step := s.opts.Tau * s.eta
	if s.opts.Algo == Subgradient {
		step = 0
	}
	for j, v := range b.vars {
		th := m.Unaries(v)
		pr, dr, rel, best, _, _ := updateVariable(s.bmu[s.bmuOff[j]:s.bmuOff[j+1]], th, s.bnu, s.blam, b.entry[b.repOff[j]:b.repOff[j+1]], s.invDeg[j], step, s.sc)
		r.primalRes += pr
		r.dualRes += dr
		r.relaxed += rel
		r.changed = r.changed || s.x[v] != best
		s.x[v] = best
	}
	for _, v := range s.isolated {
		th := m.Unaries(v)
		best := bestState(th)
		r.dual += th[best]
		r.relaxed += th[best]
		s.x[v] = best
	}
	r.dual += m.Constant
	r.relaxed += m.Constant
	return r, nil
}

// gather takes the workers' answers: their boundary marginals, sums and,
// when asked, decoded states.
func (s *master) gather(gatherX bool) iterResult {
	b := s.b
	var r iterResult
	for w, out := range s.outs {
		off := 0
		for k, e := range b.scatter[w] {
			n := s.scatterLen[w][k]
			copy(s.bnu[e:e+n], out.Nu[off:off+n])
			off += n
		}
		r.dual += out.Dual
		r.relaxed += out.Relaxed
		r.primalRes += out.PrimalRes
		r.dualRes += out.DualRes
		r.changed = r.changed || out.Changed
		if gatherX {
			for k, v := range s.interior[w] {
				s.x[v] = int(out.X[k])
			}
		}
	}
	return r
}

// stepWorkers runs the iteration on every worker, concurrently when there
// are several.
func (s *master) stepWorkers(ctx context.Context) error {
	if len(s.links) == 1 {
		return s.links[0].Step(ctx, s.ins[0], s.outs[0])
	}
	errs := make([]error, len(s.links))
	var wg sync.WaitGroup
	for w := range s.links {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			errs[w] = s.links[w].Step(ctx, s.ins[w], s.outs[w])
		}(w)
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			return fmt.Errorf("worker %d: %w", w, err)
		}
	}
	return nil
}

// normalise turns the squared residual sums into root-mean-square residuals
// and, for DD-subgradient, computes the step the next iteration applies.
func (s *master) normalise(r *iterResult, replicaEntries int) {
	if s.opts.Algo == Subgradient {
		s.prevStep = s.subgradientStep(r.dual, r.primalRes)
	}
	n := float64(max(1, replicaEntries))
	r.primalRes = math.Sqrt(r.primalRes / n)
	step := s.eta
	if s.opts.Algo == Subgradient {
		step = s.prevStep
	}
	r.dualRes = step * math.Sqrt(r.dualRes/n)
}

// subgradientStep returns eta_t of Alg. 1 for the configured rule, given
// the dual value at the current multipliers and ||g||^2.
func (s *master) subgradientStep(dual, g2 float64) float64 {
	if g2 == 0 {
		return 0 // the slaves agree: lambda is dual optimal
	}
	t := float64(s.iter)
	switch s.opts.Step {
	case Diminishing:
		return s.opts.Eta / t
	case InvSqrt:
		return s.opts.Eta / math.Sqrt(t)
	}
	// Polyak: (L(lambda) - target) / ||g||^2 with the best primal as the
	// target (Eta/t until there is one).
	if math.IsInf(s.bestPrimal, -1) || dual <= s.bestPrimal {
		return s.opts.Eta / t
	}
	return s.opts.Eta * (dual - s.bestPrimal) / g2
}

// adaptEta is AD3's residual balancing: grow eta when the primal residual
// dominates, shrink it when the dual residual does. ADMM converges for a
// fixed eta (Prop. 1) but can cycle when eta keeps flipping, so after each
// change the next one must wait twice as long as the previous wait: eta
// changes O(log T) times in T iterations and is eventually fixed.
func (s *master) adaptEta(primalRes, dualRes float64) {
	const ratio, factor = 10, 2
	if s.iter < s.nextAdapt {
		return
	}
	old := s.eta
	switch {
	case primalRes > ratio*dualRes:
		s.eta = math.Min(s.eta*factor, 1e4)
	case dualRes > ratio*primalRes:
		s.eta = math.Max(s.eta/factor, 1e-4)
	}
	if s.eta != old {
		s.adaptWait = max(1, 2*s.adaptWait)
		s.nextAdapt = s.iter + s.adaptWait
	}
}

// run is the main loop; replicaEntries is the total number of replica
// entries over all workers (for the residuals' normalisation). Each
// iteration steps the workers (Alg. 1 for DD-subgradient, Alg. 2 for
// DD-ADMM), checks the decoded primal now and then, saves a checkpoint
// when due, reports progress and applies the stopping tests; a last polish
// follows.
func (s *master) run(ctx context.Context, replicaEntries int, cp *Checkpointing, progress func(solver.Progress)) (solver.Result, error) {
	l, first, err := s.startLoop(cp, progress)
	if err != nil {
		return l.res, err
	}
	var laps solver.Laps // the iterations' times, for the polish's deadline
	laps.Start(time.Now())
	for t := first; ; t++ {
		// The primal is checked on iteration 1 and every icmEvery
		// iterations, when the decoded assignment changed since the last
		// check: those iterations gather the whole assignment. The last
		// iteration (the iteration limit's, or the one after another
		// stopping test) is checked too when its assignment changed, so
		// that the run never ends without scoring its last decoding.
		gather := t == 1 || l.stopping != "" || t >= s.opts.MaxIter || (t%icmEvery == 0 && l.changedSinceCheck)
		save := cp.due(t, time.Since(l.lastSave))
		// A sharded run's workers save their own states (EvalSave, below):
		// its steps do not carry them.
		r, err := s.iterate(ctx, gather && s.shards == nil, save && s.shards == nil)
		if err != nil {
			return l.res, err
		}
		s.normalise(&r, replicaEntries)
		l.changedSinceCheck = l.changedSinceCheck || r.changed
		l.res.Iterations = t
		l.res.Relaxed = r.relaxed
		if r.dual < l.res.Dual {
			l.res.Dual = r.dual
		}
		if gather && (t == 1 || l.changedSinceCheck) {
			if err := l.checkPrimal(ctx); err != nil {
				return l.res, err
			}
		}
		l.res.Gap = l.res.Dual - l.res.Primal
		if err := s.falseCertificate(&l.res); err != nil {
			return l.res, err
		}
		laps.Lap(time.Now())
		elapsed := time.Since(l.start)
		if save {
			if err := l.checkpoint(ctx, cp, t, elapsed); err != nil {
				return l.res, err
			}
		}
		l.report(t, &r, elapsed)
		if !l.stop(ctx, t, &r, elapsed) {
			continue
		}
		// The decoded assignment changed since the last check (iterations
		// that do not check do not gather it): one more iteration gathers
		// and checks it, unless the run was interrupted. Without it a run
		// that converged between checks kept the primal of an older
		// decoding even when its last one was the MAP (a ternary model
		// with a repulsive Potts factor: status converged at iteration 9
		// with the primal of iteration 1's decoding, below the MAP that
		// iterations 8 and 9 decoded). It never passes the iteration limit,
		// whose iteration checks.
		if l.stopping == "" && l.changedSinceCheck && (l.res.Status == solver.Converged || l.res.Status == solver.TimeLimit) && ctx.Err() == nil {
			l.stopping = l.res.Status
			continue
		}
		break
	}
	if s.shards != nil && s.shards.partStates > lnsStates {
		// Parts small enough for the polish's neighbourhood search keep
		// every boundary round, whatever the machine's speed.
		s.shards.deadline = solver.PolishDeadline(time.Now(), &laps)
	}
	if err := l.polish(ctx); err != nil {
		return l.res, err
	}
	if math.IsInf(l.res.Primal, -1) {
		l.res.Assignment = nil
	}
	if s.shards == nil {
		l.res.Mu = s.gatherMu()
	}
	l.res.Elapsed = time.Since(l.start)
	return l.res, nil
}

// runLoop is the state of master.run between iterations: the result so far,
// the best assignment and the bookkeeping of checks, saves and reports.
type runLoop struct {
	s        *master
	res      solver.Result
	bestX    []int
	search   *localSearch // nil in a sharded run (its workers search)
	progress func(solver.Progress)
	start    time.Time
	lastSave time.Time
	// lastReport is the elapsed time of the last progress report.
	lastReport        time.Duration
	changedSinceCheck bool
	// stopping is the status of a run that met its stopping test while
	// its decoded assignment had changed since the last check: it runs
	// one more iteration, which checks the primal, and stops with it.
	stopping solver.Status
}

// startLoop sets up run's state, restored from cp.Resume when there is one,
// and returns it with the first iteration to run.
func (s *master) startLoop(cp *Checkpointing, progress func(solver.Progress)) (*runLoop, int, error) {
	l := &runLoop{s: s, progress: progress, start: time.Now(),
		res:   solver.Result{Status: solver.IterationLimit, Dual: math.Inf(1), Primal: math.Inf(-1)},
		bestX: make([]int, len(s.x))}
	s.setFloor()
	if s.shards == nil {
		l.search = newLocalSearch(s.m, s.pool)
	}
	first := 1
	if cp != nil && cp.Resume != nil {
		st := cp.Resume
		if err := s.restore(st); err != nil {
			return l, 0, err
		}
		first = st.Iter + 1
		l.start = l.start.Add(-st.Elapsed)
		l.res.Dual, l.res.Primal, l.res.Iterations = st.BestDual, st.BestPrimal, st.Iter
		if st.BestX != nil {
			copy(l.bestX, st.BestX)
			l.res.Assignment = l.bestX
		}
		l.changedSinceCheck = st.Pending
		if s.shards != nil && st.BestX != nil {
			copy(s.shards.best, st.BestX)
		}
	}
	l.lastSave = time.Now()
	return l, first, nil
}

// consider keeps x as the best assignment when it scores above the best.
func (l *runLoop) consider(x []int) {
	if sc := l.search.score(x); sc > l.res.Primal {
		l.res.Primal = sc
		l.s.bestPrimal = sc
		copy(l.bestX, x)
		l.res.Assignment = l.bestX
	}
}

// checkPrimal scores the decoded assignment gathered this iteration: on
// the workers' parts in a sharded run, else here, with a local search that
// repairs it while no feasible assignment is known.
func (l *runLoop) checkPrimal(ctx context.Context) error {
	s := l.s
	l.changedSinceCheck = false
	if s.shards != nil {
		return s.shards.check(ctx, s, &l.res, false)
	}
	l.consider(s.x)
	// Repair only while no feasible assignment is known (then s.x, just
	// considered, is infeasible too).
	l.search.improve(s.x, math.IsInf(l.res.Primal, -1))
	l.consider(s.x)
	return nil
}

// checkpoint saves the run's state after iteration t through cp: the
// workers' parts carried by this iteration's steps, or, in a sharded run,
// the references to the states its workers saved.
func (l *runLoop) checkpoint(ctx context.Context, cp *Checkpointing, t int, elapsed time.Duration) error {
	s := l.s
	st := s.state(&l.res, l.bestX, l.changedSinceCheck, elapsed)
	if s.shards == nil {
		for _, out := range s.outs {
			st.Parts = append(st.Parts, *out.State)
		}
	} else {
		var err error
		if st.Refs, err = s.shards.save(ctx, t); err != nil {
			return fmt.Errorf("checkpoint at iteration %d: %w", t, err)
		}
	}
	// A sharded run's worker that could not save its part leaves no
	// references: no state this time.
	if complete := s.shards == nil || st.Refs != nil; complete {
		if err := cp.Save(ctx, st); err != nil {
			return fmt.Errorf("checkpoint at iteration %d: %w", t, err)
		}
	}
	l.lastSave = time.Now()
	return nil
}

// report calls progress on iteration 1 and then every
// Options.ProgressEvery.
func (l *runLoop) report(t int, r *iterResult, elapsed time.Duration) {
	s := l.s
	if l.progress == nil || (t != 1 && elapsed-l.lastReport < s.opts.ProgressEvery) {
		return
	}
	l.lastReport = elapsed
	eta := s.eta
	if s.opts.Algo == Subgradient {
		eta = s.prevStep
	}
	l.progress(solver.Progress{Iteration: t, Dual: l.res.Dual, Primal: l.res.Primal, Gap: l.res.Gap,
		PrimalRes: r.primalRes, DualRes: r.dualRes, Eta: eta, Elapsed: elapsed,
		Fields: solver.HasPrimalRes | solver.HasDualRes | solver.HasEta})
}

// stop applies the stopping tests after iteration t and sets the status
// when one is met; otherwise it adapts eta (AD3's residual balancing) and
// returns false.
func (l *runLoop) stop(ctx context.Context, t int, r *iterResult, elapsed time.Duration) bool {
	s, res := l.s, &l.res
	switch {
	case math.IsInf(res.Dual, -1):
		res.Status = solver.Infeasible
	case solver.Closed(res.Dual, res.Primal, s.opts.Tol):
		res.Status = solver.Optimal
	case l.stopping != "":
		res.Status = l.stopping
	case t > 1 && r.primalRes < s.opts.ResidualTol && r.dualRes < s.opts.ResidualTol:
		res.Status = solver.Converged
	default:
		st, stop := s.opts.Reached(ctx, t, elapsed)
		if !stop {
			if s.opts.AdaptEta && s.opts.Algo == ADMM {
				s.adaptEta(r.primalRes, r.dualRes)
			}
			return false
		}
		res.Status = st
	}
	return true
}

// polish runs after the loop on a run that is neither optimal nor
// infeasible and has an assignment: a last, longer local search from the
// best assignment (on the workers' parts around the best boundary in a
// sharded run), then the gap and status again.
func (l *runLoop) polish(ctx context.Context) error {
	s, res := l.s, &l.res
	if res.Status == solver.Optimal || res.Status == solver.Infeasible {
		return nil
	}
	switch {
	case s.shards != nil && !math.IsInf(res.Primal, -1):
		// The same polish on the workers' parts around the best boundary.
		if err := s.shards.constructDecoded(ctx, s, res); err != nil {
			return err
		}
		if err := s.shards.polish(ctx, s, res); err != nil {
			return err
		}
		// Moves of several boundary variables at once (block.go).
		if err := s.shards.blockMoves(ctx, s, res); err != nil {
			return err
		}
	case res.Assignment != nil && !s.opts.NoPolish:
		// A last, longer local search from the best assignment found.
		copy(s.x, l.bestX)
		l.search.polish(s.x)
		l.consider(s.x)
	default:
		return nil
	}
	res.Gap = res.Dual - res.Primal
	if err := s.falseCertificate(res); err != nil {
		return err
	}
	if solver.Closed(res.Dual, res.Primal, s.opts.Tol) {
		res.Status = solver.Optimal
	}
	return nil
}

// gatherMu collects the consensus marginals from in-process workers and the
// boundary, laid out like the model's Unary; nil when a worker is remote.
func (s *master) gatherMu() []float64 {
	m := s.m
	mu := make([]float64, len(m.Unary))
	for _, l := range s.links {
		ll, ok := l.(LocalLink)
		if !ok {
			return nil
		}
		w := ll.W
		lm := w.p.Model
		for lv, v := range w.vars {
			copy(mu[m.UnaryOff[v]:m.UnaryOff[v+1]], w.mu[lm.UnaryOff[lv]:lm.UnaryOff[lv+1]])
		}
	}
	for j, v := range s.b.vars {
		copy(mu[m.UnaryOff[v]:m.UnaryOff[v+1]], s.bmu[s.bmuOff[j]:s.bmuOff[j+1]])
	}
	for _, v := range s.isolated {
		u := mu[m.UnaryOff[v]:m.UnaryOff[v+1]]
		clear(u)
		u[s.x[v]] = 1
	}
	return mu
}

// runLocal solves a reduced model in this process: one worker holding every
// slave (or, for tests of the distributed arithmetic, several in-process
// workers), driven through LocalLinks.
func runLocal(ctx context.Context, m *model.Model, plan partition.Plan, opts Options, workers int, progress func(solver.Progress)) (solver.Result, error) {
	s, entries, done, err := newLocal(m, plan, opts, workers)
	if err != nil {
		return solver.Result{}, err
	}
	defer done()
	return s.run(ctx, entries, nil, progress)
}

// newLocal builds a master and in-process workers. Slaves are placed on the
// workers in contiguous blocks of the plan's order (the runtime uses
// multilevel.Place). It returns the number of replica entries and a
// function that stops the workers.
func newLocal(m *model.Model, plan partition.Plan, opts Options, workers int) (*master, int, func(), error) {
	workers = max(1, workers)
	place := make([]int32, len(plan.Slaves))
	for s := range place {
		place[s] = int32(s * workers / max(1, len(plan.Slaves)))
	}
	parts, b, err := Split(m, plan, place, workers)
	if err != nil {
		return nil, 0, nil, err
	}
	links := make([]WorkerLink, len(parts))
	ws := make([]*Worker, 0, len(parts))
	var own *pool
	done := func() {
		for _, w := range ws {
			w.Close()
		}
		if own != nil {
			own.close()
		}
	}
	entries := 0
	for w, p := range parts {
		wopts := opts
		if len(parts) > 1 {
			wopts.Threads = 1
		}
		wk, err := NewWorker(p, wopts)
		if err != nil {
			done()
			return nil, 0, nil, err
		}
		ws = append(ws, wk)
		links[w] = LocalLink{W: wk}
		entries += wk.p.NumReplicaEntries()
	}
	var pl *pool
	if len(ws) == 1 {
		pl = ws[0].pool
	} else {
		own = newPool(opts.Threads)
		pl = own
	}
	return newMaster(m, opts, parts, b, links, pl), entries, done, nil
}

// Coordinate runs the coordinator's loop on a reduced model m whose slaves
// were split into parts (Split), talking to the workers that hold them
// through links (links[w] reaches the worker holding parts[w]). It returns
// the result in m's variables. cp, when not nil, takes states of the run
// and may resume one.
func Coordinate(ctx context.Context, m *model.Model, parts []*Part, b *Boundary, links []WorkerLink, opts Options, cp *Checkpointing, progress func(solver.Progress)) (solver.Result, error) {
	if err := opts.Validate(); err != nil {
		return solver.Result{}, err
	}
	if len(links) != len(parts) {
		return solver.Result{}, fmt.Errorf("%d links for %d parts", len(links), len(parts))
	}
	entries := 0
	for _, p := range parts {
		entries += p.replicaEntries()
	}
	if cp != nil && cp.Resume != nil && len(cp.Resume.Parts) != len(parts) {
		return solver.Result{}, fmt.Errorf("resuming a state of %d parts on %d", len(cp.Resume.Parts), len(parts))
	}
	pl := newPool(opts.Threads)
	defer pl.close()
	return newMaster(m, opts, parts, b, links, pl).run(ctx, entries, cp, progress)
}
