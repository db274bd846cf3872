package anytime

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/elim"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/internal/primal"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/tighten"
	"github.com/ddrun/ddrun/trws"
)

// Phase names a stage of a run.
type Phase string

// The phases, in the order they run.
const (
	// Eliminate solves the model exactly by bucket elimination (package
	// elim) when its tables fit Options.Eliminate; it runs first.
	Eliminate Phase = "eliminate"
	// MiniBucket is depth-first branch and bound with the mini-bucket
	// heuristic (elim with Search), when exact elimination does not fit.
	MiniBucket Phase = "mini-bucket"
	// Relax bounds the model by its LP relaxation (TRW-S or DD-ADMM).
	Relax Phase = "relax"
	// Tighten bounds it by a tighter relaxation (cycle constraints).
	Tighten Phase = "tighten"
	// Search is best-first branch and bound over the dual bound.
	Search Phase = "branch-and-bound"
)

// Options configures a run. Start from DefaultOptions.
type Options struct {
	// Limits: MaxIter bounds each relaxation phase (math.MaxInt: no
	// limit), TimeLimit the whole run (0: none; the run then goes on
	// until the gap closes or ctx is cancelled), Tol is the relative gap
	// that ends the run as Optimal (solver.Closed), ProgressEvery the rate
	// of the phases' progress reports.
	solver.Limits
	// Relax is the relaxation of the first phase and decides the kind of
	// the later ones (Choose picks it by model class).
	Relax Relaxation
	// DD and TRWS are the settings of the DD-ADMM and TRW-S runs; their
	// Limits are replaced by the run's.
	DD   consensus.Options
	TRWS trws.Options
	// NodeMaxIter bounds the iterations of each branch and bound node
	// (0: 1000).
	NodeMaxIter int
	// NoTighten and NoSearch leave out the phases after the relaxation.
	NoTighten, NoSearch bool
	// TightenBy is how the default tightening adds cycles ("": AllCycles).
	TightenBy TightenMode
	// TightenShare is the share of the time left that the tightening
	// may take when a search follows (0: 1/3).
	TightenShare float64
	// Search bounds the branch and bound (its TimeLimit is replaced by
	// the time left; Tol by the run's).
	Search exact.Options

	// First, when not nil, runs the first phase instead of Relax with the
	// DD or TRWS options (an explicitly chosen algorithm, or a
	// distributed run). Its result must hold a valid Dual, and a Primal
	// that is the score of its Assignment.
	First func(ctx context.Context, m *model.Model, ev model.Evidence, progress func(solver.Progress)) (solver.Result, error)
	// FirstAbout says what First runs, for the phase's events ("": "the
	// chosen algorithm").
	FirstAbout string
	// Searcher, when not nil, runs the branch and bound phase instead of
	// package exact's search in this process (a distributed search).
	Searcher *Searcher
	// Primal, when not nil, searches for a better assignment after every
	// phase, from the phase's result (its assignment and marginals). It
	// returns an assignment of m's variables that respects ev, or nil;
	// the run scores it on m and keeps it when it is better.
	Primal func(ctx context.Context, m *model.Model, ev model.Evidence, hint solver.Result) []int
	// Tightener, when not nil, replaces the default tightening phase
	// (tightenDefault: DD-ADMM on the model regrouped into cycle factors,
	// or what TightenBy asks for).
	Tightener func(ctx context.Context, m *model.Model, ev model.Evidence, lim solver.Limits, progress func(solver.Progress)) (Tightened, error)
	// Node, when not nil, returns branch and bound's node solver for the
	// search model sm (nil: the default, see nodeSolver).
	Node func(sm *model.Model, lim solver.Limits) exact.WarmSolver
	// Eliminate, when > 0, is the memory budget (bytes) of exact bucket
	// elimination, tried before every other phase when its estimate
	// fits (0: not tried). The phase is skipped, and says why, otherwise.
	Eliminate int64
	// MiniBuckets, with Eliminate, runs branch and bound with mini-bucket
	// bounds of that budget (BB-MBE) when exact elimination does not
	// fit, for at most MiniBucketShare of the time left (0: half; 10 s
	// without a time limit), on models of at most maxMiniBucketVars
	// variables.
	MiniBuckets     bool
	MiniBucketShare float64
	// Events, when not nil, is told when a phase starts and ends and
	// whenever the best primal improves (Event).
	Events func(Event)
}

