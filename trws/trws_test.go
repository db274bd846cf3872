package trws

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

type (
	progressT = solver.Progress
	resultT   = solver.Result
)

var bg = context.Background()

// testOpts reports every iteration.
func testOpts(maxIter int) Options {
	o := DefaultOptions()
	o.MaxIter = maxIter
	o.ProgressEvery = 0
	return o
}

// checkResult checks what holds for every run: the primal is the exact
// score of the assignment, the gap is their difference, the dual bounds the
// MAP score, nothing is NaN but an infeasible gap.
func checkResult(t *testing.T, name string, m *model.Model, res resultT, mapv float64) {
	t.Helper()
	if math.IsNaN(res.Dual) || math.IsNaN(res.Primal) || math.IsNaN(res.Relaxed) {
		t.Fatalf("%s: NaN in %+v", name, res)
	}
	if res.Assignment != nil {
		if len(res.Assignment) != m.NumVars() {
			t.Fatalf("%s: assignment of %d variables, model has %d", name, len(res.Assignment), m.NumVars())
		}
		if sc := m.Score(res.Assignment); sc != res.Primal || math.IsInf(sc, -1) {
			t.Fatalf("%s: primal %v, assignment scores %v", name, res.Primal, sc)
		}
		if res.Gap != res.Dual-res.Primal {
			t.Fatalf("%s: gap %v, dual - primal = %v", name, res.Gap, res.Dual-res.Primal)
		}
	} else if !math.IsInf(res.Primal, -1) {
		t.Fatalf("%s: primal %v without an assignment", name, res.Primal)
	}
	if res.Dual < mapv-1e-9*(1+math.Abs(mapv)) {
		t.Fatalf("%s: dual %v below the MAP score %v", name, res.Dual, mapv)
	}
	if res.Primal > mapv+1e-9*(1+math.Abs(mapv)) {
		t.Fatalf("%s: primal %v above the MAP score %v", name, res.Primal, mapv)
	}
	if res.Status == solver.Infeasible && !math.IsInf(mapv, -1) {
		t.Fatalf("%s: infeasible, but the MAP score is %v", name, mapv)
	}
	if res.Status == solver.Optimal && !near(res.Primal, mapv, 1e-9) {
		t.Fatalf("%s: optimal with primal %v, MAP %v", name, res.Primal, mapv)
	}
}

// solveChecked solves m with reports at every iteration and checks every
// report: a valid, non-increasing dual.
func solveChecked(t *testing.T, name string, m *model.Model, opts Options, mapv float64) resultT {
	t.Helper()
	prev := math.Inf(1)
	n := 0
	res := mustSolve(t, m, opts, func(p progressT) {
		n++
		if math.IsNaN(p.Dual) || p.Dual < mapv-1e-9*(1+math.Abs(mapv)) {
			t.Fatalf("%s: iteration %d: dual %v, MAP %v", name, p.Iteration, p.Dual, mapv)
		}
		if p.Dual > prev {
			t.Fatalf("%s: iteration %d: dual rose from %v to %v", name, p.Iteration, prev, p.Dual)
		}
		if p.Primal > mapv+1e-9*(1+math.Abs(mapv)) {
			t.Fatalf("%s: iteration %d: primal %v above MAP %v", name, p.Iteration, p.Primal, mapv)
		}
		prev = p.Dual
	})
	if n != res.Iterations {
		t.Fatalf("%s: %d reports for %d iterations", name, n, res.Iterations)
	}
	checkResult(t, name, m, res, mapv)
	return res
}

// TestRandomTiny: on random tiny pairwise models (hard constraints, ties,
// cardinality-1 variables, repeated scopes) every reported dual is a valid,
// non-increasing upper bound, and the primal is exact.
func TestRandomTiny(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[solver.Status]int{}
	for it := 0; it < 400; it++ {
		o := oracle.TinyOptions{IntegerWeights: it%3 == 0, Soft: it%4 == 1, MaxCard: 2 + it%3}
		m := tinyPairwise(rng, o)
		mapv, _ := oracle.BruteMAP(t, m)
		res := solveChecked(t, "tiny", m, testOpts(300), mapv)
		counts[res.Status]++
	}
	t.Logf("statuses: %v", counts)
	if counts[solver.Optimal] < 200 {
		t.Errorf("only %d of 400 tiny models solved to optimality", counts[solver.Optimal])
	}
}

