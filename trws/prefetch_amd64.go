package trws

// prefetch asks the processor to bring the cache lines of the n >= 1
// float64s from p on closer (PREFETCHT0): a hint, with no effect on any
// result.
//
//go:noescape
func prefetch(p *float64, n int)
