package anytime

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/elim"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// checkRun asserts what every run must show against the brute-force MAP
// best: the final bound and every phase's bound are valid, the primal is
// the exact score of the assignment, and it is at most the MAP.
func checkRun(t *testing.T, name string, m *model.Model, res Result, best float64) {
	t.Helper()
	slack := 1e-6 * math.Max(1, math.Abs(best))
	if res.Dual < best-slack {
		t.Errorf("%s: final dual %v below the MAP %v", name, res.Dual, best)
	}
	for _, p := range res.Phases {
		if !math.IsNaN(p.Dual) && p.Dual < best-slack {
			t.Errorf("%s: phase %s bound %v below the MAP %v", name, p.Phase, p.Dual, best)
		}
	}
	if res.Assignment != nil {
		if sc := m.Score(res.Assignment); sc != res.Primal {
			t.Errorf("%s: primal %v is not its assignment's score %v", name, res.Primal, sc)
		}
	}
	if res.Primal > best+slack {
		t.Errorf("%s: primal %v above the MAP %v", name, res.Primal, best)
	}
}

// isingMAP is a generated Ising grid and its brute-force MAP value.
func isingMAP(t *testing.T, o generate.GridOptions) (*model.Model, float64) {
	t.Helper()
	m := generate.Ising(o)
	best, _ := oracle.BruteMAP(t, m)
	return m, best
}

// onFrustratedGrids calls each on the 4x4 frustrated grids of seeds 1-4
// (the local polytope is loose on them), once for each relaxation.
func onFrustratedGrids(t *testing.T, each func(seed int64, relax Relaxation, m *model.Model, best float64)) {
	t.Helper()
	for seed := int64(1); seed <= 4; seed++ {
		m, best := isingMAP(t, generate.GridOptions{Height: 4, Width: 4, Rho: 2, Seed: seed})
		for _, relax := range []Relaxation{TRWS, ADMM} {
			each(seed, relax, m, best)
		}
	}
}

// On small frustrated grids (the local polytope is loose, TRW-S alone
// stops with a gap) the anytime run certifies the brute-force optimum,
// for both relaxations, and the phases' bounds are valid throughout.
func TestAnytimeCertifiesFrustratedGrids(t *testing.T) {
	gapped := 0
	onFrustratedGrids(t, func(seed int64, relax Relaxation, m *model.Model, best float64) {
		o := DefaultOptions()
		o.Relax, o.MaxIter = relax, 2000
		o.TimeLimit = 20 * time.Second // a safety net: the search ends far sooner
		var starts []Phase
		o.Events = func(e Event) {
			if e.Kind == PhaseStart {
				starts = append(starts, e.Phase)
			}
		}
		res, err := Solve(context.Background(), m, nil, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		name := string(relax)
		checkRun(t, name, m, res, best)
		if res.Status != solver.Optimal || !near(res.Primal, best) {
			t.Errorf("seed %d %s: %s primal %v, MAP %v (phases %+v)", seed, relax, res.Status, res.Primal, best, res.Phases)
		}
		if len(res.Phases) != len(starts) {
			t.Errorf("seed %d %s: %d phases started, %d reported", seed, relax, len(starts), len(res.Phases))
		}
		if res.Phases[0].Phase != Relax || res.Phase != res.Phases[len(res.Phases)-1].Phase {
			t.Errorf("seed %d %s: phases %+v, closed by %s", seed, relax, res.Phases, res.Phase)
		}
		if len(res.Phases) > 1 {
			gapped++
		}
	})
	if gapped == 0 {
		t.Error("the relaxation closed every gap: the test proves nothing")
	}
}

// Random tiny models of every factor kind, hard constraints included: the
// anytime run with DD-ADMM (any arity) certifies the brute-force MAP, or
// reports the model infeasible.
func TestAnytimeMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 17))
	for it := 0; it < 60; it++ {
		m := oracle.RandomTinyModel(rng, oracle.TinyOptions{MaxVars: 7})
		best, _ := oracle.BruteMAP(t, m)
		relax, _ := Choose(m)
		o := DefaultOptions()
		o.Relax, o.MaxIter, o.TimeLimit = relax, 1000, 20*time.Second
		res, err := Solve(context.Background(), m, nil, o, nil)
		if err != nil {
			t.Fatalf("model %d: %v", it, err)
		}
		checkRun(t, "model", m, res, best)
		if res.Status != solver.Optimal || !near(res.Primal, best) {
			t.Fatalf("model %d (%s): %s primal %v dual %v, MAP %v; phases %+v", it, relax, res.Status, res.Primal, res.Dual, best, res.Phases)
		}
	}
}

