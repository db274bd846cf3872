package exact

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// bruteUnder is the MAP score of m under evidence ev by enumeration (-Inf
// when infeasible).
func bruteUnder(m *model.Model, ev model.Evidence) float64 {
	x := make([]int, m.NumVars())
	for v, s := range ev {
		x[v] = s
	}
	best := math.Inf(-1)
	for {
		best = math.Max(best, m.Score(x))
		v := len(x) - 1
		for ; v >= 0; v-- {
			if _, fixed := ev[v]; fixed {
				continue
			}
			if x[v]++; x[v] < m.Cards[v] {
				break
			}
			x[v] = 0
		}
		if v < 0 {
			return best
		}
	}
}

// randomEvidence fixes each variable with probability p to a random state.
func randomEvidence(rng *rand.Rand, m *model.Model, p float64) model.Evidence {
	ev := model.Evidence{}
	for v, c := range m.Cards {
		if rng.Float64() < p {
			ev[v] = rng.IntN(c)
		}
	}
	return ev
}

func extend(ev model.Evidence, v, s int) model.Evidence {
	child := model.Evidence{v: s}
	for k, x := range ev {
		child[k] = x
	}
	return child
}

// A warm start from nil is Solve's run, bit for bit.
func TestSolveWarmNilIsSolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for it := 0; it < 40; it++ {
		m := oracle.RandomTinyModel(rng, oracle.TinyOptions{})
		ev := randomEvidence(rng, m, 0.2)
		a, err := consensus.Solve(context.Background(), m, ev, admmOpts(200), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, w, err := consensus.SolveWarm(context.Background(), m, ev, admmOpts(200), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != b.Status || a.Iterations != b.Iterations || !same(a.Dual, b.Dual) || !same(a.Primal, b.Primal) || !slices.Equal(a.Mu, b.Mu) {
			t.Fatalf("model %d: Solve %s %d it dual %v primal %v, SolveWarm(nil) %s %d it dual %v primal %v",
				it, a.Status, a.Iterations, a.Dual, a.Primal, b.Status, b.Iterations, b.Dual, b.Primal)
		}
		if a.Status != solver.Infeasible && (w == nil || len(w.Lambda) != consensus.WarmLayout(m)[len(m.Factors)] || len(w.Mu) != len(m.Unary)) {
			t.Fatalf("model %d: final state %v", it, w)
		}
	}
}

// variant is ADMM with its warm starts or its cutoff switched off.
func variant(maxIter int, warm, cutoff bool) WarmSolver {
	s := ADMM(admmOpts(maxIter))
	return func(ctx context.Context, m *model.Model, sp Subproblem) (solver.Result, *consensus.Warm, error) {
		if !warm {
			sp.Warm = nil
		}
		if !cutoff {
			sp.Cutoff = math.Inf(-1)
		}
		return s(ctx, m, sp)
	}
}

// The four ways of running branch and bound over DD-ADMM, "cold" being
// the plain Solver's.
var variants = []struct {
	name         string
	warm, cutoff bool
}{{"cold", false, false}, {"warm", true, false}, {"cold+cutoff", false, true}, {"warm+cutoff", true, true}}

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// The child's dual at its parent's restricted, re-centred multipliers (one
// iteration evaluates it before moving) is a valid bound on the child, and
// no larger than the parent's dual at the same multipliers: re-centring
// hands each folded factor's multipliers to the remaining replicas exactly.
// A mapping that misplaced entries or forgot to re-centre would break one
// of the two on some model.
func TestWarmChildBound(t *testing.T) {
	for _, algo := range []consensus.Algo{consensus.ADMM, consensus.Subgradient} {
		t.Run(string(algo), func(t *testing.T) { testWarmChildBound(t, algo) })
	}
}

func testWarmChildBound(t *testing.T, algo consensus.Algo) {
	opts := func(maxIter int) consensus.Options {
		o := admmOpts(maxIter)
		o.Algo = algo
		return o
	}
	rng := rand.New(rand.NewPCG(7, 8))
	ctx := context.Background()
	checked := 0
	for it := 0; it < 120; it++ {
		m := oracle.RandomTinyModel(rng, oracle.TinyOptions{})
		ev := randomEvidence(rng, m, 0.15)
		parent, warm, err := consensus.SolveWarm(ctx, m, ev, opts(40+rng.IntN(200)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if warm == nil {
			continue // infeasible
		}
		at, _, err := consensus.SolveWarm(ctx, m, ev, opts(1), warm, nil)
		if err != nil {
			t.Fatal(err)
		}
		d0 := at.Dual
		if best := bruteUnder(m, ev); d0 < best-1e-9*math.Max(1, math.Abs(best)) {
			t.Fatalf("model %d: restored parent dual %v below its MAP %v", it, d0, best)
		}
		if parent.Status == solver.Converged && d0 > parent.Dual+1e-3*math.Max(1, math.Abs(parent.Dual)) {
			t.Errorf("model %d: converged parent's dual %v, %v at its restored final state", it, parent.Dual, d0)
		}
		for v, c := range m.Cards {
			if _, fixed := ev[v]; fixed || c < 2 {
				continue
			}
			for s := range c {
				child := extend(ev, v, s)
				r, _, err := consensus.SolveWarm(ctx, m, child, opts(1), warm, nil)
				if err != nil {
					t.Fatal(err)
				}
				best := bruteUnder(m, child)
				tol := 1e-9 * math.Max(1, math.Abs(d0))
				if math.IsInf(best, -1) {
					continue
				}
				if r.Dual < best-tol || r.Dual > d0+tol {
					t.Fatalf("model %d, %v=%d: child dual %v outside [child MAP %v, parent dual %v]", it, v, s, r.Dual, best, d0)
				}
				checked++
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d children checked", checked)
	}
}

// Warm starts need the per-factor layout and a state of the right size.
func TestSolveWarmRejects(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 2, Width: 3, Rho: 1, Seed: 1})
	_, w, err := consensus.SolveWarm(context.Background(), m, nil, admmOpts(10), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	chains := admmOpts(10)
	chains.Slaves = consensus.Chains
	bad := &consensus.Warm{Lambda: w.Lambda[1:], Mu: w.Mu}
	for name, c := range map[string]struct {
		o consensus.Options
		w *consensus.Warm
	}{"chains": {chains, w}, "short": {admmOpts(10), bad}} {
		if _, _, err := consensus.SolveWarm(context.Background(), m, nil, c.o, c.w, nil); err == nil {
			t.Errorf("%s: no error", name)
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
