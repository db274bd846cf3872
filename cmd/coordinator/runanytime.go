package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/ddrun/ddrun/anytime"
	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/dsearch"
	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/tighten"
	"github.com/ddrun/ddrun/transport"
)

// distSearch is where a distributed run's search phase runs: the workers
// serving dsearch on tr (sealed with the job key, as the job protocol is),
// under the job's name.
type distSearch struct {
	tr              transport.Transport
	job             string
	workers         int
	wait, lostAfter time.Duration
	log             *slog.Logger
}

// distOutcome is what a distributed anytime run reports beyond its result.
type distOutcome struct {
	info   cluster.JobInfo // the relaxation's job, Workers the most of both phases
	stats  cluster.RunStats
	search dsearch.Stats
	// searched: the search phase ran.
	searched bool
}

// anytimeDist is the anytime run of a distributed job (run --time-limit,
// run --anytime, a service job on workers with a time limit): relax runs
// the relaxation on the workers (a cluster job); while it leaves a gap and
// time, branch and bound goes on on the same workers (package dsearch),
// seeded with the best assignment (re-scored) and the relaxation's bound.
// The reported bound is the lowest of both phases, the primal the best;
// the phases and the improved primals go to con unless --quiet, and into
// sp.info for the JSON result. No tightening phase (it would run on the
// coordinator alone), but the search bounds its nodes on the cycle
// regrouping of the model (searchModel).
func anytimeDist(ctx context.Context, sp spec, f solveFlags, relax func(context.Context, func(solver.Progress)) (cluster.Outcome, error),
	ds distSearch, progress func(solver.Progress), con *cli.Console) (solver.Result, distOutcome, error) {
	var out distOutcome
	settings, err := sp.AnytimeNodeSettings()
	if err != nil {
		return solver.Result{}, out, settingError(err)
	}
	o := sp.Anytime
	o.NoTighten = true
	// Elimination and the mini-bucket search would run on the coordinator
	// alone, with tables that grow with the model: in a distributed run
	// only a worker may hold such state, for its own part.
	o.Eliminate, o.MiniBuckets = 0, false
	o.FirstAbout = fmt.Sprintf("%s (%s) on %d workers, package cluster", sp.Algorithm.Name, sp.Algorithm.About, ds.workers)
	o.First = func(ctx context.Context, _ *model.Model, _ model.Evidence, progress func(solver.Progress)) (solver.Result, error) {
		oc, err := relax(ctx, progress)
		out.info, out.stats = oc.Info, oc.Stats
		return oc.Result, err
	}
	o.Searcher = &anytime.Searcher{
		About: fmt.Sprintf("subtrees on %d workers (package dsearch), %s nodes", ds.workers, settings.Algo),
		Search: func(ctx context.Context, sm *model.Model, ev model.Evidence, seed solver.Result, left time.Duration, progress func(solver.Progress)) (solver.Result, exact.Stats, error) {
			if sp.Settings.Tighten == "none" {
				sm = searchModel(sm, con, f.quiet)
			}
			do := dsearch.Options{Job: ds.job, Workers: ds.workers, Wait: ds.wait, Settings: settings, Tol: sp.Settings.Tol, TimeLimit: left,
				LostAfter: ds.lostAfter, Logger: ds.log, Seed: &dsearch.Seed{Assignment: seed.Assignment, Bound: seed.Dual}}
			if math.IsNaN(seed.Dual) {
				do.Seed.Bound = math.Inf(1)
			}
			res, st, err := dsearch.Run(ctx, ds.tr, sm, ev, do, progress)
			out.search, out.searched = st, true
			return res, exact.Stats{Nodes: st.Nodes, Pruned: st.Pruned, Open: st.Open}, err
		},
	}
	if !f.quiet {
		o.Events = engine.PhaseLines(con.Print)
	}
	res, err := anytime.Solve(ctx, sp.Model, sp.Evidence, o, progress)
	if err != nil {
		return solver.Result{}, out, err
	}
	sp.Phase, sp.Phases = res.Phase, res.Phases
	out.info.Workers = max(out.info.Workers, out.search.Workers)
	if !f.quiet {
		con.Close()
		engine.PrintAnytime(con.Print, res)
		if out.searched {
			secs := 0.0
			for _, p := range res.Phases {
				if p.Phase == anytime.Search {
					secs = p.Seconds
				}
			}
			printSearchStats(con, out.search, time.Duration(secs*float64(time.Second)))
		}
	}
	return res.Result, out, nil
}

// searchModel is the model the workers' search bounds its nodes on: m's
// pairwise factors regrouped into factors over its triangles and chordless
// squares (tighten.Cycles: the same score for every assignment, a tighter
// local polytope), as solve's anytime run searches after DD-ADMM, unless
// m has no such cycles or more cycles than edges (a near-complete graph,
// whose cycle factors would cost far more than the model); else m.
func searchModel(m *model.Model, con *cli.Console, quiet bool) *model.Model {
	cycles, st, err := tighten.FindCycles(m, tighten.Options{})
	if err != nil || len(cycles) == 0 || len(cycles) > st.Edges {
		return m
	}
	tm, st, err := tighten.Cycles(m, tighten.Options{})
	if err != nil {
		return m
	}
	if !quiet {
		con.Print("search model", fmt.Sprintf("branch and bound on %d triangle and %d square factors (tighten.Cycles): tighter node bounds, the same scores", st.Triangles, st.Squares),
			"triangles", st.Triangles, "squares", st.Squares)
	}
	return tm
}

// printSearchStats prints what distributed branch and bound did.
func printSearchStats(con *cli.Console, st dsearch.Stats, elapsed time.Duration) {
	con.Print("branch and bound", fmt.Sprintf("branch and bound: %d nodes solved, %d pruned, %d open; %d subtrees on %d workers (%d requeued, %d answers rejected), %.0f nodes/s",
		st.Nodes, st.Pruned, st.Open, st.Subtrees, st.Workers, st.Requeued, st.Rejected, float64(st.Nodes)/max(elapsed.Seconds(), 1e-9)),
		"nodes", st.Nodes, "pruned", st.Pruned, "open", st.Open, "subtrees", st.Subtrees, "workers", st.Workers,
		"requeued", st.Requeued, "rejected", st.Rejected, "seconds", elapsed.Round(time.Millisecond).Seconds())
}
