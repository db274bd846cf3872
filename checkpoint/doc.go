// Package checkpoint owns the durable state of a distributed job: the bulk
// state (multipliers, marginals, the best assignment) as content-hashed
// blobs in a Store, and the small Manifest that names one complete
// checkpoint. A checkpoint is valid only when every blob it names is
// stored and verified; a torn checkpoint is never used.
//
// Stores: Dir (local files, for a single coordinator), ObjectStore (a NATS
// JetStream object store, shared by a Raft group of coordinators) and Mem
// (tests). Manifests are kept by the caller: in a directory next to the
// blobs for a single coordinator, or in the Raft log (package jobstate)
// for a replicated one.
//
// Taking a checkpoint is two steps, in this order: Write stores the parts
// as blobs (objects already stored are not written again) and returns the
// manifest; then the manifest is recorded (Dir.SaveManifest, or a Raft
// entry of a few KB). Restoring is Latest over the recorded manifests,
// newest first: it reads and verifies (size and sha256) every blob and
// falls back past torn checkpoints, reporting each one it skipped. Raft
// entries never carry the blobs; see docs/checkpoints.md for why.
//
// It must not know the algorithm's arithmetic, what the blobs contain, or
// who records the manifests (a directory, a Raft group).
package checkpoint
