package elim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/ddrun/ddrun/internal/primal"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// DefaultMemory is the default budget of the tables: 1 GiB.
const DefaultMemory = 1 << 30

// Options configure a run. Start from DefaultOptions.
type Options struct {
	// Limits: TimeLimit bounds the run (0: none), Tol is the relative gap
	// at which the search stops as Optimal (exact elimination needs
	// none), ProgressEvery the rate of the search's progress reports.
	// MaxIter is not used: elimination has no iterations, and the search
	// is bounded by MaxNodes.
	solver.Limits
	// Memory bounds the bytes the tables may take (> 0): exact
	// elimination runs only when its estimate fits, the mini-buckets of
	// the search are chosen to fit.
	Memory int64
	// Search, when exact elimination does not fit, bounds the model by
	// mini-buckets and searches it by branch and bound (BB-MBE) instead
	// of returning a *TooLargeError.
	Search bool
	// MaxWork bounds the entries the mini-bucket messages may visit
	// (0: 4e8, about a second), so that the heuristic leaves time to the
	// search; with Search, exact elimination over MaxWork is searched
	// instead.
	MaxWork float64
	// IBound, when > 0, runs the search with mini-buckets of at most
	// 2^IBound entries (their variable included) even when exact
	// elimination fits (0: the largest that fits Memory and MaxWork).
	IBound float64
	// MaxNodes bounds the search's nodes (0: none).
	MaxNodes int
	// PrimalTime bounds the search for a first incumbent
	// (internal/primal) before the branch and bound (0: a tenth of the
	// time limit, at most 2 s, or 2 s without one; negative: none).
	PrimalTime time.Duration
}

// DefaultOptions are a 1 GiB budget, exact elimination only, a relative
// gap of 1e-6 for the search.
func DefaultOptions() Options {
	return Options{Limits: solver.Limits{MaxIter: 1, Tol: 1e-6, ProgressEvery: time.Second}, Memory: DefaultMemory}
}

// Validate returns a *solver.OptionError naming the first bad option.
func (o *Options) Validate() error {
	lim := o.Limits
	lim.MaxIter = max(lim.MaxIter, 1) // not used
	return solver.FirstBad(
		lim.Validate(),
		solver.Want(o.Memory > 0, "Memory", "%d is not a positive number of bytes", o.Memory),
		solver.WantNonNegative("MaxWork", o.MaxWork),
		solver.WantNonNegative("IBound", o.IBound),
		solver.WantNotNegative("MaxNodes", o.MaxNodes),
	)
}

// Estimate is what exact elimination of a model would cost along the
// best greedy order found, computed before any table is allocated.
type Estimate struct {
	// Order is the heuristic of the order (min-fill or min-weight).
	Order string
	// Width is the induced width, MaxLog2 the log2 of the entries of the
	// largest message.
	Width   int
	MaxLog2 float64
	// Bytes is the memory of the tables (messages and expanded factors),
	// Work the table entries visited.
	Bytes, Work float64
	// Complete: the figures are the order's; otherwise the estimate
	// stopped once it was far above the budget, and the figures are
	// lower bounds.
	Complete bool
	// Budget is the budget it was compared with; Fits, whether it fits.
	Budget int64
	Fits   bool
}

func (e Estimate) String() string {
	at := ""
	if !e.Complete {
		at = "at least "
	}
	return fmt.Sprintf("%s order: induced width %s%d, largest table 2^%.1f entries, tables %s%s, %s%.2g operations",
		e.Order, at, e.Width, e.MaxLog2, at, BytesString(e.Bytes), at, e.Work)
}

// TooLargeError says that exact elimination does not fit the memory
// budget.
type TooLargeError struct {
	Estimate Estimate
}

func (e *TooLargeError) Error() string {
	return "elim: exact elimination does not fit: " + e.Estimate.Verdict()
}

