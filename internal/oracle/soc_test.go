package oracle

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// relaxations returns the local polytope's optimum, LP-S + SOC's and the
// MAP score of m.
func relaxations(t *testing.T, m *model.Model) (lpv, soc, mapv float64, st SOCStats) {
	t.Helper()
	soc, st, err := LocalSOC(m)
	if err != nil {
		t.Fatal(err)
	}
	mapv, _ = BruteMAP(t, m)
	return LP(t, m), soc, mapv, st
}

// TestSOCFrustratedTriangle: the example, local polytope 3,
// LP-S + SOC 2.25, MAP 2.
func TestSOCFrustratedTriangle(t *testing.T) {
	lpv, soc, mapv, st := relaxations(t, FrustratedTriangle())
	if !near(lpv, 3) || math.Abs(soc-2.25) > 1e-7 || mapv != 2 {
		t.Fatalf("local polytope %v (want 3), LP-S + SOC %v (want 2.25), MAP %v (want 2)", lpv, soc, mapv)
	}
	if st.Triangles != 1 || st.Cuts == 0 {
		t.Errorf("stats %+v: want one triangle and some cuts", st)
	}
	// Two factors on one pair are summed: splitting a coupling in halves
	// changes nothing.
	m2 := FrustratedTriangle()
	m2.Factors[0].Table = []float64{0, 0.5, 0.5, 0}
	m2.Factors = append(m2.Factors, model.Factor{Kind: model.Dense, Vars: []int{1, 0}, Table: []float64{0, 0.5, 0.5, 0}})
	if soc2, _, err := LocalSOC(m2); err != nil || math.Abs(soc2-2.25) > 1e-7 {
		t.Errorf("split coupling: LP-S + SOC %v (%v), want 2.25", soc2, err)
	}
}

// TestSOCBetweenMAPAndLP: on complete graphs and triangulated grids with 2
// and 3 labels, MAP <= LP-S + SOC <= LP-S, and SOC is strictly tighter on
// some of them; without triangles (a chain) it is the local polytope.
func TestSOCBetweenMAPAndLP(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	tighter := 0
	for _, c := range []struct{ h, w, labels int }{
		{0, 4, 2}, {0, 4, 3}, {0, 5, 2}, {0, 5, 3}, {3, 3, 2}, {3, 3, 3}, {2, 4, 2},
	} {
		lpv, soc, mapv, st := relaxations(t, SOCTestModel(rng, c.h, c.w, c.labels))
		t.Logf("%dx%d, %d labels: %d triangles, %d cuts in %d rounds: LP %.6f SOC %.6f MAP %.6f", c.h, c.w, c.labels, st.Triangles, st.Cuts, st.Rounds, lpv, soc, mapv)
		if soc > lpv+1e-7 || soc < mapv-1e-7 {
			t.Errorf("%+v: LP-S + SOC %v not in [MAP %v, LP %v]", c, soc, mapv, lpv)
		}
		if soc < lpv-1e-6 {
			tighter++
		}
	}
	if tighter == 0 {
		t.Error("SOC never tighter than the local polytope")
	}
	chain := model.New([]int{2, 2, 2})
	chain.Factors = FrustratedTriangle().Factors[:2]
	lpv, _ := LocalPolytopeLP(chain)
	soc, st, err := LocalSOC(chain)
	if err != nil || st.Triangles != 0 || !near(lpv, soc) {
		t.Errorf("chain: SOC %v (%+v, %v), LP %v", soc, st, err, lpv)
	}
}
