package consensus

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/solver"
)

// Alg. 1 with every step rule: the best dual is an upper bound at every
// iterate and never increases; a result reported optimal is the MAP.
func TestSubgradientStepRules(t *testing.T) {
	for _, rule := range []StepRule{Polyak, Diminishing, InvSqrt} {
		t.Run(string(rule), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			optimal := 0
			for it := 0; it < 100; it++ {
				m := oracle.RandomTinyModel(rng, oracle.TinyOptions{})
				best, _ := oracle.BruteMAP(t, m)
				opts := DefaultOptions()
				opts.Algo = Subgradient
				opts.Step = rule
				opts.Eta = 1
				opts.MaxIter = 500
				res := solve(t, m, opts)
				if math.IsInf(best, -1) {
					continue
				}
				if res.Dual < best-1e-9*math.Max(1, math.Abs(best)) {
					t.Fatalf("model %d: dual %.12g below the MAP %.12g", it, res.Dual, best)
				}
				if res.Assignment != nil && m.Score(res.Assignment) != res.Primal {
					t.Fatalf("model %d: primal is not the assignment's score", it)
				}
				if res.Status == solver.Optimal {
					optimal++
					if !relClose(res.Primal, best, 1e-6) {
						t.Fatalf("model %d: optimal %.12g, MAP %.12g", it, res.Primal, best)
					}
				}
			}
			if optimal < 25 {
				t.Errorf("only %d of 100 certified optimal", optimal)
			}
		})
	}
}

// On a tree-structured (chain) model the LP is tight: DD-subgradient with
// Polyak steps must close the gap.
func TestSubgradientClosesGapOnChain(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 1, Width: 30, Labels: 4, Rho: 2, Seed: 3})
	opts := DefaultOptions()
	opts.Algo = Subgradient
	opts.Eta = 1
	opts.MaxIter = 5000
	opts.Tol = 1e-6
	res := solve(t, m, opts)
	if res.Status != solver.Optimal {
		t.Errorf("status %s after %d iterations, gap %g", res.Status, res.Iterations, res.Gap)
	}
}
