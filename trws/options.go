package trws

import (
	"fmt"
	"math"
	"time"
)

// Options configures a run. Start from DefaultOptions.
type Options struct {
	// MaxIter bounds the number of iterations (one forward and one
	// backward pass each), >= 1.
	MaxIter int
	// TimeLimit stops the run after this long; 0 means none.
	TimeLimit time.Duration
	// Tol is the relative gap for Optimal: the run stops when
	// Dual - Primal <= Tol*max(1, |Primal|) with a feasible Primal.
	Tol float64
	// BoundTol and BoundWindow define convergence: the run stops as
	// Converged when the bound improved by at most
	// BoundTol*max(1, |Dual|) over the last BoundWindow iterations.
	// BoundTol = 0 stops only on a bound that did not move at all.
	BoundTol    float64
	BoundWindow int // >= 1
	// ProgressEvery is the minimum time between two progress callbacks
	// (the first iteration is always reported; 0 reports every one).
	ProgressEvery time.Duration
	// Cycles runs TRW-S(LP-C): once TRW-S's bound stalls, the dual also
	// takes the cycle inequalities of every triangle and chordless square
	// of the model's graph (all 4-cycles of a grid) whose variables have 2
	// to 8 states; see cycles.go.
	Cycles bool
	// MaxCycles bounds the number of cycles (0: one million).
	MaxCycles int
}

// DefaultOptions returns the defaults: 1000 iterations, no time limit, a
// relative gap of 1e-6, convergence when the bound improves by less than
// 1e-7 (relative) over 10 iterations, progress every 250 ms.
func DefaultOptions() Options {
	return Options{
		MaxIter:       1000,
		Tol:           1e-6,
		BoundTol:      1e-7,
		BoundWindow:   10,
		ProgressEvery: 250 * time.Millisecond,
	}
}

// Validate returns a one-line error naming the first bad option.
func (o *Options) Validate() error {
	switch {
	case o.MaxIter < 1:
		return fmt.Errorf("trws: MaxIter %d < 1", o.MaxIter)
	case o.TimeLimit < 0:
		return fmt.Errorf("trws: TimeLimit %v is negative", o.TimeLimit)
	case !(o.Tol >= 0) || math.IsInf(o.Tol, 0):
		return fmt.Errorf("trws: Tol %v is not a finite number >= 0", o.Tol)
	case !(o.BoundTol >= 0) || math.IsInf(o.BoundTol, 0):
		return fmt.Errorf("trws: BoundTol %v is not a finite number >= 0", o.BoundTol)
	case o.BoundWindow < 1:
		return fmt.Errorf("trws: BoundWindow %d < 1", o.BoundWindow)
	case o.MaxCycles < 0:
		return fmt.Errorf("trws: MaxCycles %d is negative", o.MaxCycles)
	case o.ProgressEvery < 0:
		return fmt.Errorf("trws: ProgressEvery %v is negative", o.ProgressEvery)
	}
	return nil
}
