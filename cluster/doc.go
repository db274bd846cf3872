// Package cluster owns the job protocol of the distributed runtime: how a
// coordinator finds workers, ships each one its part of the model, drives
// the iterations over a transport, replaces lost workers and ends the job;
// and the worker's service loop that answers it.
//
// The protocol is defined here and nowhere else: its messages, their
// kinds and encodings (wire.go) and the subjects they travel on
// (subjects.go). The coordinator's side is split by concern: run.go (the
// epoch loop, runEpochs: each epoch claims its workers, runs, and a lost
// worker that ends it starts the next from the latest checkpoint),
// layout.go (how a job's model is spread over an epoch's workers: the two
// kinds of layout below), membership.go (waiting for workers, hellos and
// heartbeats, lost workers, spares, and lost workers taken back when they
// speak again), link.go (assignments and the
// per-iteration exchange with each worker), certificate.go (what a run
// must see before it ends optimal or infeasible: the last reports asked
// again, no report contradicted by another for the same iteration; see
// docs/security.md); worker.go is the worker's side, checkpoints.go the
// run's checkpoint blobs.
//
// A job's model is laid out in one of two ways, both run by the same
// epochs, checkpoints, resume and Raft record. A whole model (Job.Model)
// is held by the coordinator, split into slaves and placed on the workers;
// a lost worker's part moves to a spare, or, with none, the job continues
// on the workers left. A sharded layout (Job.Shards, package shard's
// Layout) leaves the model to the workers, each reading its part from its
// spec (carried as opaque bytes; WorkerOptions.LoadShard builds the part),
// while the coordinator keeps the boundary; its workers save their parts'
// states themselves (WorkerOptions.ShardStates, package shard's state
// files), and a lost worker sends every part back to the latest
// checkpoint in a new epoch. The workers hold a sharded job's assignment:
// Job.Deliver gets it in pieces (ShardAssignment).
//
// It also owns a job's lifecycle around the run (job.go, replicated.go,
// resume.go, identity.go): a Job's identity (model hash and settings),
// resuming from the latest valid checkpoint (LoadResume, a ResumePoint),
// and running it to its end on one coordinator (RunJob) or as a member of
// a Raft group of coordinators (RunReplicated: following, leading an
// epoch, recording the result in package jobstate's replicated state).
//
// The numerics live in package consensus (the same per-slave and
// per-variable code as the single-process mode, see docs/distributed.md);
// delivery, the message envelope and deduplication live in package
// transport, which knows nothing of this protocol. What this package knows
// of models is the model.Model type and its wire form inside an
// assignment (package model/native's msgpack encoding, the only model
// encoding it uses); it must not know the model file formats (UAI, the
// indexed .ddx that package shard reads), the layout of shard's specs and
// state files, the algorithm's arithmetic or the command line (flags,
// messages, the printed result schema: a Job's Record callback encodes the
// result it records).
package cluster