// Searcher is a branch and bound phase run elsewhere than in this
// process (run's search on workers, package dsearch).
type Searcher struct {
	// About says what it runs, for the phase's events.
	About string
	// Search searches sm (the model, or the tightened model with the same
	// scores) under ev, from seed: the run's best assignment so far (nil:
	// none) with its score as Primal, and the run's bound as Dual, which
	// bounds every node. left is the time left to the run (0: no limit);
	// progress takes its reports as exact.SolveWarm's. Its result's Dual
	// must be a valid bound, and its Assignment is re-scored by the run.
	Search func(ctx context.Context, sm *model.Model, ev model.Evidence, seed solver.Result, left time.Duration, progress func(solver.Progress)) (solver.Result, exact.Stats, error)
}

// Tightened is the outcome of a tightening phase.
type Tightened struct {
	// Result is the phase's result on m (Dual valid for m).
	Result solver.Result
	// Model, when not nil, is a model with the same variables and the same
	// score for every assignment as m whose relaxation is tighter (e.g.
	// tighten.Cycles): the search runs on it.
	Model *model.Model
	// Warm is DD-ADMM's final state on Model (or m), for the search's root.
	Warm *consensus.Warm
	// About says what the phase ran.
	About string
	// Skipped: the phase had nothing to add (no cycles); Result is unset.
	Skipped bool
}

// DefaultOptions returns the defaults: TRW-S, no iteration limit per
// phase, no time limit, a relative gap of 1e-6, every phase.
func DefaultOptions() Options {
	dd, tr := consensus.DefaultOptions(), trws.DefaultOptions()
	return Options{
		Limits: solver.Limits{MaxIter: math.MaxInt, Tol: dd.Tol, ProgressEvery: dd.ProgressEvery},
		Relax:  TRWS, DD: dd, TRWS: tr, NodeMaxIter: 1000,
	}
}

