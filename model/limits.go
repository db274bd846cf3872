package model

import (
	"context"
	"io"
	"math"
)

// DefaultMaxEntries is the model readers' default bound on what a file may
// declare: the total number of table entries of its factors (dense tables,
// sequence transitions and emissions), and, separately, the total number of
// variable states (the unary entries, sum of the cardinalities). At 8 bytes
// an entry, 2^28 entries are 2 GiB. The readers check declared sizes
// against their limit before they set memory aside for them.
const DefaultMaxEntries = MaxTableEntries

// MaxFreeStates and MaxFreeStatesPerVar bound the states of the variables
// that appear in no factor and whose cardinalities nothing else in a file
// vouches for (no explicit unaries): a few header bytes must not claim
// gigabytes of unaries. FreeStatesOK applies them.
const (
	MaxFreeStates       = 1 << 20
	MaxFreeStatesPerVar = 64
)

// FreeStatesOK reports whether free variables (free of them, with states
// states in all) are within the bounds: at most MaxFreeStates states, or at
// most MaxFreeStatesPerVar per such variable.
func FreeStatesOK(free, states int) bool {
	return states <= MaxFreeStates || states <= MaxFreeStatesPerVar*free
}

// AddCapped is a + b for non-negative a and b, or math.MaxInt where the sum
// would overflow: for totals that no limit bounds (a reader that checks
// each piece against its limit, not the sum).
func AddCapped(a, b int) int {
	if b > math.MaxInt-a {
		return math.MaxInt
	}
	return a + b
}

// EntryLimit is limit, or DefaultMaxEntries when limit is not positive.
func EntryLimit(limit int) int {
	if limit <= 0 {
		return DefaultMaxEntries
	}
	return limit
}

// ContextReader returns a reader of r that fails with context.Cause(ctx)
// once ctx has ended, which it checks before every Read (a Read already
// blocked is not interrupted). The readers put it behind decompression,
// where a few bytes of input are a long stretch of work. A nil ctx or one
// that never ends gives r itself.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	if ctx == nil || ctx.Done() == nil {
		return r
	}
	return &ctxReader{ctx, r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}
