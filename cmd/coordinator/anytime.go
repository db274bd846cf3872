package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ddrun/ddrun/anytime"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// runInfo is what a result reports beyond solver.Result.
type runInfo struct {
	// why the algorithm was chosen (no --algo given); empty otherwise.
	why string
	// opts are the anytime run's options (--anytime, or its default).
	opts anytime.Options
	// phase closed the gap (or was the last to run) and phases is how
	// each went, for an anytime run.
	phase  anytime.Phase
	phases []anytime.PhaseResult
}

// settle applies the defaults that depend on other flags, once they are
// parsed: no --algo means the algorithm is chosen (auto); --time-limit
// without --max-iter means no iteration limit (except under --exact,
// where --max-iter bounds each node); with --time-limit and no --algo,
// solve and run run the anytime phases unless --anytime=false (run's on
// the workers: anytimeDist).
func (f *solveFlags) settle(fs *flag.FlagSet) {
	if f.settled {
		return
	}
	f.settled = true
	set := func(name string) bool { return isSet(fs, name) }
	f.auto = !set("algo") || f.algo == "" || f.algo == "auto"
	if f.timeLimit > 0 && !set("max-iter") && !f.exact {
		f.maxIter = math.MaxInt
	}
	if set("anytime") {
		f.anytimeOn = f.anytime
	} else {
		f.anytimeOn = f.timeLimit > 0 && f.auto && !f.exact
	}
}

// provisional is the algorithm when no --algo was given, before the model
// is read: DD-ADMM, with why when the flags decide it (a distributed run,
// or a setting of dual decomposition given), without when the model's
// class is to decide (choose). The settings of other algorithms (--step,
// --eps-descent) still need their --algo, as before.
func (f *solveFlags) provisional(set func(string) bool) (string, string) {
	if f.dist {
		return string(consensus.ADMM), "run distributes dual decomposition: DD-ADMM"
	}
	for _, fl := range []string{"step", "eps-descent"} {
		if set(fl) {
			return string(consensus.ADMM), "the default before the model is read" // check rejects the flag
		}
	}
	for _, fl := range []string{"slaves", "eta", "adapt-eta", "tau"} {
		if set(fl) {
			return string(consensus.ADMM), "--" + fl + " is a setting of dual decomposition: DD-ADMM"
		}
	}
	return string(consensus.ADMM), ""
}

// choose picks j's algorithm by m's class (anytime.Choose) and records it
// in f and j.
func (f *solveFlags) choose(m *model.Model, j *spec) (*algorithm, error) {
	r, why := anytime.Choose(m)
	a, err := findAlgorithm(string(r))
	if err != nil {
		return nil, err
	}
	if !a.threads && f.threads > 1 {
		why += "; it runs on one thread"
	}
	f.algo, j.algo, j.threads, j.info.why = a.name, a, a.threadsFor(f), why
	return a, nil
}

// anytimeOptions are the anytime run's options from the flags: the
// relaxation of j's algorithm (TRW-S or DD-ADMM; another algorithm runs
// the first phase, and the model's class decides the later ones), --tol,
// the time left, no iteration limit per phase unless --max-iter is given
// (which then also bounds each branch and bound node).
func (f *solveFlags) anytimeOptions(j spec, set func(string) bool) (anytime.Options, error) {
	o := anytime.DefaultOptions()
	lim := f.limits()
	o.Limits = lim
	var err error
	if o.DD, err = ddOptions(f, consensus.ADMM, lim, set); err != nil {
		return o, err
	}
	if o.TRWS, err = trwsOptions(f, lim); err != nil {
		return o, err
	}
	switch j.algo.name {
	case string(anytime.TRWS):
		o.Relax = anytime.TRWS
	case string(anytime.ADMM):
		o.Relax = anytime.ADMM
	default:
		o.Relax, _ = anytime.Choose(j.m)
		if o.Relax != anytime.TRWS || o.TRWS.Cycles {
			o.First = j.solve
		}
		// (TRW-S, the choice for pairwise models, runs as anytime's own
		// relaxation: the same solver and options, and its stall ends
		// the phase even under --tol 0.)
	}
	if set("max-iter") {
		o.NodeMaxIter = f.maxIter
	}
	// Branch and bound solves --threads nodes at once (each node's solver
	// then runs on one); internal/primal's search looks for better
	// assignments after every phase, for at most a second (a twentieth of
	// the time limit when that is less).
	o.Search.Threads = f.threads
	o.Eliminate, o.MiniBuckets = f.elimMemory, true
	budget := time.Second
	if f.timeLimit > 0 {
		budget = min(budget, f.timeLimit/20)
	}
	o.Primal = anytime.PrimalSearch(budget)
	if err := o.Validate(); err != nil {
		return o, flagError(err)
	}
	return o, nil
}

