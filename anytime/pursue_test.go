package anytime

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// The pursuit tightening on frustrated grids: it adds cycles, every
// phase's bound stays at or above the brute-force MAP, the primal is its
// assignment's score, and an unknown mode is an option error.
func TestPursueTighteningIsValid(t *testing.T) {
	pursued := 0
	onFrustratedGrids(t, func(_ int64, relax Relaxation, m *model.Model, best float64) {
		o := DefaultOptions()
		o.Relax, o.MaxIter, o.TightenBy, o.NoSearch = relax, 2000, Pursue, true
		o.TimeLimit = 5 * time.Second
		res, err := Solve(context.Background(), m, nil, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkRun(t, string(relax), m, res, best)
		for _, p := range res.Phases {
			if p.Phase == Tighten && strings.Contains(p.About, "frustrated cycles") && p.Status != "skipped" {
				pursued++
			}
		}
	})
	if pursued == 0 {
		t.Error("no run pursued a cycle")
	}
	o := DefaultOptions()
	o.TightenBy = "everything"
	if err := o.Validate(); err == nil {
		t.Error("unknown tightening: no error")
	}
}

// After TRW-S on a frustrated grid, with Tol 0 and a time limit: the
// relaxation ends at its bound's stall (Converged, long before the limit),
// and the tightening is DD-ADMM on the grid's square factors, whose bound
// is below TRW-S's stalled one (TRW-S(LP-C) left it where it was) and
// still above the true MAP (toulbar2's on this model is not needed: the
// primal bounds the MAP from below, so a valid bound is at least it).
func TestTightenAfterTRWSOnFrustratedGrid(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 16, Width: 16, Labels: 4, Rho: 2, Seed: 3})
	o := DefaultOptions()
	o.Relax, o.Tol, o.NoSearch = TRWS, 0, true
	o.TimeLimit = 4 * time.Second
	res, err := Solve(context.Background(), m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Phases) < 2 || res.Phases[0].Phase != Relax || res.Phases[1].Phase != Tighten {
		t.Fatalf("phases %+v, want relax then tighten", res.Phases)
	}
	relax, tight := res.Phases[0], res.Phases[1]
	if relax.Status != solver.Converged {
		t.Errorf("relax phase ended %s after %d iterations, want converged at the stall", relax.Status, relax.Iterations)
	}
	if !strings.Contains(tight.About, "DD-ADMM") {
		t.Errorf("tighten phase ran %q, want DD-ADMM on cycle factors", tight.About)
	}
	if !(tight.Dual < relax.Dual-1e-3*math.Abs(relax.Dual)) {
		t.Errorf("tighten bound %v, not below TRW-S's %v by 0.1%%", tight.Dual, relax.Dual)
	}
	if res.Dual < res.Primal-1e-9 || m.Score(res.Assignment) != res.Primal {
		t.Errorf("bound %v below the primal %v, or the primal is not its assignment's score", res.Dual, res.Primal)
	}
	t.Logf("TRW-S %.6g (%d iterations), cycles %.6g, primal %.6g", relax.Dual, relax.Iterations, tight.Dual, res.Primal)
}
