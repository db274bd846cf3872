package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/ddrun/ddrun/dtrws/remote"
	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/model/uai"
)

// runShardedChoice is a sharded run whose algorithm the model's class may
// choose (engine.Job.ChooseForRun, the rule solve applies, on the class
// summed up while planning: shardPlan.class), or which asked for TRW-S
// (--algo trws, on a pairwise model). When it runs TRW-S it runs
// distributed TRW-S on the workers (package dtrws/remote) and reports
// done; otherwise it returns not done and the caller runs the job of dual
// decomposition on the same plan (runSharded). A job with checkpoints
// asked for (a directory or a count) or in a Raft group keeps DD-ADMM
// (refused with --algo trws): distributed TRW-S has neither yet
// (docs/distributed-trws.md); the in-memory checkpoints every Interval,
// which only restart a lost worker's part, are not asked for: distributed
// TRW-S has no spare either.
func runShardedChoice(ctx context.Context, j *engine.Job, t Target, h Hooks, p *shardPlan) (Outcome, bool, error) {
	c := t.Checkpoints
	asked := j.Algorithm.Name == "trws" && !j.Settings.Auto
	if asked && (t.Raft != nil || c.Every > 0 || c.Dir != "") {
		return Outcome{}, true, inputf("run --algo trws: distributed TRW-S has no checkpoints and no Raft group yet (docs/distributed-trws.md): leave out --checkpoint-every, --checkpoint-dir and --raft-*, or run --algo admm")
	}
	if !asked && (!j.Settings.Auto || j.Settings.Exact || t.Raft != nil || c.Every > 0 || c.Dir != "") {
		return Outcome{}, false, nil
	}
	start, log, layout := t.Start, t.Logger, p.layout
	trws, err := j.ChooseForRun(p.class)
	if err != nil || !trws {
		return Outcome{}, err != nil, err
	}
	planned := p.planned
	if err := t.connect(ctx, &h); err != nil {
		return Outcome{}, true, err
	}
	if h.Print != nil {
		h.Print("algorithm", fmt.Sprintf("algorithm: %s (%s)", j.Algorithm.Name, j.Why), "algo", j.Algorithm.Name, "why", j.Why)
	}
	opts := j.DTRWS(t.Workers)
	var x []int // the assignment for the result, when small enough
	ro := remote.Options{Job: t.Job, Start: start, Wait: t.Wait, StepTimeout: t.StepTimeout, LostAfter: t.LostAfter, Logger: log,
		Deliver: func(ctx context.Context, n int, pieces func(put func([]int, []int32) error) error) error {
			if t.Assignment && n <= engine.MaxAssignment {
				x = make([]int, n)
			}
			if err := uai.WriteMPEPieces(t.Out, n, x, p.observed(pieces)); err != nil {
				return fmt.Errorf("--out: the assignment: %w", err)
			}
			return nil
		}}
	before := t.traffic()
	res, err := remote.Run(ctx, t.Transport, layout, opts, ro, h.Progress)
	if err != nil {
		return Outcome{}, true, err
	}
	res.Elapsed = time.Since(start)
	sj := &engine.Sharded{Boundary: len(layout.BoundaryVars), PlanSeconds: planned.Seconds(), SetupSeconds: planned.Seconds()}
	o := Outcome{Ran: true, Result: res}
	if o.Traffic = t.since(before, res.Iterations); o.Traffic.Iterations > 0 {
		sj.BytesPerIteration = (o.Traffic.In + o.Traffic.Out) / uint64(o.Traffic.Iterations)
	}
	o.Report = engine.Result{Status: res.Status, Primal: engine.Finite(res.Primal), Dual: engine.Finite(res.Dual), Gap: engine.Finite(res.Gap),
		Relaxed: engine.Finite(res.Relaxed), Iterations: res.Iterations, Seconds: res.Elapsed.Seconds(), Assignment: x,
		Algo: j.Algorithm.Name, Why: j.Why, Threads: 1, Workers: t.Workers,
		Model: engine.ModelSize{Variables: layout.NumVars, Factors: layout.NumFactors}, Sharded: sj}
	if o.Report.Primal != nil {
		if t.Out != "" {
			o.Report.AssignmentFile = t.Out
		}
		o.Report.Omitted = x == nil
	}
	return o, true, nil
}