// Verdict says whether the estimate fits its budget, and the estimate.
func (e Estimate) Verdict() string {
	fits := "over"
	if e.Fits {
		fits = "within"
	}
	return fmt.Sprintf("%s, %s the memory budget of %s", e, fits, BytesString(float64(e.Budget)))
}

// BytesString writes a byte count with a binary unit (1.0 GiB, 512.0 MiB).
func BytesString(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	k := 0
	for b >= 1024 && k+1 < len(units) {
		b /= 1024
		k++
	}
	if k == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	if b >= 1024 {
		return fmt.Sprintf("%.3g %s", b, units[k])
	}
	return fmt.Sprintf("%.1f %s", b, units[k])
}

// abortFactor: an order's estimate stops once it passes this many times
// the budget (its figures are then lower bounds).
const abortFactor = 64

// maxSearchLog2 bounds the induced width of the orders the mini-bucket
// search takes (log2 of the largest exact message): wider models are left
// to the relaxations.
const maxSearchLog2 = 128

// bestOrder returns the better of the min-fill and min-weight orders of m
// (a complete one before an incomplete one, then the fewer message
// entries), each stopped at abort entries or a message of 2^maxLog2.
func bestOrder(ctx context.Context, m *model.Model, abort, maxLog2 float64) (ordering, *plan) {
	var sc [][]int32
	for a := range m.Factors {
		sc = append(sc, scopes(m, a)...)
	}
	adj := interaction(m.NumVars(), sc)
	var best ordering
	for i, h := range []heuristic{minFill, minWeight} {
		o := greedyOrder(ctx, adj, m.Cards, h, abort, maxLog2)
		if i == 0 || o.complete && !best.complete || o.complete == best.complete && o.entries < best.entries {
			best = o
		}
	}
	if !best.complete {
		return best, nil
	}
	return best, newPlan(m, best.order, math.Inf(1))
}

// estimate is the estimate of exact elimination of red (reduced) under
// budget, with its plan when the order is complete.
func estimate(ctx context.Context, red *model.Model, budget int64) (Estimate, *plan) {
	o, p := bestOrder(ctx, red, abortFactor*float64(budget)/bytesPerEntry, math.Log2(abortFactor*float64(budget)/bytesPerEntry))
	e := Estimate{Order: o.heur.String(), Width: o.width, MaxLog2: o.maxLog2, Bytes: bytesPerEntry * o.entries, Complete: o.complete, Budget: budget}
	if p != nil {
		e.Bytes, e.Work = p.bytes(), p.work
		e.Fits = e.Bytes <= float64(budget) && p.maxLog2 < 62
	}
	return e, p
}

// EstimateOf returns what exact elimination of m (valid) under evidence ev
// would cost, against budget bytes. A model that evidence and its hard
// constraints make infeasible costs nothing.
func EstimateOf(ctx context.Context, m *model.Model, ev model.Evidence, budget int64) (Estimate, error) {
	red, err := solver.Reduce(m, ev)
	if err != nil {
		return Estimate{}, fmt.Errorf("elim: %w", err)
	}
	if red == nil {
		return Estimate{Order: "no", Complete: true, Budget: budget, Fits: true}, nil
	}
	e, _ := estimate(ctx, red.Model, budget)
	return e, nil
}

// Solve finds a MAP assignment of m (valid) under evidence ev: by exact
// bucket elimination when its tables fit opts.Memory (the result is then
// Optimal, Dual == Primal); otherwise, with opts.Search, by branch and
// bound with the mini-bucket heuristic (Optimal when the search
// completes; on a limit, the best assignment and a valid bound), and
// without it a *TooLargeError. progress, when not nil, gets the search's
// reports (and one at the end of an elimination).
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, error) {
	res, _, err := SolveStats(ctx, m, ev, opts, progress)
	return res, err
}

// Stats describe a run beyond its result.
type Stats struct {
	// Estimate is exact elimination's.
	Estimate Estimate
	// Exact: the run eliminated exactly; otherwise it searched with
	// mini-buckets of at most 2^Limit entries, Split buckets split, its
	// tables Bytes and its messages Work, and its root bound Bound.
	Exact bool
	Limit float64
	Split int
	Bytes float64
	Work  float64
	Bound float64
	Nodes int
}

