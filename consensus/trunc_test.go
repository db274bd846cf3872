package consensus

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

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
