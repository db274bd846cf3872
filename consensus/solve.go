package consensus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
)

// bigModel is the size (variables plus factors) from which Solve collects
// garbage before it builds the solver.
const bigModel = 1 << 14

// Plan builds the decomposition d of m.
func Plan(m *model.Model, d Decomposition) (partition.Plan, error) {
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

// Validate checks the options and returns a one-line error naming the first
// bad one.
func (o *Options) Validate() error {
	switch {
	case o.Algo != ADMM && o.Algo != Subgradient && o.Algo != TRWS && o.Algo != CMP:
		return fmt.Errorf("--algo: unknown algorithm %q (want admm, subgradient, trws or cmp)", o.Algo)
	case o.Slaves != PerFactor && o.Slaves != Chains && o.Slaves != Trees:
		return fmt.Errorf("--slaves: unknown decomposition %q (want factor, chains or trees)", o.Slaves)
	case o.Step != Polyak && o.Step != Diminishing && o.Step != InvSqrt:
		return fmt.Errorf("--step: unknown step rule %q (want polyak, 1/t or 1/sqrt(t))", o.Step)
	case o.Threads < 1:
		return fmt.Errorf("--threads: %d < 1", o.Threads)
	case o.MaxIter < 1:
		return fmt.Errorf("--max-iter: %d < 1", o.MaxIter)
	case o.TimeLimit < 0:
		return fmt.Errorf("--time-limit: %v is negative", o.TimeLimit)
	case !(o.Tol >= 0) || math.IsInf(o.Tol, 0):
		return fmt.Errorf("--tol: %v is not a finite number >= 0", o.Tol)
	case !(o.ResidualTol >= 0) || math.IsInf(o.ResidualTol, 0):
		return fmt.Errorf("residual tolerance %v is not a finite number >= 0", o.ResidualTol)
	case !(o.Eta > 0) || math.IsInf(o.Eta, 0):
		return fmt.Errorf("--eta: %v is not a finite number > 0", o.Eta)
	case !(o.Tau > 0 && o.Tau <= 1.618):
		return fmt.Errorf("--tau: %v is outside (0, 1.618]", o.Tau)
	}
	return nil
}

// Solve runs the configured algorithm on m under evidence ev (nil for none)
// and returns the result in m's variables. Cancelling ctx stops the run
// with status Interrupted and the best result so far. progress, if not nil,
// is called from the solving goroutine at most every opts.ProgressEvery.
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(Progress)) (Result, error) {
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	if opts.Algo != ADMM && opts.Algo != Subgradient {
		return Result{}, fmt.Errorf("algorithm %s is not dual decomposition: run it through its own package", opts.Algo)
	}
	red, err := model.Reduce(m, ev)
	if errors.Is(err, model.ErrInfeasible) {
		return Result{Status: Infeasible, Primal: math.Inf(-1), Dual: math.Inf(-1), Gap: math.NaN(), Relaxed: math.Inf(-1)}, nil
	}
	if err != nil {
		return Result{}, err
	}
	plan, err := Plan(red.Model, opts.Slaves)
	if err != nil {
		return Result{}, err
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
		return Result{}, err
	}
	return Finish(m, red, res), nil
}

// Finish maps a result on the reduced model back to the original model m
// and recomputes the primal there, evidence included: the reported primal
// is always the exact score of the reported assignment.
func Finish(m *model.Model, red *model.Reduced, res Result) Result {
	if res.Mu != nil && red.States != nil {
		mu := make([]float64, len(m.Unary))
		for i, st := range red.States {
			for k, s := range st {
				mu[m.UnaryOff[i]+s] = res.Mu[red.UnaryOff[i]+k]
			}
		}
		res.Mu = mu
	}
	if res.Assignment != nil {
		res.Assignment = red.Expand(res.Assignment)
		res.Primal = m.Score(res.Assignment)
		res.Gap = res.Dual - res.Primal
	}
	return res
}