// TestRandomTinyInfeasible: models drawn without the feasibility filter.
// An infeasible status must be right, the dual is never NaN, and on
// infeasible models no assignment is returned.
func TestRandomTinyInfeasible(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	infeasible, detected := 0, 0
	for it := 0; it < 300; it++ {
		m := tinyPairwise(rng, oracle.TinyOptions{AllowInfeasible: true, MaxFactors: 24})
		mapv, _ := oracle.BruteMAP(t, m)
		res := solveChecked(t, "tiny/infeasible", m, testOpts(100), mapv)
		if math.IsInf(mapv, -1) {
			infeasible++
			if res.Assignment != nil {
				t.Fatalf("assignment %v on an infeasible model", res.Assignment)
			}
			if res.Status == solver.Infeasible {
				detected++
			}
		}
	}
	t.Logf("%d infeasible models, %d detected (arc consistency of -Inf messages)", infeasible, detected)
	if infeasible < 10 {
		t.Errorf("only %d infeasible draws", infeasible)
	}
}

// TestPassBoundIsExactDual: after every pass, the bound the pass returns is
// the dual evaluated independently at the current messages (Viterbi on
// explicit monotonic chains, paired at random), and the pass bounds never
// increase; on one thread and on several (the partitioned order of
// order.go, whose passes run on goroutines).
func TestPassBoundIsExactDual(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	models := []*model.Model{
		generate.Potts(generate.GridOptions{Height: 4, Width: 5, Labels: 3, Rho: 2, Seed: 1}),
		generate.Ising(generate.GridOptions{Height: 5, Width: 4, Rho: 1.5, Seed: 2}),
		denseGrid(rand.New(rand.NewPCG(1, 2)), 6, 7, 3),
		generate.Potts(generate.GridOptions{Height: 5, Width: 6, Labels: 5, Rho: 2, Seed: 3, Pair: generate.PairLinear, Trunc: 2}),
		generate.Potts(generate.GridOptions{Height: 6, Width: 5, Labels: 4, Rho: 2, Seed: 4, Pair: generate.PairQuad, Trunc: 4.5}),
		// Dense grids of the other unrolled sizes (kernels.go).
		denseGrid(rand.New(rand.NewPCG(3, 4)), 5, 6, 2),
		denseGrid(rand.New(rand.NewPCG(5, 6)), 5, 6, 4),
		denseGrid(rand.New(rand.NewPCG(7, 8)), 4, 5, 8),
	}
	for range 60 {
		models = append(models, tinyPairwise(rng, oracle.TinyOptions{MaxFactors: 20}))
	}
	for k, m := range models {
		red := reduced(t, m)
		for _, threads := range []int{1, 2, 3} {
			g := testGraph(t, red, threads)
			if (k == 3 || k == 4) && len(g.terms) != len(g.eu) {
				t.Fatalf("model %d: %d of %d edges kept as truncated terms", k, len(g.terms), len(g.eu))
			}
			o := DefaultOptions()
			o.Threads = threads
			r := newRun(g, o)
			pm := newPassMessages(g)
			prev := math.Inf(1)
			for it := 0; it < 30; it++ {
				for dir := 0; dir < 2; dir++ {
					var b float64
					if dir == 0 {
						b, _ = r.forward()
					} else {
						b = r.backward()
					}
					pm.after(g, dir == 0)
					if math.IsNaN(b) {
						t.Fatalf("model %d, %d threads: NaN bound", k, threads)
					}
					if want := chainBound(g, pm, rng); !near(b, want, 1e-9) {
						t.Fatalf("model %d, %d threads, iteration %d, pass %d: bound %v, explicit chains give %v", k, threads, it, dir, b, want)
					}
					if b > prev+1e-9*(1+math.Abs(prev)) {
						t.Fatalf("model %d, %d threads, iteration %d, pass %d: bound rose from %v to %v", k, threads, it, dir, prev, b)
					}
					prev = b
				}
			}
			r.close()
		}
	}
}

