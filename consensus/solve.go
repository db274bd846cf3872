package consensus

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/solver"
)

// bigModel is the size (variables plus factors) from which Solve collects
// garbage before it builds the solver.
const bigModel = 1 << 14

// PartitionPlan builds the decomposition d of m: the partition.Plan
// of its slaves.
func PartitionPlan(m *model.Model, d Decomposition) (partition.Plan, error) {
	switch d {
	case PerFactor:
		return partition.PerFactor(m), nil
	case Chains:
		return partition.Chains(m)
	case Trees:
		return partition.Trees(m)
	}
	return partition.Plan{}, fmt.Errorf("unknown decomposition %q", d)
}

// Solve runs the configured algorithm on m under evidence ev (nil for none)
// and returns the result in m's variables. Cancelling ctx stops the run
// with status solver.Interrupted and the best result so far. progress, if not nil,
// is called from the solving goroutine at most every opts.ProgressEvery.
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, error) {
	start := time.Now()
	if err := opts.Validate(); err != nil {
		return solver.Result{}, err
	}
	red, err := solver.Reduce(m, ev)
	if red == nil {
		return solver.InfeasibleResult(time.Since(start)), err
	}
	plan, err := PartitionPlan(red.Model, opts.Slaves)
	if err != nil {
		return solver.Result{}, err
	}
	if len(red.Model.Factors)+red.Model.NumVars() >= bigModel {
		// Collect the garbage of loading and reducing the model before
		// the solver's arrays are built: otherwise the collector may
		// start in the middle of building them, with a heap goal set
		// from a larger heap, and the peak RSS varied between runs
		// (300x300 Potts: 243 to 290 MB). The collection costs a small
		// fraction of the setup; small models, solved often (branch and
		// bound), skip it.
		runtime.GC()
	}
	res, err := runLocal(ctx, red.Model, plan, opts, 1, progress)
	if err != nil {
		return solver.Result{}, err
	}
	return solver.Finish(m, red, res), nil
}
