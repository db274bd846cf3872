package trws

import (
	"fmt"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// timeIterations times r.iterate after 10 warm-up iterations.
func timeIterations(b *testing.B, r *runner) {
	for range 10 {
		r.iterate()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.iterate()
	}
}

// BenchmarkIteration times one TRW-S iteration (forward pass with
// labelling, primal score, backward pass, both bounds) on 100x100 Potts
// grids with 8 labels (the grid of consensus.BenchmarkIteration, and the
// paper's rho = 10), after a warm-up.
func BenchmarkIteration(b *testing.B) {
	for _, rho := range []float64{1, 10} {
		b.Run(fmt.Sprintf("potts100x100L8/rho=%g", rho), func(b *testing.B) {
			m := generate.Potts(generate.GridOptions{Height: 100, Width: 100, Labels: 8, Rho: rho, Seed: 1})
			g, err := newGraph(m)
			if err != nil {
				b.Fatal(err)
			}
			timeIterations(b, newRun(g, DefaultOptions()))
		})
	}
}

// BenchmarkIterationDense is BenchmarkIteration with the Potts edges given
// as dense 8x8 tables (the O(K^2) message path).
func BenchmarkIterationDense(b *testing.B) {
	m := generate.Potts(generate.GridOptions{Height: 100, Width: 100, Labels: 8, Rho: 1, Seed: 1})
	for a := range m.Factors {
		m.Factors[a].Table = m.DenseTable(a)
		m.Factors[a].Kind = model.Dense
	}
	g, err := newGraph(m)
	if err != nil {
		b.Fatal(err)
	}
	timeIterations(b, newRun(g, DefaultOptions()))
}

// BenchmarkLPCIteration times one TRW-S(LP-C) iteration (both passes and a
// sweep over every grid square) on frustrated 30x30 grids, binary (all 8
// cycle inequalities per square in each LP) and 3-label Potts (inequalities
// separated), after a warm-up; plain TRW-S on the same grids for the ratio.
func BenchmarkLPCIteration(b *testing.B) {
	grids := []struct {
		name string
		m    *model.Model
	}{
		{"ising30x30", generate.Ising(generate.GridOptions{Height: 30, Width: 30, Rho: 3, Seed: 1})},
		{"potts30x30L3", generate.Potts(generate.GridOptions{Height: 30, Width: 30, Labels: 3, Rho: 4, Seed: 1})},
	}
	for _, gr := range grids {
		for _, cycles := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/cycles=%v", gr.name, cycles), func(b *testing.B) {
				g, err := newGraph(gr.m)
				if err != nil {
					b.Fatal(err)
				}
				r := newRun(g, DefaultOptions())
				if cycles {
					g.densify()
					g.orig = append([]float64(nil), g.tables...)
					if r.cyc, err = newLPC(g, gr.m, 0); err != nil {
						b.Fatal(err)
					}
					r.cycOn = true
				}
				timeIterations(b, r)
			})
		}
	}
}