// Validate returns a *solver.OptionError naming the first bad option.
func (o *Options) Validate() error {
	if err := solver.FirstBad(
		o.Limits.Validate(),
		solver.Want(o.Relax == TRWS || o.Relax == ADMM, "Relax", "unknown relaxation %q (want %s or %s)", o.Relax, TRWS, ADMM),
		solver.WantNotNegative("NodeMaxIter", o.NodeMaxIter),
		solver.Want(o.TightenBy == "" || o.TightenBy == AllCycles || o.TightenBy == Pursue || o.TightenBy == LPC,
			"TightenBy", "unknown tightening %q (want %s, %s or %s)", o.TightenBy, AllCycles, Pursue, LPC),
		solver.Want(o.TightenShare >= 0 && o.TightenShare <= 1, "TightenShare", "%v is not in [0, 1]", o.TightenShare),
		solver.Want(o.MiniBucketShare >= 0 && o.MiniBucketShare <= 1, "MiniBucketShare", "%v is not in [0, 1]", o.MiniBucketShare),
		solver.WantNotNegative("Eliminate", o.Eliminate),
		solver.WantNotNegative("Search.MaxNodes", o.Search.MaxNodes),
	); err != nil {
		return err
	}
	if o.Relax == ADMM {
		dd := o.DD
		dd.Limits = o.Limits
		if err := dd.Validate(); err != nil {
			return err
		}
	} else {
		tr := o.TRWS
		tr.Limits = o.Limits
		if err := tr.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// EventKind says what an Event reports.
type EventKind int

// The events.
const (
	// PhaseStart: Phase starts; About says what it runs.
	PhaseStart EventKind = iota
	// PhaseEnd: Phase ended with Status, its own bound PhaseDual, after
	// Iterations of its own.
	PhaseEnd
	// Improved: the best primal rose to Primal during Phase.
	Improved
)

// Event is a step of a run, for the progress display.
type Event struct {
	Kind   EventKind
	Phase  Phase
	About  string
	Status solver.Status
	// Dual and Primal are the run's best so far: the lowest bound of
	// every phase and the best primal.
	Dual, Primal float64
	// PhaseDual is the phase's own final bound (PhaseEnd).
	PhaseDual  float64
	Iterations int
	Nodes      int
	Elapsed    time.Duration
}

// PhaseResult is how one phase went.
type PhaseResult struct {
	Phase      Phase
	About      string
	Status     solver.Status
	Dual       float64 // the phase's own bound
	Primal     float64 // the best primal after the phase
	Iterations int
	Nodes      int
	Seconds    float64
}

// Result is a run's outcome: the combined result (Dual the lowest bound of
// every phase, Primal the best primal, rescored on the model, Iterations
// the phases' iterations added up), the phase that closed the gap (or the
// last phase run) and how each phase went.
type Result struct {
	solver.Result
	Phase  Phase
	Phases []PhaseResult
	// Stats of the search phase, when it ran.
	Search exact.Stats
}

// Solve runs the phases on m under evidence ev until the gap closes, the
// time limit passes or ctx is cancelled (Interrupted, with the best result
// so far). progress, when not nil, gets every phase's reports, continued:
// Iteration counts from the run's start, Dual is the lowest bound so far,
// Primal the best so far (as the phase scored it), Elapsed from the start;
// during the search Nodes and Open are branch and bound's.
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (Result, error) {
	start := time.Now()
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	if err := m.Validate(); err != nil {
		return Result{}, fmt.Errorf("anytime: %w", err)
	}
	if opts.Relax == TRWS && !Pairwise(m) {
		a, arity, _ := firstHigher(m)
		return Result{}, fmt.Errorf("anytime: TRW-S takes pairwise models; factor %d is over %d variables", a, arity)
	}
	parent := ctx
	var deadline time.Time
	if opts.TimeLimit > 0 {
		var cancel context.CancelFunc
		deadline = start.Add(opts.TimeLimit)
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	if opts.TightenShare == 0 {
		opts.TightenShare = 1.0 / 3
	}
	r := &run{m: m, ev: ev, opts: opts, start: start, deadline: deadline, parent: parent, progress: progress,
		dual: math.Inf(1), primal: math.Inf(-1), shown: math.Inf(-1), relaxed: math.NaN()}
	return r.solve(ctx)
}

// run is the state of one Solve.
type run struct {
	m        *model.Model
	ev       model.Evidence
	opts     Options
	start    time.Time
	deadline time.Time // zero: no time limit
	parent   context.Context
	progress func(solver.Progress)

	mu      sync.Mutex // the progress callbacks may come from other goroutines
	phase   Phase
	iters   int // iterations of the finished phases
	dual    float64
	primal  float64 // rescored on m
	x       []int
	shown   float64 // best primal seen in progress reports
	relaxed float64
	lastMu  []float64 // the latest marginals in m.Unary's layout
	phases  []PhaseResult
	status  solver.Status // why the last phase stopped
	closer  Phase
}

func (r *run) solve(ctx context.Context) (Result, error) {
	// Phase 0: exact elimination, when it fits and is cheap enough.
	mbe := false // the mini-bucket search is to run after the relaxation
	if r.opts.Eliminate > 0 {
		var err error
		if mbe, err = r.eliminate(ctx); err != nil {
			return Result{}, err
		}
		if r.done(ctx) {
			return r.result(), nil
		}
	}
	// Phase 1: the relaxation. Before a mini-bucket search it gets at most
	// a quarter of the time left: it often closes the gap at once
	// (Segmentation_11: 0.02 s, where the search needs more than 30 s), and
	// else the search gets its share. (rctx bounds the relaxation only: the
	// phase's end, and its primal search, run under ctx.)
	var warm *consensus.Warm
	rctx := ctx
	if left := r.left(); mbe && left > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, left/4)
		defer cancel()
	}
	res, err := r.phaseRun(ctx, Relax, r.relaxAbout(), func(lim solver.Limits, progress func(solver.Progress)) (solver.Result, error) {
		if mbe && lim.TimeLimit > 0 {
			lim.TimeLimit = max(lim.TimeLimit/4, time.Nanosecond)
		}
		ctx := rctx
		if r.opts.First != nil {
			return r.opts.First(ctx, r.m, r.ev, progress)
		}
		if r.opts.Relax == TRWS {
			o := r.opts.TRWS
			o.Limits = lim
			// With later phases to run, a stalled bound (weak tree
			// agreement) ends this one even with Tol 0: further TRW-S
			// iterations would not move it, the tighter relaxation will.
			// (A BoundTol of 0, --tol 0's, would wait for a bound that
			// does not move at all: the default's 1e-7 judges the stall.)
			if o.StallStop = !r.opts.NoTighten || !r.opts.NoSearch; o.StallStop {
				o.BoundTol = max(o.BoundTol, trws.DefaultOptions().BoundTol)
			}
			return trws.Solve(ctx, r.m, r.ev, o, progress)
		}
		o := r.opts.DD
		o.Limits = lim
		if o.Slaves != consensus.PerFactor {
			return consensus.Solve(ctx, r.m, r.ev, o, progress)
		}
		var res solver.Result
		var err error
		res, warm, err = consensus.SolveWarm(ctx, r.m, r.ev, o, nil, progress)
		return res, err
	})
	if err != nil {
		return Result{}, err
	}
	r.relaxed = res.Relaxed
	if r.done(ctx) {
		return r.result(), nil
	}
	if mbe {
		r.miniBuckets(ctx)
		if r.done(ctx) {
			return r.result(), nil
		}
	}
	if r.opts.NoTighten && r.opts.NoSearch {
		return r.result(), nil
	}

	// Phase 2: a tighter relaxation.
	sm, smWarm := r.m, warm
	if !r.opts.NoTighten {
		tighten := r.opts.Tightener
		if tighten == nil {
			tighten = r.tightenDefault
		}
		var t Tightened
		t, err = r.tightenPhase(ctx, tighten)
		if err != nil {
			return Result{}, err
		}
		if !t.Skipped && t.Model != nil {
			sm, smWarm = t.Model, t.Warm
		}
		if r.done(ctx) || r.opts.NoSearch {
			return r.result(), nil
		}
	}

	// Phase 3: branch and bound.
	return r.search(ctx, sm, smWarm)
}

// eliminate runs exact bucket elimination when its estimate fits the
// budget, and records the phase as skipped, with the estimate, otherwise.
func (r *run) eliminate(ctx context.Context) (mbe bool, err error) {
	e, err := elim.EstimateOf(ctx, r.m, r.ev, r.opts.Eliminate)
	if err != nil {
		return false, fmt.Errorf("anytime: %s phase: %w", Eliminate, err)
	}
	if !e.Fits {
		r.skip(Eliminate, "bucket elimination not tried: "+e.Verdict())
		return true, nil
	}
	// With a time limit, elimination gets at most half the time left, and
	// three times its estimated work at elimRate: a model whose estimate
	// says more goes to the mini-bucket search instead, and an elimination
	// that overruns its share is cancelled (its work lost) so that the
	// other phases still get the rest of the time.
	est := time.Duration(e.Work / elimRate * float64(time.Second))
	lim := r.limits()
	if left := r.left(); left > 0 {
		if est > left/2 {
			r.skip(Eliminate, fmt.Sprintf("bucket elimination not tried: %s, but about %.2g s of work at %.0e entries/s, more than half the %.2g s left",
				e.Verdict(), est.Seconds(), elimRate, left.Seconds()))
			return true, nil
		}
		lim.TimeLimit = min(left/2, max(3*est, 100*time.Millisecond))
	}
	about := "bucket elimination (Dechter 1999): " + e.Verdict()
	t0 := r.begin(Eliminate, about)
	o := elim.DefaultOptions()
	o.Limits, o.Memory = lim, r.opts.Eliminate
	o.ProgressEvery = r.opts.ProgressEvery
	res, err := elim.Solve(ctx, r.m, r.ev, o, r.wrap())
	if err != nil {
		return false, fmt.Errorf("anytime: %s phase: %w", Eliminate, err)
	}
	r.end(ctx, Eliminate, about, t0, res, 0)
	if res.Status != solver.Optimal && res.Status != solver.Infeasible && !r.done(ctx) {
		return true, nil
	}
	return false, nil
}

// maxMiniBucketVars bounds the models that the mini-bucket search is
// tried on: the greedy order of larger ones takes seconds.
const maxMiniBucketVars = 4096

// miniBuckets runs the mini-bucket branch and bound for its share of the
// time; the run goes on from its bound and its primal when it does not
// close the gap.
func (r *run) miniBuckets(ctx context.Context) {
	if !r.opts.MiniBuckets {
		return
	}
	if n := r.m.NumVars(); n > maxMiniBucketVars {
		r.skip(MiniBucket, fmt.Sprintf("mini-bucket search not tried: %d variables, more than %d", n, maxMiniBucketVars))
		return
	}
	share := r.opts.MiniBucketShare
	if share == 0 {
		share = 0.5
	}
	budget := 10 * time.Second
	if left := r.left(); left > 0 {
		budget = max(time.Duration(float64(left)*share), time.Nanosecond)
	}
	about := fmt.Sprintf("depth-first branch and bound with mini-bucket bounds (BB-MBE, Kask and Dechter 2001) within %s, for %.3g s", elim.BytesString(float64(r.opts.Eliminate)), budget.Seconds())
	t0 := r.begin(MiniBucket, about)
	o := elim.DefaultOptions()
	o.Memory, o.Search, o.Tol, o.ProgressEvery, o.TimeLimit = r.opts.Eliminate, true, r.opts.Tol, r.opts.ProgressEvery, budget
	res, st, err := elim.SolveStats(ctx, r.m, r.ev, o, r.wrap())
	if err != nil {
		r.skip(MiniBucket, "mini-bucket search not run: "+err.Error())
		return
	}
	about += fmt.Sprintf(": mini-buckets of 2^%.0f entries, %d buckets split, root bound %.9g, %d nodes", st.Limit, st.Split, st.Bound, st.Nodes)
	r.end(ctx, MiniBucket, about, t0, res, st.Nodes)
}

// elimRate is a conservative rate of bucket elimination's message loop
// (table entries visited per second: 3e8 to 7.6e8 measured on the real
// instances after the row loop, 2 cores shared with other jobs): elimination is not started
// when its work would not end within the time left.
const elimRate = 4e8

// skip records phase ph as skipped, and why.
func (r *run) skip(ph Phase, about string) {
	r.mu.Lock()
	r.phases = append(r.phases, PhaseResult{Phase: ph, About: about, Status: "skipped", Dual: math.NaN(), Primal: r.primal})
	ev := Event{Kind: PhaseEnd, Phase: ph, About: about, Status: "skipped", Dual: r.dual, Primal: r.primal, PhaseDual: math.NaN(), Elapsed: time.Since(r.start)}
	r.mu.Unlock()
	r.emit(ev)
}

func (r *run) relaxAbout() string {
	switch {
	case r.opts.First != nil && r.opts.FirstAbout != "":
		return r.opts.FirstAbout
	case r.opts.First != nil:
		return "the chosen algorithm"
	case r.opts.Relax == TRWS:
		return "TRW-S (Kolmogorov 2006)"
	}
	return "DD-ADMM (AD3, Martins et al. 2011)"
}

// limits are a relaxation phase's limits: the run's, with the time left.
func (r *run) limits() solver.Limits {
	lim := r.opts.Limits
	lim.TimeLimit = r.left()
	return lim
}

// left is the time left to the run (0: no time limit).
func (r *run) left() time.Duration {
	if r.deadline.IsZero() {
		return 0
	}
	return max(time.Until(r.deadline), time.Nanosecond)
}

// phaseRun runs one relaxation phase through solve and folds its result
// into the run's.
func (r *run) phaseRun(ctx context.Context, ph Phase, about string, solve func(solver.Limits, func(solver.Progress)) (solver.Result, error)) (solver.Result, error) {
	t0 := r.begin(ph, about)
	res, err := solve(r.limits(), r.wrap())
	if err != nil {
		return res, fmt.Errorf("anytime: %s phase: %w", ph, err)
	}
	r.end(ctx, ph, about, t0, res, 0)
	return res, nil
}

// begin starts phase ph.
func (r *run) begin(ph Phase, about string) time.Time {
	r.mu.Lock()
	r.phase = ph
	ev := Event{Kind: PhaseStart, Phase: ph, About: about, Dual: r.dual, Primal: r.primal, Iterations: r.iters, Elapsed: time.Since(r.start)}
	r.mu.Unlock()
	r.emit(ev)
	return time.Now()
}

// end folds phase ph's result into the run's: the lowest bound, the best
// primal (rescored on m, then improved by the Primal seam), the
// iterations, and the phase's record.
func (r *run) end(ctx context.Context, ph Phase, about string, t0 time.Time, res solver.Result, nodes int) {
	if res.Status == solver.Interrupted && r.parent.Err() == nil && !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
		res.Status = solver.TimeLimit // the run's deadline, not the caller's cancellation
	}
	r.offer(ph, res.Assignment)
	if res.Mu != nil && len(res.Mu) == len(r.m.Unary) {
		r.lastMu = res.Mu
	}
	r.mu.Lock()
	dual := r.dual
	if !math.IsNaN(res.Dual) {
		dual = min(dual, res.Dual)
	}
	closed := math.IsInf(dual, -1) || solver.Closed(dual, r.primal, r.opts.Tol)
	r.mu.Unlock()
	if r.opts.Primal != nil && ctx.Err() == nil && !closed && res.Status != solver.Optimal {
		// (A closed gap leaves nothing to find.)
		hint := res
		if r.x != nil {
			hint.Assignment, hint.Primal = r.x, r.primal
		}
		r.offer(ph, r.opts.Primal(ctx, r.m, r.ev, hint))
	}
	r.mu.Lock()
	if !math.IsNaN(res.Dual) {
		r.dual = min(r.dual, res.Dual)
	}
	r.iters += res.Iterations
	r.status = res.Status
	closed = r.closedLocked()
	if closed && r.closer == "" {
		r.closer = ph
	}
	r.phases = append(r.phases, PhaseResult{Phase: ph, About: about, Status: res.Status, Dual: res.Dual, Primal: r.primal,
		Iterations: res.Iterations, Nodes: nodes, Seconds: time.Since(t0).Seconds()})
	ev := Event{Kind: PhaseEnd, Phase: ph, About: about, Status: res.Status, Dual: r.dual, Primal: r.primal, PhaseDual: res.Dual,
		Iterations: res.Iterations, Nodes: nodes, Elapsed: time.Since(r.start)}
	r.mu.Unlock()
	r.emit(ev)
}

