package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/jobstate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/transport"
)

// raftFlags are the settings of a Raft-replicated coordinator.
type raftFlags struct {
	id, bind, peers, dir string
	bucket               string
	replicas             int
}

func (r *raftFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
}) {
	fs.StringVar(&r.id, "raft-id", "", "this coordinator's `ID` in its Raft group")
	fs.StringVar(&r.bind, "raft-bind", "", "`ADDR` (host:port) for Raft traffic")
	fs.StringVar(&r.peers, "raft-peers", "", "every member of the group: `ID=ADDR,...` (this one included)")
	fs.StringVar(&r.dir, "raft-dir", "", "`DIR` for this coordinator's Raft log and snapshots; reuse it to restart")
	fs.StringVar(&r.bucket, "checkpoint-bucket", "", "JetStream object store `BUCKET` for a Raft group's checkpoint blobs (default ddrun-ckpt-JOB); ignored with --checkpoint-dir, which must then be shared by the group")
	fs.IntVar(&r.replicas, "checkpoint-replicas", 1, "replicas of the checkpoint bucket in a clustered JetStream")
}

func (r *raftFlags) enabled() bool { return r.id != "" || r.bind != "" || r.peers != "" || r.dir != "" }

func (r *raftFlags) check(natsURL, job string, local bool) error {
	if !r.enabled() {
		return nil
	}
	switch {
	case r.id == "" || r.bind == "" || r.peers == "" || r.dir == "":
		return usagef("Raft needs all of --raft-id, --raft-bind, --raft-peers and --raft-dir")
	case natsURL == "":
		return usagef("Raft: the coordinators share an external NATS server: give --nats URL")
	case job == "":
		return usagef("Raft: give the group's coordinators the same --job ID")
	case local:
		return usagef("Raft: --local is for a single coordinator; start the workers yourself")
	case r.replicas < 1 || r.replicas > 5:
		return usagef("--checkpoint-replicas: %d not in [1, 5]", r.replicas)
	}
	if _, err := jobstate.ParsePeers(r.peers); err != nil {
		return usagef("--raft-peers: %v", err)
	}
	return nil
}

// runReplicated is `coordinator run` as a member of a Raft group: it waits
// while it follows; when it leads, it takes a new epoch, resumes the job
// from the latest committed checkpoint and drives it, committing each
// checkpoint's manifest; the leader at the end records the result, prints
// it, and every member exits.
func runReplicated(ctx context.Context, tr *transport.NATS, rf raftFlags, ck checkpointFlags, m *model.Model, ev model.Evidence,
	opts consensus.Options, f solveFlags, ro cluster.RunOptions, modelHash string, settings json.RawMessage,
	progress func(consensus.Progress), log *slog.Logger, stdout, stderr io.Writer, path string) error {
	peers, _ := jobstate.ParsePeers(rf.peers)
	// Raft's own chatter (elections, replication) only from warnings up;
	// this command logs the role changes itself.
	rlog := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	g, err := jobstate.Open(jobstate.Config{ID: rf.id, Bind: rf.bind, Peers: peers, Dir: rf.dir, Logger: rlog.With("raft_id", rf.id)})
	log = log.With("raft_id", rf.id)
	if err != nil {
		return fmt.Errorf("raft: %w", err)
	}
	defer g.Close()
	var store checkpoint.Store
	if ck.dir != "" {
		d, err := checkpoint.OpenDir(ck.dir)
		if err != nil {
			return usagef("--checkpoint-dir: %v", err)
		}
		store = d
	} else {
		bucket := rf.bucket
		if bucket == "" {
			bucket = "ddrun-ckpt-" + ro.Base
		}
		obj, err := checkpoint.OpenObjectStore(ctx, tr.Conn(), bucket, checkpoint.ObjectStoreOptions{Replicas: rf.replicas})
		if err != nil {
			return fmt.Errorf("checkpoint store (does the NATS server run JetStream?): %w", err)
		}
		store = obj
	}
	// Role changes, logged as they happen; leading tracks the latest.
	leading := make(chan bool, 1)
	go func() {
		last := jobstate.Role("")
		for {
			select {
			case <-ctx.Done():
				return
			case r, ok := <-g.Roles():
				if !ok {
					return
				}
				if r != last {
					log.Info("raft role changed", "role", string(r), "leader", leaderID(g))
					last = r
				}
				select {
				case <-leading:
				default:
				}
				leading <- r == jobstate.RoleLeader
			}
		}
	}()
	for {
		// Follow until this member leads or the job is done.
		st := g.State()
		if st.Done {
			if g.IsLeader() {
				// The leader that finished died before it could print.
				return printStoredResult(st.Result, f, stdout, stderr)
			}
			log.Info("job done; exiting", "job", st.Job)
			return nil
		}
		if !g.IsLeader() {
			select {
			case <-ctx.Done():
				return fmt.Errorf("interrupted while following")
			case <-g.Changed():
			case <-leading:
			case <-time.After(time.Second):
			}
			continue
		}
		done, err := lead(ctx, g, store, tr, ck, m, ev, opts, f, ro, modelHash, settings, progress, log, stdout, stderr, path)
		if done || err != nil && !errors.Is(err, jobstate.ErrNotLeader) {
			return err
		}
		log.Warn("leadership lost; following", "err", err)
	}
}

