package tighten

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// The transformation keeps every assignment's score.
func TestCyclesKeepScores(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	models := []*model.Model{
		generate.Potts(generate.GridOptions{Height: 4, Width: 5, Labels: 3, Rho: 2, Seed: 1}),
		generate.Ising(generate.GridOptions{Height: 5, Width: 5, Rho: 2, Seed: 2}),
	}
	for k := 0; k < 30; k++ {
		models = append(models, oracle.RandomTinyModel(rng, oracle.TinyOptions{MaxVars: 8, MaxFactors: 16}))
	}
	for i, m := range models {
		out, st, err := Cycles(m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 200; trial++ {
			x := make([]int, m.NumVars())
			for v := range x {
				x[v] = rng.IntN(m.Cards[v])
			}
			a, b := m.Score(x), out.Score(x)
			if !(a == b || math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) || (math.IsInf(a, -1) && math.IsInf(b, -1))) {
				t.Fatalf("model %d: score %v becomes %v", i, a, b)
			}
		}
		if i == 0 && st.Squares != 3*4 {
			t.Errorf("4x5 grid: %d squares, want 12", st.Squares)
		}
	}
}

// On frustrated grids the tightened LP is never looser, sometimes strictly
// tighter, and still an upper bound on the MAP.
func TestCyclesTightenTheBound(t *testing.T) {
	tighter := 0
	for seed := int64(1); seed <= 6; seed++ {
		m := generate.Ising(generate.GridOptions{Height: 3, Width: 4, Rho: 3, Seed: seed})
		best, _ := oracle.BruteMAP(t, m)
		out, _, err := Cycles(m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		lp := oracle.LP(t, m)
		lpC := oracle.LP(t, out)
		if lpC > lp+1e-7 || lpC < best-1e-7 {
			t.Errorf("seed %d: LP %v, with cycles %v, MAP %v", seed, lp, lpC, best)
		}
		if lpC < lp-1e-6 {
			tighter++
		}
		// DD-ADMM on the tightened model reaches the tightened LP.
		opts := consensus.DefaultOptions()
		opts.MaxIter = 20000
		opts.ResidualTol = 1e-8
		opts.Tol = 0
		res, err := consensus.Solve(context.Background(), out, nil, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(res.Dual-lpC) > 1e-4*math.Max(1, math.Abs(lpC)) {
			t.Errorf("seed %d: DD-ADMM dual %v, tightened LP %v", seed, res.Dual, lpC)
		}
		t.Logf("seed %d: MAP %.4f, LP %.4f, cycle LP %.4f, DD-ADMM %.4f", seed, best, lp, lpC, res.Dual)
	}
	if tighter == 0 {
		t.Error("cycles never tightened the LP on frustrated grids")
	}
}
