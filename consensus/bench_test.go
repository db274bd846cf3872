package consensus

import (
	"fmt"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/slaves"
)

// BenchmarkIteration times one DD-ADMM iteration (slaves, dual bound,
// averaging, multipliers) on the Potts grids of the AD3 comparison, after a
// warm-up that brings the active sets to a steady state.
func BenchmarkIteration(b *testing.B) {
	for _, g := range []struct {
		h, w, l int
		rho     float64
	}{{100, 100, 8, 1}, {300, 300, 4, 1}} {
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("potts%dx%dL%d/threads=%d", g.h, g.w, g.l, th), func(b *testing.B) {
				m := generate.Potts(generate.GridOptions{Height: g.h, Width: g.w, Labels: g.l, Rho: g.rho, Seed: 1})
				p, err := Decompose(m, partition.PerFactor(m), slaves.Build)
				if err != nil {
					b.Fatal(err)
				}
				opts := DefaultOptions()
				opts.Threads = th
				s := newADMM(p, opts)
				defer s.pool.close()
				for i := 0; i < 20; i++ {
					_, _, pr, dr := s.iterate()
					s.adaptEta(pr, dr)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					_, _, pr, dr := s.iterate()
					s.adaptEta(pr, dr)
				}
			})
		}
	}
}
