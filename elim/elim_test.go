package elim

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// addSequence adds a random Sequence factor over distinct variables of m
// (per-position transitions, emissions, occasional -Inf).
func addSequence(rng *rand.Rand, m *model.Model) {
	n := m.NumVars()
	if n < 2 {
		return
	}
	k := 2 + rng.IntN(min(n, 4)-1)
	vars := rng.Perm(n)[:k]
	f := model.Factor{Kind: model.Sequence, Vars: vars}
	for _, v := range vars {
		for range m.Cards[v] {
			f.SetEmission(append(f.EmissionScores(), rng.NormFloat64()))
		}
	}
	for i := 0; i+1 < k; i++ {
		for range m.Cards[vars[i]] * m.Cards[vars[i+1]] {
			w := rng.NormFloat64()
			if rng.IntN(8) == 0 {
				w = math.Inf(-1)
			}
			f.Table = append(f.Table, w)
		}
	}
	m.Factors = append(m.Factors, f)
}

// randomEvidence observes a few variables, at states allowed by their
// unaries.
func randomEvidence(rng *rand.Rand, m *model.Model) model.Evidence {
	ev := model.Evidence{}
	for v := range m.NumVars() {
		if rng.IntN(5) == 0 {
			ev[v] = rng.IntN(m.Cards[v])
		}
	}
	return ev
}

// check solves m under ev with opts and compares with brute force.
func check(t *testing.T, name string, m *model.Model, ev model.Evidence, opts Options) {
	t.Helper()
	want, _, err := oracle.BruteForceMAP(oracle.Clamped(m, ev))
	if err != nil {
		t.Fatalf("%s: brute force: %v", name, err)
	}
	res, err := Solve(context.Background(), m, ev, opts, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if math.IsInf(want, -1) {
		if res.Status != solver.Infeasible || res.Assignment != nil {
			t.Fatalf("%s: infeasible model: status %s, assignment %v", name, res.Status, res.Assignment)
		}
		return
	}
	if res.Status != solver.Optimal || res.Assignment == nil {
		t.Fatalf("%s: status %s, assignment %v; optimum %v", name, res.Status, res.Assignment, want)
	}
	tol := 1e-9 * math.Max(1, math.Abs(want))
	if got := m.Score(res.Assignment); math.Abs(got-want) > tol+opts.Tol*math.Max(1, math.Abs(want)) || got != res.Primal {
		t.Fatalf("%s: primal %v (assignment scores %v), optimum %v", name, res.Primal, got, want)
	}
	if res.Dual < want-tol {
		t.Fatalf("%s: dual %v below the optimum %v", name, res.Dual, want)
	}
	for v, s := range ev {
		if res.Assignment[v] != s {
			t.Fatalf("%s: evidence x%d=%d, got %d", name, v, s, res.Assignment[v])
		}
	}
}

func tinyModels(seed uint64, count int) []*model.Model {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []*model.Model
	kinds := []model.Kind{model.Dense, model.Pair, model.Potts, model.XOR, model.AtMostOne, model.OR,
		model.OROut, model.ANDOut, model.Budget, model.TruncLinear, model.TruncQuad}
	for i := range count {
		o := oracle.TinyOptions{MaxVars: 10, MaxCard: 4, IntegerWeights: i%3 == 0, AllowInfeasible: i%5 == 0}
		if i%2 == 0 {
			o.Kinds = kinds
		}
		m := oracle.RandomTinyModel(rng, o)
		if i%4 == 1 {
			addSequence(rng, m)
		}
		out = append(out, m)
	}
	return out
}

// Exact elimination equals brute force on random models of every kind,
// hard constraints, evidence and infeasible ones included.
func TestExactMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i, m := range tinyModels(1, 400) {
		if err := m.Validate(); err != nil {
			t.Fatalf("model %d: %v", i, err)
		}
		var ev model.Evidence
		if i%3 == 0 {
			ev = randomEvidence(rng, m)
		}
		check(t, "model "+itoa(i), m, ev, DefaultOptions())
	}
}

// The mini-bucket search (forced by a tiny memory budget, so that buckets
// split) equals brute force too, and its root bound is above the optimum.
func TestSearchMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	split := 0
	for i, m := range tinyModels(2, 300) {
		var ev model.Evidence
		if i%3 == 0 {
			ev = randomEvidence(rng, m)
		}
		o := DefaultOptions()
		o.IBound, o.PrimalTime = float64(1+i%4), -1
		if i%2 == 0 {
			o.PrimalTime = 0
		}
		check(t, "model "+itoa(i), m, ev, o)
		_, st, err := SolveStats(context.Background(), m, ev, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Exact && st.Split > 0 {
			split++
		}
		if want, _, _ := oracle.BruteForceMAP(oracle.Clamped(m, ev)); !st.Exact && st.Bound < want-1e-9*math.Max(1, math.Abs(want)) {
			t.Fatalf("model %d: mini-bucket bound %v below the optimum %v", i, st.Bound, want)
		}
	}
	if split < 30 {
		t.Fatalf("only %d of 300 models had split buckets: the test does not test mini-buckets", split)
	}
}

