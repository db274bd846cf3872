package uai

// arenaBlock is the size, in elements, of the blocks an arena hands out
// small slices from. Slices larger than arenaBlock/8 get their own
// allocation, so that at most an eighth of a block is left unused when the
// next slice does not fit in it.
const arenaBlock = 1 << 16

// arena hands out the scopes or the tables of a model as sub-slices of a
// few large blocks: one allocation per block instead of one per factor,
// no intermediate slice that is copied at the end, and no slice that
// grows by doubling (a doubling peak is up to twice the final size). Each
// slice's capacity is capped at its length, so that appending to one
// cannot clobber the next.
type arena[T any] struct {
	block []T // the current block; the next slice starts at len(block)
	// last is the length of the block before the last slice was taken
	// from it, -1 when the last slice had its own allocation.
	last int
}

// alloc returns a zeroed slice of n elements. A new block has room for
// at most max(n, bound) elements (bound: what the rest of the input can
// hold at most, so that small models take small blocks).
func (a *arena[T]) alloc(n, bound int) []T {
	if n > arenaBlock/8 {
		a.last = -1
		return make([]T, n)
	}
	if len(a.block)+n > cap(a.block) {
		size := max(n, min(arenaBlock, bound))
		a.block = make([]T, 0, size)
	}
	a.last = len(a.block)
	a.block = a.block[:a.last+n]
	return a.block[a.last : a.last+n : a.last+n]
}

// unalloc gives back the last slice alloc returned when it came from a
// block (its memory is reused by the next alloc), and drops the
// reference to it otherwise.
func (a *arena[T]) unalloc() {
	if a.last >= 0 {
		clear(a.block[a.last:])
		a.block = a.block[:a.last]
	}
	a.last = -1
}
