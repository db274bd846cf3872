package launch

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/generate"
)

// TestShardedTRWS: a sharded run with no algorithm given runs distributed
// TRW-S on a pairwise grid, as solve would choose, says why, and reports
// a dual above its primal, the exact score of the assignment it returns.
func TestShardedTRWS(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 8, Width: 9, Labels: 3, Rho: 0.5, Seed: 7})
	path := writeDDX(t, t.TempDir(), m)
	tr := workers(t, 2)
	s := engine.Defaults()
	s.Distributed, s.MaxIter, s.Tol = true, 150, 0
	s.Given = map[string]bool{"max-iter": true, "tol": true}
	j, err := engine.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	h := Hooks{Hooks: engine.Hooks{Print: func(_, text string, _ ...any) { lines = append(lines, text) }}}
	o, err := Run(context.Background(), j, Target{Workers: 2, Transport: tr, Job: "grid", Sharded: &Sharded{Path: path}, Assignment: true}, h)
	if err != nil {
		t.Fatal(err)
	}
	r := o.Report
	if r.Algo != "trws" || !strings.Contains(r.Why, "pairwise") || len(lines) == 0 || !strings.HasPrefix(lines[0], "algorithm: trws") {
		t.Fatalf("algorithm %s (%q), lines %q", r.Algo, r.Why, lines)
	}
	if r.Primal == nil || r.Dual == nil || *r.Dual < *r.Primal-1e-9 || len(r.Assignment) != m.NumVars() {
		t.Fatalf("report %+v", r)
	}
	if sc := m.Score(r.Assignment); math.Abs(sc-*r.Primal) > 1e-9*math.Max(1, math.Abs(sc)) {
		t.Errorf("primal %v, the assignment scores %v", *r.Primal, sc)
	}
	if r.Iterations < 1 || r.Iterations > 150 || r.Workers != 2 || r.Sharded == nil || r.Sharded.CoordinatorRSSMB <= 0 {
		t.Errorf("report %+v (sharded %+v)", r, r.Sharded)
	}
}
