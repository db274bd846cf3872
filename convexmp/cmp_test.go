package convexmp

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// tolerance for "a >= b" between an upper bound and a value computed in
// floating point.
func slack(v float64) float64 { return 1e-9 * (1 + math.Abs(v)) }

// relClose reports |a - b| <= rel * max(1, |b|).
func relClose(a, b, rel float64) bool { return math.Abs(a-b) <= rel*max(1, math.Abs(b)) }

// run solves m with opts, checking the invariants every run must keep:
// every dual value the solver computes (trace) and every reported Dual stays
// above lower (the LP optimum, or the MAP score) and never increases; every
// reported Primal stays below mapv (the MAP score, or the LP optimum when
// it is unknown) and never decreases; the result's Primal is the exact score
// of its Assignment.
func run(t *testing.T, name string, m *model.Model, opts Options, lower, mapv float64) (solver.Result, Stats) {
	t.Helper()
	opts.ProgressEvery = 0
	prevTrace := math.Inf(1)
	var traceErr string
	opts.trace = func(phase string, q float64) {
		if traceErr != "" {
			return
		}
		if q < lower-slack(lower) {
			traceErr = phase + ": dual below the bound"
		}
		if q > prevTrace+1e-12*(1+math.Abs(q)) {
			traceErr = phase + ": dual increased"
		}
		prevTrace = q
	}
	prev := solver.Progress{Dual: math.Inf(1), Primal: math.Inf(-1)}
	reports := 0
	res, st, err := SolveStats(context.Background(), m, nil, opts, func(p solver.Progress) {
		reports++
		switch {
		case p.Dual < lower-slack(lower):
			t.Errorf("%s: report %d: dual %v below %v", name, reports, p.Dual, lower)
		case p.Primal > mapv+slack(mapv):
			t.Errorf("%s: report %d: primal %v above the MAP score %v", name, reports, p.Primal, mapv)
		case p.Dual > prev.Dual || p.Primal < prev.Primal:
			t.Errorf("%s: report %d: dual %v -> %v, primal %v -> %v", name, reports, prev.Dual, p.Dual, prev.Primal, p.Primal)
		}
		prev = p
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if traceErr != "" {
		t.Errorf("%s: %s", name, traceErr)
	}
	if res.Status == solver.Infeasible {
		if !math.IsInf(mapv, -1) {
			t.Errorf("%s: infeasible, MAP %v", name, mapv)
		}
		return res, st
	}
	if reports == 0 {
		t.Errorf("%s: no progress report", name)
	}
	if res.Assignment != nil {
		if s := m.Score(res.Assignment); s != res.Primal {
			t.Errorf("%s: primal %v, score of the assignment %v", name, res.Primal, s)
		}
	} else if !math.IsInf(res.Primal, -1) {
		t.Errorf("%s: primal %v without an assignment", name, res.Primal)
	}
	if res.Dual < lower-slack(lower) || res.Primal > mapv+slack(mapv) {
		t.Errorf("%s: dual %v (bound %v), primal %v (bound %v)", name, res.Dual, lower, res.Primal, mapv)
	}
	if res.Status == solver.Optimal && !(res.Primal >= mapv-2*opts.Tol*max(1, math.Abs(mapv))-slack(mapv)) {
		t.Errorf("%s: optimal with primal %v, MAP %v", name, res.Primal, mapv)
	}
	if res.Relaxed > res.Dual+slack(res.Dual) || res.Relaxed < res.Primal {
		t.Errorf("%s: relaxed %v outside [primal %v, dual %v]", name, res.Relaxed, res.Primal, res.Dual)
	}
	return res, st
}

// TestRandomTinyBounds runs both modes on random tiny models of every
// factor kind (hard constraints, forbidden states, logic factors of arity up
// to 4, dense factors of arity up to 3, some infeasible) against brute
// force: the dual bounds the MAP score from above at every iterate and every
// report, never increases, and also bounds the LP optimum.
func TestRandomTinyBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 7))
	n := 150
	if testing.Short() {
		n = 40
	}
	for it := range n {
		m := oracle.RandomTinyModel(rng, oracle.TinyOptions{AllowInfeasible: it%5 == 4, IntegerWeights: it%3 == 2})
		mapv, _ := oracle.BruteMAP(t, m)
		lpv := oracle.LP(t, m)
		for _, eps := range []bool{false, true} {
			o := DefaultOptions()
			o.EpsDescent = eps
			res, _ := run(t, "tiny", m, o, lpv, mapv)
			if eps && !math.IsInf(lpv, -1) && !relClose(res.Dual, lpv, 1e-4) {
				t.Errorf("model %d: eps-descent dual %v, LP %v (%s)", it, res.Dual, lpv, res.Status)
			}
		}
	}
}

