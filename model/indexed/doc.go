// Package indexed reads and writes ddrun's indexed model format (.ddx), a
// binary layout made for models that no process holds whole: a structure
// section (cardinalities, unaries, each factor's kind, scope and small
// parameters, and where its payload lies) that a coordinator reads on its
// own to partition, and a payload section (dense tables, sequence
// transitions and emissions, little-endian float64) from which a worker
// reads any set of factors by byte ranges (io.ReaderAt). CRC-32C checksums
// cover the structure, the block index and every fixed-size block of the
// payload, so a torn or corrupt file is an error, not a wrong model.
//
// The payload comes first and the structure after it, with a fixed-size
// trailer at the end pointing at both, so that Writer streams: it writes
// each factor's payload as it is added and keeps only the structure.
// docs/indexed-format.md gives the byte layout.
package indexed
