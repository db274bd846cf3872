package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/shard"
)

// runSharded is `coordinator run --sharded`: the workers read their parts
// of an indexed model file themselves, and this process keeps only the
// boundary between them (package shard, cluster.RunShards).
func runSharded(ctx context.Context, start time.Time, fs *flag.FlagSet, f solveFlags, r runFlags, pos []string, stdout io.Writer, con *cli.Console) error {
	sp, err := f.prepare(fs, "run", pos)
	if err != nil {
		return err
	}
	if sp.Settings.AnytimeOn {
		if err := noSearchPhase(&sp.Settings, f.quiet, fs, "--sharded", "the coordinator does not hold the model that the search ships and re-scores against", con); err != nil {
			return err
		}
	}
	if err := shardedFlags(f, r, sp, pos[0]); err != nil {
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
	timeLimit := sp.Settings.TimeLimit
	if timeLimit > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithDeadlineCause(ctx, start.Add(timeLimit), fmt.Errorf("--time-limit %v reached while planning the shards", timeLimit))
		defer cancel()
	}
	layout, err := shard.Plan(path, r.workers, shard.PlanOptions{MaxEntries: f.maxEntries, Context: lctx, Logger: log})
	if err != nil {
		return usageError{err}
	}
	job := &cluster.ShardJob{Boundary: layout.Boundary, BoundaryVars: layout.BoundaryVars, Of: layout.Of, Deg: layout.Deg, NumVars: layout.NumVars,
		StateDir: r.stateDir}
	if job.StateDir == "" {
		job.StateDir = path + ".state"
	}
	if job.StateDir, err = filepath.Abs(job.StateDir); err != nil {
		return usagef("--state-dir: %v", err)
	}
	// The job's identity for its checkpoints: the plan (each spec binds
	// the file by its size and structure checksum) and the settings.
	h := sha256.New()
	for w := range layout.Specs {
		b, err := layout.Specs[w].Encode()
		if err != nil {
			return err
		}
		job.Specs = append(job.Specs, b)
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	id, err := cluster.NewIdentity(h.Sum(nil), sp.DD(), r.workers)
	if err != nil {
		return err
	}
	ro := r.runOptions(log)
	ro.Epoch = 1
	var ckpt *cluster.Checkpointer
	if r.ck.dir != "" {
		d, rp, err := localCheckpoints(ctx, r.ck, r.job, id, log)
		if err != nil {
			return err
		}
		started := start
		if rp != nil {
			ro.Resume, ro.Epoch = rp.Resume, rp.Epoch+1
			if !rp.Started.IsZero() {
				started = rp.Started
			}
		}
		if ro.Checkpoint != nil {
			ckpt = cluster.NewCheckpointer(cluster.CheckpointerOptions{Store: d, Job: r.job, Epoch: ro.Epoch, ModelHash: id.ModelHash, Settings: id.Settings,
				Started: started, Logger: log, Record: func(ctx context.Context, m checkpoint.Manifest) error { return d.SaveManifest(ctx, &m) },
				Prune: func(ctx context.Context) error { return d.Prune(ctx, r.job, 2) }})
			ro.Checkpoint.Save = ckpt.Save
		}
	}
	opts := sp.DD()
	if timeLimit > 0 {
		left := timeLimit - time.Since(start)
		if left <= 0 {
			return usagef("%s: --time-limit %v reached while planning the shards", pos[0], timeLimit)
		}
		opts.TimeLimit = left
	}
	ses, err := r.session(ctx, &f, con)
	if err != nil {
		return err
	}
	defer ses.close()
	tr, sealed, output := ses.nc, ses.tr, ses.out
	progress := r.observed(output.progress())
	var x []int // the assignment for the JSON result, when small enough
	deliver := func(ctx context.Context, a *cluster.ShardAssignment) error {
		if f.json && a.NumVars <= maxJSONAssignment {
			x = make([]int, a.NumVars)
		}
		return writeShardedMPE(ctx, f.out, a, x)
	}
	before := tr.Conn().Stats()
	ro.Hooks = r.hooks()
	planned := time.Since(start)
	res, stats, err := cluster.RunShards(ctx, sealed, job, opts, ro, deliver, progress)
	if ckpt != nil {
		if werr := ckpt.Wait(context.WithoutCancel(ctx)); werr != nil && err == nil {
			err = werr
		}
		if cs := ckpt.Stats(); cs.Written > 0 {
			log.Info("checkpoints", "written", cs.Written, "failed", cs.Failed, "bytes", cs.Bytes)
		}
	}
	if err != nil {
		return usageIfRefused(err)
	}
	if stats.Failovers > 0 {
		log.Warn("job finished after worker losses", "failovers", stats.Failovers, "restored", stats.Restored, "redone", stats.Redone)
	}
	res.Elapsed = time.Since(start)
	r.obs.ObserveResult(res.Result)
	sj := &engine.Sharded{Boundary: len(layout.BoundaryVars), PlanSeconds: planned.Seconds(), SetupSeconds: (planned + stats.Setup).Seconds(),
		CoordinatorRSSMB: cluster.PeakRSSMB(), WorkerRSSMB: stats.WorkerRSSMB,
		Failovers: stats.Failovers, Restored: stats.Restored, Redone: stats.Redone}
	if st, n := tr.Conn().Stats(), res.Iterations; n > 0 {
		in, out := st.InBytes-before.InBytes, st.OutBytes-before.OutBytes
		sj.BytesPerIteration = (in + out) / uint64(n)
		if !f.quiet {
			printTraffic(con, in, out, n)
		}
	}
	if err := output.finish(res.Result); err != nil {
		return err
	}
	log.Info("sharded run", "plan_seconds", sj.PlanSeconds, "setup_seconds", sj.SetupSeconds, "coordinator_peak_rss_mb", sj.CoordinatorRSSMB)
	printResult(con, res.Result)
	if !f.json {
		return nil
	}
	rj := resultJSON{Status: res.Status, Primal: engine.Finite(res.Primal), Dual: engine.Finite(res.Dual), Gap: engine.Finite(res.Gap),
		Relaxed: engine.Finite(res.Relaxed), Iterations: res.Iterations, Seconds: res.Elapsed.Seconds(), Assignment: x,
		Algo: sp.Algorithm.Name, Threads: sp.Threads, Workers: r.workers,
		Model: engine.ModelSize{Variables: layout.NumVars, Factors: layout.NumFactors}, Sharded: sj}
	if rj.Primal != nil {
		if f.out != "" {
			rj.AssignmentFile = f.out
		}
		rj.Omitted = x == nil
	}
	return writeJSON(stdout, rj)
}

// shardedFlags rejects what a sharded run cannot do.
func shardedFlags(f solveFlags, r runFlags, sp spec, model string) error {
	switch {
	case sp.Distributable("run") != nil:
		return settingError(sp.Distributable("run"))
	case sp.DD().Slaves != consensus.PerFactor:
		return usagef("run --sharded: --slaves %s: a sharded run has one slave per factor", sp.DD().Slaves)
	case f.evidence != "":
		return usagef("run --sharded: --evidence is not applied to sharded models (fold it into the model first)")
	case sp.Settings.Tighten != "none":
		return usagef("run --sharded: --tighten %s needs the whole model", sp.Settings.Tighten)
	case r.raft.enabled():
		return usagef("run --sharded: a sharded run has one coordinator (no --raft-*)")
	case !strings.HasSuffix(strings.ToLower(model), ".ddx"):
		return usagef("run --sharded: %s: the workers read an indexed model (.ddx) at the same path; convert it first: coordinator convert %s %s.ddx",
			model, model, strings.TrimSuffix(model, filepath.Ext(model)))
	}
	return nil
}

// writeShardedMPE writes a sharded run's assignment to path (when not
// empty), fetched piece by piece: each piece goes into a scratch file of 4
// bytes per variable at the variable's offset, which is then turned into
// the UAI MPE text and renamed into place; no more than one piece is in
// memory. x, when not nil, gets the assignment too. Every variable must
// come exactly once.
func writeShardedMPE(ctx context.Context, path string, a *cluster.ShardAssignment, x []int) error {
	if path == "" && x == nil {
		return nil
	}
	var scratch *os.File
	if path != "" {
		var err error
		if scratch, err = os.CreateTemp(filepath.Dir(path), ".mpe-scratch-*"); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		defer os.Remove(scratch.Name())
		defer scratch.Close()
		if err := fillFF(scratch, int64(a.NumVars)*4); err != nil {
			return fmt.Errorf("--out %s: %w", path, err)
		}
	}
	written := 0
	var seen []bool // without --out, x alone: which variables came
	if scratch == nil {
		seen = make([]bool, a.NumVars) // at most maxJSONAssignment
	}
	var run []byte // the states of consecutive variables from..
	from := 0
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		_, err := scratch.WriteAt(run, int64(from)*4)
		run = run[:0]
		return err
	}
	err := a.Pieces(ctx, func(vars []int, states []int32) error {
		for k, v := range vars {
			if states[k] < 0 {
				return fmt.Errorf("variable %d in state %d", v, states[k])
			}
			if x != nil {
				x[v] = int(states[k])
			}
			if seen != nil {
				if seen[v] {
					return fmt.Errorf("variable %d came twice", v)
				}
				seen[v] = true
			}
			if scratch == nil {
				continue
			}
			// One write per run of consecutive variables (a part's
			// interior mostly is one), not one per variable.
			if len(run) > 0 && v != from+len(run)/4 {
				if err := flush(); err != nil {
					return err
				}
			}
			if len(run) == 0 {
				from = v
			}
			run = binary.LittleEndian.AppendUint32(run, uint32(states[k]))
		}
		written += len(vars)
		if scratch == nil {
			return nil
		}
		return flush()
	})
	if err != nil {
		return fmt.Errorf("--out: the assignment: %w", err)
	}
	if written != a.NumVars {
		return fmt.Errorf("--out: the workers gave %d states for %d variables", written, a.NumVars)
	}
	if scratch == nil {
		return nil
	}
	return mpeFromScratch(path, scratch, a.NumVars)
}

