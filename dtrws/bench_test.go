package dtrws

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/rusage"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trws"
)

// benchGrid is a 300x300 4-label Potts grid with couplings of both signs.
func benchGrid() *generateModel {
	return &generateModel{generate.Potts(generate.GridOptions{Height: 300, Width: 300, Labels: 4, Rho: 0.5, Seed: 1})}
}

type generateModel struct{ m *model.Model }

func BenchmarkSolve(b *testing.B) {
	g := benchGrid()
	for _, parts := range []int{1, 2} {
		b.Run(fmt.Sprintf("parts=%d", parts), func(b *testing.B) {
			o := testOpts(parts, 20)
			o.Threads = parts
			for b.Loop() {
				if _, err := Solve(context.Background(), g.m, nil, o, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMeasureTimeToBound (DTRWS_MEASURE=1) prints the time that trws on one
// thread and dtrws on 1 and 2 parts take to reach plain TRW-S's
// 300-iteration bound B* + 1e-5 |B*| on the benchmark grid.
func TestMeasureTimeToBound(t *testing.T) {
	if os.Getenv("DTRWS_MEASURE") == "" {
		t.Skip("DTRWS_MEASURE not set")
	}
	m := benchGrid().m
	to := trws.DefaultOptions()
	to.MaxIter, to.Tol = 300, 0
	ref, err := trws.Solve(context.Background(), m, nil, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	rel := 1e-5
	if r, err := strconv.ParseFloat(os.Getenv("DTRWS_REL"), 64); err == nil {
		rel = r // DTRWS_REL: another relative distance to B*
	}
	target := ref.Dual + rel*math.Abs(ref.Dual)
	t.Logf("B* = %v after 300 iterations (%v), target %v", ref.Dual, ref.Elapsed, target)
	reach := func(name string, run func(ctx context.Context, progress func(solver.Progress)) error) {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		var at time.Duration
		iter := 0
		err := run(ctx, func(p solver.Progress) {
			if at == 0 && p.Dual <= target {
				at, iter = p.Elapsed, p.Iteration
				cancel()
			}
		})
		if err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
		if at == 0 {
			t.Logf("%s: target not reached in 120 s", name)
			return
		}
		t.Logf("%s: target reached after %v (iteration %d)", name, at, iter)
	}
	reach("trws threads=1", func(ctx context.Context, progress func(solver.Progress)) error {
		o := to
		o.MaxIter, o.ProgressEvery = 100000, 0
		_, err := trws.Solve(ctx, m, nil, o, progress)
		return err
	})
	for _, parts := range []int{1, 2} {
		for _, inner := range []int{1, 5} {
			reach(fmt.Sprintf("dtrws parts=%d inner=%d", parts, inner), func(ctx context.Context, progress func(solver.Progress)) error {
				o := testOpts(parts, 100000)
				o.Threads, o.Inner = parts, inner
				_, err := Solve(ctx, m, nil, o, progress)
				return err
			})
		}
	}
}

// BenchmarkIteration times one iteration on a whole grid (4-label Potts,
// couplings of both signs, the bar's model) after ten untimed ones: plain
// TRW-S (trws.Solve on one thread), a bare trws.Part, and distributed
// TRW-S on one part with the options `run` gives it (engine: a candidate
// scored every 5 iterations), so that the costs a part adds to TRW-S's
// passes show.
func BenchmarkIteration(b *testing.B) {
	for _, n := range []int{300, 1000} {
		m := generate.Potts(generate.GridOptions{Height: n, Width: n, Labels: 4, Rho: 0.5, Seed: 1})
		name := fmt.Sprintf("%dx%d", n, n)
		b.Run(name+"/solve", func(b *testing.B) {
			o := trws.DefaultOptions()
			o.Tol, o.ProgressEvery = 0, 0
			timeProgress(b, func(iters int, progress func(solver.Progress)) error {
				o.MaxIter = iters
				_, err := trws.Solve(context.Background(), m, nil, o, progress)
				return err
			})
		})
		b.Run(name+"/part", func(b *testing.B) {
			p, err := trws.NewPart(m, nil)
			if err != nil {
				b.Fatal(err)
			}
			for range 10 {
				p.Iterate()
			}
			c0 := rusage.CPU().Nanoseconds()
			b.ResetTimer()
			for range b.N {
				p.Iterate()
			}
			b.StopTimer()
			b.ReportMetric(float64(rusage.CPU().Nanoseconds()-c0)/float64(b.N), "cpu-ns/op")
		})
		b.Run(name+"/dtrws", func(b *testing.B) {
			o := DefaultOptions()
			o.Parts, o.Threads, o.PrimalEvery, o.Tol, o.ProgressEvery = 1, 1, 5, 0, 0
			timeProgress(b, func(iters int, progress func(solver.Progress)) error {
				o.MaxIter = iters
				_, err := Solve(context.Background(), m, nil, o, progress)
				return err
			})
		})
	}
}

// timeProgress times b.N iterations of a run after ten untimed ones, by
// its progress reports (one per iteration): run is called with the number
// of iterations to do. It also reports the process's CPU time per
// iteration (cpu-ns/op), steadier than wall time on a shared machine.
func timeProgress(b *testing.B, run func(iters int, progress func(solver.Progress)) error) {
	const warm = 10
	b.StopTimer()
	var c0, c1 int64
	err := run(warm+b.N, func(p solver.Progress) {
		switch p.Iteration {
		case warm:
			c0 = rusage.CPU().Nanoseconds()
			b.ResetTimer()
			b.StartTimer()
		case warm + b.N:
			b.StopTimer()
			c1 = rusage.CPU().Nanoseconds()
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(c1-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkNewLocalLink times a part's set-up once its model is read: a
// worker's half of the bar's 1000x1000 grid (1000x500).
func BenchmarkNewLocalLink(b *testing.B) {
	m := generate.Potts(generate.GridOptions{Height: 500, Width: 1000, Labels: 4, Rho: 0.5, Seed: 1})
	boundary := make([]int32, 1000)
	for i := range boundary {
		boundary[i] = int32(499*1000 + i)
	}
	b.ReportAllocs()
	c0 := rusage.CPU().Nanoseconds()
	for b.Loop() {
		if _, err := NewLocalLink(m, boundary); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rusage.CPU().Nanoseconds()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkEvaluate times a part's evaluation of a candidate (the
// interior completed from the last forward pass, one ICM sweep with the
// boundary fixed, the exact score and the boundary's local scores) on a
// worker's half of the bar's grid.
func BenchmarkEvaluate(b *testing.B) {
	m := generate.Potts(generate.GridOptions{Height: 500, Width: 1000, Labels: 4, Rho: 0.5, Seed: 1})
	boundary := make([]int32, 1000)
	for i := range boundary {
		boundary[i] = int32(499*1000 + i)
	}
	l, err := NewLocalLink(m, boundary)
	if err != nil {
		b.Fatal(err)
	}
	var out StepOut
	ctx := context.Background()
	if err := l.Step(ctx, &StepIn{Iters: 3}, &out); err != nil {
		b.Fatal(err)
	}
	in := StepIn{States: make([]int32, len(boundary)), Sweeps: 1}
	b.ReportAllocs()
	c0 := rusage.CPU().Nanoseconds()
	for b.Loop() {
		if err := l.Step(ctx, &in, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rusage.CPU().Nanoseconds()-c0)/float64(b.N), "cpu-ns/op")
}