// TestThreadsRunTheSequentialOrder: the passes on threads are sequential
// TRW-S in the partitioned order: the same messages and labels, bit for
// bit, as one goroutine running the whole order, and deterministic.
func TestThreadsRunTheSequentialOrder(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 30, Width: 40, Labels: 4, Rho: 3, Seed: 7})
	m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{5, 1100}, Table: make([]float64, 16)})
	for _, threads := range []int{2, 3, 4} {
		o := DefaultOptions()
		o.Threads = threads
		g1, _ := newGraph(m, threads)
		g2, _ := newGraph(m, threads)
		if sep := g1.n - g1.parts[threads]; sep == 0 || sep > g1.n/4 {
			t.Fatalf("%d threads: separator of %d nodes", threads, sep)
		}
		r := newRun(g1, o)
		x := make([]int, g2.n)
		sc := g2.newScratch()
		for it := range 5 {
			fb, _ := r.forward()
			bb := r.backward()
			f2, b2 := g2.forward(x, sc), g2.backward(sc)
			if !slices.Equal(g1.data, g2.data) || !slices.Equal(r.x, x) {
				t.Fatalf("%d threads, iteration %d: the threads' messages or labels differ from the sequential order's", threads, it)
			}
			if !near(fb, f2, 1e-12) || !near(bb, b2, 1e-12) {
				t.Fatalf("%d threads, iteration %d: bounds %v %v, sequential %v %v", threads, it, fb, bb, f2, b2)
			}
		}
		r.close()
		// Deterministic: two runs agree exactly.
		a, _ := Solve(bg, m, nil, o, nil)
		b, _ := Solve(bg, m, nil, o, nil)
		if a.Dual != b.Dual || a.Primal != b.Primal || !slices.Equal(a.Assignment, b.Assignment) {
			t.Errorf("%d threads: two runs differ: %v/%v, %v/%v", threads, a.Dual, b.Dual, a.Primal, b.Primal)
		}
	}
}

// TestTrees: TRW-S is exact on trees (chains, stars, random trees with
// scrambled numbering, hard constraints, Potts and dense edges): the bound
// meets the MAP score and the status is optimal.
func TestTrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	feasible := 0
	iters := 0
	for it := 0; it < 150; it++ {
		n := 2 + rng.IntN(9)
		var m *model.Model
		switch it % 3 {
		case 0: // chain in index order
			m = generate.Potts(generate.GridOptions{Height: 1, Width: n, Labels: 2 + rng.IntN(3), Rho: 5, Seed: int64(it)})
		case 1:
			m = randomTree(rng, n, 4, it%2 == 0, true)
		default:
			m = randomTree(rng, n, 4, it%2 == 0, false)
		}
		mapv, _ := oracle.BruteMAP(t, m)
		opts := testOpts(5000)
		opts.BoundTol = 0
		opts.BoundWindow = 50
		res := solveChecked(t, "tree", m, opts, mapv)
		if math.IsInf(mapv, -1) {
			if res.Status != solver.Infeasible {
				t.Errorf("tree %d: infeasible tree reported %s (arc consistency decides trees)", it, res.Status)
			}
			continue
		}
		feasible++
		iters += res.Iterations
		if res.Status != solver.Optimal || !near(res.Dual, mapv, 1e-6) {
			t.Errorf("tree %d (%d vars): %s after %d iterations, dual %v primal %v, MAP %v", it, m.NumVars(), res.Status, res.Iterations, res.Dual, res.Primal, mapv)
		}
	}
	t.Logf("%d feasible trees, %.1f iterations on average to optimal", feasible, float64(iters)/float64(feasible))
}

// TestChainOneIteration: on a chain numbered in order every node has one
// chain, and one forward-backward iteration gives the exact bound; the
// second forward pass labels a MAP.
func TestChainOneIteration(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		m := generate.Potts(generate.GridOptions{Height: 1, Width: 9, Labels: 3, Rho: 3, Seed: seed})
		mapv, _, _ := oracle.BruteForceMAP(m)
		res := solveChecked(t, "chain", m, testOpts(100), mapv)
		if res.Status != solver.Optimal || res.Iterations > 2 {
			t.Errorf("seed %d: %s after %d iterations", seed, res.Status, res.Iterations)
		}
	}
}

// TestSequence: Sequence factors are chains of pairwise terms.
func TestSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for it := 0; it < 20; it++ {
		cards := []int{2, 3, 3, 2, 3}
		m := generate.GaussianUnaries(rng, cards)
		f := model.Factor{Kind: model.Sequence, Vars: []int{3, 0, 4, 1, 2}}.WithEmission(make([]float64, 13))
		for j := range f.EmissionScores() {
			f.EmissionScores()[j] = rng.NormFloat64()
		}
		for k := 0; k+1 < len(f.Vars); k++ {
			for range cards[f.Vars[k]] * cards[f.Vars[k+1]] {
				v := rng.NormFloat64()
				if rng.IntN(8) == 0 {
					v = negInf
				}
				f.Table = append(f.Table, v)
			}
		}
		m.Factors = append(m.Factors, f, model.Factor{Kind: model.Dense, Vars: []int{2, 1}, Table: []float64{1, 0, -1, 2, 0.5, 0, 0, 1, -2}})
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		mapv, _, _ := oracle.BruteForceMAP(m)
		res := solveChecked(t, "sequence", m, testOpts(2000), mapv)
		if !math.IsInf(mapv, -1) && res.Status != solver.Optimal {
			t.Errorf("sequence %d: %s, dual %v, MAP %v", it, res.Status, res.Dual, mapv)
		}
	}
}

