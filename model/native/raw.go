package native

import (
	"math"

	"github.com/ddrun/ddrun/model"
)

const (
	formatName    = "ddrun-model"
	formatVersion = 1

	// maxUnaryEntries bounds the total number of unary entries (the sum of
	// the cardinalities) that Write accepts; ReadOptions.MaxEntries bounds
	// what Read accepts.
	maxUnaryEntries = model.MaxTableEntries
)

// badNumber marks a value that was not a number at all (a JSON string other
// than the infinities, null, an array...); the build step reports it with its
// place. It is a NaN with a payload that no arithmetic produces.
var badNumber = math.Float64frombits(0x7ff8_0bad_0bad_0bad)

func isBadNumber(v float64) bool { return math.Float64bits(v) == math.Float64bits(badNumber) }

// span is a run of an arena: arena[off : off+n].
type span struct {
	off, n int
	ok     bool // present in the input (false: absent or null)
}

// rawVec is one variable's entry of "unaries".
type rawVec struct {
	span
	pos int64 // JSON byte offset, -1 when unknown
}

// rawFactor is a factor as decoded, before any check.
type rawFactor struct {
	pos      int64 // JSON byte offset, -1 when unknown
	hasKind  bool
	kindOK   bool // kind is a known kind
	kind     model.Kind
	kindName string // the unknown kind's name, for the message

	vars, negated, table span
	emission             span // a sequence's per-position scores

	hasWeight bool
	weight    float64
	hasBudget bool
	budget    int64
	hasTrunc  bool
	trunc     float64
}

// rawModel is a decoded document, the common ground of the JSON and msgpack
// readers. Variable-length fields live in arenas so that decoding a big
// model makes few allocations and the model can share them.
type rawModel struct {
	hasFormat  bool
	format     string
	hasVersion bool
	version    int64
	hasCards   bool
	cards      []int
	hasUnaries bool
	unaries    []rawVec
	constPos   int64
	constant   float64
	factors    []rawFactor

	vars    []int     // scopes
	negs    []bool    // negated flags
	tables  []float64 // dense tables, sequence transitions and emissions
	ufloats []float64 // unaries
}

// reserve makes room for n more elements in *a, for at least hint elements
// in all; when it must grow, it doubles the capacity (append grows big
// slices by 1.25x only, copying them many times over).
func reserve[T any](a *[]T, n, hint int) {
	s := *a
	if cap(s)-len(s) >= n {
		return
	}
	grown := make([]T, len(s), max(2*cap(s), len(s)+n, hint))
	copy(grown, s)
	*a = grown
}

// trim drops the spare capacity of a when it is more than half of it, so
// that the model does not keep a mostly empty arena alive.
func trim[T any](a []T) []T {
	if cap(a) <= 2*len(a)+1024 {
		return a
	}
	return append([]T(nil), a...)
}
