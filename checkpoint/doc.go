// Package checkpoint owns the durable state of a distributed job: the bulk
// state (multipliers, marginals, the best assignment) as content-hashed
// blobs in a Store, and the small Manifest that names one complete
// checkpoint. A checkpoint is valid only when every blob it names is
// stored and verified; a torn checkpoint is never used.
//
// Stores: Dir (local files, for a single coordinator), ObjectStore (a NATS
// JetStream object store, shared by a Raft group of coordinators) and Mem
// (tests). Manifests are kept by the caller: in a directory next to the
// blobs for a single coordinator, or in the Raft log (package
// checkpoint/raftlog) for a replicated one.
//
// It must not know the algorithm's arithmetic or what the blobs contain.
package checkpoint
