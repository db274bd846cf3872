package solver

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ddrun/ddrun/model"
)

// Reduce is the prologue of every algorithm: m (valid) under evidence ev
// (nil for none) reduced by model.Reduce. When ev and the hard constraints
// leave no assignment it returns a nil Reduced and no error; the caller
// then returns InfeasibleResult.
func Reduce(m *model.Model, ev model.Evidence) (*model.Reduced, error) {
	red, err := model.Reduce(m, ev)
	if errors.Is(err, model.ErrInfeasible) {
		return nil, nil
	}
	return red, err
}

// Prepare is the whole prologue of an algorithm named name: its options
// checked (opts.Validate, its error as is), m checked (model.Validate),
// then each of checks run on m, and m reduced by ev (Reduce: a nil
// Reduced and no error when no assignment is left). The errors of m and
// of its reduction are prefixed with name.
func Prepare(name string, opts interface{ Validate() error }, m *model.Model, ev model.Evidence, checks ...func(*model.Model) error) (*model.Reduced, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, check := range checks {
		if err := check(m); err != nil {
			return nil, err
		}
	}
	red, err := Reduce(m, ev)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return red, nil
}

// InfeasibleResult is the result of a run on a model that no assignment
// satisfies: status Infeasible, every bound -Inf, no assignment.
func InfeasibleResult(elapsed time.Duration) Result {
	inf := math.Inf(-1)
	return Result{Status: Infeasible, Primal: inf, Dual: inf, Gap: math.NaN(), Relaxed: inf, Elapsed: elapsed}
}

// Finish is the epilogue of every algorithm: it maps a result on the
// reduced model red back to the original model m (the assignment and the
// marginals) and recomputes the primal there, evidence included, so that
// the reported primal is always the exact score of the reported
// assignment.
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
	if res.Assignment == nil {
		return res
	}
	res.Assignment = red.Expand(res.Assignment)
	if res.Assignment == nil { // Expand of an empty assignment
		res.Assignment = []int{}
	}
	res.Primal = m.Score(res.Assignment)
	res.Gap = res.Dual - res.Primal
	if math.IsInf(res.Primal, -1) { // the reduced score was finite: cannot happen
		res.Assignment = nil
	}
	return res
}
