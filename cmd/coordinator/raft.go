package main

import (
	"log/slog"

	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/launch"
)

// raftFlags are the settings of a Raft-replicated coordinator.
type raftFlags struct {
	id, bind, peers, dir string
	bucket               string
	replicas             int
	tls                  launch.RaftTLS
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
	r.tls.Register(fs)
}

// target is the Raft group of the flags for launch: its checkpoints in
// ckDir (shared by the group) or in the JetStream bucket; Raft's own
// chatter (elections, replication) logged from warnings up (cluster logs
// the role changes itself).
func (r *raftFlags) target(ckDir string, con *cli.Console) *launch.Raft {
	rlog := con.LoggerAt(slog.LevelWarn)
	return &launch.Raft{ID: r.id, Bind: r.bind, Peers: r.peers, Dir: r.dir, Logger: rlog.With("raft_id", r.id),
		CheckpointDir: ckDir, Bucket: r.bucket, Replicas: r.replicas, TLS: r.tls}
}

func (r *raftFlags) enabled() bool { return r.id != "" || r.bind != "" || r.peers != "" || r.dir != "" }
