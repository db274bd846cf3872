package anytime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/model"
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