// SolveStats is Solve, also returning the run's statistics.
func SolveStats(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, Stats, error) {
	start := time.Now()
	var st Stats
	red, err := solver.Prepare("elim", &opts, m, ev)
	if err != nil {
		return solver.Result{}, st, err
	}
	if red == nil {
		return solver.InfeasibleResult(time.Since(start)), st, nil
	}
	var deadline time.Time
	if opts.TimeLimit > 0 {
		deadline = start.Add(opts.TimeLimit)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	e, p := estimate(ctx, red.Model, opts.Memory)
	st.Estimate = e
	if err := ctx.Err(); err != nil {
		return stopped(ctx, deadline, start), st, nil
	}
	maxWork := opts.MaxWork
	maxWork = cmp.Or(maxWork, 4e8)
	// With Search, exact elimination whose work is over MaxWork gives way
	// to the search too: mini-buckets within MaxWork usually certify such
	// a model sooner (CSP_11: 3.4e9 entries, 8.5 s, exactly; 2^14-entry
	// mini-buckets and 1,882 nodes, 0.02 s, after the first incumbent).
	if !e.Fits || opts.IBound > 0 || opts.Search && e.Work > maxWork {
		if !opts.Search && opts.IBound == 0 {
			return solver.Result{}, st, &TooLargeError{Estimate: e}
		}
		return searchMBE(ctx, m, red, opts, deadline, start, progress, st)
	}
	st.Exact, st.Limit, st.Bytes, st.Work = true, math.Inf(1), p.bytes(), p.work
	if err := p.build(); err != nil {
		return solver.Result{}, st, fmt.Errorf("elim: %w", err)
	}
	if err := p.compute(ctx); err != nil {
		return stopped(ctx, deadline, start), st, nil
	}
	st.Bound = p.bound()
	s := newSearch(p, 0)
	if !s.descend() {
		return solver.InfeasibleResult(time.Since(start)), st, nil
	}
	st.Nodes = s.nodes
	res := solver.Finish(m, red, solver.Result{Status: solver.Optimal, Assignment: s.incX, Iterations: 1, Elapsed: time.Since(start)})
	// The assignment is a MAP: its exact score is the optimum.
	res.Dual, res.Relaxed, res.Gap = res.Primal, res.Primal, 0
	res.Elapsed = time.Since(start)
	if progress != nil {
		progress(solver.Progress{Iteration: 1, Dual: res.Dual, Primal: res.Primal, Elapsed: res.Elapsed})
	}
	return res, st, nil
}

// stopped is the result of a run cut short before any bound: no
// assignment, no bound.
func stopped(ctx context.Context, deadline time.Time, start time.Time) solver.Result {
	status := solver.Interrupted
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		status = solver.TimeLimit
	}
	return solver.Result{Status: status, Primal: math.Inf(-1), Dual: math.Inf(1), Gap: math.Inf(1), Relaxed: math.NaN(), Elapsed: time.Since(start)}
}