// lead drives the job for one epoch. It returns done when the job ended
// here (its result printed), or an error wrapping jobstate.ErrNotLeader when
// leadership was lost.
func lead(ctx context.Context, g *jobstate.Group, store checkpoint.Store, tr *transport.NATS, ck checkpointFlags, m *model.Model, ev model.Evidence,
	opts consensus.Options, f solveFlags, ro cluster.RunOptions, modelHash string, settings json.RawMessage,
	progress func(consensus.Progress), log *slog.Logger, stdout, stderr io.Writer, path string) (bool, error) {
	if err := g.Start(ctx, ro.Base, modelHash, settings); err != nil {
		if errors.Is(err, jobstate.ErrRejected) {
			return true, usagef("raft group %s: %v", ro.Base, err)
		}
		return false, err
	}
	epoch, err := g.TakeEpoch(ctx)
	if err != nil {
		return false, err
	}
	st := g.State()
	ri := runInfo{workers: ro.Workers}
	ro.Epoch = epoch
	if st.Checkpoint != nil {
		rp, err := loadResume(ctx, store, []checkpoint.Manifest{*st.Checkpoint}, modelHash, settings, log)
		switch {
		case err == nil:
			ro.Resume = rp.resume
			ri.redone, ri.failovers = rp.redone, rp.failovers
		case errors.Is(err, checkpoint.ErrNoCheckpoint):
			log.Warn("the committed checkpoint is torn; starting the job afresh", "iteration", st.Checkpoint.Iteration, "err", err)
		default:
			return true, err
		}
	}
	if epoch > 1 {
		ri.failovers++ // this coordinator took the job over
	}
	from := 0
	if ro.Resume != nil {
		from = ro.Resume.State.Iter
	}
	log.Info("leading the job", "job", ro.Base, "epoch", epoch, "from_iteration", from)
	// Leadership lost: the run stops at once (its ctx), and so does a
	// checkpoint that can no longer be committed.
	leadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			select {
			case <-leadCtx.Done():
				return
			case <-time.After(100 * time.Millisecond):
				if !g.IsLeader() {
					cancel()
					return
				}
			}
		}
	}()
	var cpr *cluster.Checkpointer
	if ro.Checkpoint != nil {
		cpr = cluster.NewCheckpointer(cluster.CheckpointerOptions{Store: store, Job: ro.Base, Epoch: epoch, ModelHash: modelHash, Settings: settings,
			Redone: ri.redone, Failovers: ri.failovers, Logger: log,
			Record: func(ctx context.Context, m checkpoint.Manifest) error { return g.SaveCheckpoint(ctx, m) }})
		ro.Checkpoint.Save = cpr.Save
	}
	res, stats, err := cluster.Run(leadCtx, tr, m, ev, opts, ro, progress)
	if cpr != nil {
		if werr := cpr.Wait(context.Background()); werr != nil && err == nil {
			err = werr
		}
	}
	if !g.IsLeader() || ctx.Err() == nil && leadCtx.Err() != nil {
		return false, fmt.Errorf("epoch %d ended: %w", epoch, jobstate.ErrNotLeader)
	}
	if err != nil {
		return true, fmt.Errorf("%s: %w", path, err)
	}
	if res.Status == consensus.Interrupted {
		// Stopped by a signal: the job stays open; a restart resumes it.
		log.Warn("interrupted; the job resumes from its latest checkpoint when the group restarts")
		return true, report(res, opts, m, f, ri, stdout, stderr)
	}
	ri.failovers += stats.Failovers
	ri.redone += stats.Redone
	r := newResultJSON(res, opts, m)
	r.Workers, r.Failovers, r.Redone = ri.workers, &ri.failovers, &ri.redone
	data, err := json.Marshal(r)
	if err != nil {
		return true, err
	}
	if err := g.Finish(ctx, data); err != nil {
		return false, err
	}
	// Let the followers learn the commit before this member goes away.
	time.Sleep(time.Second)
	return true, report(res, opts, m, f, ri, stdout, stderr)
}

// printStoredResult prints a result recorded in the Raft log by a leader
// that died before printing it.
func printStoredResult(data json.RawMessage, f solveFlags, stdout, stderr io.Writer) error {
	var r resultJSON
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("the recorded result: %w", err)
	}
	if !f.quiet {
		fmt.Fprintf(stderr, "status=%s iterations=%d dual=%s primal=%s (recorded by the previous leader)\n",
			r.Status, r.Iterations, ptrNum(r.Dual), ptrNum(r.Primal))
	}
	if f.out != "" && r.Assignment != nil {
		if err := writeMPE(f.out, r.Assignment); err != nil {
			return err
		}
	}
	if f.json {
		return writeJSON(stdout, r)
	}
	return nil
}

func ptrNum(v *float64) string {
	if v == nil {
		return num(math.Inf(1))
	}
	return num(*v)
}

func leaderID(g *jobstate.Group) string {
	id, _ := g.Leader()
	return id
}
