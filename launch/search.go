package launch

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/ddrun/ddrun/anytime"
	"github.com/ddrun/ddrun/dsearch"
	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/tighten"
)

// runSearch is an Exact job on workers: branch and bound with this process
// keeping the open subtrees and the workers searching them (package
// dsearch), each node bounded by the job's algorithm (engine's
// SearchSettings). Its result reports as a local Exact run's does.
func runSearch(ctx context.Context, j *engine.Job, t Target, h Hooks) (Outcome, error) {
	settings, err := j.SearchSettings()
	if err != nil {
		return Outcome{}, err
	}
	if err := t.connect(ctx, &h); err != nil {
		return Outcome{}, err
	}
	o := dsearch.Options{Job: t.Job, Workers: t.Workers, Wait: t.Wait, Settings: settings, Tol: j.Settings.Tol,
		TimeLimit: j.Settings.TimeLimit, LostAfter: t.LostAfter, Logger: t.Logger}
	res, st, err := dsearch.Run(ctx, t.Transport, j.Model, j.Evidence, o, h.Progress)
	if err != nil {
		return Outcome{}, err
	}
	if h.Print != nil {
		h.endLine()
		printSearchStats(h.Print, st, res.Elapsed)
	}
	return Outcome{Ran: true, Result: res, Report: engine.NewResult(res, j, engine.Distributed{Workers: st.Workers}, t.Out)}, nil
}

// relaxFunc runs a distributed job's relaxation on the workers, with its
// workers and failovers and the iterations it resumed from a checkpoint.
type relaxFunc func(ctx context.Context, progress func(solver.Progress)) (solver.Result, engine.Distributed, int, error)

// anytimeDist is the anytime run of a distributed job (run --time-limit,
// run --anytime, a service job on workers with a time limit): relax runs
// the relaxation on the workers (a cluster job); while it leaves a gap and
// time, branch and bound goes on on the same workers (package dsearch),
// seeded with the best assignment (re-scored) and the relaxation's bound.
// The reported bound is the lowest of both phases, the primal the best;
// the phases and the improved primals go to h.Print, and into j's phases
// for the result. No tightening phase (it would run on the coordinator
// alone), but the search bounds its nodes on the cycle regrouping of the
// model (searchModel).
func anytimeDist(ctx context.Context, j *engine.Job, t Target, h Hooks, relax relaxFunc) (solver.Result, engine.Distributed, int, error) {
	var di engine.Distributed
	var resumed int
	var search dsearch.Stats
	searched := false
	settings, err := j.AnytimeNodeSettings()
	if err != nil {
		return solver.Result{}, di, 0, err
	}
	o := j.Anytime
	o.NoTighten = true
	// Elimination and the mini-bucket search would run on the coordinator
	// alone, with tables that grow with the model: in a distributed run
	// only a worker may hold such state, for its own part.
	o.Eliminate, o.MiniBuckets = 0, false
	o.FirstAbout = fmt.Sprintf("%s (%s) on %d workers, package cluster", j.Algorithm.Name, j.Algorithm.About, t.Workers)
	o.First = func(ctx context.Context, _ *model.Model, _ model.Evidence, progress func(solver.Progress)) (solver.Result, error) {
		res, d, r, err := relax(ctx, progress)
		di, resumed = d, r
		return res, err
	}
	o.Searcher = &anytime.Searcher{
		About: fmt.Sprintf("subtrees on %d workers (package dsearch), %s nodes", t.Workers, settings.Algo),
		Search: func(ctx context.Context, sm *model.Model, ev model.Evidence, seed solver.Result, left time.Duration, progress func(solver.Progress)) (solver.Result, exact.Stats, error) {
			if j.Settings.Tighten == "none" {
				sm = searchModel(sm, h.Print)
			}
			do := dsearch.Options{Job: t.Job, Workers: t.Workers, Wait: t.Wait, Settings: settings, Tol: j.Settings.Tol, TimeLimit: left,
				LostAfter: t.LostAfter, Logger: t.Logger, Seed: &dsearch.Seed{Assignment: seed.Assignment, Bound: seed.Dual}}
			if math.IsNaN(seed.Dual) {
				do.Seed.Bound = math.Inf(1)
			}
			res, st, err := dsearch.Run(ctx, t.Transport, sm, ev, do, progress)
			search, searched = st, true
			return res, exact.Stats{Nodes: st.Nodes, Pruned: st.Pruned, Open: st.Open}, err
		},
	}
	if h.Print != nil {
		o.Events = engine.PhaseLines(h.Print, j.Cost)
	}
	res, err := anytime.Solve(ctx, j.Model, j.Evidence, o, h.Progress)
	if err != nil {
		return solver.Result{}, di, 0, err
	}
	j.Phase, j.Phases = res.Phase, res.Phases
	di.Workers = max(di.Workers, search.Workers)
	if h.Print != nil {
		h.endLine()
		engine.PrintAnytime(h.Print, res)
		if searched {
			secs := 0.0
			for _, p := range res.Phases {
				if p.Phase == anytime.Search {
					secs = p.Seconds
				}
			}
			printSearchStats(h.Print, search, time.Duration(secs*float64(time.Second)))
		}
	}
	return res.Result, di, resumed, nil
}

// searchModel is the model the workers' search bounds its nodes on: m's
// pairwise factors regrouped into factors over its triangles and chordless
// squares (tighten.Cycles: the same score for every assignment, a tighter
// local polytope), as solve's anytime run searches after DD-ADMM, unless
// m has no such cycles or more cycles than edges (a near-complete graph,
// whose cycle factors would cost far more than the model); else m.
func searchModel(m *model.Model, print func(key, text string, kv ...any)) *model.Model {
	cycles, st, err := tighten.FindCycles(m, tighten.Options{})
	if err != nil || len(cycles) == 0 || len(cycles) > st.Edges {
		return m
	}
	tm, st, err := tighten.Cycles(m, tighten.Options{})
	if err != nil {
		return m
	}
	if print != nil {
		print("search model", fmt.Sprintf("branch and bound on %d triangle and %d square factors (tighten.Cycles): tighter node bounds, the same scores", st.Triangles, st.Squares),
			"triangles", st.Triangles, "squares", st.Squares)
	}
	return tm
}

// printSearchStats prints what distributed branch and bound did.
func printSearchStats(print func(key, text string, kv ...any), st dsearch.Stats, elapsed time.Duration) {
	print("branch and bound", fmt.Sprintf("branch and bound: %d nodes solved, %d pruned, %d open; %d subtrees on %d workers (%d requeued, %d answers rejected), %.0f nodes/s",
		st.Nodes, st.Pruned, st.Open, st.Subtrees, st.Workers, st.Requeued, st.Rejected, float64(st.Nodes)/max(elapsed.Seconds(), 1e-9)),
		"nodes", st.Nodes, "pruned", st.Pruned, "open", st.Open, "subtrees", st.Subtrees, "workers", st.Workers,
		"requeued", st.Requeued, "rejected", st.Rejected, "seconds", elapsed.Round(time.Millisecond).Seconds())
}
