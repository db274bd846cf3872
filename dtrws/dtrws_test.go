package dtrws

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trws"
)

func testOpts(parts, iters int) Options {
	o := DefaultOptions()
	o.Parts, o.Threads, o.MaxIter, o.Tol, o.ProgressEvery = parts, 2, iters, 0, 0
	return o
}

// tinyPairwise draws a tiny model of Dense, Pair and Potts factors over at
// most two variables (what TRW-S takes).
func tinyPairwise(rng *rand.Rand, soft bool) *model.Model {
	return oracle.PairwiseOnly(oracle.RandomTinyModel(rng, oracle.TinyOptions{MaxVars: 8, MaxCard: 3, Soft: soft,
		Kinds: []model.Kind{model.Dense, model.Pair, model.Potts}}))
}

// solveChecked runs Solve and checks, at every progress report, that the
// dual is >= the MAP score mapv >= the primal, and that the result's
// assignment scores its primal on m.
func solveChecked(t *testing.T, m *model.Model, o Options, mapv float64) solver.Result {
	t.Helper()
	tol := 1e-9 * math.Max(1, math.Abs(mapv))
	res, err := Solve(context.Background(), m, nil, o, func(p solver.Progress) {
		if p.Dual < mapv-tol {
			t.Errorf("%d parts, iteration %d: dual %v below the MAP %v", o.Parts, p.Iteration, p.Dual, mapv)
		}
		if p.Primal > mapv+tol {
			t.Errorf("%d parts, iteration %d: primal %v above the MAP %v", o.Parts, p.Iteration, p.Primal, mapv)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dual < mapv-tol || res.Primal > mapv+tol {
		t.Errorf("%d parts: dual %v, primal %v around the MAP %v", o.Parts, res.Dual, res.Primal, mapv)
	}
	if !math.IsInf(res.Primal, -1) {
		if sc := m.Score(res.Assignment); math.Abs(sc-res.Primal) > tol {
			t.Errorf("%d parts: primal %v but its assignment scores %v", o.Parts, res.Primal, sc)
		}
	}
	return res
}

func TestBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 26))
	optimal := 0
	for it := range 120 {
		m := tinyPairwise(rng, it%2 == 0)
		mapv, _ := oracle.BruteMAP(t, m)
		for parts := 1; parts <= 4; parts++ {
			res := solveChecked(t, m, testOpts(parts, 200), mapv)
			if math.Abs(res.Primal-mapv) <= 1e-9*math.Max(1, math.Abs(mapv)) {
				optimal++
			}
		}
	}
	if optimal < 300 { // of 480 runs
		t.Errorf("only %d of 480 runs found the MAP", optimal)
	}
}

// binaryModels are small binary models: Ising grids of both signs and
// random tiny binary models.
func binaryModels() []*model.Model {
	var ms []*model.Model
	for seed := int64(1); seed <= 6; seed++ {
		ms = append(ms, generate.Ising(generate.GridOptions{Height: 3, Width: 4, Rho: 1.5, Seed: seed}))
	}
	rng := rand.New(rand.NewPCG(7, 26))
	for range 10 {
		ms = append(ms, oracle.PairwiseOnly(oracle.RandomTinyModel(rng, oracle.TinyOptions{MaxVars: 8, MaxCard: 2, Soft: true,
			Kinds: []model.Kind{model.Dense, model.Pair, model.Potts}})))
	}
	return ms
}

func TestLocalPolytope(t *testing.T) {
	reached := 0
	for k, m := range binaryModels() {
		lp := oracle.LP(t, m)
		mapv, _ := oracle.BruteMAP(t, m)
		to := trws.DefaultOptions()
		to.MaxIter, to.Tol = 3000, 0
		plain, err := trws.Solve(context.Background(), m, nil, to, nil)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(plain.Dual-lp) > 1e-6 {
			continue // TRW-S stops at weak tree agreement above the LP here
		}
		reached++
		for parts := 1; parts <= 4; parts++ {
			res := solveChecked(t, m, testOpts(parts, 3000), mapv)
			if math.Abs(res.Dual-lp) > 1e-6 {
				t.Errorf("model %d, %d parts: dual %v, LP optimum %v (TRW-S %v)", k, parts, res.Dual, lp, plain.Dual)
			}
		}
	}
	if reached < 8 {
		t.Errorf("TRW-S reached the LP optimum on only %d models", reached)
	}
}

