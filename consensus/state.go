package consensus

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ddrun/ddrun/solver"
)

// PartState is a worker's replica state after an iteration: its
// multipliers, slave marginals and consensus marginals, in the part's own
// layout (Problem's replica arrays and the part model's Unary layout).
// Entries of boundary variables are overwritten by the next StepIn. Nu is
// empty for DD-ADMM, whose next iteration recomputes every slave marginal
// before reading any; DD-subgradient's pending step reads them.
type PartState struct {
	Lambda, Nu, Mu []float64
}

// State is everything a run needs to continue after an iteration exactly
// where it was: the coordinator's scalars and boundary arrays, and every
// part's replica state. Slaves' warm starts are not in it: a restored
// worker solves every slave afresh on its first iteration, which changes
// results only within the slaves' tolerance.
type State struct {
	Iter      int
	Eta       float64
	PrevStep  float64 // DD-subgradient's step still to apply
	NextAdapt int
	AdaptWait int
	// The bounds so far: the best dual, the best primal (-Inf for none)
	// and its assignment (nil for none), in the reduced model's numbering.
	BestDual   float64
	BestPrimal float64
	BestX      []int
	// X is the decoded assignment; Pending says whether it changed since
	// the last primal check.
	X       []int
	Pending bool
	// The boundary's replicas and marginals (see Boundary).
	BLambda, BNu, BMu []float64
	Parts             []PartState
	// Refs, in a sharded run (CoordinateShards), replaces Parts: each
	// worker's reference to the part state it saved itself (EvalOut.Ref
	// of EvalSave, opaque here). X and BestX then hold the boundary
	// variables' states only.
	Refs [][]byte
	// Elapsed is the run time up to this state, over all the runs it went
	// through.
	Elapsed time.Duration
}

// Checkpointing configures the states a coordinator takes and where it
// starts from.
type Checkpointing struct {
	// A state is taken after every Every-th iteration (0: never by count)
	// and after the first iteration that ends Interval or more after the
	// previous state (0: never by time).
	Every    int
	Interval time.Duration
	// Save receives each state; it owns it. An error ends the run (a
	// Save that only logs failures returns nil).
	Save func(ctx context.Context, st *State) error
	// Resume, when not nil, is the state to continue from; the workers
	// must have been restored to its parts (Worker.Restore).
	Resume *State
}

func (c *Checkpointing) due(iter int, since time.Duration) bool {
	if c == nil || c.Save == nil {
		return false
	}
	return c.Every > 0 && iter%c.Every == 0 || c.Interval > 0 && since >= c.Interval
}

// State returns a copy of the worker's replica state.
func (w *Worker) State() PartState {
	st := PartState{Lambda: slices.Clone(w.lambda), Mu: slices.Clone(w.mu)}
	if w.subgradient {
		st.Nu = slices.Clone(w.nu)
	}
	return st
}

// Restore sets the worker's replica state to st (copied) and makes the
// next iteration solve every slave.
func (w *Worker) Restore(st *PartState) error {
	wantNu := 0
	if w.subgradient {
		wantNu = len(w.nu)
	}
	if len(st.Lambda) != len(w.lambda) || len(st.Nu) != wantNu || len(st.Mu) != len(w.mu) {
		return fmt.Errorf("restoring a part: state of %d/%d/%d multipliers, slave and consensus marginals, want %d/%d/%d",
			len(st.Lambda), len(st.Nu), len(st.Mu), len(w.lambda), wantNu, len(w.mu))
	}
	if err := finite(st.Lambda, st.Nu, st.Mu); err != nil {
		return fmt.Errorf("restoring a part: %w", err)
	}
	copy(w.lambda, st.Lambda)
	if w.subgradient {
		copy(w.nu, st.Nu)
	}
	copy(w.mu, st.Mu)
	w.iter = 0 // every slave is solved again: no warm starts were saved
	w.prevEta = 0
	for i := range w.x {
		w.x[i] = 0
	}
	return nil
}

func finite(arrays ...[]float64) error {
	for _, a := range arrays {
		for i, v := range a {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("entry %d is %v", i, v)
			}
		}
	}
	return nil
}

