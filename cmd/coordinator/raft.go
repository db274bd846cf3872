package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/jobstate"
	"github.com/ddrun/ddrun/solver"
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

// runReplicated is `coordinator run` as a member of a Raft group (see
// cluster.RunReplicated): it opens the group and the checkpoint store the
// group shares, and prints the result when this member ends the job, or
// leads it after the leader that ended it died before printing.
func runReplicated(ctx context.Context, j cluster.Job, sp spec, tr *transport.NATS, r *runFlags, f solveFlags,
	ro *runOutput, stdout io.Writer) error {
	log := ro.con.Logger()
	rf, ck := r.raft, r.ck
	peers, _ := jobstate.ParsePeers(rf.peers)
	// Raft's own chatter (elections, replication) only from warnings up;
	// cluster logs the role changes itself.
	rlog := ro.con.LoggerAt(slog.LevelWarn)
	g, err := jobstate.Open(jobstate.Config{ID: rf.id, Bind: rf.bind, Peers: peers, Dir: rf.dir, Logger: rlog.With("raft_id", rf.id)})
	if err != nil {
		return fmt.Errorf("raft: %w", err)
	}
	defer g.Close()
	raftReadiness(r.obs, g)
	if ck.dir != "" {
		d, err := checkpoint.OpenDir(ck.dir)
		if err != nil {
			return usagef("--checkpoint-dir: %v", err)
		}
		j.Store = d
	} else {
		bucket := rf.bucket
		if bucket == "" {
			bucket = "ddrun-ckpt-" + j.Run.Base
		}
		obj, err := checkpoint.OpenObjectStore(ctx, tr.Conn(), bucket, checkpoint.ObjectStoreOptions{Replicas: rf.replicas})
		if err != nil {
			return fmt.Errorf("checkpoint store (does the NATS server run JetStream?): %w", err)
		}
		j.Store = obj
	}
	j.Logger = log.With("raft_id", rf.id)
	j.Record = func(res solver.Result, info cluster.JobInfo) (json.RawMessage, error) {
		// The recorded result leaves a big assignment out
		// (maxJSONAssignment): write it before the record commits, so
		// that the job's --out exists once it is done.
		if f.out != "" && res.Assignment != nil && len(res.Assignment) > maxJSONAssignment {
			if err := writeMPE(f.out, res.Assignment); err != nil {
				return nil, err
			}
		}
		return json.Marshal(newResultJSON(res, sp, info, f.out))
	}
	out, err := cluster.RunReplicated(ctx, j, g)
	switch {
	case err != nil:
		return usageIfRefused(err)
	case out.Recorded != nil:
		return printStoredResult(out.Recorded, f, ro, stdout)
	case out.Ran:
		r.obs.ObserveResult(out.Result)
		return report(out.Result, sp, f, out.Info, ro, stdout)
	}
	return nil
}

// printStoredResult prints a result recorded in the Raft log by a leader
// that died before printing it.
func printStoredResult(data json.RawMessage, f solveFlags, ro *runOutput, stdout io.Writer) error {
	var r resultJSON
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("the recorded result: %w", err)
	}
	res := r.Solver()
	if err := ro.finish(res); err != nil {
		return err
	}
	ro.con.Print("result", fmt.Sprintf("status=%s iterations=%d dual=%s primal=%s (recorded by the previous leader)",
		r.Status, r.Iterations, ptrNum(r.Dual), ptrNum(r.Primal)),
		"status", string(r.Status), "iterations", r.Iterations, "dual", res.Dual, "primal", res.Primal, "recorded", true)
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
