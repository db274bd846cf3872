package consensus

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/solver"
)

func solve(t testing.TB, m *model.Model, opts Options) solver.Result {
	t.Helper()
	res, err := Solve(context.Background(), m, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// testLocal is newLocal for a test or benchmark: it fails tb on an error
// and stops the master's workers when tb ends.
func testLocal(tb testing.TB, m *model.Model, plan partition.Plan, opts Options, workers int) (*master, int) {
	tb.Helper()
	s, entries, done, err := newLocal(m, plan, opts, workers)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(done)
	return s, entries
}

func relClose(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// namedModel is a test model with its name (the subtest's).
type namedModel struct {
	name string
	m    *model.Model
}

// smallMixed returns the small Potts, Ising and logic models on which the
// distributed runs (workers, shards) are compared with one process.
func smallMixed() []namedModel {
	return []namedModel{
		{"potts", generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 4, Rho: 1, Seed: 3})},
		{"ising", generate.Ising(generate.GridOptions{Height: 10, Width: 10, Rho: 0.5, Seed: 2})},
		{"logic", generate.Logic(generate.LogicOptions{Vars: 40, Factors: 30, Couplings: 40, MaxArity: 5, Rho: 1, Seed: 4})},
	}
}

// algoOptions returns the default options for algo and decomposition d,
// with DD-subgradient's step scale Eta 1.
func algoOptions(algo Algo, d Decomposition) Options {
	opts := DefaultOptions()
	opts.Algo, opts.Slaves = algo, d
	if algo == Subgradient {
		opts.Eta = 1
	}
	return opts
}

// gridCase is a grid generator (generate.Potts or generate.Ising) with its
// options but the seed.
type gridCase struct {
	gen func(generate.GridOptions) *model.Model
	o   generate.GridOptions
}

// seededGrids returns, for each seed 1..seeds, the model of every case
// with that seed.
func seededGrids(seeds int64, cases ...gridCase) []*model.Model {
	var models []*model.Model
	for seed := int64(1); seed <= seeds; seed++ {
		for _, c := range cases {
			o := c.o
			o.Seed = seed
			models = append(models, c.gen(o))
		}
	}
	return models
}

// checkReachesLP runs DD-ADMM to convergence (no gap test, residuals below
// 1e-8, at most 20000 iterations) on every model with every decomposition
// and checks that its dual is the local-polytope LP optimum computed by
// simplex (relative 1e-4); more, when not nil, checks the result further.
func checkReachesLP(t *testing.T, models []*model.Model, decomps []Decomposition, more func(i int, d Decomposition, m *model.Model, res solver.Result)) {
	t.Helper()
	for i, m := range models {
		lp := oracle.LP(t, m)
		for _, d := range decomps {
			opts := DefaultOptions()
			opts.Slaves = d
			opts.MaxIter = 20000
			opts.ResidualTol = 1e-8
			opts.Tol = 0
			res := solve(t, m, opts)
			if !relClose(res.Dual, lp, 1e-4) {
				t.Errorf("model %d (%s), %s: dual %.9g, LP optimum %.9g (%s after %d iterations)", i, m.Factors[0].Kind, d, res.Dual, lp, res.Status, res.Iterations)
			}
			if more != nil {
				more(i, d, m, res)
			}
		}
	}
}

// tinyRun returns the brute-force MAP of a tiny model m and the result of
// DD-ADMM on it (default options, at most 300 iterations).
func tinyRun(t *testing.T, m *model.Model) (float64, solver.Result) {
	t.Helper()
	best, _ := oracle.BruteMAP(t, m)
	opts := DefaultOptions()
	opts.MaxIter = 300
	return best, solve(t, m, opts)
}

// Prop. 1.4 of the paper: the dual is an upper bound at every iterate; a
// result reported optimal is the MAP; the primal is the score of the
// reported assignment.
func TestTinyModelsAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 300
	if testing.Short() {
		n = 60
	}
	optimal := 0
	for it := 0; it < n; it++ {
		m := oracle.RandomTinyModel(rng, oracle.TinyOptions{})
		best, res := tinyRun(t, m)
		if math.IsInf(best, -1) {
			if res.Assignment != nil {
				t.Fatalf("model %d: infeasible model but assignment %v reported", it, res.Assignment)
			}
			continue
		}
		if res.Dual < best-1e-9*math.Max(1, math.Abs(best)) {
			t.Fatalf("model %d: dual %.12g below the MAP %.12g", it, res.Dual, best)
		}
		if res.Assignment != nil {
			if got := m.Score(res.Assignment); got != res.Primal {
				t.Fatalf("model %d: primal %.12g but assignment scores %.12g", it, res.Primal, got)
			}
			if res.Primal > best+1e-9*math.Max(1, math.Abs(best)) {
				t.Fatalf("model %d: primal %.12g above the MAP %.12g", it, res.Primal, best)
			}
		}
		if res.Status == solver.Optimal {
			optimal++
			if !relClose(res.Primal, best, 1e-6) {
				t.Fatalf("model %d: status optimal with primal %.12g, MAP is %.12g", it, res.Primal, best)
			}
		}
	}
	if optimal < n/4 {
		t.Errorf("only %d of %d tiny models certified optimal", optimal, n)
	}
	t.Logf("%d of %d certified optimal", optimal, n)
}

