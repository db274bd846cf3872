package solver

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Limits are the settings every algorithm takes: when to stop and how
// often to report. Algorithms embed it in their Options.
type Limits struct {
	MaxIter   int           // iteration limit (>= 1)
	TimeLimit time.Duration // 0: none
	// Tol is the relative gap for Optimal: the run stops when
	// Dual - Primal <= Tol*max(1, |Primal|) with a feasible Primal.
	Tol float64
	// ProgressEvery is the minimum time between two progress callbacks.
	ProgressEvery time.Duration
}

// Validate returns an *OptionError naming the first bad limit.
func (l *Limits) Validate() error {
	return FirstBad(
		WantAtLeast("MaxIter", l.MaxIter, 1),
		WantNotNegative("TimeLimit", l.TimeLimit),
		WantNonNegative("Tol", l.Tol),
		WantNotNegative("ProgressEvery", l.ProgressEvery),
	)
}

// Reached reports whether a limit ends a run after iteration iter, elapsed
// into it, and which: the iteration limit, then the time limit, then the
// cancellation of ctx (Interrupted).
func (l *Limits) Reached(ctx context.Context, iter int, elapsed time.Duration) (Status, bool) {
	switch {
	case iter >= l.MaxIter:
		return IterationLimit, true
	case l.TimeLimit > 0 && elapsed >= l.TimeLimit:
		return TimeLimit, true
	case ctx.Err() != nil:
		return Interrupted, true
	}
	return "", false
}

// Closed reports whether the gap between dual and a feasible primal is closed
// within the relative tolerance tol: dual - primal <= tol*max(1, |primal|).
func Closed(dual, primal, tol float64) bool {
	return !math.IsInf(primal, -1) && dual-primal <= tol*math.Max(1, math.Abs(primal))
}

// NonNegative reports whether v is a finite number >= 0.
func NonNegative(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// Positive reports whether v is a finite number > 0.
func Positive(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

// OptionError is a bad option: Option is the Go field of the algorithm's
// Options (MaxIter, Eta, ...), Problem what is wrong with its value.
type OptionError struct {
	Option  string
	Problem string
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Problem }

// Errorf returns an *OptionError for option with a formatted problem.
func Errorf(option, format string, a ...any) error {
	return &OptionError{Option: option, Problem: fmt.Sprintf(format, a...)}
}