// offer takes x as the best assignment when it respects the evidence and
// scores better on m than the best so far.
func (r *run) offer(ph Phase, x []int) {
	if len(x) != r.m.NumVars() {
		return
	}
	for v, s := range r.ev {
		if v < 0 || v >= len(x) || x[v] != s {
			return
		}
	}
	for i, s := range x {
		if s < 0 || s >= r.m.Cards[i] {
			return
		}
	}
	sc := r.m.Score(x)
	r.mu.Lock()
	if math.IsInf(sc, -1) || math.IsNaN(sc) || sc <= r.primal {
		r.mu.Unlock()
		return
	}
	r.primal, r.x = sc, append([]int(nil), x...)
	improved := sc > r.shown
	r.shown = max(r.shown, sc)
	ev := Event{Kind: Improved, Phase: ph, Dual: r.dual, Primal: sc, Iterations: r.iters, Elapsed: time.Since(r.start)}
	r.mu.Unlock()
	if improved {
		r.emit(ev)
	}
}

func (r *run) emit(ev Event) {
	if r.opts.Events != nil {
		r.opts.Events(ev)
	}
}

func (r *run) closedLocked() bool {
	return math.IsInf(r.dual, -1) || solver.Closed(r.dual, r.primal, r.opts.Tol)
}