// state captures the coordinator's side after iteration s.iter; parts are
// added by the caller.
func (s *master) state(res *solver.Result, bestX []int, pending bool, elapsed time.Duration) *State {
	st := &State{Iter: s.iter, Eta: s.eta, PrevStep: s.prevStep, NextAdapt: s.nextAdapt, AdaptWait: s.adaptWait,
		BestDual: res.Dual, BestPrimal: res.Primal, X: slices.Clone(s.x), Pending: pending,
		BLambda: slices.Clone(s.blam), BNu: slices.Clone(s.bnu), BMu: slices.Clone(s.bmu), Elapsed: elapsed}
	if res.Assignment != nil {
		st.BestX = slices.Clone(bestX)
	}
	if s.shards != nil && !math.IsInf(res.Primal, -1) {
		st.BestX = slices.Clone(s.shards.best)
	}
	return st
}

// restore sets the coordinator's side from st and checks it against the
// split.
func (s *master) restore(st *State) error {
	switch {
	case len(st.BLambda) != len(s.blam) || len(st.BNu) != len(s.bnu) || len(st.BMu) != len(s.bmu):
		return fmt.Errorf("restoring: boundary state of %d/%d/%d entries, want %d/%d/%d",
			len(st.BLambda), len(st.BNu), len(st.BMu), len(s.blam), len(s.bnu), len(s.bmu))
	case len(st.X) != len(s.x) || st.BestX != nil && len(st.BestX) != len(s.x):
		return fmt.Errorf("restoring: assignment of %d variables, want %d", len(st.X), len(s.x))
	case st.Iter < 1 || !(st.Eta > 0):
		return fmt.Errorf("restoring: iteration %d, eta %v", st.Iter, st.Eta)
	}
	if err := finite(st.BLambda, st.BNu, st.BMu); err != nil {
		return fmt.Errorf("restoring the boundary: %w", err)
	}
	for _, x := range [][]int{st.X, st.BestX} {
		for v, k := range x {
			if k < 0 || k >= s.m.Cards[v] {
				return fmt.Errorf("restoring: variable %d in state %d of %d", v, k, s.m.Cards[v])
			}
		}
	}
	s.iter, s.eta, s.prevStep, s.nextAdapt, s.adaptWait = st.Iter, st.Eta, st.PrevStep, st.NextAdapt, st.AdaptWait
	s.bestPrimal = st.BestPrimal
	copy(s.blam, st.BLambda)
	copy(s.bnu, st.BNu)
	copy(s.bmu, st.BMu)
	copy(s.x, st.X)
	return nil
}

// ShardPartState is what a sharded run's worker needs to continue after an
// iteration: its replica state, the decoded states of its variables and
// the best assignment it keeps (its part's numbering; Best is nil when it
// keeps none).
type ShardPartState struct {
	PartState
	X, Best []int32
}

// ShardState returns a copy of the worker's state for a sharded run's
// checkpoint.
func (w *Worker) ShardState() ShardPartState {
	st := ShardPartState{PartState: w.State(), X: make([]int32, len(w.x))}
	for i, s := range w.x {
		st.X[i] = int32(s)
	}
	if w.eval != nil && w.eval.hasBest {
		st.Best = slices.Clone(w.eval.best)
	}
	return st
}

// ShardStateLens returns the lengths a ShardPartState of this worker has:
// Lambda, Nu and Mu, and X (Best is empty or as long as X).
func (w *Worker) ShardStateLens() (lambda, nu, mu, x int) {
	if w.subgradient {
		nu = len(w.nu)
	}
	return len(w.lambda), nu, len(w.mu), len(w.x)
}

// RestoreShard sets the worker's state to st (Restore, and the decoded and
// best states), checking every length, value and state first.
func (w *Worker) RestoreShard(st *ShardPartState) error {
	m := w.p.Model
	if len(st.X) != len(w.x) || st.Best != nil && len(st.Best) != len(w.x) {
		return fmt.Errorf("restoring a part: %d decoded and %d best states for %d variables", len(st.X), len(st.Best), len(w.x))
	}
	for _, x := range [][]int32{st.X, st.Best} {
		for i, k := range x {
			if k < 0 || int(k) >= m.Cards[i] {
				return fmt.Errorf("restoring a part: variable %d in state %d of %d", w.vars[i], k, m.Cards[i])
			}
		}
	}
	if err := w.Restore(&st.PartState); err != nil {
		return err
	}
	for i, k := range st.X {
		w.x[i] = int(k)
	}
	if st.Best != nil {
		e := w.evalState()
		copy(e.best, st.Best)
		e.hasBest = true
	}
	return nil
}
