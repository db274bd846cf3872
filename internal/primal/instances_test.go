package primal

import (
	"context"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/oracle"
)

// The pedigree and linkage models (deterministic CPTs: mostly zeros) get a
// feasible assignment, never above the best known score.
func TestPedigreeFeasible(t *testing.T) {
	for _, c := range []struct {
		file string
		best float64 // OPTIMA.tsv's best_known (proven)
	}{{"pedigree/Pedigree_11.uai", -65.744317240}, {"pedigree/linkage_16.uai", -143.662079668}} {
		m, ev := oracle.Instance(t, c.file)
		start := time.Now()
		r := NewSearcher(m).Run(context.Background(), nil, Options{Evidence: ev, Neighbourhoods: 200, TimeLimit: 5 * time.Second})
		if !r.OK {
			t.Fatalf("%s: no feasible assignment (%d nodes)", c.file, r.Nodes)
		}
		if r.Score != m.Score(r.X) || r.Score > c.best+1e-6 {
			t.Fatalf("%s: score %v, assignment scores %v, optimum %v", c.file, r.Score, m.Score(r.X), c.best)
		}
		for v, s := range ev {
			if r.X[v] != s {
				t.Fatalf("%s: evidence x%d=%d, got %d", c.file, v, s, r.X[v])
			}
		}
		t.Logf("%s: %v (optimum %v) in %v, %d nodes", c.file, r.Score, c.best, time.Since(start), r.Nodes)
	}
}
