package consensus

import (
	"math"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/solver"
)

// Coarse decompositions with exact slaves have the same LP relaxation as the
// factor decomposition (each chain or tree slave is solved over its own
// marginal polytope, which the local polytope describes exactly on a tree):
// DD-ADMM must converge to the same LP optimum, computed by gonum's simplex.
func TestCoarseSlavesReachTheSameLP(t *testing.T) {
	models := seededGrids(3,
		gridCase{generate.Potts, generate.GridOptions{Height: 3, Width: 3, Labels: 3, Rho: 2}},
		gridCase{generate.Ising, generate.GridOptions{Height: 3, Width: 4, Rho: 3}})
	checkReachesLP(t, models, []Decomposition{Chains, Trees}, nil)
}

// DD-subgradient with chain slaves on a model whose chains cover it with a
// tight relaxation (a single chain) must close the gap at the first
// iteration; on grids its best dual must stay a valid bound.
func TestSubgradientWithCoarseSlaves(t *testing.T) {
	chain := generate.Potts(generate.GridOptions{Height: 1, Width: 40, Labels: 5, Rho: 3, Seed: 2})
	opts := DefaultOptions()
	opts.Algo = Subgradient
	opts.Eta = 1
	opts.Slaves = Chains
	res := solve(t, chain, opts)
	if res.Status != solver.Optimal || res.Iterations != 1 {
		t.Errorf("one-chain model: %s after %d iterations", res.Status, res.Iterations)
	}
	grid := generate.Potts(generate.GridOptions{Height: 4, Width: 4, Labels: 2, Rho: 2, Seed: 4})
	best, _ := oracle.BruteMAP(t, grid)
	for _, d := range []Decomposition{Chains, Trees} {
		opts.Slaves = d
		opts.MaxIter = 300
		res := solve(t, grid, opts)
		if res.Dual < best-1e-9*math.Max(1, math.Abs(best)) || res.Primal > best+1e-9 {
			t.Errorf("%s: dual %v primal %v, MAP %v", d, res.Dual, res.Primal, best)
		}
	}
}