// TestEpsDescentReachesLP checks that eps-descent ends at the optimum of
// the local-polytope LP (oracle.LocalPolytopeLP, gonum's simplex) within
// 1e-4 relative, dual and Relaxed both, on small models where plain convex
// max-product may stop short: random tiny models (every kind, hard
// constraints), random dense factors of arity 3, 3x3 grids with random
// tables, 4x4 spin glasses, frustrated cycles, and a Sequence factor inside
// cycles. It also counts the models where plain convex max-product stopped
// above the LP (some must, or the test shows nothing).
func TestEpsDescentReachesLP(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 9))
	type gen struct {
		name  string
		count int
		make  func() *model.Model
	}
	gens := []gen{
		{"tiny", 60, func() *model.Model { return oracle.RandomTinyModel(rng, oracle.TinyOptions{}) }},
		{"ternary", 20, func() *model.Model {
			return oracle.RandomTinyModel(rng, oracle.TinyOptions{Kinds: []model.Kind{model.Dense}, MaxVars: 7, MaxFactors: 9, Soft: true})
		}},
		{"grid3x3", 12, func() *model.Model { return spinGlass(rng, 3, 3, true) }},
		{"spinglass4x4", 12, func() *model.Model { return spinGlass(rng, 4, 3, false) }},
		{"ring", 15, func() *model.Model { return ring(rng, 3+rng.IntN(5), 3) }},
		{"sequence", 8, func() *model.Model { return withSequence(rng) }},
		{"integer", 40, func() *model.Model { return integerModel(rng) }},
	}
	stuck := 0
	for _, g := range gens {
		before := stuck
		count := g.count
		if testing.Short() {
			count = (count + 3) / 4
		}
		for it := range count {
			m := g.make()
			lpv := oracle.LP(t, m)
			mapv, _, err := oracle.BruteForceMAP(m)
			if err != nil {
				mapv = lpv // too big to enumerate: the LP bounds the primal
			}
			o := DefaultOptions()
			plain, _ := run(t, g.name, m, o, lpv, mapv)
			if plain.Dual > lpv+1e-3*max(1, math.Abs(lpv)) {
				stuck++
			}
			o.EpsDescent = true
			res, st := run(t, g.name, m, o, lpv, mapv)
			if !relClose(res.Dual, lpv, 1e-4) || !relClose(res.Relaxed, lpv, 1e-4) {
				t.Errorf("%s %d: eps-descent dual %v relaxed %v, LP %v (plain %v; %s, %+v)", g.name, it, res.Dual, res.Relaxed, lpv, plain.Dual, res.Status, st)
			}
			if res.Dual > plain.Dual && !relClose(res.Dual, plain.Dual, 1e-6) {
				t.Errorf("%s %d: eps-descent dual %v above plain %v", g.name, it, res.Dual, plain.Dual)
			}
		}
		t.Logf("%s: plain convex max-product stopped above the LP on %d of %d", g.name, stuck-before, count)
	}
	if stuck == 0 {
		t.Error("plain convex max-product reached the LP everywhere: the models are too easy to show anything")
	}
}

