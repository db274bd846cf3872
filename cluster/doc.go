// Package cluster owns the job protocol of the distributed runtime: how a
// coordinator finds workers, ships each one its part of the model, drives
// the iterations over a transport, and ends the job; and the worker's
// service loop that answers it. The numerics live in package consensus
// (the same per-slave and per-variable code as the single-process mode,
// see docs/distributed.md); delivery lives in package transport.
//
// It must not know the algorithm's arithmetic, the file formats or the
// command line.
package cluster
