// Package cluster owns the job protocol of the distributed runtime: how a
// coordinator finds workers, ships each one its part of the model, drives
// the iterations over a transport, and ends the job; and the worker's
// service loop that answers it. The numerics live in package consensus
// (the same per-slave and per-variable code as the single-process mode,
// see docs/distributed.md); delivery lives in package transport.
//
// It also owns a job's lifecycle around the run (job.go, replicated.go,
// resume.go, identity.go): a Job's identity (model hash and settings),
// its checkpoints (Checkpointer, EncodeState, DecodeState), resuming from
// the latest valid one (LoadResume), and running it to its end on one
// coordinator (RunJob) or as a member of a Raft group of coordinators
// (RunReplicated: following, leading an epoch, recording the result in
// package jobstate's replicated state).
//
// It must not know the algorithm's arithmetic, the file formats or the
// command line (flags, messages, the printed result schema: a Job's
// Record callback encodes the result it records).
package cluster
