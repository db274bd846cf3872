package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/convexmp"
	"github.com/ddrun/ddrun/elim"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trws"
)

// solveFunc runs a configured algorithm on m under evidence ev.
type solveFunc func(ctx context.Context, m *model.Model, ev model.Evidence, progress func(solver.Progress)) (solver.Result, error)

// algorithm is one row of the table of algorithms that solve and run
// accept (--algo): the flags of its own it takes, whether --threads reaches
// it, whether run can spread it over workers, and how the flags become its
// options.
type algorithm struct {
	name  string
	about string
	// flags are the algorithm-specific flags it takes; giving another
	// algorithm's flag is a usage error.
	flags []string
	// threads: the algorithm runs on --threads goroutines; the others run
	// on one, and an explicit --threads above 1 is a usage error.
	threads bool
	// distributed: `run` spreads it over workers (dual decomposition).
	distributed bool
	// configure turns the flags into the algorithm's options, validated.
	configure func(f *solveFlags, lim solver.Limits, set func(string) bool, con *cli.Console) (configured, error)
}

// configured is an algorithm with its options.
type configured struct {
	solve solveFunc
	// warm, when not nil, is the branch and bound node solver that starts
	// each child from its parent's state (exact.SolveWarm).
	warm exact.WarmSolver
	// dd is the options of a dual-decomposition algorithm: what run ships
	// to the workers and records in its checkpoints.
	dd consensus.Options
}

// algorithms is the table of --algo values.
var algorithms = []algorithm{
	{name: string(consensus.ADMM), about: "DD-ADMM, AD3", threads: true, distributed: true,
		flags: []string{"slaves", "eta", "adapt-eta", "tau"}, configure: configureDD},
	{name: string(consensus.Subgradient), about: "DD-subgradient", threads: true, distributed: true,
		flags: []string{"slaves", "step", "eta"}, configure: configureDD},
	{name: "trws", about: "TRW-S, Kolmogorov 2006; pairwise models", threads: true, configure: configureTRWS},
	{name: "cmp", about: "convex max-product, Schwing et al. 2012", flags: []string{"eps-descent"}, configure: configureCMP},
	{name: "elim", about: "bucket elimination, exact when its tables fit --elim-memory, else mini-bucket branch and bound", configure: configureElim},
}

// algorithmFlags are the flags that belong to some algorithms only.
var algorithmFlags = func() []string {
	var all []string
	for _, a := range algorithms {
		for _, f := range a.flags {
			if !slices.Contains(all, f) {
				all = append(all, f)
			}
		}
	}
	return all
}()

// findAlgorithm returns the row of --algo name.
func findAlgorithm(name string) (*algorithm, error) {
	var names []string
	for i := range algorithms {
		if algorithms[i].name == name {
			return &algorithms[i], nil
		}
		names = append(names, algorithms[i].name)
	}
	return nil, usagef("--algo: unknown algorithm %q (want %s)", name, orList(names))
}

// check rejects flags given on the command line that the algorithm does
// not take, and an explicit --threads above 1 for one that runs on one
// thread.
func (a *algorithm) check(f *solveFlags, set func(string) bool) error {
	for _, fl := range algorithmFlags {
		if set(fl) && !slices.Contains(a.flags, fl) {
			var with []string
			for _, b := range algorithms {
				if slices.Contains(b.flags, fl) {
					with = append(with, b.name)
				}
			}
			return usagef("--%s goes with --algo %s, not %s", fl, orList(with), a.name)
		}
	}
	if !a.threads && set("threads") && f.threads > 1 {
		return usagef("--threads: --algo %s runs on one thread (admm and subgradient use --threads)", a.name)
	}
	return nil
}

// threadsFor is the number of threads the algorithm runs on.
func (a *algorithm) threadsFor(f *solveFlags) int {
	if a.threads {
		return f.threads
	}
	return 1
}

