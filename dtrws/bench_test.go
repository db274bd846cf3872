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