// integerModel returns a 3-state model with integer unaries in [-2, 2] on a
// small cyclic graph (triangle, square, K4 or 2x3 grid), each edge a table
// w*(+1 diagonal, -1 off it) with w in [-3, 3]. Ties make convex
// max-product stop in corners often.
func integerModel(rng *rand.Rand) *model.Model {
	graphs := [][][2]int{
		{{0, 1}, {1, 2}, {0, 2}},
		{{0, 1}, {1, 2}, {2, 3}, {0, 3}},
		{{0, 1}, {1, 2}, {2, 3}, {0, 3}, {0, 2}, {1, 3}},
		{{0, 1}, {1, 2}, {3, 4}, {4, 5}, {0, 3}, {1, 4}, {2, 5}},
	}
	edges := graphs[rng.IntN(len(graphs))]
	n := 0
	for _, e := range edges {
		n = max(n, e[1]+1)
	}
	cards := make([]int, n)
	for i := range cards {
		cards[i] = 3
	}
	m := model.New(cards)
	for j := range m.Unary {
		m.Unary[j] = float64(rng.IntN(5) - 2)
	}
	for _, e := range edges {
		w := float64(rng.IntN(7) - 3)
		tab := make([]float64, 9)
		for j := range tab {
			tab[j] = -w
			if j/3 == j%3 {
				tab[j] = w
			}
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{e[0], e[1]}, Table: tab})
	}
	return m
}

// frustratedTriangle is a regression case: three 3-state variables on a
// frustrated cycle (two attractive edges, one repulsive), integer weights.
// Its MAP score is 3 and its LP optimum 4 (fractional); convex max-product
// from lam = 0 stops at dual 5, a corner of the dual that block coordinate
// descent cannot leave.
func frustratedTriangle() *model.Model {
	m := model.New([]int{3, 3, 3})
	copy(m.Unary, []float64{-1, -1, -1, 1, 1, 0, -2, 0, -1})
	potts := func(u, v int, w float64) model.Factor {
		t := make([]float64, 9)
		for j := range t {
			t[j] = -w
			if j/3 == j%3 {
				t[j] = w
			}
		}
		return model.Factor{Kind: model.Dense, Vars: []int{u, v}, Table: t}
	}
	m.Factors = []model.Factor{potts(0, 1, 2), potts(1, 2, 1), potts(0, 2, -2)}
	return m
}

func TestFrustratedTriangle(t *testing.T) {
	m := frustratedTriangle()
	mapv, _, _ := oracle.BruteForceMAP(m)
	lpv, _ := oracle.LocalPolytopeLP(m)
	if mapv != 3 || math.Abs(lpv-4) > 1e-9 {
		t.Fatalf("MAP %v, LP %v: the fixture changed", mapv, lpv)
	}
	o := DefaultOptions()
	plain, st0 := run(t, "plain", m, o, lpv, mapv)
	if plain.Status != solver.Converged || !(plain.Dual > lpv+0.5) {
		t.Errorf("plain convex max-product: %s at dual %v (LP %v): the corner is gone", plain.Status, plain.Dual, lpv)
	}
	if !relClose(st0.StallDual, plain.Dual, 1e-12) {
		t.Errorf("stall dual %v, result dual %v", st0.StallDual, plain.Dual)
	}
	o.EpsDescent = true
	res, st := run(t, "eps", m, o, lpv, mapv)
	if !relClose(res.Dual, lpv, 1e-6) || !relClose(res.Relaxed, lpv, 1e-6) || res.Primal != mapv {
		t.Errorf("eps-descent: dual %v relaxed %v primal %v; want LP %v, MAP %v (%s, %+v)", res.Dual, res.Relaxed, res.Primal, lpv, mapv, res.Status, st)
	}
	if st.EpsSteps == 0 || st.Residual > 1e-6 {
		t.Errorf("eps-descent: %+v", st)
	}
}