// done reports whether the run is over: the gap is closed, the model is
// infeasible, or the time is up.
func (r *run) done(ctx context.Context) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closedLocked() || ctx.Err() != nil || r.parent.Err() != nil || !r.deadline.IsZero() && !time.Now().Before(r.deadline)
}

// wrap continues a phase's progress reports from where the run is.
func (r *run) wrap() func(solver.Progress) {
	return func(p solver.Progress) {
		r.mu.Lock()
		p.Iteration += r.iters
		if !math.IsNaN(p.Dual) {
			p.Dual = min(p.Dual, r.dual)
		}
		var ev *Event
		if p.Primal > r.shown {
			r.shown = p.Primal
			ev = &Event{Kind: Improved, Phase: r.phase, Dual: p.Dual, Primal: p.Primal, Iterations: p.Iteration, Nodes: p.Nodes, Elapsed: time.Since(r.start)}
		}
		p.Primal = max(p.Primal, r.primal)
		p.Gap = p.Dual - p.Primal
		p.Elapsed = time.Since(r.start)
		r.mu.Unlock()
		if ev != nil {
			r.emit(*ev)
		}
		if r.progress != nil {
			r.progress(p)
		}
	}
}

// tightenPhase runs the tightening and folds its result in.
func (r *run) tightenPhase(ctx context.Context, tighten func(context.Context, *model.Model, model.Evidence, solver.Limits, func(solver.Progress)) (Tightened, error)) (Tightened, error) {
	t0 := r.begin(Tighten, "cycle constraints")
	lim := r.limits()
	tctx := ctx
	if lim.TimeLimit > 0 && !r.opts.NoSearch {
		// The search gets the larger share of what is left: a tighter
		// bound that comes too late to prune helps nobody.
		lim.TimeLimit = max(time.Duration(float64(lim.TimeLimit)*r.opts.TightenShare), time.Nanosecond)
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, lim.TimeLimit)
		defer cancel()
	}
	t, err := tighten(tctx, r.m, r.ev, lim, r.wrap())
	if t.Result.Status == solver.Interrupted && ctx.Err() == nil && tctx.Err() != nil {
		t.Result.Status = solver.TimeLimit // its share of the time
	}
	if err != nil {
		return t, fmt.Errorf("anytime: %s phase: %w", Tighten, err)
	}
	if t.Skipped {
		r.mu.Lock()
		r.phases = append(r.phases, PhaseResult{Phase: Tighten, About: t.About, Status: "skipped", Dual: math.NaN(), Primal: r.primal, Seconds: time.Since(t0).Seconds()})
		ev := Event{Kind: PhaseEnd, Phase: Tighten, About: t.About, Status: "skipped", Dual: r.dual, Primal: r.primal, PhaseDual: math.NaN(), Iterations: 0, Elapsed: time.Since(r.start)}
		r.mu.Unlock()
		r.emit(ev)
		return t, nil
	}
	r.end(ctx, Tighten, t.About, t0, t.Result, 0)
	return t, nil
}

