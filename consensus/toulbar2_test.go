package consensus

import (
	"math"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/solver"
)

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
