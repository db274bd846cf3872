package engine

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/convexmp"
	"github.com/ddrun/ddrun/elim"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trws"
)

// SolveFunc runs a configured algorithm on m under evidence ev.
type SolveFunc func(ctx context.Context, m *model.Model, ev model.Evidence, progress func(solver.Progress)) (solver.Result, error)

// Algorithm is one row of the table of algorithms (Algorithms): the
// settings of its own it takes, whether the threads setting reaches it,
// whether a run can spread it over workers, and how the settings become
// its options.
type Algorithm struct {
	Name  string
	About string
	// Settings are the algorithm-specific settings it takes; giving
	// another algorithm's setting is an error.
	Settings []string
	// Threads: the algorithm runs on Settings.Threads goroutines; the
	// others run on one, and an explicit threads above 1 is an error.
	Threads bool
	// Distributed: a distributed run spreads it over workers (dual
	// decomposition).
	Distributed bool
	// configure turns the settings into the algorithm's options,
	// validated; h prints what the algorithm reports beyond its result.
	configure func(s *Settings, lim solver.Limits, h *Hooks) (configured, error)
}

// configured is an algorithm with its options.
type configured struct {
	solve SolveFunc
	// warm, when not nil, is the branch and bound node solver that starts
	// each child from its parent's state (exact.SolveWarm).
	warm exact.WarmSolver
	// dd is the options of a dual-decomposition algorithm: what a
	// distributed run ships to the workers and records in its
	// checkpoints.
	dd consensus.Options
}

// algorithms is the table of algorithms.
var algorithms = []Algorithm{
	{Name: string(consensus.ADMM), About: "DD-ADMM, AD3", Threads: true, Distributed: true,
		Settings: []string{"slaves", "eta", "adapt-eta", "tau"}, configure: configureDD},
	{Name: string(consensus.Subgradient), About: "DD-subgradient", Threads: true, Distributed: true,
		Settings: []string{"slaves", "step", "eta"}, configure: configureDD},
	{Name: "trws", About: "TRW-S, Kolmogorov 2006; pairwise models", Threads: true, configure: configureTRWS},
	{Name: "cmp", About: "convex max-product, Schwing et al. 2012", Settings: []string{"eps-descent"}, configure: configureCMP},
	{Name: "elim", About: "bucket elimination, exact when its tables fit --elim-memory, else mini-bucket branch and bound", configure: configureElim},
}

// Algorithms returns the table of algorithms, in the order of the help.
func Algorithms() []Algorithm { return slices.Clone(algorithms) }

// algorithmSettings are the settings that belong to some algorithms only.
var algorithmSettings = func() []string {
	var all []string
	for _, a := range algorithms {
		for _, n := range a.Settings {
			if !slices.Contains(all, n) {
				all = append(all, n)
			}
		}
	}
	return all
}()

// Find returns the row of the algorithm named name.
func Find(name string) (*Algorithm, error) {
	var names []string
	for i := range algorithms {
		if algorithms[i].Name == name {
			return &algorithms[i], nil
		}
		names = append(names, algorithms[i].Name)
	}
	return nil, errorf("%s: unknown algorithm %q (want %s)", Name("algo"), name, orList(names))
}

// check rejects settings given that the algorithm does not take, and an
// explicit threads above 1 for one that runs on one thread.
func (a *Algorithm) check(s *Settings) error {
	for _, n := range algorithmSettings {
		if s.given(n) && !slices.Contains(a.Settings, n) {
			var with []string
			for _, b := range algorithms {
				if slices.Contains(b.Settings, n) {
					with = append(with, b.Name)
				}
			}
			return errorf("%s goes with %s %s, not %s", Name(n), Name("algo"), orList(with), a.Name)
		}
	}
	if !a.Threads && s.given("threads") && s.Threads > 1 {
		return errorf("%s: %s %s runs on one thread (admm and subgradient use %s)", Name("threads"), Name("algo"), a.Name, Name("threads"))
	}
	return nil
}

// threadsFor is the number of threads the algorithm runs on.
func (a *Algorithm) threadsFor(s *Settings) int {
	if a.Threads {
		return s.Threads
	}
	return 1
}

func configureDD(s *Settings, lim solver.Limits, _ *Hooks) (configured, error) {
	o, err := ddOptions(s, consensus.Algo(s.Algo), lim)
	if err != nil {
		return configured{}, err
	}
	c := configured{dd: o, solve: func(ctx context.Context, m *model.Model, ev model.Evidence, progress func(solver.Progress)) (solver.Result, error) {
		return consensus.Solve(ctx, m, ev, o, progress)
	}}
	if o.Algo == consensus.ADMM && o.Slaves == consensus.PerFactor {
		// Children start from their parent's multipliers, and a node
		// stops once its bound falls to the incumbent.
		c.warm = exact.ADMM(o)
	}
	return c, nil
}

