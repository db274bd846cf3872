package exact

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// Exact mode certifies the brute-force MAP on random tiny models (hard
// constraints and logic factors included), among them the ones where the
// relaxation alone leaves a gap; so does branch and bound warm-started,
// with and without the cutoff, and its cold variant is the plain Solver's
// search.
func TestExactMatchesBruteForce(t *testing.T) {
	gapped, branched := 0, 0
	iters := make([]int, len(variants))
	eachTinyModel(t, 21, 150, func(it int, m *model.Model, best float64) {
		relaxed, err := admm(300)(context.Background(), m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if relaxed.Status != solver.Optimal {
			gapped++
		}
		plain, plainSt, err := Solve(context.Background(), m, nil, admm(300), Options{Tol: 1e-6, MaxNodes: 5000}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := certifies(m, plain, best); err != nil {
			t.Fatalf("model %d: %v", it, err)
		}
		if plainSt.Nodes > 1 {
			branched++
		}
		for k, v := range variants {
			res, st, err := SolveWarm(context.Background(), m, nil, variant(300, v.warm, v.cutoff), Options{Tol: 1e-6, MaxNodes: 5000}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.Iterations != res.Iterations {
				t.Fatalf("model %d %s: stats count %d iterations, result %d", it, v.name, st.Iterations, res.Iterations)
			}
			if v.name == "cold" && (st != plainSt || !same(res.Primal, plain.Primal) || !same(res.Dual, plain.Dual)) {
				t.Fatalf("model %d: cold variant %+v primal %v dual %v, Solve %+v primal %v dual %v", it, st, res.Primal, res.Dual, plainSt, plain.Primal, plain.Dual)
			}
			if err := certifies(m, res, best); err != nil {
				t.Fatalf("model %d %s: %v", it, v.name, err)
			}
			if plainSt.Nodes > 1 && !math.IsInf(best, -1) {
				iters[k] += st.Iterations
			}
		}
	})
	if gapped == 0 || branched == 0 {
		t.Errorf("%d models left a gap, %d needed branching: the test proves nothing", gapped, branched)
	}
	t.Logf("%d of 150 models left a gap", gapped)
	for k, v := range variants {
		t.Logf("%d models branched; DD iterations on them, %s: %d", branched, v.name, iters[k])
	}
}

// On frustrated grids (the local polytope is loose) exact mode with TRW-S
// and with DD-ADMM bounds finds and certifies the brute-force optimum, and
// so do warm starts, with and without the cutoff.
func TestExactOnFrustratedGrids(t *testing.T) {
	searches := map[string]WarmSolver{"admm": Cold(admm(500)), "trws": Cold(trwsSolver)}
	for _, v := range variants[1:] {
		searches[v.name] = variant(500, v.warm, v.cutoff)
	}
	for seed := int64(1); seed <= 3; seed++ {
		m := generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 2, Seed: seed})
		best, _ := oracle.BruteMAP(t, m)
		for name, s := range searches {
			res, st, err := SolveWarm(context.Background(), m, nil, s, Options{Tol: 1e-6, MaxNodes: 20000}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != solver.Optimal || !close(res.Primal, best) {
				t.Errorf("seed %d %s: %s primal %v, MAP %v (%d nodes)", seed, name, res.Status, res.Primal, best, st.Nodes)
			}
			t.Logf("seed %d %s: %d nodes", seed, name, st.Nodes)
		}
	}
}

// A search cut short still reports a valid bound.
func TestExactBoundWhenStopped(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 5, Rho: 3, Seed: 7})
	best, _ := oracle.BruteMAP(t, m)
	res, _, err := Solve(context.Background(), m, nil, admm(100), Options{Tol: 1e-6, MaxNodes: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dual < best-1e-6 || res.Primal > best+1e-9 {
		t.Errorf("stopped search: dual %v primal %v, MAP %v", res.Dual, res.Primal, best)
	}
}

// Against toulbar2's exact optima on grids too big for brute force.
func TestExactAgainstToulbar2(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		m := generate.Potts(generate.GridOptions{Height: 6, Width: 6, Labels: 3, Rho: 2, Seed: seed})
		opt := oracle.Toulbar2(t, m, time.Minute)
		res, st, err := Solve(context.Background(), m, nil, admm(500), Options{Tol: 1e-7, MaxNodes: 3000}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tol := 1e-5 * math.Max(1, math.Abs(opt)) // toulbar2 rounds costs to 7 decimals
		if res.Dual < opt-tol || res.Primal > opt+tol {
			t.Errorf("seed %d: dual %v primal %v, toulbar2 %v", seed, res.Dual, res.Primal, opt)
		}
		if res.Status == solver.Optimal && math.Abs(res.Primal-opt) > tol {
			t.Errorf("seed %d: certified %v, toulbar2 %v", seed, res.Primal, opt)
		}
		t.Logf("seed %d: %s after %d nodes, primal %v, toulbar2 %v", seed, res.Status, st.Nodes, res.Primal, opt)
	}
}

// Progress comes after every node and counts what the result counts: its
// Iteration is the solver's iterations over all nodes so far, so the last
// report agrees with the result's Iterations (and Nodes with the stats).
func TestExactProgressCountsLikeTheResult(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 2, Seed: 2})
	for _, maxNodes := range []int{0, 4} {
		var ps []solver.Progress
		res, st, err := Solve(context.Background(), m, nil, admm(200), Options{Tol: 1e-6, MaxNodes: maxNodes},
			func(p solver.Progress) { ps = append(ps, p) })
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != st.Nodes || st.Nodes < 2 {
			t.Fatalf("max nodes %d: %d reports for %d nodes (want one per node, and some branching)", maxNodes, len(ps), st.Nodes)
		}
		for i, p := range ps {
			if p.Nodes != i+1 || (i > 0 && p.Iteration < ps[i-1].Iteration) {
				t.Fatalf("max nodes %d: report %d: nodes %d iteration %d after %d", maxNodes, i, p.Nodes, p.Iteration, ps[max(i-1, 0)].Iteration)
			}
		}
		last := ps[len(ps)-1]
		if last.Iteration != res.Iterations || last.Open != st.Open || last.Dual != res.Dual || last.Primal != res.Primal {
			t.Errorf("max nodes %d: last report %+v, result iterations %d dual %v primal %v, %d open",
				maxNodes, last, res.Iterations, res.Dual, res.Primal, st.Open)
		}
	}
}
