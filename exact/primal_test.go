package exact

import (
	"context"
	"math"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// A dual-only solver (a valid bound, never an assignment) on Pedigree_11:
// the incumbent comes from the primal search after the root alone, feasible, the
// exact score of its assignment, under the evidence and not above the
// proven optimum.
func TestExactRootIncumbentPedigree(t *testing.T) {
	m, ev := oracle.Instance(t, "pedigree/Pedigree_11.uai")
	dualOnly := func(ctx context.Context, m *model.Model, ev model.Evidence) (solver.Result, error) {
		return solver.Result{Dual: math.Inf(1), Primal: math.Inf(-1)}, nil
	}
	res, _, err := Solve(context.Background(), m, ev, dualOnly, Options{MaxNodes: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const optimum = -65.744317240
	if res.Assignment == nil || math.IsInf(res.Primal, -1) {
		t.Fatal("no incumbent")
	}
	if sc := m.Score(res.Assignment); sc != res.Primal || sc > optimum+1e-6 {
		t.Fatalf("primal %v, assignment scores %v, optimum %v", res.Primal, sc, optimum)
	}
	for v, s := range ev {
		if res.Assignment[v] != s {
			t.Fatalf("evidence x%d=%d, got %d", v, s, res.Assignment[v])
		}
	}
	t.Logf("root incumbent %.4f (optimum %.4f)", res.Primal, optimum)
}
