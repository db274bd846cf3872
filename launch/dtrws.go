package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/ddrun/ddrun/dtrws/remote"
	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/internal/rusage"
)

// refuseDTRWS is runShardedChoice's refusal of a job before the plan's
// class: TRW-S asked for (--algo trws) with checkpoints or a Raft group,
// which distributed TRW-S does not have.
func refuseDTRWS(j *engine.Job, t Target) error {
	c := t.Checkpoints
	if j.AskedTRWS() && (t.Raft != nil || c.Every > 0 || c.Dir != "") {
		return inputf("run --algo trws: distributed TRW-S has no checkpoints and no Raft group yet (docs/distributed-trws.md): leave out --checkpoint-every, --checkpoint-dir and --raft-*, or run --algo admm")
	}
	return nil
}

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
	asked := j.AskedTRWS()
	if err := refuseDTRWS(j, t); err != nil {
		return Outcome{}, true, err
	}
	if !asked && (!j.Settings.Auto || j.Settings.Exact || t.Raft != nil || c.Every > 0 || c.Dir != "") {
		return Outcome{}, false, nil
	}
	start, log := t.Start, t.Logger
	trws, err := j.ChooseForRun(p.class)
	if err != nil || !trws {
		return Outcome{}, err != nil, err
	}
	if err := t.connect(ctx, &h); err != nil {
		return Outcome{}, true, err
	}
	if h.Print != nil {
		h.Print("algorithm", fmt.Sprintf("algorithm: %s (%s)", j.Algorithm.Name, j.Why), "algo", j.Algorithm.Name, "why", j.Why)
	}
	stopParts, err := p.serveParts(ctx, t.Transport, log)
	if err != nil {
		return Outcome{}, true, err
	}
	defer stopParts()
	opts := j.DTRWS(t.Workers, p.layout.NumVars)
	var x []int // the assignment for the result, when small enough
	ro := remote.Options{Job: t.Job, Start: start, Wait: t.Wait, StepTimeout: t.StepTimeout, LostAfter: t.LostAfter, Logger: log,
		Deliver: func(ctx context.Context, n int, pieces func(put func([]int, []int32) error) error) error {
			return p.deliver(t, &x, n, pieces)
		}}
	before := t.traffic()
	res, err := remote.Run(ctx, t.Transport, p.layout, opts, ro, h.Progress)
	if err != nil {
		return Outcome{}, true, err
	}
	res.Elapsed = time.Since(start)
	// The set-up reported is the plan's: the parts' loading is in the
	// first iteration's time; the workers do not report their peaks.
	o := p.outcome(res, j, t, before, &engine.Sharded{SetupSeconds: p.planned.Seconds(), CoordinatorRSSMB: rusage.PeakRSSMB()}, x)
	return o, true, nil
}