// tightenDefault is the default tightening: nothing when m's pairwise
// factors form no 3- or 4-cycles; otherwise DD-ADMM on m regrouped into
// factors over its triangles and chordless squares (tighten.Cycles: the
// same score for every assignment, a relaxation with each cycle's local
// polytope), whose final state seeds the search's root, when there are
// no more cycles than edges. More cycle factors than edges, on dense
// graphs, cost far more than the model: after TRW-S the phase then runs
// TRW-S(LP-C) (trws Options.Cycles: the cycle inequalities in TRW-S's
// dual, no factors), as it does with TightenBy LPC; after DD-ADMM it is
// skipped.
func (r *run) tightenDefault(ctx context.Context, m *model.Model, ev model.Evidence, lim solver.Limits, progress func(solver.Progress)) (Tightened, error) {
	if r.opts.TightenBy == Pursue {
		return r.tightenPursue(ctx, m, ev, lim, progress)
	}
	cycles, st, err := tighten.FindCycles(m, tighten.Options{})
	if err != nil {
		return Tightened{}, err
	}
	if len(cycles) == 0 {
		return Tightened{Skipped: true, About: "no 3- or 4-cycles of pairwise factors"}, nil
	}
	if r.opts.Relax == TRWS && (r.opts.TightenBy == LPC || len(cycles) > st.Edges) {
		o := r.opts.TRWS
		o.Limits, o.Cycles = lim, true
		res, err := trws.Solve(ctx, m, ev, o, progress)
		t := Tightened{Result: res, About: fmt.Sprintf("TRW-S(LP-C): cycle inequalities of %d triangles and %d squares", st.Triangles, st.Squares)}
		if err == nil && len(cycles) <= st.Edges {
			t.Model, _, err = tighten.Cycles(m, tighten.Options{})
		}
		return t, err
	}
	if len(cycles) > st.Edges {
		// A near-complete graph: its cycle factors (34220 triangles of
		// 1331 entries on ObjectDetection_11) cost far more than the
		// model, one DD-ADMM iteration on them outlasts the phase's time.
		return Tightened{Skipped: true, About: fmt.Sprintf("%d triangles and %d squares, more than the %d edges: too many cycle factors for DD-ADMM", st.Triangles, st.Squares, st.Edges)}, nil
	}
	tm, _, err := tighten.Cycles(m, tighten.Options{})
	if err != nil {
		return Tightened{}, err
	}
	o := r.opts.DD
	o.Limits = lim
	t := Tightened{Model: tm, About: fmt.Sprintf("DD-ADMM on %d triangle and %d square factors (tighten.Cycles)", st.Triangles, st.Squares)}
	if o.Slaves != consensus.PerFactor {
		t.Result, err = consensus.Solve(ctx, tm, ev, o, progress)
	} else {
		t.Result, t.Warm, err = consensus.SolveWarm(ctx, tm, ev, o, nil, progress)
	}
	return t, err
}

