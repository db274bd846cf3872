package uai

import (
	"context"
	"fmt"
	"strings"
)

// LogBase says how the numbers of a function table are to be read (or
// written): as potentials, or as logarithms of potentials in some base.
type LogBase int

const (
	// Potentials: entries are non-negative potentials; the log-potential is
	// their natural logarithm and a zero entry is a hard constraint.
	Potentials LogBase = iota
	// Log10: entries are base-10 logarithms of potentials.
	Log10
	// Ln: entries are natural logarithms of potentials (the .LG variant).
	Ln
)

func (b LogBase) String() string {
	switch b {
	case Potentials:
		return "potentials"
	case Log10:
		return "log10"
	case Ln:
		return "ln"
	}
	return fmt.Sprintf("LogBase(%d)", int(b))
}

func (b LogBase) valid() bool { return b >= Potentials && b <= Ln }

// ReadOptions controls how a model file is read.
type ReadOptions struct {
	// Log says how table entries are to be read; the zero value reads
	// potentials.
	Log LogBase
	// MaxEntries bounds the total number of table entries and, on its
	// own, the total number of variable states that the file may declare
	// (0: model.DefaultMaxEntries); both are checked before any memory is
	// set aside for them.
	MaxEntries int
	// EachPiece makes StreamScopes check MaxEntries against each piece it
	// holds instead of the totals: each variable's cardinality, each
	// table's entries, and the number of variables (it holds a few words
	// per variable), for a caller that keeps no more than one table at a
	// time (a streaming conversion to .ddx, whose parts a sharded run
	// checks against the budget of each process). The other readers hold
	// the model and check the totals whatever it says.
	EachPiece bool
	// Context, when not nil, stops the reading once it ends: checked
	// before every read of the (decompressed) input.
	Context context.Context
	// KeepDense keeps every table a model.Dense factor. By default Read,
	// ReadFile and ReadWith turn the pairwise tables that are exactly
	// Potts, truncated linear or truncated quadratic (plus a constant)
	// into those kinds, the constants going to Model.Constant
	// (model.StructurePairs). Stream and StreamScopes never do.
	KeepDense bool
	// FoldUnary adds the tables of the factors over fewer than two
	// variables to the unaries and the constant as they are read (as
	// model.Reduce would) instead of keeping them as factors, unless a
	// sum would not be a valid unary or constant (+Inf): such a factor
	// is kept, after the others. The model has the same scores (summed in
	// another order: they may differ in the last bits) and fewer factors,
	// numbered in file order among the kept ones; it saves a factor
	// header and a table per unary (on a 1000x1000 grid with one unary
	// table per variable, about 170 MB). Stream and StreamScopes ignore
	// it.
	FoldUnary bool
	// Folded, when not nil, gets the number of factors FoldUnary folded
	// (the file's factors are len(Model.Factors) plus this).
	Folded *int
	// Converters, when above zero, is how many windows of the tables'
	// text (about 256 KB each, cut at line breaks) StreamScopes tokenizes
	// and converts at once, a goroutine each, while the caller's goroutine
	// reads them and hands the tables over: the same tables and errors, in
	// the same order (what the windows do not read, the sequential reading
	// does: windows.go). The other readers ignore it.
	Converters int
}

// WriteOptions controls how a model file is written.
type WriteOptions struct {
	// Log says how table entries are written; the zero value writes
	// potentials.
	Log LogBase
}

// OptionsFor returns the options that Read and ReadFile use for an input
// named name: Ln for names ending in .LG (or .LG.gz, in any letter case),
// Potentials otherwise.
func OptionsFor(name string) ReadOptions {
	if isLG(name) {
		return ReadOptions{Log: Ln}
	}
	return ReadOptions{Log: Potentials}
}

// isLG reports whether name is an .LG file, possibly gzip-compressed.
func isLG(name string) bool {
	n := strings.ToLower(name)
	n = strings.TrimSuffix(n, ".gz")
	return strings.HasSuffix(n, ".lg")
}

// isGzipName reports whether a path asks for gzip compression.
func isGzipName(name string) bool {
	return strings.HasSuffix(strings.ToLower(name), ".gz")
}

// ProblemName is the problem name that the formats naming their problem
// (model/wcsp's, model/cfn's) write into a file at path: its base name up
// to the first dot.
func ProblemName(path string) string {
	base := path[strings.LastIndexAny(path, `/\`)+1:]
	return strings.SplitN(base, ".", 2)[0]
}
