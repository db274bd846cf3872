package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/model/uai"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/solver"
)

// runSharded is `coordinator run --sharded`: the workers read their parts
// of an indexed model file themselves, and this process keeps only the
// boundary between them (package shard; cluster runs the job, alone or as
// a member of a Raft group).
func runSharded(ctx context.Context, start time.Time, fs *flag.FlagSet, f solveFlags, r runFlags, pos []string, stdout io.Writer, con *cli.Console) error {
	sp, err := f.prepare(fs, "run", pos, con)
	if err != nil {
		return err
	}
	if f.anytimeOn {
		if err := noSearchPhase(&f, fs, "--sharded", "the coordinator does not hold the model that the search ships and re-scores against", con); err != nil {
			return err
		}
	}
	if err := shardedFlags(f, sp, pos[0]); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	path, err := filepath.Abs(pos[0])
	if err != nil {
		return usageError{err}
	}
	log := con.Logger()
	lctx := ctx
	if f.timeLimit > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithDeadlineCause(ctx, start.Add(f.timeLimit), fmt.Errorf("--time-limit %v reached while planning the shards", f.timeLimit))
		defer cancel()
	}
	layout, err := shard.PlanLayout(path, r.workers, shard.PlanOptions{MaxEntries: f.maxEntries, Context: lctx, Logger: log})
	if err != nil {
		return usageError{err}
	}
	stateDir := r.stateDir
	if stateDir == "" {
		stateDir = path + ".state"
	}
	if stateDir, err = filepath.Abs(stateDir); err != nil {
		return usagef("--state-dir: %v", err)
	}
	// The job's identity for its checkpoints: the layout (each spec binds
	// the file by its size and structure checksum) and the settings.
	digest, err := layout.Digest()
	if err != nil {
		return err
	}
	id, err := cluster.NewIdentity(digest, sp.dd, r.workers)
	if err != nil {
		return err
	}
	j := cluster.Job{Shards: layout, StateDir: stateDir, Options: sp.dd, Run: r.runOptions(log), Identity: id, Started: start}
	if r.ck.dir != "" && !r.raft.enabled() {
		if j.Dir, j.Resume, err = localCheckpoints(ctx, r.ck, r.job, id, log); err != nil {
			return err
		}
	}
	if f.timeLimit > 0 {
		left := f.timeLimit - time.Since(start)
		if left <= 0 {
			return usagef("%s: --time-limit %v reached while planning the shards", pos[0], f.timeLimit)
		}
		j.Options.TimeLimit = left
	}
	ses, err := r.session(ctx, &f, con)
	if err != nil {
		return err
	}
	defer ses.close()
	tr, output := ses.nc, ses.out
	j.Transport = ses.tr
	j.Progress = r.observed(output.progress())
	var x []int // the assignment for the JSON result, when small enough
	j.Deliver = func(ctx context.Context, a *cluster.ShardAssignment) error {
		if f.json && a.NumVars <= maxJSONAssignment {
			x = make([]int, a.NumVars)
		}
		// The workers' pieces, one at a time, into --out (when given).
		err := uai.WriteMPEPieces(f.out, a.NumVars, x, func(put func([]int, []int32) error) error { return a.Pieces(ctx, put) })
		if err != nil {
			return fmt.Errorf("--out: the assignment: %w", err)
		}
		return nil
	}
	before := tr.Conn().Stats()
	j.Run.Hooks = r.hooks()
	planned := time.Since(start)
	// result is the job's result in the JSON schema, with what this
	// coordinator saw of the run (stats: none when it did not run it).
	result := func(res solver.Result, info cluster.JobInfo, stats cluster.RunStats) resultJSON {
		sj := &shardedJSON{Boundary: len(layout.BoundaryVars), PlanSeconds: planned.Seconds(), SetupSeconds: (planned + stats.Setup).Seconds(),
			CoordinatorRSSMB: cluster.PeakRSSMB(), WorkerRSSMB: stats.WorkerRSSMB,
			Failovers: stats.Failovers, Restored: stats.Restored, Redone: stats.Redone}
		if st, n := tr.Conn().Stats(), res.Iterations; n > 0 {
			sj.BytesPerIteration = (st.InBytes - before.InBytes + st.OutBytes - before.OutBytes) / uint64(n)
		}
		rj := resultJSON{Status: res.Status, Primal: finite(res.Primal), Dual: finite(res.Dual), Gap: finite(res.Gap),
			Relaxed: finite(res.Relaxed), Iterations: res.Iterations, Seconds: res.Elapsed.Seconds(), Assignment: x,
			Algo: sp.algo.name, Threads: sp.threads, Workers: r.workers,
			Model: modelJSON{Variables: layout.NumVars, Factors: layout.NumFactors}, Sharded: sj,
			Failovers: &info.Failovers, Redone: &info.Redone}
		if rj.Primal != nil {
			if f.out != "" {
				rj.AssignmentFile = f.out
			}
			rj.Omitted = x == nil
		}
		return rj
	}
	report := func(o cluster.Outcome) error {
		res := o.Result
		r.obs.ObserveResult(res)
		rj := result(res, o.Info, o.Stats)
		if n := res.Iterations; n > 0 && !f.quiet {
			st := tr.Conn().Stats()
			printTraffic(con, st.InBytes-before.InBytes, st.OutBytes-before.OutBytes, n)
		}
		if err := output.finish(res); err != nil {
			return err
		}
		log.Info("sharded run", "plan_seconds", rj.Sharded.PlanSeconds, "setup_seconds", rj.Sharded.SetupSeconds, "coordinator_peak_rss_mb", rj.Sharded.CoordinatorRSSMB)
		printResult(con, res)
		if !f.json {
			return nil
		}
		return writeJSON(stdout, rj)
	}
	if r.raft.enabled() {
		// The recorded result holds what the job's last leader saw at its
		// end; the assignment is already in --out (Deliver).
		record := func(res solver.Result, info cluster.JobInfo) (json.RawMessage, error) {
			return json.Marshal(result(res, info, cluster.RunStats{}))
		}
		return runReplicated(ctx, j, tr, &r, f, output, stdout, record, report)
	}
	o, err := cluster.RunJob(ctx, j)
	if err != nil {
		return usageIfRefused(err)
	}
	return report(o)
}

