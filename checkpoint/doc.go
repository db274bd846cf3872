// Package checkpoint will own the durable state of a distributed job
// (multipliers, marginals, the best assignment) as content-hashed blobs
// with Raft-replicated manifests, so that losing a worker or the
// coordinator's leader loses at most one checkpoint interval. It is empty
// until the fault-tolerance work (see the project's issues); it must not
// know the algorithm's arithmetic.
package checkpoint