// Prop. 1.2-1.3: at convergence the dual and the relaxed primal both equal
// the LP relaxation optimum (here from gonum's simplex).
func TestConvergedMatchesLocalPolytopeLP(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var cases []namedModel
	for k := 0; k < 12; k++ {
		cases = append(cases, namedModel{"tiny", oracle.RandomTinyModel(rng, oracle.TinyOptions{})})
	}
	for seed := int64(1); seed <= 4; seed++ {
		m := generate.Potts(generate.GridOptions{Height: 3, Width: 3, Labels: 3, Rho: 2, Seed: seed})
		cases = append(cases, namedModel{"potts3x3", m})
		m = generate.Ising(generate.GridOptions{Height: 3, Width: 4, Labels: 2, Rho: 3, Seed: seed})
		cases = append(cases, namedModel{"ising3x4", m})
	}
	for i, c := range cases {
		lp := oracle.LP(t, c.m)
		if math.IsInf(lp, -1) {
			continue
		}
		opts := DefaultOptions()
		opts.MaxIter = 20000
		opts.ResidualTol = 1e-8
		opts.Tol = 0 // do not stop at a closed gap: drive the residuals down
		res := solve(t, c.m, opts)
		if !relClose(res.Dual, lp, 1e-4) {
			t.Errorf("%s %d: dual %.9g, LP optimum %.9g (%s after %d iterations)", c.name, i, res.Dual, lp, res.Status, res.Iterations)
		}
		if res.Status == solver.Converged && !relClose(res.Relaxed, lp, 1e-4) {
			t.Errorf("%s %d: relaxed %.9g, LP optimum %.9g", c.name, i, res.Relaxed, lp)
		}
	}
}

// DD-ADMM on small truncated linear and quadratic grids (couplings of both
// signs) converges to the local-polytope LP optimum computed by simplex,
// with factor slaves (the Trunc slave's distance-transform MAP and its
// active-set QUAD) and with chain and tree slaves (their tables).
func TestTruncatedGridsReachTheLP(t *testing.T) {
	models := seededGrids(2,
		gridCase{generate.Potts, generate.GridOptions{Height: 3, Width: 3, Labels: 4, Rho: 1.5, Pair: generate.PairLinear, Trunc: 2}},
		gridCase{generate.Potts, generate.GridOptions{Height: 3, Width: 3, Labels: 4, Rho: 1, Pair: generate.PairQuad, Trunc: 2.5}})
	checkReachesLP(t, models, []Decomposition{PerFactor, Chains, Trees}, func(i int, d Decomposition, m *model.Model, res solver.Result) {
		if s := m.Score(res.Assignment); res.Assignment != nil && s != res.Primal {
			t.Errorf("model %d, %s: primal %v, assignment scores %v", i, d, res.Primal, s)
		}
	})
}

// On tiny models with truncated factors among the others, DD-ADMM's dual
// bounds the brute-force MAP and its primal is an assignment's score.
func TestTruncatedTinyModels(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	kinds := []model.Kind{model.Dense, model.Potts, model.TruncLinear, model.TruncQuad, model.XOR}
	for it := 0; it < 40; it++ {
		m := oracle.RandomTinyModel(rng, oracle.TinyOptions{Kinds: kinds, MaxCard: 5})
		best, res := tinyRun(t, m)
		if res.Dual < best-1e-6*math.Max(1, math.Abs(best)) {
			t.Fatalf("model %d: dual %v below the MAP %v", it, res.Dual, best)
		}
		if res.Assignment != nil && m.Score(res.Assignment) != res.Primal {
			t.Fatalf("model %d: primal %v, assignment scores %v", it, res.Primal, m.Score(res.Assignment))
		}
	}
}