// TestGrids: on small grids TRW-S may stop at weak tree agreement above the
// LP optimum, but its bound is never below it (nor below the MAP score).
func TestGrids(t *testing.T) {
	type grid struct {
		name string
		m    *model.Model
	}
	var grids []grid
	for seed := int64(1); seed <= 4; seed++ {
		for _, rho := range []float64{0.5, 2, 10} {
			grids = append(grids, grid{"potts3x4L3", generate.Potts(generate.GridOptions{Height: 3, Width: 4, Labels: 3, Rho: rho, Seed: seed})})
		}
		for _, rho := range []float64{1, 2} {
			grids = append(grids, grid{"ising4x4", generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: rho, Seed: seed})})
		}
		grids = append(grids, grid{"dense3x4L3", denseGrid(rand.New(rand.NewPCG(uint64(seed), 77)), 3, 4, 3)})
	}
	// A grid where TRW-S stops at weak tree agreement about 0.3 above the
	// LP optimum (too big for brute force: its MAP check is skipped).
	stuck := generate.Potts(generate.GridOptions{Height: 5, Width: 5, Labels: 3, Rho: 10, Seed: 4})
	grids = append(grids, grid{"potts5x5L3", stuck})
	type stats struct {
		n, within, optimal int
		sum, max           float64
	}
	fam := map[string]*stats{}
	var sumGap, maxGap float64
	within, optimal := 0, 0
	for k, gr := range grids {
		lp := oracle.LP(t, gr.m)
		mapv := negInf // a trivially valid lower bound on the MAP score
		if gr.m != stuck {
			mapv, _ = oracle.BruteMAP(t, gr.m)
		}
		opts := testOpts(3000)
		opts.BoundTol = 1e-10
		opts.BoundWindow = 20
		res := solveChecked(t, gr.name, gr.m, opts, mapv)
		if res.Dual < lp-1e-6 {
			t.Errorf("%s %d: bound %v below the LP optimum %v", gr.name, k, res.Dual, lp)
		}
		d := res.Dual - lp
		sumGap += d
		maxGap = math.Max(maxGap, d)
		if d <= 1e-4 {
			within++
		}
		if res.Status == solver.Optimal {
			optimal++
		}
		f := fam[gr.name]
		if f == nil {
			f = &stats{}
			fam[gr.name] = f
		}
		f.n++
		f.sum += d
		f.max = math.Max(f.max, d)
		if d <= 1e-4 {
			f.within++
		}
		if res.Status == solver.Optimal {
			f.optimal++
		}
	}
	for name, f := range fam {
		t.Logf("%s: %d grids, bound - LP mean %.3g max %.3g, within 1e-4 on %d, optimal on %d", name, f.n, f.sum/float64(f.n), f.max, f.within, f.optimal)
	}
	t.Logf("%d grids: bound - LP: mean %.3g, max %.3g; within 1e-4 of the LP on %d; optimal on %d",
		len(grids), sumGap/float64(len(grids)), maxGap, within, optimal)
	if within < len(grids)/2 {
		t.Errorf("bound within 1e-4 of the LP on only %d of %d grids", within, len(grids))
	}
}

// denseGrid returns an h x w grid with l labels, N(0,1) unaries and
// N(0,4) dense edge tables (frustrated, non-Potts couplings).
func denseGrid(rng *rand.Rand, h, w, l int) *model.Model {
	return generate.DenseGrid(rng, h, w, l, 2)
}

