package engine

import (
	"context"
	"fmt"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/convexmp"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trws"
)

// NodeSettings choose the dual solver that bounds every node of a
// distributed branch and bound on the workers (package dsearch ships them):
// Algo names it (consensus.ADMM, consensus.Subgradient, "trws" or "cmp")
// and the options of that algorithm are used; the others are ignored.
// They travel to the workers as msgpack of these structs, so coordinator
// and workers must be of one build. A worker runs its solver on its own
// thread count, whatever Threads the options say.
type NodeSettings struct {
	Algo string            `msgpack:"algo"`
	DD   consensus.Options `msgpack:"dd"`
	TRWS trws.Options      `msgpack:"trws"`
	CMP  convexmp.Options  `msgpack:"cmp"`
}

// Validate checks the options of the chosen algorithm.
func (s *NodeSettings) Validate() error {
	switch s.Algo {
	case string(consensus.ADMM), string(consensus.Subgradient):
		if string(s.DD.Algo) != s.Algo {
			return fmt.Errorf("settings: algorithm %q with dual decomposition options for %q", s.Algo, s.DD.Algo)
		}
		return s.DD.Validate()
	case "trws":
		return s.TRWS.Validate()
	case "cmp":
		return s.CMP.Validate()
	}
	return fmt.Errorf("settings: unknown algorithm %q (want admm, subgradient, trws or cmp)", s.Algo)
}

// NodeSolver is the node solver the settings describe, on threads
// goroutines: with DD-ADMM over the per-factor decomposition, warm started
// from the parent's state and stopped at the cutoff (exact.ADMM); the
// others cold.
func (s NodeSettings) NodeSolver(threads int) (exact.WarmSolver, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	threads = max(threads, 1)
	switch s.Algo {
	case "trws":
		o := s.TRWS
		o.Threads = threads
		return exact.Cold(func(ctx context.Context, m *model.Model, ev model.Evidence) (solver.Result, error) {
			return trws.Solve(ctx, m, ev, o, nil)
		}), nil
	case "cmp":
		o := s.CMP
		return exact.Cold(func(ctx context.Context, m *model.Model, ev model.Evidence) (solver.Result, error) {
			return convexmp.Solve(ctx, m, ev, o, nil)
		}), nil
	}
	o := s.DD
	o.Threads = threads
	if o.Algo == consensus.ADMM && o.Slaves == consensus.PerFactor {
		return exact.ADMM(o), nil
	}
	return exact.Cold(func(ctx context.Context, m *model.Model, ev model.Evidence) (solver.Result, error) {
		return consensus.Solve(ctx, m, ev, o, nil)
	}), nil
}

// SearchSettings are the node solver of an Exact job as a distributed
// branch and bound ships it to the workers: the algorithm's options from
// the settings, as the local Exact run builds them.
func (j *Job) SearchSettings() (NodeSettings, error) {
	s := NodeSettings{Algo: j.Algorithm.Name}
	lim := j.Settings.Limits()
	var err error
	switch j.Algorithm.Name {
	case "trws":
		if s.TRWS, err = trwsOptions(&j.Settings, lim); err != nil {
			return s, err
		}
	case "cmp":
		o := convexmp.DefaultOptions()
		o.Limits = lim
		o.EpsDescent = j.Settings.EpsDescent
		s.CMP = o
	default:
		s.DD = j.cfg.dd
	}
	if err := s.Validate(); err != nil {
		return s, optionError(err)
	}
	return s, nil
}

// AnytimeNodeSettings are the node solver that a distributed anytime
// run's search ships to the workers: the job's dual decomposition options,
// each node bounded by max-iter when given (else anytime's NodeMaxIter,
// or 1000) and no time limit of its own (the search has the run's).
func (j *Job) AnytimeNodeSettings() (NodeSettings, error) {
	s := NodeSettings{Algo: j.Algorithm.Name, DD: j.cfg.dd}
	s.DD.MaxIter, s.DD.TimeLimit, s.DD.Tol, s.DD.ProgressEvery = j.Anytime.NodeMaxIter, 0, j.Settings.Tol, 0
	if s.DD.MaxIter == 0 {
		s.DD.MaxIter = 1000
	}
	if err := s.Validate(); err != nil {
		return s, optionError(err)
	}
	return s, nil
}
