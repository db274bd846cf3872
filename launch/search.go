package launch

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/ddrun/ddrun/anytime"
	"github.com/ddrun/ddrun/dsearch"
	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
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
	lead := time.Since(t.Start) // the search counts from its start, the run from the command's
	res, st, err := dsearch.Run(ctx, t.Transport, j.Model, j.Evidence, o, engine.Later(lead, h.Progress))
	if err != nil {
		return Outcome{}, err
	}
	if h.Print != nil {
		h.endLine()
		printSearchStats(h.Print, st, res.Elapsed) // the search's own rate
	}
	res.Elapsed += lead
	return Outcome{Ran: true, Result: res, Report: engine.NewResult(res, j, engine.Distributed{Workers: st.Workers}, t.Out)}, nil
}

// runSearchFile is an Exact job on workers whose model this process
// never reads: its input converted to the indexed file a sharded run's
// workers read (shardSource, with the evidence folded in), branch and
// bound with the workers reading that file (dsearch.RunFile), and the
// incumbent's assignment, with the observed states set, streamed to --out
// (shardPlan.deliver). Its result reports as a sharded run's (the model's
// size from the file, the coordinator's peak RSS).
func runSearchFile(ctx context.Context, j *engine.Job, t Target, h Hooks) (Outcome, error) {
	if err := t.CheckMode(j, "run"); err != nil {
		return Outcome{}, err
	}
	settings, err := j.SearchSettings()
	if err != nil {
		return Outcome{}, err
	}
	p, err := shardSource(ctx, j, t)
	if err != nil {
		return Outcome{}, err
	}
	if err := t.connect(ctx, &h); err != nil {
		return Outcome{}, err
	}
	before := t.traffic()
	o := dsearch.Options{Job: t.Job, Workers: t.Workers, Wait: t.Wait, Settings: settings, Tol: j.Settings.Tol,
		LostAfter: t.LostAfter, Logger: t.Logger, MaxEntries: t.Sharded.MaxEntries}
	if lim := j.Settings.TimeLimit; lim > 0 {
		o.TimeLimit = max(lim-time.Since(t.Start), time.Millisecond) // the conversion counted
	}
	res, st, err := dsearch.RunFile(ctx, t.Transport, p.input, nil, o, h.Progress)
	if err != nil {
		return Outcome{}, err
	}
	if h.Print != nil {
		h.endLine()
		printSearchStats(h.Print, st, res.Elapsed)
	}
	return p.searchOutcome(res, j, t, before, st.Workers)
}