// TestHardConstraints: -Inf potentials give no NaN, propagate exactly, and
// decide infeasibility when arc consistency does.
func TestHardConstraints(t *testing.T) {
	less := func(k int) []float64 { // x_u < x_v, else -Inf
		tab := make([]float64, k*k)
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				if i >= j {
					tab[i*k+j] = negInf
				}
			}
		}
		return tab
	}
	// 0 < 1 < 2 over 3 labels: the only assignment is (0, 1, 2).
	m := model.New([]int{3, 3, 3})
	copy(m.Unary, []float64{5, 0, 0, 0, 0, 7, 1, 2, 3})
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{1, 2}, Table: less(3)},
		{Kind: model.Dense, Vars: []int{0, 1}, Table: less(3)},
	}
	res := solveChecked(t, "ordered", m, testOpts(100), m.Score([]int{0, 1, 2}))
	if res.Status != solver.Optimal || res.Assignment[0] != 0 || res.Assignment[1] != 1 || res.Assignment[2] != 2 {
		t.Errorf("ordered: %+v", res)
	}
	// 0 < 1 < 2 < 3 over 3 labels: infeasible, and arc consistency sees it.
	m = model.New([]int{3, 3, 3, 3})
	for i := 0; i < 3; i++ {
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{i, i + 1}, Table: less(3)})
	}
	res = solveChecked(t, "too long", m, testOpts(100), negInf)
	if res.Status != solver.Infeasible || !math.IsInf(res.Dual, -1) || res.Assignment != nil {
		t.Errorf("too long: %+v", res)
	}
	// An odd cycle of "differ" constraints on binary variables: infeasible,
	// which the LP (and so TRW-S) cannot see; the bound must stay finite
	// and NaN-free, with no assignment.
	m = model.New([]int{2, 2, 2})
	differ := []float64{negInf, 0, 0, negInf}
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{0, 1}, Table: differ},
		{Kind: model.Dense, Vars: []int{1, 2}, Table: differ},
		{Kind: model.Dense, Vars: []int{2, 0}, Table: differ},
	}
	res = solveChecked(t, "odd cycle", m, testOpts(50), negInf)
	if res.Assignment != nil || res.Status == solver.Optimal {
		t.Errorf("odd cycle: %+v", res)
	}
	// A forbidden unary state and a one-variable factor forbidding another
	// (after Reduce the factor survives as a table over one variable).
	m = model.New([]int{3, 2})
	copy(m.Unary, []float64{negInf, 1, 2, 0, 0})
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{0, 1}, Table: []float64{0, 0, 0, 3, negInf, 1}},
		{Kind: model.Dense, Vars: []int{1}, Table: []float64{0, negInf}},
	}
	mapv, _, _ := oracle.BruteForceMAP(m)
	res = solveChecked(t, "unary", m, testOpts(50), mapv)
	if res.Status != solver.Optimal {
		t.Errorf("unary: %+v", res)
	}
}

func TestErrors(t *testing.T) {
	m := model.New([]int{2, 2, 2})
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0, 1, 2}, Table: make([]float64, 8)}}
	if _, err := Solve(bg, m, nil, DefaultOptions(), nil); err == nil || !strings.Contains(err.Error(), "pairwise") {
		t.Errorf("ternary factor: %v", err)
	}
	m.Factors = []model.Factor{{Kind: model.XOR, Vars: []int{0, 1, 2}}}
	if _, err := Solve(bg, m, nil, DefaultOptions(), nil); err == nil || !strings.Contains(err.Error(), "factor 0 (xor)") {
		t.Errorf("ternary XOR: %v", err)
	}
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0, 1}, Table: make([]float64, 3)}}
	if _, err := Solve(bg, m, nil, DefaultOptions(), nil); err == nil {
		t.Error("invalid model accepted")
	}
	for _, bad := range []func(*Options){
		func(o *Options) { o.MaxIter = 0 },
		func(o *Options) { o.Tol = math.NaN() },
		func(o *Options) { o.BoundTol = -1 },
		func(o *Options) { o.BoundWindow = 0 },
		func(o *Options) { o.TimeLimit = -time.Second },
	} {
		o := DefaultOptions()
		bad(&o)
		if _, err := Solve(bg, model.New([]int{2}), nil, o, nil); err == nil {
			t.Errorf("bad options %+v accepted", o)
		}
	}
}

// TestPairwiseLogic: logic factors over two variables are tables too (a
// frustrated cycle here: the bound meets the LP optimum, above the MAP).
func TestPairwiseLogic(t *testing.T) {
	m := model.New([]int{2, 2, 2})
	copy(m.Unary, []float64{0, 1, 0, 2, 0, -1})
	m.Factors = []model.Factor{
		{Kind: model.XOR, Vars: []int{0, 1}},
		model.Factor{Kind: model.OR, Vars: []int{1, 2}}.WithNegated([]bool{true, false}),
		{Kind: model.Pair, Vars: []int{2, 0}, Weight: 1.5},
	}
	mapv, _, _ := oracle.BruteForceMAP(m)
	lp := oracle.LP(t, m)
	res := solveChecked(t, "logic", m, testOpts(100), mapv)
	if !near(res.Dual, lp, 1e-6) || res.Primal != mapv {
		t.Errorf("logic: %+v, LP %v, MAP %v", res, lp, mapv)
	}
}

