package trws

import (
	"fmt"
	"math"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/rusage"
	"github.com/ddrun/ddrun/model"
)

// timeIterations times r.iterate after 10 warm-up iterations. Besides
// the wall time it reports the process's CPU time per iteration
// (cpu-ns/op, all threads), steadier than wall time on a shared machine.
func timeIterations(b *testing.B, r *runner) {
	b.ReportAllocs()
	b.ReportMetric(iterationCPU(b, r), "cpu-ns/op")
}

// iterationCPU runs b.N timed iterations of r after ten untimed ones, closes
// r and returns the CPU nanoseconds (all threads) per timed iteration.
func iterationCPU(b *testing.B, r *runner) float64 {
	defer r.close()
	for range 10 {
		r.iterate()
	}
	c0 := rusage.CPU().Nanoseconds()
	b.ResetTimer()
	for range b.N {
		r.iterate()
	}
	b.StopTimer()
	return float64(rusage.CPU().Nanoseconds()-c0) / float64(b.N)
}

// dense turns every factor of m into a Dense table (the O(K^2) message
// path, as a UAI file reads).
func dense(m *model.Model) *model.Model {
	for a := range m.Factors {
		m.Factors[a].Table = m.DenseTable(a)
		m.Factors[a].Kind = model.Dense
	}
	return m
}

// runnerFor builds a runner on m for the given threads.
func runnerFor(b *testing.B, m *model.Model, threads int) *runner {
	g := testGraph(b, m, threads)
	o := DefaultOptions()
	o.Threads = threads
	return newRun(g, o)
}

// BenchmarkIteration times one TRW-S iteration (forward pass with
// labelling and the labelling's score, backward pass, both bounds) after a
// warm-up: on the grids of issue 17 with general (dense) tables, the
// 4-label 300x300 and 8-label 100x100 Potts grids of `coordinator gen
// potts` (rho 1), on 1 and 2 threads; and on the 100x100 grid with its
// Potts edges kept as Potts (O(L) messages), and the 300x300 4-label one,
// also with every coupling made >= 0 (attractive: the sign branch of the
// Potts message never mispredicts).
func BenchmarkIteration(b *testing.B) {
	grids := []struct {
		name         string
		h, w, labels int
	}{{"dense300x300L4", 300, 300, 4}, {"dense100x100L8", 100, 100, 8}}
	for _, gr := range grids {
		m := dense(generate.Potts(generate.GridOptions{Height: gr.h, Width: gr.w, Labels: gr.labels, Rho: 1, Seed: 1}))
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", gr.name, threads), func(b *testing.B) {
				timeIterations(b, runnerFor(b, m, threads))
			})
		}
	}
	for _, rho := range []float64{1, 10} {
		b.Run(fmt.Sprintf("potts100x100L8/rho=%g", rho), func(b *testing.B) {
			m := generate.Potts(generate.GridOptions{Height: 100, Width: 100, Labels: 8, Rho: rho, Seed: 1})
			timeIterations(b, runnerFor(b, m, 1))
		})
	}
	for _, attractive := range []bool{false, true} {
		b.Run(fmt.Sprintf("potts300x300L4/rho=1/attractive=%v", attractive), func(b *testing.B) {
			m := generate.Potts(generate.GridOptions{Height: 300, Width: 300, Labels: 4, Rho: 1, Seed: 1})
			for a := range m.Factors {
				if attractive && m.Factors[a].Kind == model.Potts {
					m.Factors[a].Weight = math.Abs(m.Factors[a].Weight)
				}
			}
			timeIterations(b, runnerFor(b, m, 1))
		})
	}
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
				g := testGraph(b, gr.m, 1)
				if cycles {
					g.enableLPC()
				}
				r := newRun(g, DefaultOptions())
				if cycles {
					var err error
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

// BenchmarkNodeCost reports the CPU time per node and iteration
// (cpu-ns/node) on dense grids that stay in cache (30x30) and that do not
// (300x300 with 4 labels, 150x150 with 8): the difference is the time the
// passes wait for memory (see prefetching in pass.go).
func BenchmarkNodeCost(b *testing.B) {
	for _, c := range []struct{ n, labels int }{{30, 4}, {300, 4}, {30, 8}, {150, 8}} {
		m := dense(generate.Potts(generate.GridOptions{Height: c.n, Width: c.n, Labels: c.labels, Rho: 1, Seed: 1}))
		b.Run(fmt.Sprintf("%dx%dL%d", c.n, c.n, c.labels), func(b *testing.B) {
			b.ReportMetric(iterationCPU(b, runnerFor(b, m, 1))/float64(c.n*c.n), "cpu-ns/node")
		})
	}
}
