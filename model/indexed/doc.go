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
// each factor's payload as it is added and spills the structure and the
// block index (to temporary files with WriteOptions.TempDir, so that its
// memory does not grow with the model) until Close copies them after the
// payload (WriteStream writes a model.Source; WriteOptions.FoldUnary folds
// factors over fewer than 2 variables into the unaries and the constant).
//
// ReadStructure reads the whole structure into a model.Model, ReadFactors
// the payloads of chosen factors. For models that no process holds, a
// Scanner (OpenScan) keeps nothing per variable or per factor: Walk streams
// the structure section once, checking it and its checksum, and reports
// each factor with the file offset of its record; ReadRecords decodes a
// contiguous range of records from such an offset, with their payloads;
// ReadVars and ReadCards read chosen variables' cardinalities and unaries.
// Only a whole Walk verifies the structure's checksum: range readers bind
// the file by (Size, StructureCRC) to the one a Walk checked.
// docs/indexed-format.md gives the byte layout and the reading modes.
package indexed