// TestStopRules: empty models, infeasible reductions, cancellation, time
// and iteration limits, convergence.
func TestStopRules(t *testing.T) {
	m := model.New(nil)
	m.Constant = 2.5
	res := mustSolve(t, m, DefaultOptions(), nil)
	if res.Status != solver.Optimal || res.Primal != 2.5 || res.Dual != 2.5 || res.Assignment == nil {
		t.Errorf("empty model: %+v", res)
	}
	m = model.New([]int{2})
	copy(m.Unary, []float64{negInf, negInf})
	if res = mustSolve(t, m, DefaultOptions(), nil); res.Status != solver.Infeasible {
		t.Errorf("no state left: %+v", res)
	}

	grid := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 4, Rho: 10, Seed: 3})
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if res = mustSolve(t, grid, DefaultOptions(), nil); res.Status == solver.Interrupted {
		t.Errorf("not cancelled, yet interrupted")
	}
	res, err := Solve(ctx, grid, nil, DefaultOptions(), nil)
	if err != nil || res.Status != solver.Interrupted || res.Iterations != 1 || res.Assignment == nil {
		t.Errorf("cancelled: %+v, %v", res, err)
	}
	o := DefaultOptions()
	o.MaxIter = 7
	o.BoundTol = 0
	o.Tol = 0
	o.BoundWindow = 1000
	if res = mustSolve(t, grid, o, nil); res.Status != solver.IterationLimit || res.Iterations != 7 {
		t.Errorf("iteration limit: %s after %d", res.Status, res.Iterations)
	}
	o.MaxIter = 1 << 30
	o.TimeLimit = 20 * time.Millisecond
	if res = mustSolve(t, grid, o, nil); res.Status != solver.TimeLimit || res.Elapsed < o.TimeLimit {
		t.Errorf("time limit: %s after %v", res.Status, res.Elapsed)
	}
	o = DefaultOptions()
	if res = mustSolve(t, grid, o, nil); res.Status != solver.Converged && res.Status != solver.Optimal {
		t.Errorf("convergence: %s after %d iterations", res.Status, res.Iterations)
	}
	t.Logf("12x12 Potts grid, 4 labels, rho 10: %s after %d iterations, gap %.4g", res.Status, res.Iterations, res.Gap)
	// With Tol 0 the stall test is off: only the limits stop the run
	// (issue 17: --tol 0 --max-iter 300 stopped as converged).
	conv := res
	o.Tol = 0
	o.MaxIter = conv.Iterations + 50
	if res = mustSolve(t, grid, o, nil); res.Status != solver.IterationLimit || res.Iterations != o.MaxIter {
		t.Errorf("Tol 0: %s after %d iterations, want the iteration limit %d", res.Status, res.Iterations, o.MaxIter)
	}
}

// TestZeroAllocs: an iteration allocates nothing.
func TestZeroAllocs(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 10, Width: 10, Labels: 4, Rho: 1, Seed: 1})
	// Some dense edges too.
	m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{3, 57}, Table: make([]float64, 16)})
	for _, threads := range []int{1, 2} {
		g := testGraph(t, m, threads)
		o := DefaultOptions()
		o.Threads = threads
		r := newRun(g, o)
		if a := testing.AllocsPerRun(20, r.iterate); a != 0 {
			t.Errorf("%d threads: %v allocations per iteration", threads, a)
		}
		r.close()
	}
}

// checkMaxPlus checks a max-plus product of a ku x kv table against the
// plain double loop: out[o] = max over k < inner of term(o, k), c = max
// of out.
func checkMaxPlus(t *testing.T, name string, ku, kv, inner int, out []float64, c float64, term func(o, k int) float64) {
	t.Helper()
	want := negInf
	for o := range out {
		w := negInf
		for k := range inner {
			w = math.Max(w, term(o, k))
		}
		if out[o] != w {
			t.Fatalf("%dx%d %s: out[%d] = %v, want %v", ku, kv, name, o, out[o], w)
		}
		want = math.Max(want, w)
	}
	if c != want {
		t.Fatalf("%dx%d %s: max %v, want %v", ku, kv, name, c, want)
	}
}