// A run cut short by its time limit reports time_limit, a valid bound
// and the best primal so far; a cancelled one reports interrupted.
func TestAnytimeStopsAtTheLimit(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 12, Width: 12, Rho: 3, Seed: 5})
	o := DefaultOptions()
	o.TimeLimit = 300 * time.Millisecond
	start := time.Now()
	res, err := Solve(context.Background(), m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a 300 ms run took %v", took)
	}
	if res.Status != solver.TimeLimit && res.Status != solver.Optimal {
		t.Errorf("status %s, want time_limit (or optimal)", res.Status)
	}
	if res.Assignment == nil || m.Score(res.Assignment) != res.Primal || res.Dual < res.Primal {
		t.Errorf("primal %v dual %v assignment %v", res.Primal, res.Dual, res.Assignment != nil)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	o.TimeLimit = 0
	res, err = Solve(ctx, m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != solver.Interrupted && res.Status != solver.Optimal {
		t.Errorf("cancelled: status %s, want interrupted", res.Status)
	}
}

// Progress continues across phases: iterations never go back, and the
// reported bound never rises (it is the lowest of every phase's).
func TestAnytimeProgressIsMonotone(t *testing.T) {
	m, best := isingMAP(t, generate.GridOptions{Height: 4, Width: 5, Rho: 2, Seed: 3})
	o := DefaultOptions()
	o.ProgressEvery, o.TimeLimit, o.MaxIter = 0, 20*time.Second, 2000
	lastIter, lastDual, n := 0, math.Inf(1), 0
	res, err := Solve(context.Background(), m, nil, o, func(p solver.Progress) {
		n++
		if p.Iteration < lastIter {
			t.Fatalf("iteration went back from %d to %d", lastIter, p.Iteration)
		}
		if p.Dual > lastDual {
			t.Fatalf("bound rose from %v to %v at iteration %d", lastDual, p.Dual, p.Iteration)
		}
		if p.Dual < best-1e-6 {
			t.Fatalf("bound %v below the MAP %v at iteration %d", p.Dual, best, p.Iteration)
		}
		lastIter, lastDual = p.Iteration, p.Dual
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || lastIter > res.Iterations {
		t.Errorf("%d reports, last iteration %d, result %d", n, lastIter, res.Iterations)
	}
	checkRun(t, "grid", m, res, best)
}

// The Primal seam's assignments are checked and rescored: one that breaks
// the evidence is ignored, a better one is kept with its exact score.
func TestAnytimePrimalSeam(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 2, Seed: 2})
	ev := model.Evidence{0: 1}
	calls := 0
	o := DefaultOptions()
	o.NoSearch, o.NoTighten, o.MaxIter = true, true, 3
	o.Primal = func(ctx context.Context, mm *model.Model, e model.Evidence, hint solver.Result) []int {
		calls++
		x := make([]int, mm.NumVars()) // x0 = 0 breaks the evidence
		return x
	}
	res, err := Solve(context.Background(), m, ev, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || res.Assignment == nil || res.Assignment[0] != 1 {
		t.Fatalf("%d calls, assignment %v: the seam's assignment broke the evidence", calls, res.Assignment)
	}
	best, bx := oracle.BruteMAP(t, oracle.Clamped(m, ev))
	o.Primal = func(ctx context.Context, mm *model.Model, e model.Evidence, hint solver.Result) []int { return bx }
	res, err = Solve(context.Background(), m, ev, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !near(res.Primal, best) || res.Primal != m.Score(res.Assignment) {
		t.Errorf("primal %v, want the seam's %v", res.Primal, best)
	}
}

// With Eliminate, a model whose tables fit is certified by the elimination
// phase alone, at the brute-force optimum, evidence included; under a
// budget too small the phase is skipped (said by an event) and the
// relaxation goes on.
func TestEliminateFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range 30 {
		m := oracle.RandomTinyModel(rng, oracle.TinyOptions{MaxVars: 9, Kinds: []model.Kind{model.Dense, model.Potts, model.Pair}})
		best, _ := oracle.BruteMAP(t, m)
		o := DefaultOptions()
		o.Eliminate, o.MaxIter = 1<<20, 200
		o.Relax, _ = Choose(m)
		res, err := Solve(context.Background(), m, nil, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkRun(t, "eliminate", m, res, best)
		if res.Status != solver.Optimal || res.Phase != Eliminate || len(res.Phases) != 1 || !near(res.Primal, best) {
			t.Fatalf("model %d: status %s closed by %s (%d phases), primal %v, MAP %v", i, res.Status, res.Phase, len(res.Phases), res.Primal, best)
		}
		if e, _ := elim.EstimateOf(context.Background(), m, nil, 8); e.Fits {
			continue // nothing to eliminate
		}
		o.Eliminate = 8
		var skipped bool
		o.Events = func(e Event) { skipped = skipped || e.Phase == Eliminate && e.Status == "skipped" }
		res, err = Solve(context.Background(), m, nil, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkRun(t, "skipped", m, res, best)
		if !skipped || len(res.Phases) < 2 || res.Phases[1].Phase != Relax {
			t.Fatalf("model %d: budget of 8 bytes: skipped %v, phases %+v", i, skipped, res.Phases)
		}
	}
}

// The Searcher seam runs the search phase: it gets the run's best
// assignment (its score as Primal) and bound, and its result is folded in
// and reported under its About.
func TestAnytimeSearcherSeam(t *testing.T) {
	m, best := isingMAP(t, generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: 2})
	o := DefaultOptions()
	o.Relax, o.NoTighten, o.MaxIter = ADMM, true, 300
	calls := 0
	var seed solver.Result
	o.Searcher = &Searcher{About: "elsewhere", Search: func(ctx context.Context, sm *model.Model, ev model.Evidence, s solver.Result, left time.Duration, progress func(solver.Progress)) (solver.Result, exact.Stats, error) {
		calls, seed = calls+1, s
		ao := o.DD
		ao.MaxIter = 300
		return exact.Solve(ctx, sm, ev, func(ctx context.Context, m *model.Model, ev model.Evidence) (solver.Result, error) {
			return consensus.Solve(ctx, m, ev, ao, nil)
		}, exact.Options{Tol: 1e-6}, progress)
	}}
	res, err := Solve(context.Background(), m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, "searcher", m, res, best)
	if calls != 1 || res.Status != solver.Optimal || !near(res.Primal, best) || res.Phase != Search {
		t.Fatalf("%d calls: %s primal %v closed by %s, MAP %v", calls, res.Status, res.Primal, res.Phase, best)
	}
	if seed.Dual < best-1e-6 || seed.Dual != res.Phases[0].Dual || seed.Assignment == nil || m.Score(seed.Assignment) != seed.Primal {
		t.Fatalf("seed: dual %v primal %v (relaxation's bound %v, MAP %v)", seed.Dual, seed.Primal, res.Phases[0].Dual, best)
	}
	if len(res.Phases) != 2 || res.Phases[1].About != "elsewhere" || res.Phases[1].Nodes == 0 {
		t.Fatalf("phases %+v", res.Phases)
	}
}
