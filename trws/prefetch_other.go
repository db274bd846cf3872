//go:build !amd64

package trws

// prefetch does nothing on this architecture, nor do the others.
func prefetch(*float64, int) {}

func prefetchOutK(*float64, int, **float64, int, int) {}

func prefetchInK(*int32, int, *int, **float64, *float64, int, int) {}