// TestMaxPlusKernels: the unrolled max-plus products equal the plain
// double loop, -Inf entries included, for every shape up to 11x11.
func TestMaxPlusKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	draw := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
			if rng.IntN(5) == 0 {
				v[i] = negInf
			}
		}
		return v
	}
	for ku := 1; ku <= 11; ku++ {
		for kv := 1; kv <= 11; kv++ {
			for range 20 {
				tab := draw(ku * kv)
				a, b := draw(ku), draw(kv)
				out := make([]float64, kv)
				c := maxPlusCols(out, a, tab)
				checkMaxPlus(t, "cols", ku, kv, ku, out, c, func(j, i int) float64 { return a[i] + tab[i*kv+j] })
				out = make([]float64, ku)
				c = maxPlusRows(out, b, tab)
				checkMaxPlus(t, "rows", ku, kv, kv, out, c, func(i, j int) float64 { return b[j] + tab[i*kv+j] })
			}
		}
	}
}

// TestThreadsBruteForceAndLP: on several threads (the partitioned order)
// every reported dual is still a valid, non-increasing bound, checked
// against brute force on tiny models, and never below the LP optimum on
// small grids; trees are still solved exactly.
func TestThreadsBruteForceAndLP(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	optimal := 0
	for it := 0; it < 150; it++ {
		m := tinyPairwise(rng, oracle.TinyOptions{MaxCard: 2 + it%3, MaxFactors: 20})
		mapv, _ := oracle.BruteMAP(t, m)
		o := testOpts(300)
		o.Threads = 2 + it%2
		o.Cycles = it%3 == 0 // TRW-S(LP-C) on the partitioned order too
		if res := solveChecked(t, "tiny/threads", m, o, mapv); res.Status == solver.Optimal {
			optimal++
		}
	}
	if optimal < 75 {
		t.Errorf("only %d of 150 tiny models solved to optimality on threads", optimal)
	}
	for seed := int64(1); seed <= 4; seed++ {
		m := generate.Potts(generate.GridOptions{Height: 3, Width: 4, Labels: 3, Rho: 2, Seed: seed})
		lp := oracle.LP(t, m)
		mapv, _ := oracle.BruteMAP(t, m)
		for _, threads := range []int{2, 3} {
			o := testOpts(2000)
			o.Threads = threads
			res := solveChecked(t, "grid/threads", m, o, mapv)
			if res.Dual < lp-1e-6 {
				t.Errorf("seed %d, %d threads: bound %v below the LP optimum %v", seed, threads, res.Dual, lp)
			}
		}
	}
	for it := 0; it < 30; it++ {
		m := randomTree(rng, 6+rng.IntN(6), 4, false, false)
		mapv, _, _ := oracle.BruteForceMAP(m)
		o := testOpts(5000)
		o.Threads = 2
		o.BoundTol, o.BoundWindow = 0, 50
		if res := solveChecked(t, "tree/threads", m, o, mapv); res.Status != solver.Optimal {
			t.Errorf("tree %d on 2 threads: %s, dual %v, MAP %v", it, res.Status, res.Dual, mapv)
		}
	}
}

