package trws

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// Solve runs TRW-S on the pairwise model m and returns the result in m's
// variables. Every factor must be over at most two variables (Dense, with
// -Inf entries allowed, Pair, Potts, or a logic kind), or be a Sequence
// (a chain of pairwise terms); anything else is an error. The model is
// reduced first (model.Reduce), so one-variable factors and forbidden
// states are folded away; the primal is recomputed with m.Score.
//
// One iteration is a forward and a backward pass over the variables in
// index order. Result.Dual is the lowest bound seen, each the exact dual
// value at the messages after a pass (a valid upper bound on the MAP score);
// Result.Relaxed is the bound after the last pass. The primal is the best
// labelling of the forward passes. The run stops as Optimal when the gap
// closes within opts.Tol, Converged when the bound stalls (opts.BoundTol,
// opts.BoundWindow; only when opts.Tol > 0), Infeasible when the bound is -Inf, or at the iteration
// or time limit; cancelling ctx stops it as Interrupted with the best
// result so far. progress, if not nil, is called from the solving goroutine
// after the first iteration and then at most every opts.ProgressEvery.
// Evidence ev (nil for none) is applied by model.Reduce.
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, error) {
	res, _, err := SolveStats(ctx, m, ev, opts, progress)
	return res, err
}

// Stats describes a run beyond its result.
type Stats struct {
	Cycles CycleStats // TRW-S(LP-C) only
	SOC    SOCStats   // Options.SOC only
}

// SolveStats is Solve, also returning the run's statistics.
func SolveStats(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, Stats, error) {
	var st Stats
	res, cyc, err := solve(ctx, m, ev, opts, progress)
	if cyc != nil {
		st.Cycles = cyc.stats
		for _, h := range cyc.held {
			st.Cycles.Active += len(h)
			st.Cycles.MaxIneqs = max(st.Cycles.MaxIneqs, len(h))
		}
		if cyc.soc != nil {
			st.SOC = cyc.soc.stats
			st.SOC.Active = cyc.soc.active()
		}
	}
	return res, st, err
}

func solve(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, *lpc, error) {
	start := time.Now()
	red, err := solver.Prepare("trws", &opts, m, ev, checkPairwise)
	if err != nil {
		return solver.Result{}, nil, err
	}
	if red == nil {
		return solver.InfeasibleResult(time.Since(start)), nil, nil
	}
	g, err := newGraph(red.Model, opts.Threads)
	if err != nil {
		return solver.Result{}, nil, err
	}
	if opts.Cycles || opts.SOC {
		g.enableLPC()
	}
	r := newRun(g, opts)
	defer r.close()
	if opts.Cycles || opts.SOC {
		if r.cyc, err = newLPC(g, red.Model, opts.MaxCycles); err != nil {
			return solver.Result{}, nil, fmt.Errorf("trws: %w", err)
		}
		if opts.SOC {
			r.cyc.withSOC(opts.Cycles)
		}
	}
	res := r.run(ctx, start, progress)
	return solver.Finish(m, red, res), r.cyc, nil
}

// runner holds the state of one run on a graph; iterate allocates nothing.
type runner struct {
	g     *graph
	opts  Options
	x     []int // the labelling of the last forward pass (node numbering)
	bestX []int
	// hist[t % len(hist)] is the best bound after iteration t.
	hist []float64

	best     float64 // best primal (graph score of bestX)
	dual     float64 // lowest bound so far
	last     float64 // bound after the last pass
	found    bool
	onBounds func(forward, backward float64) // test hook: every pass's bound
	cyc      *lpc                            // TRW-S(LP-C), or nil
	cycOn    bool                            // the cycle sweeps have started
	toSweep  int                             // iterations until the next sweep, once cycOn

	// Threads (order.go): sc[c] is part c's scratch, and the last one the
	// separator's; part c > 0 runs on worker c, which takes a pass (0
	// forward, 1 backward) from ctl[c] and reports its share in shares[c]
	// before it posts ctl[c].done (handoff.go); spin is how long a waiting
	// side spins.
	sc     []*scratch
	ctl    []workerCtl
	spin   time.Duration
	shares []share
}

// share is one part's contribution to a pass.
type share struct {
	bound, score float64
	_            [48]byte // no false sharing
}

func newRun(g *graph, opts Options) *runner {
	r := &runner{g: g, opts: opts, x: make([]int, g.n), bestX: make([]int, g.n),
		hist: make([]float64, opts.BoundWindow+1), best: math.Inf(-1), dual: math.Inf(1)}
	nparts := len(g.parts) - 1
	r.sc = make([]*scratch, nparts+1)
	for c := range r.sc {
		r.sc[c] = g.newScratch()
	}
	r.shares = make([]share, nparts)
	r.ctl = make([]workerCtl, nparts)
	if runtime.GOMAXPROCS(0) >= nparts {
		r.spin = spinFor
	}
	for c := 1; c < nparts; c++ {
		r.ctl[c] = newWorkerCtl()
		go r.worker(c)
	}
	return r
}

// close stops the workers.
func (r *runner) close() {
	for c := 1; c < len(r.ctl); c++ {
		r.ctl[c].stop = true
		r.ctl[c].start.post()
	}
}

// worker runs part c's share of the passes it is given.
func (r *runner) worker(c int) {
	w := &r.ctl[c]
	var seen uint64
	for {
		seen = w.start.wait(seen, r.spin)
		if w.stop {
			return
		}
		r.part(c, w.pass)
		w.done.post()
	}
}