func configureDD(f *solveFlags, lim solver.Limits, set func(string) bool, _ *cli.Console) (configured, error) {
	o, err := ddOptions(f, consensus.Algo(f.algo), lim, set)
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
// flags, validated. Convergence follows --tol: both residuals below
// min(1e-6, --tol), so that --tol 0 leaves only the limits and a closed
// gap to stop a run.
func ddOptions(f *solveFlags, algo consensus.Algo, lim solver.Limits, set func(string) bool) (consensus.Options, error) {
	o := consensus.DefaultOptions()
	o.Limits = lim
	o.Algo = algo
	o.Slaves = consensus.Decomposition(f.slaves)
	o.Step = consensus.StepRule(f.step)
	o.Threads = f.threads
	o.Eta = f.eta
	o.Tau = f.tau
	o.AdaptEta = f.adaptEta
	o.ResidualTol = convergenceTol(o.ResidualTol, lim.Tol)
	if set("eta") && !set("adapt-eta") {
		o.AdaptEta = false
	}
	if o.Algo == consensus.Subgradient && !set("eta") {
		o.Eta = 1
	}
	if err := o.Validate(); err != nil {
		return o, flagError(err)
	}
	return o, nil
}

// convergenceTol is an algorithm's convergence threshold under --tol: its
// default, or lower when --tol asks for a smaller gap (0 with --tol 0).
func convergenceTol(def, tol float64) float64 {
	if math.IsNaN(tol) {
		return def
	}
	return min(def, tol)
}

func configureTRWS(f *solveFlags, lim solver.Limits, _ func(string) bool, con *cli.Console) (configured, error) {
	o, err := trwsOptions(f, lim)
	if err != nil {
		return configured{}, err
	}
	return configured{solve: func(ctx context.Context, m *model.Model, ev model.Evidence, progress func(solver.Progress)) (solver.Result, error) {
		res, st, err := trws.SolveStats(ctx, m, ev, o, progress)
		if err == nil && o.Cycles && progress != nil && !f.quiet { // not per node of --exact (no progress there)
			c := st.Cycles
			con.Close()
			con.Print("cycle inequalities", fmt.Sprintf("cycle inequalities: %d cycles (%d skipped: two edges in one chain), %d steps lowered the bound, %d held at the end, %d LP failures",
				c.Cycles, c.Shared, c.Steps, c.Active, c.Failed), "cycles", c.Cycles, "skipped", c.Shared, "steps", c.Steps, "active", c.Active, "lp_failures", c.Failed)
		}
		return res, err
	}}, nil
}

// trwsOptions are TRW-S's options from the flags, validated. Its stall
// rule follows --tol: the bound must improve by more than
// min(1e-7, --tol/10) (relative) over 10 iterations; under --tol 0 only a
// bound that did not move at all in 10 iterations (a fixed point) stops it
// before the limits.
func trwsOptions(f *solveFlags, lim solver.Limits) (trws.Options, error) {
	o := trws.DefaultOptions()
	o.Limits = lim
	o.Threads = max(f.threads, 1)
	o.Cycles = f.tighten == "cycles" || f.tighten == "cycles,soc" || f.tighten == "soc,cycles"
	o.SOC = f.tighten == "soc" || f.tighten == "cycles,soc" || f.tighten == "soc,cycles"
	o.BoundTol = convergenceTol(o.BoundTol, lim.Tol/10)
	if err := o.Validate(); err != nil {
		return o, flagError(err)
	}
	return o, nil
}

func configureCMP(f *solveFlags, lim solver.Limits, _ func(string) bool, _ *cli.Console) (configured, error) {
	o := convexmp.DefaultOptions()
	o.Limits = lim
	o.EpsDescent = f.epsDesc
	if err := o.Validate(); err != nil {
		return configured{}, flagError(err)
	}
	return configured{solve: func(ctx context.Context, m *model.Model, ev model.Evidence, progress func(solver.Progress)) (solver.Result, error) {
		return convexmp.Solve(ctx, m, ev, o, progress)
	}}, nil
}

func configureElim(f *solveFlags, lim solver.Limits, _ func(string) bool, _ *cli.Console) (configured, error) {
	if f.elimMemory == 0 {
		return configured{}, usagef("--algo elim: --elim-memory 0 leaves it no memory")
	}
	o := elim.DefaultOptions()
	o.Limits, o.Memory, o.Search = lim, f.elimMemory, true
	if err := o.Validate(); err != nil {
		return configured{}, flagError(err)
	}
	return configured{solve: func(ctx context.Context, m *model.Model, ev model.Evidence, progress func(solver.Progress)) (solver.Result, error) {
		return elim.Solve(ctx, m, ev, o, progress)
	}}, nil
}

// optionFlags maps the options that come from flags to their flags.
var optionFlags = map[string]string{
	"MaxIter": "--max-iter", "TimeLimit": "--time-limit", "Tol": "--tol", "Threads": "--threads",
	"Memory": "--elim-memory", "Algo": "--algo", "Slaves": "--slaves", "Step": "--step", "Eta": "--eta", "Tau": "--tau",
}

// flagError turns a *solver.OptionError into a usage error that names the
// flag the option came from.
func flagError(err error) error {
	var oe *solver.OptionError
	if errors.As(err, &oe) {
		if fl, ok := optionFlags[oe.Option]; ok {
			return usagef("%s: %s", fl, oe.Problem)
		}
	}
	return err
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