func TestErrorsAndLimits(t *testing.T) {
	ctx := context.Background()
	// A factor larger than MaxTable.
	m := model.New([]int{4, 4, 4, 4, 4, 4})
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0, 1, 2, 3, 4, 5}, Table: make([]float64, 4096)}}
	o := DefaultOptions()
	o.MaxTable = 1000
	if _, err := Solve(ctx, m, nil, o, nil); err == nil || !strings.Contains(err.Error(), "MaxTable") {
		t.Errorf("table of 4096 entries with MaxTable 1000: %v", err)
	}
	o.MaxTable = 4096
	if res, err := Solve(ctx, m, nil, o, nil); err != nil || res.Status != solver.Optimal {
		t.Errorf("table of 4096 entries with MaxTable 4096: %v, %v", res.Status, err)
	}
	// A logic factor too big to tabulate.
	m = model.New(make([]int, 30))
	for i := range m.Cards {
		m.Cards[i] = 2
	}
	m = model.New(m.Cards)
	vars := make([]int, 30)
	for i := range vars {
		vars[i] = i
	}
	m.Factors = []model.Factor{{Kind: model.AtMostOne, Vars: vars}}
	if _, err := Solve(ctx, m, nil, DefaultOptions(), nil); err == nil || !strings.Contains(err.Error(), "atmostone") {
		t.Errorf("logic factor over 30 variables: %v", err)
	}
	// Bad options, bad model.
	bad := []func(*Options){
		func(o *Options) { o.MaxIter = 0 },
		func(o *Options) { o.Tol = math.NaN() },
		func(o *Options) { o.EpsDescent, o.EpsMin = true, 0 },
		func(o *Options) { o.EpsDescent, o.Eps0 = true, 1e-9 },
		func(o *Options) { o.EpsDescent, o.EpsShrink = true, 1 },
		func(o *Options) { o.QPIters = 0 },
	}
	small := frustratedTriangle()
	for k, f := range bad {
		o := DefaultOptions()
		f(&o)
		if _, err := Solve(ctx, small, nil, o, nil); err == nil {
			t.Errorf("bad options %d: no error", k)
		}
	}
	invalid := model.New([]int{2, 2})
	invalid.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0, 1}, Table: []float64{1}}}
	if _, err := Solve(ctx, invalid, nil, DefaultOptions(), nil); err == nil {
		t.Error("invalid model: no error")
	}
	// Infeasible: every state forbidden, or a factor forbidding everything
	// (found by arc consistency after Reduce).
	m = model.New([]int{2, 2})
	m.Unary[0], m.Unary[1] = math.Inf(-1), math.Inf(-1)
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0, 1}, Table: make([]float64, 4)}}
	if res, err := Solve(ctx, m, nil, DefaultOptions(), nil); err != nil || res.Status != solver.Infeasible {
		t.Errorf("no allowed state: %v, %v", res.Status, err)
	}
	m = model.New([]int{2, 2, 2})
	inf := math.Inf(-1)
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{0, 1}, Table: []float64{0, inf, inf, 0}},   // x0 == x1
		{Kind: model.Dense, Vars: []int{1, 2}, Table: []float64{0, inf, inf, 0}},   // x1 == x2
		{Kind: model.Dense, Vars: []int{0, 2}, Table: []float64{inf, 0, inf, inf}}, // x0=0, x2=1
	}
	if res, err := Solve(ctx, m, nil, DefaultOptions(), nil); err != nil || res.Status != solver.Infeasible {
		t.Errorf("arc-inconsistent constraints: %v, %v", res.Status, err)
	}
	// Limits.
	big := spinGlass(rand.New(rand.NewPCG(5, 5)), 12, 3, false)
	o = DefaultOptions()
	o.EpsDescent = true
	o.MaxIter = 3
	if res, _ := Solve(ctx, big, nil, o, nil); res.Status != solver.IterationLimit || res.Iterations != 3 {
		t.Errorf("MaxIter 3: %s after %d iterations", res.Status, res.Iterations)
	}
	o = DefaultOptions()
	o.EpsDescent = true
	o.TimeLimit = 20 * time.Millisecond
	start := time.Now()
	if res, _ := Solve(ctx, big, nil, o, nil); res.Status != solver.TimeLimit && res.Status != solver.Converged && res.Status != solver.Optimal {
		t.Errorf("time limit: %s", res.Status)
	} else if el := time.Since(start); el > 2*time.Second {
		t.Errorf("time limit 20ms: ran %v", el)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if res, _ := Solve(cctx, big, nil, o, nil); res.Status != solver.Interrupted || res.Assignment == nil || res.Primal != big.Score(res.Assignment) {
		t.Errorf("cancelled: %s, primal %v", res.Status, res.Primal)
	}
	// No factors: the unaries alone, solved at once.
	m = model.New([]int{3, 1, 2})
	copy(m.Unary, []float64{1, 3, 2, -1, 0.5, -4})
	m.Constant = 2
	if res, err := Solve(ctx, m, nil, DefaultOptions(), nil); err != nil || res.Status != solver.Optimal || res.Primal != 4.5 || res.Dual != 4.5 {
		t.Errorf("no factors: %+v, %v", res, err)
	}
}