// Against toulbar2's exact optima on frustrated grids (where the local
// polytope is often not tight): the dual is an upper bound, the primal a
// lower bound, and both meet when the status says optimal.
func TestAgainstToulbar2(t *testing.T) {
	models := seededGrids(4,
		gridCase{generate.Potts, generate.GridOptions{Height: 6, Width: 6, Labels: 3, Rho: 2}},
		gridCase{generate.Ising, generate.GridOptions{Height: 8, Width: 8, Rho: 1.5}})
	for i, m := range models {
		opt := oracle.Toulbar2(t, m, time.Minute)
		opts := DefaultOptions()
		opts.MaxIter = 2000
		res := solve(t, m, opts)
		// toulbar2 rounds costs to 7 decimals.
		tol := 1e-5 * math.Max(1, math.Abs(opt))
		if res.Dual < opt-tol {
			t.Errorf("model %d: dual %.9f below toulbar2's optimum %.9f", i, res.Dual, opt)
		}
		if res.Primal > opt+tol {
			t.Errorf("model %d: primal %.9f above toulbar2's optimum %.9f", i, res.Primal, opt)
		}
		if res.Status == solver.Optimal && math.Abs(res.Primal-opt) > tol {
			t.Errorf("model %d: certified %.9f, toulbar2 %.9f", i, res.Primal, opt)
		}
		t.Logf("model %d: %s, dual %.6f primal %.6f toulbar2 %.6f", i, res.Status, res.Dual, res.Primal, opt)
	}
}

// Results must not depend on the number of threads (fixed reduction order).
func TestThreadsGiveIdenticalResults(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 40, Width: 40, Labels: 4, Rho: 1, Seed: 7})
	opts := DefaultOptions()
	opts.MaxIter = 60
	opts.Threads = 1
	want := solve(t, m, opts)
	for _, th := range []int{2, 3, 5} {
		opts.Threads = th
		got := solve(t, m, opts)
		if got.Iterations != want.Iterations || got.Dual != want.Dual || got.Primal != want.Primal || got.Relaxed != want.Relaxed {
			t.Errorf("threads %d: (%d, %v, %v, %v), threads 1: (%d, %v, %v, %v)", th,
				got.Iterations, got.Dual, got.Primal, got.Relaxed, want.Iterations, want.Dual, want.Primal, want.Relaxed)
		}
	}
}

func TestInterruptReturnsBestSoFar(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 30, Width: 30, Labels: 5, Rho: 3, Seed: 1})
	ctx, cancel := context.WithCancel(context.Background())
	opts := DefaultOptions()
	opts.MaxIter = 1 << 30
	opts.Tol = 0
	opts.ResidualTol = 0
	calls := 0
	res, err := Solve(ctx, m, nil, opts, func(solver.Progress) {
		if calls++; calls == 1 {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != solver.Interrupted || res.Assignment == nil || m.Score(res.Assignment) != res.Primal {
		t.Fatalf("status %s, primal %v", res.Status, res.Primal)
	}
	opts.TimeLimit = 50 * time.Millisecond
	res = solve(t, m, opts)
	if res.Status != solver.TimeLimit {
		t.Fatalf("status %s, want time_limit", res.Status)
	}
}

func TestEvidenceIsRespected(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 3, Width: 4, Labels: 3, Rho: 1, Seed: 5})
	ev := model.Evidence{0: 2, 5: 1, 11: 0}
	res, err := Solve(context.Background(), m, ev, DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for v, s := range ev {
		if res.Assignment[v] != s {
			t.Errorf("variable %d: state %d, evidence says %d", v, res.Assignment[v], s)
		}
	}
	best, _ := oracle.BruteMAP(t, oracle.Clamped(m, ev))
	if res.Dual < best-1e-9 || res.Primal > best+1e-9 {
		t.Errorf("dual %v primal %v, conditioned MAP %v", res.Dual, res.Primal, best)
	}
}

// The hot loop allocates nothing.
func TestIterationAllocatesNothing(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 20, Width: 20, Labels: 4, Rho: 1, Seed: 1})
	opts := DefaultOptions()
	opts.Threads = 2
	s, _ := testLocal(t, m, partition.PerFactor(m), opts, 1)
	ctx := context.Background()
	// Working sets grow to their steady size in the first iterations (each
	// growth allocates once); after that an iteration allocates nothing.
	for i := 0; i < 100; i++ {
		if _, err := s.iterate(ctx, false, false); err != nil {
			t.Fatal(err)
		}
	}
	if a := testing.AllocsPerRun(20, func() { s.iterate(ctx, false, false) }); a != 0 {
		t.Errorf("%v allocations per iteration", a)
	}
}