// search runs branch and bound on sm (m, or a tightened model with the
// same scores), its root seeded with the run's bound, best assignment,
// marginals and warm state.
func (r *run) search(ctx context.Context, sm *model.Model, warm *consensus.Warm) (Result, error) {
	if s := r.opts.Searcher; s != nil {
		return r.searchWith(ctx, sm, s)
	}
	lim := r.opts.Limits
	lim.MaxIter, lim.TimeLimit = r.opts.NodeMaxIter, 0
	if lim.MaxIter == 0 {
		lim.MaxIter = 1000
	}
	if r.opts.Search.Threads > 1 {
		// The search solves that many nodes at once: one thread each.
		r.opts.DD.Threads, r.opts.TRWS.Threads = 1, 1
	}
	var node exact.WarmSolver
	about := ""
	if r.opts.Node != nil {
		node, about = r.opts.Node(sm, lim), "the given node solver"
	} else {
		node, about = r.nodeSolver(sm, lim)
	}
	r.mu.Lock()
	root := solver.Result{Status: r.status, Dual: r.dual, Primal: r.primal, Assignment: r.x, Mu: r.lastMu}
	r.mu.Unlock()
	root.Gap = root.Dual - root.Primal
	var once sync.Once
	seeded := func(ctx context.Context, m *model.Model, sp exact.Subproblem) (solver.Result, *consensus.Warm, error) {
		first := false
		once.Do(func() { first = true })
		if !first {
			return node(ctx, m, sp)
		}
		if root.Mu != nil {
			// The root is what the earlier phases found: no need to
			// bound it again.
			return root, warm, nil
		}
		// No marginals to branch on (TRW-S has none): bound the root
		// with the node solver, and keep the better bound and primal.
		sp.Warm = warm
		res, w, err := node(ctx, m, sp)
		if err != nil {
			return res, w, err
		}
		res.Dual = min(res.Dual, root.Dual)
		if root.Assignment != nil && (res.Assignment == nil || root.Primal > res.Primal) {
			res.Assignment, res.Primal = root.Assignment, root.Primal
		}
		res.Gap = res.Dual - res.Primal
		return res, w, nil
	}
	eo := r.opts.Search
	eo.Tol, eo.TimeLimit = r.opts.Tol, r.left()
	t0 := r.begin(Search, about)
	res, st, err := exact.SolveWarm(ctx, sm, r.ev, seeded, eo, r.wrap())
	if err != nil {
		return Result{}, fmt.Errorf("anytime: %s phase: %w", Search, err)
	}
	r.end(ctx, Search, about, t0, res, st.Nodes)
	out := r.result()
	out.Search = st
	return out, nil
}

