package tighten

import (
	"testing"

	"github.com/ddrun/ddrun/generate"
)

// BenchmarkCyclesGrid: regrouping a 100x100 4-label grid into its 9801
// square factors.
func BenchmarkCyclesGrid(b *testing.B) {
	m := generate.Potts(generate.GridOptions{Height: 100, Width: 100, Labels: 4, Rho: 1, Seed: 1})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := Cycles(m, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