// TestOnePartIsTRWS: one part is plain TRW-S, bound for bound.
func TestOnePartIsTRWS(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 15, Labels: 4, Rho: 0.5, Seed: 3})
	for _, iters := range []int{1, 7, 60} {
		to := trws.DefaultOptions()
		to.MaxIter, to.Tol = iters, 0
		plain, err := trws.Solve(context.Background(), m, nil, to, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Solve(context.Background(), m, nil, testOpts(1, iters), nil)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(res.Dual-plain.Dual) > 1e-9*math.Abs(plain.Dual) {
			t.Errorf("%d iterations: one part's bound %v, TRW-S's %v", iters, res.Dual, plain.Dual)
		}
	}
}

// TestDeterministic: the results depend on Parts, not on Threads or the run.
func TestDeterministic(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 10, Width: 10, Labels: 3, Rho: 0.5, Seed: 5})
	for parts := 2; parts <= 4; parts++ {
		var first solver.Result
		for i, threads := range []int{1, 2, 4, 1} {
			o := testOpts(parts, 40)
			o.Threads = threads
			res, err := Solve(context.Background(), m, nil, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = res
				continue
			}
			if res.Dual != first.Dual || res.Primal != first.Primal || res.Relaxed != first.Relaxed ||
				!slices.Equal(res.Assignment, first.Assignment) {
				t.Errorf("%d parts, %d threads: dual %v primal %v, first run %v %v", parts, threads, res.Dual, res.Primal, first.Dual, first.Primal)
			}
		}
	}
}

// TestSplitAddsUp: the parts' scores add up to the model's.
func TestSplitAddsUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 26))
	for range 50 {
		m := tinyPairwise(rng, true)
		for k := 1; k <= 4; k++ {
			sp, err := NewSplit(m, k)
			if err != nil {
				t.Fatal(err)
			}
			nf := 0
			for _, pm := range sp.Models {
				nf += len(pm.Factors)
				if err := pm.Validate(); err != nil {
					t.Fatal(err)
				}
			}
			if nf != len(m.Factors) {
				t.Errorf("%d parts hold %d factors of %d", k, nf, len(m.Factors))
			}
			x := make([]int, m.NumVars())
			for v := range x {
				x[v] = rng.IntN(m.Cards[v])
			}
			sum := 0.0
			for p, pm := range sp.Models {
				xl := make([]int, pm.NumVars())
				for i, v := range sp.Vars[p] {
					xl[i] = x[v]
				}
				sum += pm.Score(xl)
			}
			if want := m.Score(x); math.Abs(sum-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("%d parts score %v, model %v", k, sum, want)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	for _, f := range []func(*Options){
		func(o *Options) { o.Parts = 0 },
		func(o *Options) { o.Threads = 0 },
		func(o *Options) { o.Inner = 0 },
		func(o *Options) { o.BoundWindow = 0 },
		func(o *Options) { o.BoundTol = math.NaN() },
		func(o *Options) { o.MaxIter = 0 },
		func(o *Options) { o.Step = 0 },
		func(o *Options) { o.Step = 1.5 },
	} {
		o := DefaultOptions()
		f(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
}

// TestEvidence: evidence is reduced away first, the result is on the
// model; all variables observed leaves nothing to split.
func TestEvidence(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 2, Width: 3, Labels: 3, Rho: 1, Seed: 9})
	all := model.Evidence{}
	for v := range m.NumVars() {
		all[v] = v % 3
	}
	for _, ev := range []model.Evidence{{0: 1, 4: 2}, all} {
		for parts := 1; parts <= 3; parts++ {
			res, err := Solve(context.Background(), m, ev, testOpts(parts, 50), nil)
			if err != nil {
				t.Fatal(err)
			}
			for v, s := range ev {
				if res.Assignment[v] != s {
					t.Errorf("%d parts: variable %d at %d, observed %d", parts, v, res.Assignment[v], s)
				}
			}
			if sc := m.Score(res.Assignment); math.Abs(sc-res.Primal) > 1e-9 || res.Dual < sc-1e-9 {
				t.Errorf("%d parts: primal %v (scores %v), dual %v", parts, res.Primal, sc, res.Dual)
			}
		}
	}
}

// A dual a few ulps below the primal (the same terms summed in other
// orders) is the primal; one below it by more is left for the checks.
func TestRoundGap(t *testing.T) {
	r := solver.Result{Dual: 337.19583 - 3e-13, Primal: 337.19583}
	roundGap(&r)
	if r.Dual != r.Primal || r.Gap != 0 {
		t.Errorf("rounding: dual %v primal %v gap %v", r.Dual, r.Primal, r.Gap)
	}
	r = solver.Result{Dual: 337.1, Primal: 337.19583}
	roundGap(&r)
	if r.Dual != 337.1 || r.Gap >= 0 {
		t.Errorf("a real violation was hidden: dual %v gap %v", r.Dual, r.Gap)
	}
}
