package consensus

import (
	"context"
	"fmt"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/partition"
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
				opts := DefaultOptions()
				opts.Threads = th
				s, entries, done, err := newLocal(m, partition.PerFactor(m), opts, 1)
				if err != nil {
					b.Fatal(err)
				}
				defer done()
				ctx := context.Background()
				for i := 0; i < 20; i++ {
					r, _ := s.iterate(ctx, false, false)
					s.normalise(&r, entries)
					s.adaptEta(r.primalRes, r.dualRes)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					r, _ := s.iterate(ctx, false, false)
					s.normalise(&r, entries)
					s.adaptEta(r.primalRes, r.dualRes)
				}
			})
		}
	}
}