// shardedFlags rejects what a sharded run cannot do.
func shardedFlags(f solveFlags, sp spec, model string) error {
	switch {
	case f.exact:
		return usagef("run: --exact runs only in solve")
	case !sp.algo.distributed:
		return usagef("run: --algo %s runs only in solve (run distributes dual decomposition: admm or subgradient)", sp.algo.name)
	case sp.dd.Slaves != consensus.PerFactor:
		return usagef("run --sharded: --slaves %s: a sharded run has one slave per factor", sp.dd.Slaves)
	case f.evidence != "":
		return usagef("run --sharded: --evidence is not applied to sharded models (fold it into the model first)")
	case f.tighten != "none":
		return usagef("run --sharded: --tighten %s needs the whole model", f.tighten)
	case !strings.HasSuffix(strings.ToLower(model), ".ddx"):
		return usagef("run --sharded: %s: the workers read an indexed model (.ddx) at the same path; convert it first: coordinator convert %s %s.ddx",
			model, model, strings.TrimSuffix(model, filepath.Ext(model)))
	}
	return nil
}

// shardedJSON describes a sharded run in the JSON result.
type shardedJSON struct {
	Boundary int `json:"boundary_variables"`
	// PlanSeconds: the coordinator's passes over the file; SetupSeconds:
	// from the start of the command until every worker had built its part
	// (the time to the first iteration).
	PlanSeconds  float64 `json:"plan_seconds"`
	SetupSeconds float64 `json:"setup_seconds"`
	// Peak RSS in MiB: the coordinator's at the end, each worker's once it
	// had built its part.
	CoordinatorRSSMB int64   `json:"coordinator_peak_rss_mb"`
	WorkerRSSMB      []int64 `json:"worker_peak_rss_mb"`
	// BytesPerIteration is the coordinator's NATS traffic (in and out)
	// over the run, per iteration.
	BytesPerIteration uint64 `json:"bytes_per_iteration"`
	// Failovers counts the epochs a lost worker ended, Restored those
	// that went on from a checkpoint, Redone the iterations run again.
	Failovers int `json:"failovers"`
	Restored  int `json:"restored"`
	Redone    int `json:"redone"`
}