// part runs pass (0 forward, 1 backward) on part c.
func (r *runner) part(c, pass int) {
	g := r.g
	lo, hi := g.parts[c], g.parts[c+1]
	sh := &r.shares[c]
	if pass == 0 {
		sh.bound, sh.score = g.forwardPart(lo, hi, r.x, r.sc[c])
	} else {
		sh.bound, sh.score = g.backwardPart(lo, hi, r.sc[c]), 0
	}
}

// parallel runs pass on every part, part 0 on the calling goroutine.
func (r *runner) parallel(pass int) {
	for c := 1; c < len(r.ctl); c++ {
		r.ctl[c].pass = pass
		r.ctl[c].start.post()
	}
	r.part(0, pass)
	for c := 1; c < len(r.ctl); c++ {
		w := &r.ctl[c]
		w.seenDone = w.done.wait(w.seenDone, r.spin)
	}
}

// forward runs a forward pass (the parts, then the separator) and returns
// the bound and the labelling's score (graph numbering).
func (r *runner) forward() (float64, float64) {
	g := r.g
	r.parallel(0)
	sep := g.parts[len(g.parts)-1]
	b, sc := g.forwardPart(sep, g.n, r.x, r.sc[len(r.sc)-1])
	bound, score := g.constant+g.shift, g.constant
	for c := range r.shares {
		bound += r.shares[c].bound
		score += r.shares[c].score
	}
	bound += b
	score += sc
	if g.orig != nil {
		score = g.score(r.x)
	}
	return bound, score
}

// backward runs a backward pass (the separator, then the parts) and returns
// the bound.
func (r *runner) backward() float64 {
	g := r.g
	sep := g.parts[len(g.parts)-1]
	b := g.backwardPart(sep, g.n, r.sc[len(r.sc)-1])
	r.parallel(1)
	bound := g.constant + g.shift
	for c := range r.shares {
		bound += r.shares[c].bound
	}
	return bound + b
}

// iterate runs one forward and one backward pass and updates the primal
// and the bounds.
func (r *runner) iterate() {
	fb, sc := r.forward()
	if sc > r.best || (!r.found && sc > math.Inf(-1)) {
		r.best, r.found = sc, true
		copy(r.bestX, r.x)
	}
	bb := r.backward()
	if r.onBounds != nil {
		r.onBounds(fb, bb)
	}
	r.dual = min(r.dual, fb, bb)
	r.last = bb
	if r.cycOn {
		if r.toSweep--; r.toSweep <= 0 {
			// The sweep's steps lower the exact chain dual by known
			// amounts (cycles.go); the bound after it is as exact as a
			// pass's. The repair then changes the messages, not the
			// tables: the next pass evaluates the new dual exactly.
			r.last = bb - r.cyc.sweep()
			r.dual = min(r.dual, r.last)
			r.cyc.repair()
			r.toSweep = r.opts.SweepEvery
			// The global step (socglobal.go) resets the messages; the
			// next pass evaluates the bound it gives.
			r.cyc.soc.maybeGlobal(r.dual)
		}
	}
}

// run iterates until a stopping rule fires.
func (r *runner) run(ctx context.Context, start time.Time, progress func(solver.Progress)) solver.Result {
	res := solver.Result{Status: solver.IterationLimit}
	var lastReport time.Duration
	w := len(r.hist)
	from := 0 // convergence needs BoundWindow iterations after this one
	first := math.Inf(1)
	for t := 1; ; t++ {
		r.iterate()
		if t == 1 {
			first = r.dual
		}
		r.hist[t%w] = r.dual
		res.Iterations = t
		res.Dual, res.Relaxed, res.Primal = r.dual, r.last, r.best
		res.Gap = res.Dual - res.Primal
		elapsed := time.Since(start)
		if progress != nil && (t == 1 || elapsed-lastReport >= r.opts.ProgressEvery) {
			lastReport = elapsed
			progress(solver.Progress{Iteration: t, Dual: res.Dual, Primal: res.Primal, Gap: res.Gap, Elapsed: elapsed})
		}
		window := t-from > r.opts.BoundWindow
		gain := math.Inf(1) // over the last window
		if window {
			gain = r.hist[(t-r.opts.BoundWindow)%w] - r.dual
		}
		stalled := window && gain <= r.opts.BoundTol*math.Max(1, math.Abs(r.dual))
		// TRW-S slowed down: its last window gained at most CycleStart of
		// what it gained since the first iteration.
		slowed := stalled || window && gain <= r.opts.CycleStart*(first-r.dual)
		switch {
		case math.IsInf(res.Dual, -1):
			res.Status = solver.Infeasible
		case solver.Closed(res.Dual, res.Primal, r.opts.Tol):
			res.Status = solver.Optimal
		case slowed && r.cyc != nil && !r.cycOn && t < r.opts.MaxIter:
			// TRW-S slowed down: from now on every iteration also sweeps
			// the cycles (see cycles.go), and convergence is judged
			// afresh.
			r.cycOn, r.toSweep, from = true, 1, t
			continue
		case stalled && r.cycOn && t < r.opts.MaxIter && r.cyc.soc.onStall(r.dual):
			// The SOC global step (socglobal.go) moved the tangents:
			// convergence is judged afresh.
			from = t
			continue
		case stalled && (r.opts.Tol > 0 || r.opts.StallStop): // with Tol 0 only the limits stop a run
			res.Status = solver.Converged
		default:
			st, stop := r.opts.Reached(ctx, t, elapsed)
			if !stop {
				continue
			}
			res.Status = st
		}
		break
	}
	if r.found {
		res.Assignment = r.g.assignment(r.bestX)
	} else {
		res.Primal = math.Inf(-1)
		res.Gap = res.Dual - res.Primal
	}
	res.Elapsed = time.Since(start)
	return res
}
