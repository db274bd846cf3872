package trws

// prefetch asks the processor to bring the cache lines of the n >= 1
// float64s from p on closer (PREFETCHT0): a hint, with no effect on any
// result.
//
//go:noescape
func prefetch(p *float64, n int)

// prefetchOutK is prefetch of the msgLen >= 1 float64s from msg and of the
// tabLen >= 1 float64s at each of tab[0..n-1], in one call (pass.go).
//
//go:noescape
func prefetchOutK(msg *float64, msgLen int, tab **float64, n, tabLen int)

// prefetchInK is prefetch of, for each edge e in in[0..n-1], the msgLen >= 1
// float64s at data[moff[e]] and the tabLen >= 1 at tab[e], in one call
// (pass.go).
//
//go:noescape
func prefetchInK(in *int32, n int, moff *int, tab **float64, data *float64, msgLen, tabLen int)