// solveAnytime runs j through the anytime phases (package anytime),
// printing each phase and the improved primals on con unless --quiet.
func (j spec) solveAnytime(ctx context.Context, f solveFlags, progress func(solver.Progress), con *cli.Console) (solver.Result, error) {
	o := j.info.opts
	if !f.quiet {
		o.Events = phaseLines(con)
	}
	res, err := anytime.Solve(ctx, j.m, j.ev, o, progress)
	if err != nil {
		return solver.Result{}, err
	}
	j.info.phase, j.info.phases = res.Phase, res.Phases
	if !f.quiet {
		con.Close()
		closed := "the gap is open"
		if res.Status == solver.Optimal || res.Status == solver.Infeasible {
			closed = "closed by " + string(res.Phase)
		}
		con.Print("anytime", fmt.Sprintf("anytime: %s, %s; bound %s (the lowest of every phase), primal %s", res.Status, closed, num(res.Dual), num(res.Primal)),
			"status", string(res.Status), "phase", string(res.Phase), "dual", res.Dual, "primal", res.Primal)
		if st := res.Search; st.Nodes > 0 {
			con.Print("branch and bound", fmt.Sprintf("branch and bound: %d nodes solved, %d pruned, %d open", st.Nodes, st.Pruned, st.Open),
				"nodes", st.Nodes, "pruned", st.Pruned, "open", st.Open)
		}
	}
	return res.Result, nil
}

// phaseLines prints the anytime run's events: each phase's start and end,
// and the improved primals (at most one line per 100 ms of the run, the
// latest; the --trace file has every iteration's).
func phaseLines(con *cli.Console) func(anytime.Event) {
	var mu sync.Mutex
	var last time.Duration
	shown := false
	return func(e anytime.Event) {
		mu.Lock()
		defer mu.Unlock()
		secs := e.Elapsed.Seconds()
		switch e.Kind {
		case anytime.PhaseStart:
			shown = false
			con.Print("phase", fmt.Sprintf("phase %s: %s (bound %s, primal %s, %.3fs)", e.Phase, e.About, num(e.Dual), num(e.Primal), secs),
				"phase", string(e.Phase), "event", "start", "about", e.About, "dual", e.Dual, "primal", e.Primal, "elapsed", secs)
		case anytime.PhaseEnd:
			if e.Status == "skipped" {
				con.Print("phase", fmt.Sprintf("phase %s: skipped, %s", e.Phase, e.About), "phase", string(e.Phase), "event", "skipped", "about", e.About)
				return
			}
			nodes := ""
			if e.Nodes > 0 {
				nodes = fmt.Sprintf(", %d nodes", e.Nodes)
			}
			con.Print("phase", fmt.Sprintf("phase %s: %s after %d iterations%s, its bound %s; best bound %s, primal %s, gap %s (%.3fs)",
				e.Phase, e.Status, e.Iterations, nodes, num(e.PhaseDual), num(e.Dual), num(e.Primal), num(e.Dual-e.Primal), secs),
				"phase", string(e.Phase), "event", "end", "status", string(e.Status), "iterations", e.Iterations, "nodes", e.Nodes,
				"phase_dual", e.PhaseDual, "dual", e.Dual, "primal", e.Primal, "elapsed", secs)
		case anytime.Improved:
			if shown && e.Elapsed-last < 100*time.Millisecond {
				return
			}
			shown, last = true, e.Elapsed
			con.Print("primal", fmt.Sprintf("primal %s (phase %s, iteration %d, %.3fs)", num(e.Primal), e.Phase, e.Iterations, secs),
				"phase", string(e.Phase), "primal", e.Primal, "iteration", e.Iterations, "elapsed", secs)
		}
	}
}

// phaseJSON is one phase of an anytime run in the JSON result.
type phaseJSON struct {
	Phase      string   `json:"phase"`
	About      string   `json:"about"`
	Status     string   `json:"status"`
	Dual       *float64 `json:"dual"`
	Primal     *float64 `json:"primal"`
	Iterations int      `json:"iterations"`
	Nodes      int      `json:"nodes,omitempty"`
	Seconds    float64  `json:"seconds"`
}

func phasesJSON(ps []anytime.PhaseResult) []phaseJSON {
	var out []phaseJSON
	for _, p := range ps {
		out = append(out, phaseJSON{Phase: string(p.Phase), About: p.About, Status: string(p.Status), Dual: finite(p.Dual),
			Primal: finite(p.Primal), Iterations: p.Iterations, Nodes: p.Nodes, Seconds: p.Seconds})
	}
	return out
}
