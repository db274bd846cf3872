package exact

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// Benchmarks of the search on frustrated grids: threads, and warm starts.

// benchGrids are frustrated grids whose relaxation leaves a gap: binary
// spin glasses and 3-label Potts models, 6x6 and 8x8.
func benchGrids() []*model.Model {
	var ms []*model.Model
	for seed := int64(1); seed <= 3; seed++ {
		ms = append(ms,
			generate.Ising(generate.GridOptions{Height: 6, Width: 6, Rho: 2, Seed: seed}),
			generate.Ising(generate.GridOptions{Height: 8, Width: 8, Rho: 2, Seed: seed}),
			generate.Potts(generate.GridOptions{Height: 6, Width: 6, Labels: 3, Rho: 2, Seed: seed}),
		)
	}
	return ms
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// BenchmarkParallelNodes runs branch and bound with DD-ADMM bounds (warm
// starts and cutoff, at most 500 iterations a node) to optimality on the
// frustrated grids of benchGrids, and with a loose bound (never prunes) for
// a fixed 200 nodes on the 8x8 grids, on 1, 2 and 4 threads. It reports per
// thread count the medians over the grids of nodes per second and seconds
// to certify, and the median ratio of nodes per second to one thread's.
func BenchmarkParallelNodes(b *testing.B) {
	grids := benchGrids()
	for b.Loop() {
		rate := map[int][]float64{}
		secs := map[int][]float64{}
		ratio := map[int][]float64{}
		for g, m := range grids {
			var base float64
			var opt float64
			for _, th := range threadCounts {
				t0 := time.Now()
				res, st, err := SolveWarm(context.Background(), m, nil, ADMM(admmOpts(500)), Options{Tol: 1e-6, MaxNodes: 5000, Threads: th}, nil)
				if err != nil {
					b.Fatal(err)
				}
				dt := time.Since(t0).Seconds()
				if res.Status != solver.Optimal {
					b.Fatalf("grid %d, %d threads: %s", g, th, res.Status)
				}
				if th == 1 {
					opt = res.Primal
				} else if !close(res.Primal, opt) {
					b.Fatalf("grid %d: one thread certified %v, %d threads %v", g, opt, th, res.Primal)
				}
				secs[th] = append(secs[th], dt)
				// The node rate on a fixed budget of nodes that are all
				// solved in full (nothing pruned).
				t0 = time.Now()
				_, st, err = SolveWarm(context.Background(), m, nil, loose(ADMM(admmOpts(500))), Options{MaxNodes: 200, Threads: th}, nil)
				if err != nil {
					b.Fatal(err)
				}
				r := float64(st.Nodes) / time.Since(t0).Seconds()
				if th == 1 {
					base = r
				}
				rate[th] = append(rate[th], r)
				ratio[th] = append(ratio[th], r/base)
			}
		}
		for _, th := range threadCounts {
			b.ReportMetric(median(rate[th]), fmt.Sprintf("nodes/s-%dthreads", th))
			b.ReportMetric(median(secs[th]), fmt.Sprintf("s-to-certify-%dthreads", th))
			if th > 1 {
				b.ReportMetric(median(ratio[th]), fmt.Sprintf("nodes/s-%d/1", th))
			}
		}
	}
}

// BenchmarkExactWarmVsCold runs branch and bound with DD-ADMM bounds
// (at most 500 iterations a node) on frustrated grids in the four variants:
// every node from scratch or every child from its parent's state, each
// with and without stopping a node's run at the cutoff. It reports, per
// variant, the medians over the grids of the total DD iterations, nodes
// and seconds, and the medians of the per-grid ratios to the cold search.
func BenchmarkExactWarmVsCold(b *testing.B) {
	grids := benchGrids()
	opts := Options{Tol: 1e-6, MaxNodes: 2000}
	nv := len(variants)
	for b.Loop() {
		it, nodes, secs := make([][]float64, nv), make([][]float64, nv), make([][]float64, nv)
		itRatio, timeRatio := make([][]float64, nv), make([][]float64, nv)
		for g, m := range grids {
			prim := make([]float64, nv)
			line := ""
			for k, v := range variants {
				t0 := time.Now()
				res, st, err := SolveWarm(context.Background(), m, nil, variant(500, v.warm, v.cutoff), opts, nil)
				if err != nil {
					b.Fatal(err)
				}
				dt := time.Since(t0).Seconds()
				secs[k] = append(secs[k], dt)
				it[k] = append(it[k], float64(st.Iterations))
				nodes[k] = append(nodes[k], float64(st.Nodes))
				itRatio[k] = append(itRatio[k], float64(st.Iterations)/it[0][g])
				timeRatio[k] = append(timeRatio[k], dt/secs[0][g])
				prim[k] = res.Primal
				if res.Status != solver.Optimal {
					b.Errorf("grid %d %s: %s after %d nodes", g, v.name, res.Status, st.Nodes)
				}
				line += fmt.Sprintf(" %s %d it %d nodes %.3fs;", v.name, st.Iterations, st.Nodes, dt)
				if !close(prim[k], prim[0]) {
					b.Fatalf("grid %d: cold optimum %v, %s %v", g, prim[0], v.name, prim[k])
				}
			}
			b.Logf("grid %d:%s", g, line)
		}
		for k, v := range variants {
			b.ReportMetric(median(it[k]), v.name+"-iters")
			b.ReportMetric(median(nodes[k]), v.name+"-nodes")
			b.ReportMetric(median(secs[k]), v.name+"-s")
			if k > 0 {
				b.ReportMetric(median(itRatio[k]), v.name+"/cold-iters")
				b.ReportMetric(median(timeRatio[k]), v.name+"/cold-s")
			}
		}
	}
}

// BenchmarkWarmSameNodes isolates the warm start from its effect on the
// tree's shape (branching follows the final marginals, which differ): it
// runs the cold search (no cutoff) on the grids and solves every child
// node twice, from scratch and from its parent's final state, both for at
// most 500 iterations with no cutoff, and counts the iterations each takes
// until its dual is within delta of the better of the two final duals. It
// reports, for delta in {1, 0.1, 0.01}, the median over the grids of the
// ratio of the warm to the cold totals.
func BenchmarkWarmSameNodes(b *testing.B) {
	deltas := []float64{1, 0.1, 0.01}
	for b.Loop() {
		ratios := make([][]float64, len(deltas))
		for g, m := range benchGrids() {
			cold, warm := make([]int, len(deltas)), make([]int, len(deltas))
			// reach returns the first iteration whose dual is within delta
			// of target (the iteration count when none is).
			reach := func(duals []float64, target, delta float64) int {
				for i, d := range duals {
					if d <= target+delta {
						return i + 1
					}
				}
				return len(duals)
			}
			children := 0
			solve := func(ctx context.Context, m *model.Model, sp Subproblem) (solver.Result, *consensus.Warm, error) {
				o := admmOpts(500)
				o.ProgressEvery = 0
				var dc, dw []float64
				rc, wc, err := consensus.SolveWarm(ctx, m, sp.Evidence, o, nil, func(p solver.Progress) { dc = append(dc, p.Dual) })
				if err != nil || sp.Warm == nil || rc.Status == solver.Infeasible {
					return rc, wc, err
				}
				rw, _, err := consensus.SolveWarm(ctx, m, sp.Evidence, o, sp.Warm, func(p solver.Progress) { dw = append(dw, p.Dual) })
				if err != nil {
					return rc, wc, err
				}
				children++
				target := math.Min(rc.Dual, rw.Dual)
				for k, d := range deltas {
					cold[k] += reach(dc, target, d)
					warm[k] += reach(dw, target, d)
				}
				return rc, wc, nil
			}
			if _, _, err := SolveWarm(context.Background(), m, nil, solve, Options{Tol: 1e-6, MaxNodes: 2000}, nil); err != nil {
				b.Fatal(err)
			}
			if children == 0 {
				continue
			}
			line := ""
			for k, d := range deltas {
				ratios[k] = append(ratios[k], float64(warm[k])/float64(cold[k]))
				line += fmt.Sprintf(" within %g: cold %d warm %d;", d, cold[k], warm[k])
			}
			b.Logf("grid %d, %d children:%s", g, children, line)
		}
		for k, d := range deltas {
			b.ReportMetric(median(ratios[k]), fmt.Sprintf("warm/cold-iters-to-%g", d))
		}
	}
}