// searchMBE bounds red by mini-buckets chosen to fit the budget and
// searches it by depth-first branch and bound.
func searchMBE(ctx context.Context, m *model.Model, red *model.Reduced, opts Options, deadline, start time.Time, progress func(solver.Progress), st Stats) (solver.Result, Stats, error) {
	o, _ := bestOrder(ctx, red.Model, math.Inf(1), maxSearchLog2)
	if err := ctx.Err(); err != nil {
		return stopped(ctx, deadline, start), st, nil
	}
	if !o.complete {
		return solver.Result{}, st, fmt.Errorf("elim: induced width above 2^%d entries: too wide for mini-buckets", maxSearchLog2)
	}
	maxWork := opts.MaxWork
	maxWork = cmp.Or(maxWork, 4e8)
	var p *plan
	if opts.IBound > 0 {
		p = newPlan(red.Model, o.order, opts.IBound)
	} else {
		// The largest mini-buckets that fit the budget and the work.
		for limit := max(math.Ceil(o.maxLog2+math.Log2(float64(maxCardOf(red.Model)))), 1); limit >= 1; limit-- {
			q := newPlan(red.Model, o.order, limit)
			if q.bytes() <= float64(opts.Memory) && q.work <= maxWork && q.maxLog2 < 62 {
				p = q
				break
			}
		}
	}
	if p == nil {
		q := newPlan(red.Model, o.order, 1)
		return solver.Result{}, st, fmt.Errorf("elim: the smallest mini-buckets need %s of tables and %.2g operations, over the memory budget of %s or the work limit of %.2g",
			BytesString(q.bytes()), q.work, BytesString(float64(opts.Memory)), maxWork)
	}
	st.Limit, st.Split, st.Bytes, st.Work = p.limit, p.split, p.bytes(), p.work
	if err := p.build(); err != nil {
		return solver.Result{}, st, fmt.Errorf("elim: %w", err)
	}
	if err := p.compute(ctx); err != nil {
		return stopped(ctx, deadline, start), st, nil
	}
	st.Bound = p.bound()
	s := newSearch(p, opts.Tol)
	if math.IsInf(st.Bound, -1) {
		return solver.InfeasibleResult(time.Since(start)), st, nil
	}
	report := func(dual float64) {
		if progress != nil {
			el := time.Since(start)
			progress(solver.Progress{Iteration: s.nodes, Dual: dual, Primal: s.inc, Gap: dual - s.inc, Elapsed: el, Nodes: s.nodes})
		}
	}
	// A first incumbent.
	pt := opts.PrimalTime
	if pt == 0 {
		pt = 2 * time.Second
		if opts.TimeLimit > 0 {
			pt = min(pt, opts.TimeLimit/10)
		}
	}
	if pt > 0 {
		r := primal.NewSearcher(red.Model).Run(ctx, nil, primal.Options{TimeLimit: pt})
		if r.OK {
			s.inc, s.incX = r.Score, append([]int(nil), r.X...)
			report(st.Bound)
		}
	}
	var last time.Time
	tick := func(b float64) {
		if time.Since(last) >= opts.ProgressEvery {
			last = time.Now()
			report(b)
		}
	}
	s.run(ctx, deadline, opts.MaxNodes, func([]int, float64) { report(s.bound(s.n - 1)) }, tick)
	st.Nodes = s.nodes
	res := solver.Result{Iterations: s.nodes, Relaxed: st.Bound, Elapsed: time.Since(start)}
	if s.stopped {
		res.Dual = min(s.bound(s.n-1), st.Bound)
		res.Status = solver.Interrupted
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			res.Status = solver.TimeLimit
		} else if opts.MaxNodes > 0 && s.nodes >= opts.MaxNodes {
			res.Status = solver.IterationLimit
		}
	} else {
		// Complete: nothing beats the incumbent by more than what was
		// pruned within the tolerance.
		res.Dual = max(s.inc, s.pruneMax)
		res.Status = solver.Optimal
		if s.incX == nil {
			return solver.InfeasibleResult(time.Since(start)), st, nil
		}
	}
	if s.incX != nil {
		res.Assignment = s.incX
	}
	res.Primal = s.inc
	res = solver.Finish(m, red, res)
	if res.Assignment == nil {
		res.Primal = math.Inf(-1)
		res.Gap = res.Dual - res.Primal
	}
	if res.Status == solver.Optimal && !solver.Closed(res.Dual, res.Primal, opts.Tol) {
		// Rescoring on the original model moved the primal by rounding.
		res.Dual = max(res.Dual, res.Primal)
		res.Gap = res.Dual - res.Primal
	}
	report(res.Dual)
	return res, st, nil
}

func maxCardOf(m *model.Model) int {
	c := 1
	for _, k := range m.Cards {
		c = max(c, k)
	}
	return c
}
