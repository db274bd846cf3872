package trws

import (
	"time"

	"github.com/ddrun/ddrun/solver"
)

// Options configures a run. Start from DefaultOptions.
//
// Stopping rules, in the order they are checked after every iteration:
// the bound is -Inf (Infeasible); the gap is closed within Tol,
// dual - primal <= Tol*max(1, |primal|) (Optimal; with Tol 0 only an exact
// proof, dual <= primal, stops); the bound stalled, i.e. improved by at most
// BoundTol*max(1, |Dual|) over the last BoundWindow iterations (Converged),
// a test made only when Tol > 0 or StallStop; the limits MaxIter and
// TimeLimit, and cancellation. So with Tol == 0 (and no StallStop) only the
// limits stop a run that has not proved optimality. (With Cycles a
// slowdown, CycleStart, switches the cycle sweeps on, whatever Tol.)
type Options struct {
	// Limits: an iteration is one forward and one backward pass; the first
	// iteration is always reported to progress (ProgressEvery 0 reports
	// every one).
	solver.Limits
	// BoundTol and BoundWindow define the stall test (only with Tol > 0):
	// the run stops as Converged when the bound improved by at most
	// BoundTol*max(1, |Dual|) over the last BoundWindow iterations.
	// BoundTol = 0 stops only on a bound that did not move at all.
	BoundTol    float64
	BoundWindow int // >= 1
	// StallStop makes the stall test stop the run (Converged) even when
	// Tol is 0: for a caller that goes on with a tighter relaxation once
	// TRW-S's bound stops moving (package anytime), not for a run whose
	// --tol 0 asks that only the limits stop it.
	StallStop bool
	// Threads runs the passes on this many goroutines (>= 1) in the
	// partitioned order of order.go: exact TRW-S in an order that depends
	// on Threads, so the iterates (not the guarantees: a valid, exact,
	// non-increasing bound) differ from one thread's; the results are
	// deterministic for a given Threads.
	Threads int
	// Cycles runs TRW-S(LP-C): once TRW-S slows down (CycleStart), the
	// dual also takes the cycle inequalities of every triangle and
	// chordless square of the model's graph (all 4-cycles of a grid) whose
	// variables have 2 to 8 states; see cycles.go.
	Cycles bool
	// SOC adds to the dual the SOC constraints (SOCP-Q clique constraints
	// of Kumar, Kolmogorov and Torr) of every triangle whose variables
	// have 2 to 8 states, and every label: LP-S + SOC, or LP-C + SOC with
	// Cycles. Its steps run on the schedule of the cycle sweeps
	// (CycleStart, SweepEvery), which Validate checks; the bound is valid
	// at every iteration but may stop above the relaxation's optimum. See
	// soc.go and docs/soc.md.
	SOC bool
	// MaxCycles bounds the number of cycles (0: one million).
	MaxCycles int
	// CycleStart (in [0, 1]) switches the cycle sweeps on once TRW-S
	// slows down: when the bound improved over the last BoundWindow
	// iterations by at most CycleStart times its improvement since the
	// first iteration (or when it stalls by BoundTol). 0 waits for the
	// BoundTol stall alone, which on large grids, and under BoundTol 0,
	// may never come.
	CycleStart float64
	// SweepEvery: once started, a cycle sweep follows every SweepEvery-th
	// iteration (0 and 1: every iteration). The TRW-S passes between
	// sweeps propagate a sweep's changes along the chains before the next
	// one; on 4-label grids a sweep costs about 20 passes and sweeping
	// after every iteration stalls the bound early (see cycles.go).
	SweepEvery int
}

// DefaultOptions returns the defaults: 1000 iterations, no time limit, a
// relative gap of 1e-6, convergence when the bound improves by less than
// 1e-7 (relative) over 10 iterations, one thread, progress every 250 ms,
// and cycle sweeps (when Cycles is set) from the window in which the bound
// improves by at most 1% of its improvement so far, then after every 5th
// iteration.
func DefaultOptions() Options {
	return Options{
		Limits:      solver.Limits{MaxIter: 1000, Tol: 1e-6, ProgressEvery: 250 * time.Millisecond},
		BoundTol:    1e-7,
		BoundWindow: 10,
		Threads:     1,
		CycleStart:  0.01,
		SweepEvery:  5,
	}
}

// Validate returns a *solver.OptionError naming the first bad option.
func (o *Options) Validate() error {
	return solver.FirstBad(
		o.Limits.Validate(),
		solver.WantNonNegative("BoundTol", o.BoundTol),
		solver.WantAtLeast("BoundWindow", o.BoundWindow, 1),
		solver.WantAtLeast("Threads", o.Threads, 1),
		solver.Want(o.CycleStart >= 0 && o.CycleStart <= 1, "CycleStart", "%v is not in [0, 1]", o.CycleStart),
		solver.WantNotNegative("SweepEvery", o.SweepEvery),
		solver.WantNotNegative("MaxCycles", o.MaxCycles),
	)
}
