// Package jobstate owns the replicated state of one distributed job: which
// job and model a group of coordinators runs, the solver settings, the
// leadership epochs, the latest committed checkpoint manifest and the final
// result (a JobState). Three (or any odd number of) coordinator processes
// form a Raft group (github.com/hashicorp/raft; by default over TCP, with
// github.com/hashicorp/raft-wal as log and stable store and file
// snapshots, and any raft.Transport and stores given in Config instead);
// the leader proposes, every member applies the same commands in the same
// order to a JobState.
//
// Only small metadata goes through the log. A checkpoint manifest is a few
// KB; the bulk state it names (multipliers, marginals, assignments) lives in
// a checkpoint.Store and must never be put in a Raft entry: a large entry
// stalls heartbeats (an 8 MiB entry lost leadership with the fast election
// settings used here) and raft-wal cannot read back an entry larger than its
// segment (a 64 MiB entry could not be read back). Proposals whose encoded
// size exceeds MaxCommandBytes are refused before they reach Raft; put a big
// final result in the store and record its hash in Result.
//
// The leader of the group is the one coordinator allowed to drive the job.
// Before driving it takes a new epoch (TakeEpoch); checkpoints carry the
// epoch they were taken in, and the state machine refuses a checkpoint from
// any other epoch, so a deposed leader cannot overwrite its successor's
// progress.
//
// It must not know the algorithm or its arithmetic, how workers are reached
// (the worker transport), what checkpoint blobs contain, or what the
// result it records says (opaque JSON to it). Package cluster drives a job
// through it (cluster.RunReplicated). It was checkpoint/raftlog.
package jobstate
