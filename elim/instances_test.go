package elim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/instances"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/solver"
)

// The real instances whose exact elimination fits a test's budget are
// certified at their proven optimum.
func TestInstancesExact(t *testing.T) {
	budget := int64(256 << 20)
	if testing.Short() {
		budget = 16 << 20
	}
	certified := 0
	for _, o := range instances.Optima(t) {
		m, ev := oracle.Instance(t, o.File)
		e, err := EstimateOf(context.Background(), m, ev, budget)
		if err != nil {
			t.Fatalf("%s: %v", o.File, err)
		}
		if !e.Fits || e.Work > 2e9 {
			t.Logf("%s: skipped, %s", o.File, e)
			continue
		}
		opts := DefaultOptions()
		opts.Memory = budget
		start := time.Now()
		res, err := Solve(context.Background(), m, ev, opts, nil)
		if err != nil {
			t.Fatalf("%s: %v", o.File, err)
		}
		if res.Status != solver.Optimal || res.Primal != m.Score(res.Assignment) || res.Dual != res.Primal {
			t.Fatalf("%s: status %s primal %v dual %v", o.File, res.Status, res.Primal, res.Dual)
		}
		if o.Proven && math.Abs(res.Primal-o.Best) > 1e-6*math.Max(1, math.Abs(o.Best)) {
			t.Fatalf("%s: certified %v, proven optimum %v", o.File, res.Primal, o.Best)
		}
		if !o.Proven && (res.Primal < o.Best-1e-6*math.Max(1, math.Abs(o.Best)) || res.Primal > o.Upper+1e-6) {
			t.Fatalf("%s: certified %v outside [best known %v, upper bound %v]", o.File, res.Primal, o.Best, o.Upper)
		}
		certified++
		t.Logf("%s: %v in %v (%s)", o.File, res.Primal, time.Since(start).Round(time.Millisecond), e)
	}
	if certified == 0 {
		t.Fatal("no instance certified")
	}
}

// The mini-bucket search certifies linkage_16 (too wide for exact
// elimination: 37 GiB of tables) at its proven optimum.
func TestInstancesSearch(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	const best = -143.662079668 // OPTIMA.tsv, proven
	m, ev := oracle.Instance(t, "pedigree/linkage_16.uai")
	o := DefaultOptions()
	o.Search, o.Memory, o.TimeLimit = true, 256<<20, 60*time.Second
	res, st, err := SolveStats(context.Background(), m, ev, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Exact || res.Status != solver.Optimal || res.Primal != m.Score(res.Assignment) || math.Abs(res.Primal-best) > 1e-6*math.Abs(best) || res.Dual < best-1e-9 {
		t.Fatalf("status %s primal %v dual %v, optimum %v (stats %+v)", res.Status, res.Primal, res.Dual, best, st)
	}
	t.Logf("linkage_16: %v in %v, %d nodes, mini-buckets of 2^%v", res.Primal, res.Elapsed, st.Nodes, st.Limit)
}