// ddOptions are the options of dual decomposition with algo from the
// settings, validated. Convergence follows tol: both residuals below
// min(1e-6, tol), so that tol 0 leaves only the limits and a closed gap
// to stop a run.
func ddOptions(s *Settings, algo consensus.Algo, lim solver.Limits) (consensus.Options, error) {
	o := consensus.DefaultOptions()
	o.Limits = lim
	o.Algo = algo
	o.Slaves = consensus.Decomposition(s.Slaves)
	o.Step = consensus.StepRule(s.Step)
	o.Threads = s.Threads
	o.Eta = s.Eta
	o.Tau = s.Tau
	o.AdaptEta = s.AdaptEta
	o.ResidualTol = convergenceTol(o.ResidualTol, lim.Tol)
	if s.given("eta") && !s.given("adapt-eta") {
		o.AdaptEta = false
	}
	if o.Algo == consensus.Subgradient && !s.given("eta") {
		o.Eta = 1
	}
	if err := o.Validate(); err != nil {
		return o, optionError(err)
	}
	return o, nil
}

// convergenceTol is an algorithm's convergence threshold under tol: its
// default, or lower when tol asks for a smaller gap (0 with tol 0).
func convergenceTol(def, tol float64) float64 {
	if math.IsNaN(tol) {
		return def
	}
	return min(def, tol)
}

func configureTRWS(s *Settings, lim solver.Limits, h *Hooks) (configured, error) {
	o, err := trwsOptions(s, lim)
	if err != nil {
		return configured{}, err
	}
	return configured{solve: func(ctx context.Context, m *model.Model, ev model.Evidence, progress func(solver.Progress)) (solver.Result, error) {
		res, st, err := trws.SolveStats(ctx, m, ev, o, progress)
		if err == nil && o.Cycles && progress != nil && h.Print != nil { // not per node of exact (no progress there)
			c := st.Cycles
			h.endLine()
			h.Print("cycle inequalities", fmt.Sprintf("cycle inequalities: %d cycles (%d skipped: two edges in one chain), %d steps lowered the bound, %d held at the end, %d LP failures",
				c.Cycles, c.Shared, c.Steps, c.Active, c.Failed), "cycles", c.Cycles, "skipped", c.Shared, "steps", c.Steps, "active", c.Active, "lp_failures", c.Failed)
		}
		return res, err
	}}, nil
}

// trwsOptions are TRW-S's options from the settings, validated. Its stall
// rule follows tol: the bound must improve by more than min(1e-7, tol/10)
// (relative) over 10 iterations; under tol 0 only a bound that did not
// move at all in 10 iterations (a fixed point) stops it before the limits.
func trwsOptions(s *Settings, lim solver.Limits) (trws.Options, error) {
	o := trws.DefaultOptions()
	o.Limits = lim
	o.Threads = max(s.Threads, 1)
	o.Cycles, o.SOC = s.tightenCycles(), s.tightenSOC()
	o.BoundTol = convergenceTol(o.BoundTol, lim.Tol/10)
	if err := o.Validate(); err != nil {
		return o, optionError(err)
	}
	return o, nil
}

func cmpOptions(s *Settings, lim solver.Limits) (convexmp.Options, error) {
	o := convexmp.DefaultOptions()
	o.Limits = lim
	o.EpsDescent = s.EpsDescent
	if err := o.Validate(); err != nil {
		return o, optionError(err)
	}
	return o, nil
}

func configureCMP(s *Settings, lim solver.Limits, _ *Hooks) (configured, error) {
	o, err := cmpOptions(s, lim)
	if err != nil {
		return configured{}, err
	}
	return configured{solve: func(ctx context.Context, m *model.Model, ev model.Evidence, progress func(solver.Progress)) (solver.Result, error) {
		return convexmp.Solve(ctx, m, ev, o, progress)
	}}, nil
}

func configureElim(s *Settings, lim solver.Limits, _ *Hooks) (configured, error) {
	if s.ElimMemory == 0 {
		return configured{}, errorf("%s elim: %s 0 leaves it no memory", Name("algo"), Name("elim-memory"))
	}
	o := elim.DefaultOptions()
	o.Limits, o.Memory, o.Search = lim, s.ElimMemory, true
	if err := o.Validate(); err != nil {
		return configured{}, optionError(err)
	}
	return configured{solve: func(ctx context.Context, m *model.Model, ev model.Evidence, progress func(solver.Progress)) (solver.Result, error) {
		return elim.Solve(ctx, m, ev, o, progress)
	}}, nil
}
