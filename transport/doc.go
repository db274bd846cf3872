// Package transport owns what the coordinator and the workers of a
// distributed ddrun job say to each other and how it gets there:
//
//   - the messages (Header, and the bodies Hello, Assign, Step, Report,
//     Heartbeat) and their encoding: a magic-and-version prefix, a msgpack
//     header, a msgpack body, with float and int32 vectors (Floats, Int32s)
//     as raw little-endian bins rather than msgpack arrays;
//   - the subjects they travel on, namespaced by job id (see ControlSubject);
//   - delivery: the Transport interface with an in-process implementation
//     (InProc, for the single-process mode and tests) and a NATS one (NATS,
//     with an embedded server for tests and single-host runs), chunking of
//     messages above the connection's max payload and their reassembly;
//   - the bookkeeping that makes at-most-once delivery usable: Filter drops
//     stale (older epoch or iteration) and duplicated (same From and Seq)
//     messages.
//
// It must not know the algorithm's numerics (what the vectors mean, how they
// are combined, when to stop) or the model: an Assign carries the model part
// as bytes the runtime encodes. The runtime decides what to send when; this
// package only moves and checks bytes.
//
// # Wire format
//
// A message is "DDM" 0x01, then the header as a msgpack array
// [job, epoch, iter, kind, from, seq], then the body as exactly one msgpack
// value. Decode rejects anything else (no magic, another version, a
// malformed header, trailing bytes, containers nested deeper than 32) with
// an error wrapping ErrMalformed, and never panics. A chunk frame starts
// with "DDC" 0x01; ChunkHeaderLen documents its layout.
//
// Floats and Int32s are encoded on little-endian machines by copying the
// slice's memory (unsafe.Slice, guarded by GOARCH build tags in
// floats_le.go) and elsewhere, or with -tags purego, by a portable loop over
// math.Float64bits and encoding/binary; both write the same bytes.
//
// # Delivery
//
// Delivery is at most once, in order per publisher and subject. With NATS a
// slow subscriber loses messages (reported through NATSOptions.OnError);
// InProc instead blocks the publisher. Every message carries job, epoch,
// iteration, sender and sequence number, so that the runtime can retransmit
// freely and let a Filter drop what is stale or repeated.
package transport
