package convexmp

import (
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
)

// TestLogicModels runs eps-descent on generate.Logic models (every logic
// kind, arity up to 6, feasible by construction) against the simplex LP and
// brute force: the high-order factors go through model.DenseTable.
func TestLogicModels(t *testing.T) {
	n := 6
	if testing.Short() {
		n = 2
	}
	for seed := range n {
		m := generate.Logic(generate.LogicOptions{Vars: 12, Factors: 8, Couplings: 10, MaxArity: 6, Rho: 1, Seed: int64(seed)})
		lpv := oracle.LP(t, m)
		mapv, _ := oracle.BruteMAP(t, m)
		o := DefaultOptions()
		o.EpsDescent = true
		res, st := run(t, "logic", m, o, lpv, mapv)
		if !relClose(res.Dual, lpv, 1e-4) || !relClose(res.Relaxed, lpv, 1e-4) {
			t.Errorf("seed %d: dual %v relaxed %v, LP %v, MAP %v (%s, %+v)", seed, res.Dual, res.Relaxed, lpv, mapv, res.Status, st)
		}
	}
}