// TestStallStop: with Tol 0 a frustrated grid's run goes on to its
// iteration limit, and with StallStop the same run stops as Converged at
// the stall, with the same bound up to the stall test's tolerance.
func TestStallStop(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 2, Seed: 4})
	opts := testOpts(3000)
	opts.Tol = 0
	full, err := Solve(context.Background(), m, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if full.Status != solver.IterationLimit || full.Iterations != 3000 {
		t.Fatalf("Tol 0: %s after %d iterations, want the iteration limit (3000)", full.Status, full.Iterations)
	}
	opts.StallStop = true
	stop, err := Solve(context.Background(), m, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stop.Status != solver.Converged || stop.Iterations >= 3000 {
		t.Fatalf("StallStop: %s after %d iterations, want Converged before 3000", stop.Status, stop.Iterations)
	}
	if stop.Dual < full.Dual-1e-9 || stop.Dual-full.Dual > 1e-4*math.Max(1, math.Abs(full.Dual)) {
		t.Errorf("StallStop bound %v, the full run's %v", stop.Dual, full.Dual)
	}
	t.Logf("stall after %d iterations: bound %.9g (3000 iterations: %.9g)", stop.Iterations, stop.Dual, full.Dual)
}

// TestPottsGraphIsNewGraph: newPottsGraph lays out flat Potts terms as
// newGraph lays out the same terms as factors on one thread, array for
// array (ends, offsets, weights bit for bit, adjacency, kernels): pottsOrder
// against sortPairRefs' order, pottsEdges against edgeBuilder; on pairs
// listed either way round, repeated pairs, runs longer than shortRun (a
// star), sorted input, mixed cardinalities and no terms.
func TestPottsGraphIsNewGraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 27))
	for trial := range 300 {
		n := 2 + rng.IntN(60)
		m := &model.Model{Cards: make([]int, n), UnaryOff: make([]int, n+1)}
		for v := range n {
			m.Cards[v] = 2 + v%2*rng.IntN(3)*(trial%3)
			m.UnaryOff[v+1] = m.UnaryOff[v] + m.Cards[v]
		}
		m.Unary = make([]float64, m.UnaryOff[n])
		var i, j []int32
		var w []float64
		for range rng.IntN(400) {
			u, v := int32(rng.IntN(n)), int32(rng.IntN(n))
			if trial%5 == 0 && rng.IntN(2) == 0 {
				u = 0 // a star: runs longer than shortRun
			}
			if u != v && m.Cards[u] == m.Cards[v] {
				i, j, w = append(i, u), append(j, v), append(w, rng.Float64()*2-1)
			}
		}
		if trial%7 == 0 { // sorted input
			refs := make([]pairRef, len(i))
			for a := range refs {
				refs[a] = pairRef{u: i[a], v: j[a], a: int32(a)}
			}
			slices.SortStableFunc(refs, comparePairs)
			i0, j0, w0 := slices.Clone(i), slices.Clone(j), slices.Clone(w)
			for a, r := range refs {
				i[a], j[a], w[a] = i0[r.a], j0[r.a], w0[r.a]
			}
		}
		flat := &model.Model{Cards: m.Cards, UnaryOff: m.UnaryOff, Unary: m.Unary}
		for a := range w {
			m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{int(i[a]), int(j[a])}, Weight: w[a]})
		}
		want, err := newGraph(m, 1)
		if err != nil {
			t.Fatal(err)
		}
		got := newPottsGraph(flat, i, j, w)
		bits := func(x []float64) []uint64 {
			b := make([]uint64, len(x))
			for k, f := range x {
				b[k] = math.Float64bits(f)
			}
			return b
		}
		switch {
		case !slices.Equal(got.eu, want.eu) || !slices.Equal(got.ev, want.ev):
			t.Fatalf("trial %d: edges %v %v, want %v %v", trial, got.eu, got.ev, want.eu, want.ev)
		case !slices.Equal(got.moff, want.moff) || !slices.Equal(got.toff, want.toff):
			t.Fatalf("trial %d: offsets %v %v, want %v %v", trial, got.moff, got.toff, want.moff, want.toff)
		case !slices.Equal(bits(got.pw), bits(want.pw)) || (got.pw == nil) != (want.pw == nil):
			t.Fatalf("trial %d: weights %v, want %v", trial, got.pw, want.pw)
		case len(got.data) != len(want.data) || len(got.tab) != len(want.tab) || len(got.own) != len(want.own) || got.tabLen != want.tabLen:
			t.Fatalf("trial %d: %d messages, %d tables, %d own, want %d, %d, %d", trial, len(got.data), len(got.tab), len(got.own), len(want.data), len(want.tab), len(want.own))
		case !slices.Equal(got.outOff, want.outOff) || !slices.Equal(got.inOff, want.inOff) || !slices.Equal(got.inE, want.inE):
			t.Fatalf("trial %d: adjacency differs", trial)
		case !slices.Equal(got.kern, want.kern) || got.maxCard != want.maxCard || !slices.Equal(got.recip, want.recip) || !slices.Equal(got.parts, want.parts):
			t.Fatalf("trial %d: kernels, cardinality or chain weights differ", trial)
		}
	}
}

// TestSortPairRefs: sortPairRefs gives the order of slices.SortStableFunc
// by comparePairs (ties in input order), on terms with repeated pairs,
// either end first, runs longer than shortRun (a star) and sorted input.
func TestSortPairRefs(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 26))
	for trial := range 300 {
		n := 1 + rng.IntN(60)
		refs := make([]pairRef, rng.IntN(400))
		for i := range refs {
			u, v := int32(rng.IntN(n)), int32(rng.IntN(n))
			if trial%5 == 0 && rng.IntN(2) == 0 {
				u = 0 // a star: runs longer than shortRun
			}
			refs[i] = pairRef{u: u, v: v, a: int32(i), k: int32(rng.IntN(3)) - 1}
		}
		if trial%7 == 0 {
			slices.SortStableFunc(refs, comparePairs)
		}
		want := slices.Clone(refs)
		slices.SortStableFunc(want, comparePairs)
		sortPairRefs(refs, n)
		if !slices.Equal(refs, want) {
			t.Fatalf("trial %d (n %d): %v, want %v", trial, n, refs, want)
		}
	}
}
