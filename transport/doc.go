// Package transport moves messages between the processes of a distributed
// ddrun job and checks them; it owns:
//
//   - delivery: the Transport interface and its implementations, an
//     in-process one (InProc, for the single-process mode and tests), a
//     NATS one (NATS, with an embedded server for tests and single-host
//     runs, configured from a nats-server file when asked), a
//     fault-injecting wrapper (Faulty, for tests) and a sealing one
//     (Sealed: authenticated encryption under a shared secret, see
//     docs/security.md), all held to one contract by one conformance suite (conformance_test.go); chunking
//     of messages above the connection's max payload and their reassembly,
//     bounded per sender, per subscription and per connection
//     (ReassemblyBudget); under Sealed every chunk frame is sealed on its
//     own and opened before it is reassembled;
//   - the envelope: a Header (job, epoch, iteration, kind, sender,
//     sequence number) ahead of a msgpack body, Encode and Decode, with
//     float and int32 vectors (Floats, Int32s) as raw little-endian bins
//     rather than msgpack arrays; the names a header carries (ValidName);
//   - the bookkeeping that makes at-most-once delivery usable: Filter drops
//     stale (older epoch or iteration) and duplicated (same From and Seq)
//     messages.
//
// It must not know the job protocol: which bodies there are, what their
// kinds number, which subjects they travel on and who sends what when all
// live in package cluster. Nor does it know the algorithm's numerics (what
// the vectors mean) or the model. It moves and checks bytes.
//
// # Wire format
//
// A message is "DDM" 0x01, then the header as a msgpack array
// [job, epoch, iter, kind, from, seq], then the body as exactly one msgpack
// value. Decode rejects anything else (no magic, another version, a
// malformed header, trailing bytes, containers nested deeper than 32) with
// an error wrapping ErrMalformed, and never panics. A chunk frame starts
// with "DDC" 0x01; ChunkHeaderLen documents its layout. A sealed message
// (sealed.go) wraps a whole message, or, over NATS, one chunk frame of a
// message too long for the connection's max payload once sealed.
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
// iteration, sender and sequence number, so that the protocol on top can
// retransmit freely and let a Filter drop what is stale or repeated.
package transport