// searchWith runs the search phase through s, seeded with the run's best
// assignment and bound.
func (r *run) searchWith(ctx context.Context, sm *model.Model, s *Searcher) (Result, error) {
	r.mu.Lock()
	seed := solver.Result{Status: r.status, Dual: r.dual, Primal: r.primal, Assignment: slices.Clone(r.x), Mu: r.lastMu}
	r.mu.Unlock()
	seed.Gap = seed.Dual - seed.Primal
	t0 := r.begin(Search, s.About)
	res, st, err := s.Search(ctx, sm, r.ev, seed, r.left(), r.wrap())
	if err != nil {
		return Result{}, fmt.Errorf("anytime: %s phase: %w", Search, err)
	}
	r.end(ctx, Search, s.About, t0, res, st.Nodes)
	out := r.result()
	out.Search = st
	return out, nil
}

// nodeSolver is the default node solver on sm: DD-ADMM warm started from
// the parent's multipliers, stopping at the cutoff, when the run uses
// DD-ADMM with one slave per factor or sm is a tightened model (few enough
// cycle factors); otherwise TRW-S, stopping at the cutoff.
func (r *run) nodeSolver(sm *model.Model, lim solver.Limits) (exact.WarmSolver, string) {
	if r.opts.Relax == ADMM || sm != r.m {
		o := r.opts.DD
		o.Limits = lim
		if o.Slaves == consensus.PerFactor {
			return exact.ADMM(o), "DD-ADMM nodes, warm started"
		}
		return exact.Cold(func(ctx context.Context, m *model.Model, ev model.Evidence) (solver.Result, error) {
			return consensus.Solve(ctx, m, ev, o, nil)
		}), "DD-ADMM nodes"
	}
	o := r.opts.TRWS
	o.Limits = lim
	return TRWSNode(o), "TRW-S nodes"
}

// TRWSNode is a branch and bound node solver running TRW-S with opts that
// stops as soon as the node's bound falls to the cutoff (every bound TRW-S
// reports is valid, so the node is pruned either way).
func TRWSNode(opts trws.Options) exact.WarmSolver {
	return func(ctx context.Context, m *model.Model, sp exact.Subproblem) (solver.Result, *consensus.Warm, error) {
		o := opts
		var progress func(solver.Progress)
		if c := sp.Cutoff; !math.IsInf(c, -1) && !math.IsNaN(c) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			o.ProgressEvery = 0
			progress = func(p solver.Progress) {
				if p.Dual <= c {
					cancel()
				}
			}
		}
		res, err := trws.Solve(ctx, m, sp.Evidence, o, progress)
		return res, nil, err
	}
}

// result is the run's combined result.
func (r *run) result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := solver.Result{Status: r.status, Primal: r.primal, Dual: r.dual, Relaxed: r.relaxed, Iterations: r.iters,
		Elapsed: time.Since(r.start), Assignment: r.x, Mu: r.lastMu}
	switch {
	case math.IsInf(r.dual, -1):
		res.Status = solver.Infeasible
	case solver.Closed(r.dual, r.primal, r.opts.Tol):
		res.Status = solver.Optimal
	case res.Status == solver.Optimal || res.Status == solver.Infeasible:
		// A phase closed its own gap on a model scored differently by
		// rounding only; the run's numbers decide.
		res.Status = solver.Converged
	}
	if r.x == nil {
		res.Primal = math.Inf(-1)
	}
	res.Gap = res.Dual - res.Primal
	ph := r.closer
	if ph == "" && len(r.phases) > 0 {
		ph = r.phases[len(r.phases)-1].Phase
	}
	return Result{Result: res, Phase: ph, Phases: append([]PhaseResult(nil), r.phases...)}
}

// PrimalSearch is the default Primal seam: internal/primal's search
// (propagation of the hard constraints, a backtracking construction guided
// by the phase's marginals, or by the unaries when it has none, ICM and
// large neighbourhood search from the best assignment so far), within
// budget (and the run's context).
func PrimalSearch(budget time.Duration) func(ctx context.Context, m *model.Model, ev model.Evidence, hint solver.Result) []int {
	var mu sync.Mutex
	var s *primal.Searcher
	var of *model.Model
	return func(ctx context.Context, m *model.Model, ev model.Evidence, hint solver.Result) []int {
		mu.Lock()
		defer mu.Unlock()
		if s == nil || of != m {
			s, of = primal.NewSearcher(m), m
		}
		o := primal.Options{Evidence: ev, TimeLimit: budget, Start: hint.Assignment}
		var h []float64
		if len(hint.Mu) == len(m.Unary) {
			h = hint.Mu
		}
		r := s.Run(ctx, h, o)
		if !r.OK {
			return nil
		}
		return r.X
	}
}
