// Package cluster owns the job protocol of the distributed runtime: how a
// coordinator finds workers, ships each one its part of the model, drives
// the iterations over a transport, replaces lost workers and ends the job;
// and the worker's service loop that answers it.
//
// The protocol is defined here and nowhere else: its messages, their
// kinds and encodings (wire.go) and the subjects they travel on
// (subjects.go). The coordinator's side is split by concern: run.go (Run,
// epochs and regrouping), membership.go (waiting for workers, hellos and
// heartbeats, lost workers and spares), link.go (assignments and the
// per-iteration exchange with each worker); worker.go is the worker's side,
// checkpoints.go the run's checkpoint blobs. shard.go runs a sharded job:
// its workers save their parts' states themselves (WorkerOptions.
// ShardStates, package shard's state files, whose format this package does
// not know) and a lost worker sends every part back to the latest
// checkpoint in a new epoch.
//
// It also owns a job's lifecycle around the run (job.go, replicated.go,
// resume.go, identity.go): a Job's identity (model hash and settings),
// resuming from the latest valid checkpoint (LoadResume), and running it
// to its end on one coordinator (RunJob) or as a member of a Raft group of
// coordinators (RunReplicated: following, leading an epoch, recording the
// result in package jobstate's replicated state).
//
// The numerics live in package consensus (the same per-slave and
// per-variable code as the single-process mode, see docs/distributed.md);
// delivery, the message envelope and deduplication live in package
// transport, which knows nothing of this protocol. This package must not
// know the algorithm's arithmetic, the file formats or the command line
// (flags, messages, the printed result schema: a Job's Record callback
// encodes the result it records).
package cluster