// A budget too small for exact elimination is a *TooLargeError with the
// estimate, unless the search is asked for.
func TestTooLarge(t *testing.T) {
	m := grid(rand.New(rand.NewPCG(1, 1)), 12, 2)
	o := DefaultOptions()
	o.Memory = 1 << 10
	_, err := Solve(context.Background(), m, nil, o, nil)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Estimate.Fits || tl.Estimate.Bytes <= float64(o.Memory) {
		t.Fatalf("error %v, want a TooLargeError with an estimate above the budget", err)
	}
	e, err := EstimateOf(context.Background(), m, nil, DefaultMemory)
	if err != nil || !e.Fits || !e.Complete || e.Width < 12 || e.Width > 16 {
		t.Fatalf("estimate %+v, %v: want a fitting one of width 12..16 on a 12x12 grid", e, err)
	}
}

// A run cancelled before it starts reports no bound and no assignment.
func TestCancelled(t *testing.T) {
	m := grid(rand.New(rand.NewPCG(1, 1)), 10, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Solve(ctx, m, nil, DefaultOptions(), nil)
	if err != nil || res.Status != solver.Interrupted || res.Assignment != nil || !math.IsInf(res.Dual, 1) {
		t.Fatalf("cancelled: %+v, %v", res, err)
	}
}

// The search on a grid too wide for the budget stops at its time limit
// with a valid bound and its best assignment, or proves the optimum.
func TestSearchTimeLimit(t *testing.T) {
	m := grid(rand.New(rand.NewPCG(9, 9)), 30, 2)
	o := DefaultOptions()
	o.Search, o.Memory, o.TimeLimit = true, 1<<16, 300*time.Millisecond
	res, st, err := SolveStats(context.Background(), m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Exact || res.Assignment == nil || res.Dual < res.Primal || res.Dual > st.Bound {
		t.Fatalf("result %s dual %v primal %v, stats %+v", res.Status, res.Dual, res.Primal, st)
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// With Search, exact elimination whose work is over MaxWork is searched
// instead (not exact), and still certifies the brute-force optimum;
// without Search the same options eliminate exactly.
func TestSearchWhenWorkOverMax(t *testing.T) {
	searched := 0
	for i, m := range tinyModels(9, 80) {
		e, err := EstimateOf(context.Background(), m, nil, 1<<30)
		if err != nil || !e.Fits || e.Work < 2 {
			continue
		}
		o := DefaultOptions()
		o.Search, o.MaxWork, o.PrimalTime = true, e.Work-1, -1
		_, st, err := SolveStats(context.Background(), m, nil, o, nil)
		if err != nil {
			continue // no mini-buckets within that work either
		}
		if st.Exact {
			t.Fatalf("model %d: work %v over MaxWork %v eliminated exactly", i, e.Work, o.MaxWork)
		}
		check(t, "model "+itoa(i), m, nil, o)
		searched++
		o.Search = false
		if _, st, err = SolveStats(context.Background(), m, nil, o, nil); err != nil || !st.Exact {
			t.Fatalf("model %d: without Search: exact %v, err %v", i, st.Exact, err)
		}
	}
	if searched < 20 {
		t.Fatalf("only %d of 80 models were searched", searched)
	}
}

// On random grids too large for brute force, exact elimination and the
// mini-bucket search agree with toulbar2.
func TestAgainstToulbar2(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		m := grid(rand.New(rand.NewPCG(seed, 11)), 6, 3)
		want := oracle.Toulbar2(t, m, 30*time.Second)
		for _, ib := range []float64{0, 8} {
			o := DefaultOptions()
			o.IBound, o.Tol = ib, 0
			res, err := Solve(context.Background(), m, nil, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			// toulbar2 rounds costs to 7 decimals while searching.
			if res.Status != solver.Optimal || math.Abs(res.Primal-want) > 1e-5 || res.Dual < want-1e-5 {
				t.Fatalf("seed %d i-bound %v: status %s primal %v dual %v, toulbar2 %v", seed, ib, res.Status, res.Primal, res.Dual, want)
			}
		}
	}
}
