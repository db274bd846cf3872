package shard

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
)

// runSharded runs a sharded job over the parts loader builds, in this
// process, and returns its result and each worker's best interior.
func runSharded(t *testing.T, path string, w int, opts consensus.Options, loader func(context.Context, *Spec) (*consensus.Part, error)) (consensus.ShardResult, []*consensus.Part, [][]int32) {
	t.Helper()
	ld := loadWith(t, path, w, opts, loader)
	l, parts, workers := ld.layout, ld.parts, ld.workers
	b, err := consensus.NewShardBoundary(l.Boundary.Cards, l.Of, l.Deg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := consensus.CoordinateShards(context.Background(), l.Boundary, ld.sums, b, ld.links, opts, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var best [][]int32
	if math.IsInf(res.Primal, -1) {
		return res, parts, nil // no assignment kept
	}
	for _, wk := range workers {
		var xs []int32
		for k, last := 0, false; !last; k++ {
			var states []int32
			if _, states, last, err = wk.BestPiece(k, 1000); err != nil {
				t.Fatal(err)
			}
			xs = append(xs, states...)
		}
		best = append(best, xs)
	}
	return res, parts, best
}

// LoadFlat's parts (pairs, no model.Factors) run to the same bits as
// Load's: iterations, dual, relaxed objective, primal, and the best
// assignment, with 1 to 4 workers and both algorithms; a model with
// other factors than pairs of one kind gets Load's part.
func TestFlatPartsMatchLoad(t *testing.T) {
	for _, c := range testModels() {
		_, path := reducedDDX(t, c.m)
		for _, algo := range []consensus.Algo{consensus.ADMM, consensus.Subgradient} {
			for w := 1; w <= 4; w++ {
				t.Run(fmt.Sprintf("%s/%v/%d", c.name, algo, w), func(t *testing.T) {
					opts := consensus.DefaultOptions()
					opts.Algo, opts.MaxIter, opts.Threads = algo, 60, 1
					want, _, wantBest := runSharded(t, path, w, opts, Load)
					got, parts, gotBest := runSharded(t, path, w, opts, LoadFlat)
					for k, p := range parts {
						if flat := c.name != "logic"; (p.Pairs != nil) != flat || flat && (len(p.Model.Factors) > 0 || len(p.Plan.Slaves) > 0) {
							t.Fatalf("part %d: pairs %v, %d factors, %d planned slaves", k, p.Pairs != nil, len(p.Model.Factors), len(p.Plan.Slaves))
						}
					}
					if got.Status != want.Status || got.Iterations != want.Iterations || got.Dual != want.Dual || got.Relaxed != want.Relaxed || got.Primal != want.Primal {
						t.Errorf("flat: %s after %d, dual %v, relaxed %v, primal %v; Load: %s after %d, dual %v, relaxed %v, primal %v",
							got.Status, got.Iterations, got.Dual, got.Relaxed, got.Primal, want.Status, want.Iterations, want.Dual, want.Relaxed, want.Primal)
					}
					if fmt.Sprint(got.Boundary, gotBest) != fmt.Sprint(want.Boundary, wantBest) {
						t.Errorf("flat: best assignment %v %v; Load: %v %v", got.Boundary, gotBest, want.Boundary, wantBest)
					}
				})
			}
		}
	}
}

// liveBytesPerVar builds worker 0's part of a 2-worker cut of a side x side
// 4-label Potts grid with loader, runs three iterations and one primal
// evaluation (so that the primal search is built), and returns the live
// heap it holds per variable of the part.
func liveBytesPerVar(tb testing.TB, side int, loader func(context.Context, *Spec) (*consensus.Part, error)) float64 {
	tb.Helper()
	m := generate.Potts(generate.GridOptions{Height: side, Width: side, Labels: 4, Rho: 0.5, Seed: 1})
	path := writeDDX(tb, m)
	m = nil
	l, err := PlanLayout(path, 2, PlanOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	spec := l.Specs[0]
	l = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p, err := loader(context.Background(), &spec)
	if err != nil {
		tb.Fatal(err)
	}
	n := len(p.Vars)
	opts := consensus.DefaultOptions()
	opts.Threads = 1
	w, err := consensus.NewWorker(p, opts)
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Close()
	p = nil
	in := &consensus.StepIn{Eta: 1, Lambda: make([]float64, w.NumBoundaryReplicaEntries()), Mu: make([]float64, w.NumBoundaryMuEntries())}
	out := &consensus.StepOut{}
	for in.Iter = 1; in.Iter <= 3; in.Iter++ {
		w.Step(in, out)
	}
	ev := &consensus.EvalIn{Seq: 1, Op: consensus.EvalDecoded, X: make([]int32, len(in.Mu)/4)}
	if err := w.Evaluate(ev, &consensus.EvalOut{}); err != nil {
		tb.Fatal(err)
	}
	in, out, ev = nil, nil, nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(w)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// BenchmarkPartBytes reports a worker's live heap per variable of its part
// (half of a 300x300 4-label Potts grid) as bytes/var, with the flat part
// (LoadFlat, what worker processes load) and with model.Factors (Load).
func BenchmarkPartBytes(b *testing.B) {
	for _, c := range []struct {
		name   string
		loader func(context.Context, *Spec) (*consensus.Part, error)
	}{{"flat", LoadFlat}, {"factors", Load}} {
		b.Run(c.name, func(b *testing.B) {
			var per float64
			for b.Loop() {
				per = liveBytesPerVar(b, 300, c.loader)
			}
			b.ReportMetric(per, "bytes/var")
		})
	}
}

// A flat worker part of a 4-label grid stays under 1,000 bytes per
// variable (measured 815 at 10^6 variables, about 1,000 with
// model.Factors): what it must hold is 256 for the replicas' multipliers
// and marginals, 64 for the unaries and marginals, about 100 for the
// replica indices and 230 for two Potts slaves.
func TestFlatPartBytes(t *testing.T) {
	if per := liveBytesPerVar(t, 300, LoadFlat); per > 1000 {
		t.Errorf("a flat part holds %.0f bytes per variable, more than 1,000", per)
	}
}
