package slaves

import "sync"

// slab hands out small fixed-size pieces of large blocks, so that the many
// small solvers of a decomposition (one per factor, built one after the
// other) keep their state without a heap object each: no per-object header
// or size-class rounding, and solvers built together lie together in memory,
// in the order the engine visits them. A block stays allocated while any of
// its pieces is in use. Safe for concurrent use.
type slab[T any] struct {
	mu    sync.Mutex
	block []T
	per   int // block length (elements)
}

// take returns a zeroed piece of n elements (len and cap n).
func (s *slab[T]) take(n int) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.block) < n {
		s.block = make([]T, max(n, s.per))
	}
	p := s.block[:n:n]
	s.block = s.block[n:]
	return p
}
