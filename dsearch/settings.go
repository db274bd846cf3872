package dsearch

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

// Settings choose the dual solver that bounds every node on the workers:
// Algo names it (consensus.ADMM, consensus.Subgradient, "trws" or "cmp")
// and the options of that algorithm are used; the others are ignored.
// They travel to the workers as msgpack of these structs, so coordinator
// and workers must be of one build. A worker runs its solver on its own
// thread count, whatever Threads the options say.
type Settings struct {
	Algo string            `msgpack:"algo"`
	DD   consensus.Options `msgpack:"dd"`
	TRWS trws.Options      `msgpack:"trws"`
	CMP  convexmp.Options  `msgpack:"cmp"`
}

// Validate checks the options of the chosen algorithm.
func (s *Settings) Validate() error {
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
func (s Settings) NodeSolver(threads int) (exact.WarmSolver, error) {
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
