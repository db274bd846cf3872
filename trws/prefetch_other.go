//go:build !amd64

package trws

// prefetch does nothing on this architecture.
func prefetch(*float64, int) {}