// fillFF writes n 0xff bytes: the mark of a variable not written yet.
func fillFF(f *os.File, n int64) error {
	block := make([]byte, 1<<16)
	for i := range block {
		block[i] = 0xff
	}
	w := bufio.NewWriterSize(f, 1<<16)
	for ; n > 0; n -= int64(len(block)) {
		if _, err := w.Write(block[:min(n, int64(len(block)))]); err != nil {
			return err
		}
	}
	return w.Flush()
}

// mpeFromScratch writes the UAI MPE file at path from the scratch file's
// states, atomically (writeAtomic).
func mpeFromScratch(path string, scratch *os.File, n int) error {
	return writeAtomic("--out", path, func(out io.Writer) error {
		r := bufio.NewReaderSize(io.NewSectionReader(scratch, 0, int64(n)*4), 1<<16)
		w := bufio.NewWriterSize(out, 1<<16)
		w.WriteString("MPE\n" + strconv.Itoa(n))
		var b [4]byte
		var num []byte
		for v := range n {
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return fmt.Errorf("reading back: %w", err)
			}
			s := binary.LittleEndian.Uint32(b[:])
			if s == 0xffffffff {
				return fmt.Errorf("no worker gave variable %d a state", v)
			}
			num = strconv.AppendUint(append(num[:0], ' '), uint64(s), 10)
			w.Write(num)
		}
		w.WriteString("\n")
		return w.Flush()
	})
}