// shardSource is the plan of a sharded search (shardedInput, within
// --time-limit): t.Sharded's model as the indexed file every worker reads
// whole (input), and no parts, only its size (sizeOnly), to report it and
// deliver an assignment of it.
func shardSource(ctx context.Context, j *engine.Job, t Target) (*shardPlan, error) {
	ctx, cancel := withTimeLimit(ctx, j, t, "converting the model")
	defer cancel()
	p, err := shardedInput(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	nvars, nfactors, err := indexedSize(p.input, t.Sharded.MaxEntries)
	if err != nil {
		return nil, &InputError{err}
	}
	p.layout = sizeOnly(nvars, nfactors)
	p.planned = time.Since(t.Start)
	return p, nil
}

// indexedSize is the size of the indexed model at path (from its header
// and trailer): its numbers of variables and factors.
func indexedSize(path string, maxEntries int) (nvars, nfactors int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	s, err := indexed.OpenScan(f, st.Size(), path, indexed.ReadOptions{MaxEntries: maxEntries})
	if err != nil {
		return 0, 0, err
	}
	return s.NumVars(), s.NumFactors(), nil
}

// searchOutcome is a sharded search's result on the plan's file (a plan
// of no parts, which reports its size): the incumbent's assignment
// (the observed states set) written to --out and, when the caller wants it
// and it is small enough, into the result; the rest reported as a sharded
// run's, with the coordinator's peak RSS.
func (p *shardPlan) searchOutcome(res solver.Result, j *engine.Job, t Target, before Traffic, workers int) (Outcome, error) {
	var x []int
	if a := res.Assignment; a != nil && !math.IsInf(res.Primal, -1) {
		pieces := func(put func([]int, []int32) error) error {
			const chunk = 1 << 16
			vars, states := make([]int, 0, chunk), make([]int32, 0, chunk)
			for from := 0; from < len(a); from += chunk {
				vars, states = vars[:0], states[:0]
				for v := from; v < min(from+chunk, len(a)); v++ {
					vars, states = append(vars, v), append(states, int32(a[v]))
				}
				if err := put(vars, states); err != nil {
					return err
				}
			}
			return nil
		}
		if err := p.deliver(t, &x, len(a), pieces); err != nil {
			return Outcome{}, err
		}
	}
	res.Assignment = nil
	o := p.searched(res, j, t, before, x)
	o.Report.Workers = workers
	return o, nil
}

// runShardedAnytime is the anytime run of a sharded job (run --anytime):
// the relaxation on the parts (runShardedChoice's algorithm, else DD on
// runSharded), then, while it leaves a gap and time, branch and bound on
// the same workers, each reading the whole indexed file the parts came
// from (dsearch.RunFile, nodes bounded as anytimeDist's), seeded with the
// relaxation's bound and its assignment when the result holds one
// (engine.MaxAssignment variables at most: else its primal stands in
// --out and the search starts without an incumbent). This process never
// reads the model. There is no tightening phase, and the search bounds
// its nodes on the model itself, not on its cycle regrouping
// (searchModel): both would need the whole model here.
func runShardedAnytime(ctx context.Context, j *engine.Job, t Target, h Hooks, p *shardPlan) (Outcome, error) {
	settings, err := j.AnytimeNodeSettings()
	if err != nil {
		return Outcome{}, err
	}
	if err := t.connect(ctx, &h); err != nil {
		return Outcome{}, err
	}
	t.Connect = nil // connected, for both phases
	events := func(anytime.Event) {}
	if h.Print != nil {
		events = engine.PhaseLines(h.Print, j.Cost)
	}
	// phase reports a phase's start, and its progress (continued from
	// iteration iters) with every improved primal, as anytime.Solve does.
	phase := func(ph anytime.Phase, about string, dual, primal float64, iters int) func(solver.Progress) {
		events(anytime.Event{Kind: anytime.PhaseStart, Phase: ph, About: about, Dual: dual, Primal: primal, Elapsed: time.Since(t.Start)})
		return func(pr solver.Progress) {
			if pr.Primal > primal {
				primal = pr.Primal
				events(anytime.Event{Kind: anytime.Improved, Phase: ph, Dual: min(dual, pr.Dual), Primal: primal, Iterations: iters + pr.Iteration, Nodes: pr.Nodes, Elapsed: time.Since(t.Start)})
			}
			if h.Progress != nil {
				pr.Iteration += iters
				h.Progress(pr)
			}
		}
	}
	var phases []anytime.PhaseResult
	ended := func(ph anytime.Phase, about string, res solver.Result, nodes int, dual, primal float64) {
		phases = append(phases, anytime.PhaseResult{Phase: ph, About: about, Status: res.Status, Dual: res.Dual, Primal: primal,
			Iterations: res.Iterations, Nodes: nodes, Seconds: res.Elapsed.Seconds()})
		events(anytime.Event{Kind: anytime.PhaseEnd, Phase: ph, Status: res.Status, PhaseDual: res.Dual, Dual: dual, Primal: primal,
			Iterations: res.Iterations, Nodes: nodes, Elapsed: time.Since(t.Start)})
	}

	// Phase 1: the relaxation on the parts.
	rt, rh := t, h
	rt.Assignment = true // the search's seed
	about := fmt.Sprintf("the sharded relaxation on %d workers, package cluster (dtrws for TRW-S), each worker reading its part", t.Workers)
	rh.Progress = phase(anytime.Relax, about, math.Inf(1), math.Inf(-1), 0)
	o, done, err := runShardedChoice(ctx, j, rt, rh, p)
	if err == nil && !done {
		o, err = runSharded(ctx, j, rt, rh, p)
	}
	if err != nil {
		return Outcome{}, err
	}
	relax := o.Result
	final, last := relax, anytime.Relax
	ended(anytime.Relax, about, relax, 0, relax.Dual, relax.Primal)
	left := time.Duration(0)
	if lim := j.Settings.TimeLimit; lim > 0 {
		if left = lim - time.Since(t.Start); left <= 0 {
			left = -1
		}
	}
	if !solver.Closed(relax.Dual, relax.Primal, j.Settings.Tol) && relax.Status != solver.Optimal && relax.Status != solver.Infeasible &&
		relax.Status != solver.Interrupted && ctx.Err() == nil && left >= 0 {
		// Phase 2: branch and bound, every worker reading the whole file.
		seed := &dsearch.Seed{Bound: relax.Dual}
		if math.IsNaN(seed.Bound) {
			seed.Bound = math.Inf(1)
		}
		if x := o.Report.Assignment; x != nil {
			seed.Assignment = slices.Clone(x)
			for v := range p.evidence {
				seed.Assignment[v] = 0 // the one state an observed variable keeps in the file
			}
		}
		about := fmt.Sprintf("subtrees on %d workers (package dsearch), each reading the whole file, %s nodes", t.Workers, settings.Algo)
		do := dsearch.Options{Job: t.Job, Workers: t.Workers, Wait: t.Wait, Settings: settings, Tol: j.Settings.Tol, TimeLimit: left,
			LostAfter: t.LostAfter, Logger: t.Logger, MaxEntries: t.Sharded.MaxEntries, Seed: seed}
		path := p.input // the model's own order: its scores are solve's, bit for bit
		res, st, err := dsearch.RunFile(ctx, t.Transport, path, nil, do, phase(anytime.Search, about, relax.Dual, relax.Primal, relax.Iterations))
		if err != nil {
			return Outcome{}, err
		}
		last = anytime.Search
		final.Status, final.Iterations, final.Elapsed = res.Status, relax.Iterations+res.Iterations, relax.Elapsed+res.Elapsed
		if res.Dual < final.Dual || math.IsNaN(final.Dual) {
			final.Dual = res.Dual
		}
		// The search's incumbent is the seed, re-scored on the file (the
		// exact score of --out's assignment, where the parts' sum may
		// differ in the last bits), or a better one, which goes to --out.
		if seed.Assignment != nil || res.Primal > relax.Primal {
			final.Primal = res.Primal
		}
		if res.Assignment != nil && !slices.Equal(res.Assignment, seed.Assignment) && res.Primal >= relax.Primal {
			better, err := p.searchOutcome(res, j, rt, Traffic{}, st.Workers)
			if err != nil {
				return Outcome{}, err
			}
			o.Report.Assignment = better.Report.Assignment
		}
		final.Gap = final.Dual - final.Primal
		o.Report.Workers = max(o.Report.Workers, st.Workers)
		ended(anytime.Search, about, res, st.Nodes, final.Dual, final.Primal)
		if h.Print != nil {
			h.endLine()
			printSearchStats(h.Print, st, res.Elapsed)
		}
	}
	j.Phase, j.Phases = last, phases
	if h.Print != nil {
		engine.PrintAnytime(h.Print, anytime.Result{Result: final, Phase: last, Phases: phases})
	}
	r := &o.Report
	r.Status, r.Primal, r.Dual, r.Gap = final.Status, engine.Finite(final.Primal), engine.Finite(final.Dual), engine.Finite(final.Gap)
	r.Iterations, r.Seconds, r.Phase = final.Iterations, final.Elapsed.Seconds(), string(last)
	r.Phases = nil
	for _, ph := range phases {
		r.Phases = append(r.Phases, engine.Phase{Phase: string(ph.Phase), About: ph.About, Status: string(ph.Status), Dual: engine.Finite(ph.Dual),
			Primal: engine.Finite(ph.Primal), Iterations: ph.Iterations, Nodes: ph.Nodes, Seconds: ph.Seconds})
	}
	if !t.Assignment || r.Primal == nil {
		r.Assignment = nil
	}
	r.Omitted = r.Primal != nil && r.Assignment == nil
	o.Result = final
	return o, nil
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
	// The phases count their times from their start; the run's count from
	// the command's (t.Start: reading and conversion included).
	lead := time.Since(t.Start)
	if h.Print != nil {
		o.Events = engine.LaterEvents(lead, engine.PhaseLines(h.Print, j.Cost))
	}
	res, err := anytime.Solve(ctx, j.Model, j.Evidence, o, engine.Later(lead, h.Progress))
	if err != nil {
		return solver.Result{}, di, 0, err
	}
	res.Elapsed += lead
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
