// Package native reads and writes ddrun's own model format: a self-describing
// document that can express every factor kind of package model (dense tables,
// pairs, Potts, the logic kinds with negated inputs, and linear-chain
// sequences with emissions and shared or per-position transitions), in two
// encodings of the same schema: JSON for hand-written and small models, and
// msgpack for big ones. Either may be gzip-compressed. docs/native-format.md
// specifies the schema.
//
// The package owns the file format only: decoding, the checks that turn a
// bad file into a one-line error naming the file and the place at fault,
// and encoding. Reading never panics and bounds its allocations by the input
// size and model.MaxTableEntries; every model it returns has passed
// (*model.Model).Validate. The streaming msgpack reader can overlap its
// reading with what its caller does with the pieces (ReadOptions.Pipeline:
// two goroutines read, decode and build a few bounded batches ahead, the
// caller's is given them in order, with the sequential reading's calls
// and errors).
//
// It must not know about solvers, slaves, transports or the command line.
package native
