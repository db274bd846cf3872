package exact

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

var threadCounts = []int{1, 2, 4}

// checkReports fails when a progress report's dual is below the MAP (an
// invalid bound) or its primal above it, or the incumbent goes down.
// Reports come from the workers one at a time; the mutex is for the race
// detector's sake only.
type reports struct {
	mu    sync.Mutex
	best  float64
	last  float64
	n     int
	wrong string
}

func newReports(best float64) *reports { return &reports{best: best, last: math.Inf(-1)} }

func (r *reports) progress(p solver.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	tol := 1e-6 * math.Max(1, math.Abs(r.best))
	switch {
	case r.wrong != "":
	case p.Dual < r.best-tol:
		r.wrong = fmt.Sprintf("report %d: dual %v below the MAP %v", r.n, p.Dual, r.best)
	case p.Primal > r.best+tol:
		r.wrong = fmt.Sprintf("report %d: primal %v above the MAP %v", r.n, p.Primal, r.best)
	case p.Primal < r.last:
		r.wrong = fmt.Sprintf("report %d: incumbent went down from %v to %v", r.n, r.last, p.Primal)
	}
	r.last = p.Primal
}

// With 1, 2 and 4 threads, branch and bound over DD-ADMM (warm starts and
// cutoff) certifies the brute-force MAP on random tiny models, hard
// constraints and logic factors included, and every report along the way
// holds a valid bound.
func TestParallelMatchesBruteForce(t *testing.T) {
	branched := 0
	eachTinyModel(t, 41, 100, func(it int, m *model.Model, best float64) {
		for _, th := range threadCounts {
			rep := newReports(best)
			res, st, err := SolveWarm(context.Background(), m, nil, ADMM(admmOpts(300)), Options{Tol: 1e-6, MaxNodes: 5000, Threads: th}, rep.progress)
			if err != nil {
				t.Fatal(err)
			}
			if th == 1 && st.Nodes > 1 {
				branched++
			}
			if err := certifies(m, res, best); err != nil {
				t.Fatalf("model %d, %d threads: %v", it, th, err)
			}
			if math.IsInf(best, -1) {
				continue
			}
			if rep.wrong != "" {
				t.Fatalf("model %d, %d threads: %s", it, th, rep.wrong)
			}
			if rep.n != st.Nodes {
				t.Fatalf("model %d, %d threads: %d reports for %d nodes", it, th, rep.n, st.Nodes)
			}
		}
	})
	if branched < 5 {
		t.Errorf("only %d models needed branching: the test proves little", branched)
	}
}

// On frustrated grids, which need many nodes, every thread count certifies
// the brute-force optimum with TRW-S and DD-ADMM bounds, and every report's
// dual is a valid bound.
func TestParallelOnFrustratedGrids(t *testing.T) {
	ms := []*model.Model{
		generate.Ising(generate.GridOptions{Height: 4, Width: 5, Rho: 3, Seed: 7}),
		generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 2, Seed: 2}),
		generate.Potts(generate.GridOptions{Height: 3, Width: 4, Labels: 3, Rho: 2, Seed: 3}),
	}
	for g, m := range ms {
		best, _ := oracle.BruteMAP(t, m)
		for name, s := range map[string]WarmSolver{"admm": ADMM(admmOpts(300)), "trws": Cold(trwsSolver)} {
			for _, th := range threadCounts {
				rep := newReports(best)
				res, st, err := SolveWarm(context.Background(), m, nil, s, Options{Tol: 1e-6, MaxNodes: 20000, Threads: th}, rep.progress)
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != solver.Optimal || !close(res.Primal, best) || m.Score(res.Assignment) != res.Primal {
					t.Errorf("grid %d %s, %d threads: %s primal %v, MAP %v (%d nodes)", g, name, th, res.Status, res.Primal, best, st.Nodes)
				}
				if rep.wrong != "" {
					t.Errorf("grid %d %s, %d threads: %s", g, name, th, rep.wrong)
				}
				t.Logf("grid %d %s, %d threads: %d nodes", g, name, th, st.Nodes)
			}
		}
	}
}

// loose wraps a solver so that its bound is never good enough to prune:
// the search must enumerate, which makes it run into its limits.
func loose(s WarmSolver) WarmSolver {
	return func(ctx context.Context, m *model.Model, sp Subproblem) (solver.Result, *consensus.Warm, error) {
		sp.Cutoff = math.Inf(-1)
		r, w, err := s(ctx, m, sp)
		if len(sp.Evidence) < m.NumVars() {
			r.Dual += 100 // still an upper bound
		}
		return r, w, err
	}
}

// Stopped by the node limit, the time limit or the caller, a parallel
// search reports a valid bound, an exact primal, the right status, and
// solves no more nodes than allowed.
func TestParallelStops(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 5, Rho: 3, Seed: 7})
	best, _ := oracle.BruteMAP(t, m)
	slow := func(ctx context.Context, m *model.Model, sp Subproblem) (solver.Result, *consensus.Warm, error) {
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
		}
		return ADMM(admmOpts(50))(ctx, m, sp)
	}
	for _, th := range threadCounts {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cancelled := func(ctx context.Context, m *model.Model, sp Subproblem) (solver.Result, *consensus.Warm, error) {
			if len(sp.Evidence) >= 3 {
				cancel()
			}
			return slow(ctx, m, sp)
		}
		for _, c := range []struct {
			name   string
			opts   Options
			ctx    context.Context
			solve  WarmSolver
			status solver.Status
		}{
			{"max nodes", Options{MaxNodes: 37}, context.Background(), loose(slow), solver.IterationLimit},
			{"time limit", Options{TimeLimit: 50 * time.Millisecond}, context.Background(), loose(slow), solver.TimeLimit},
			{"cancelled", Options{}, ctx, loose(cancelled), solver.Interrupted},
		} {
			c.opts.Tol, c.opts.Threads = 1e-6, th
			rep := newReports(best)
			t0 := time.Now()
			res, st, err := SolveWarm(c.ctx, m, nil, c.solve, c.opts, rep.progress)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != c.status || res.Dual < best-1e-6 || res.Assignment == nil || res.Primal > best+1e-9 || m.Score(res.Assignment) != res.Primal {
				t.Errorf("%s, %d threads: %s dual %v primal %v, MAP %v", c.name, th, res.Status, res.Dual, res.Primal, best)
			}
			if rep.wrong != "" {
				t.Errorf("%s, %d threads: %s", c.name, th, rep.wrong)
			}
			if c.opts.MaxNodes > 0 && st.Nodes != c.opts.MaxNodes {
				t.Errorf("%s, %d threads: %d nodes solved", c.name, th, st.Nodes)
			}
			if d := time.Since(t0); c.opts.TimeLimit > 0 && d > 2*time.Second {
				t.Errorf("%s, %d threads: took %v", c.name, th, d)
			}
			if st.Open == 0 {
				t.Errorf("%s, %d threads: nothing left open", c.name, th)
			}
		}
	}
}

// A failing node solver fails the search with its error, whichever worker
// meets it, and the other workers stop.
func TestParallelSolverError(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 5, Rho: 3, Seed: 7})
	boom := errors.New("boom")
	for _, th := range threadCounts {
		var calls atomic.Int64
		s := func(ctx context.Context, m *model.Model, sp Subproblem) (solver.Result, *consensus.Warm, error) {
			if calls.Add(1) == 9 {
				return solver.Result{}, nil, boom
			}
			return loose(ADMM(admmOpts(50)))(ctx, m, sp)
		}
		_, _, err := SolveWarm(context.Background(), m, nil, s, Options{Threads: th}, nil)
		if !errors.Is(err, boom) {
			t.Errorf("%d threads: error %v", th, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 2, Width: 2, Rho: 1, Seed: 1})
	for field, o := range map[string]Options{
		"Threads": {Threads: -1}, "Tol": {Tol: math.NaN()}, "MaxNodes": {MaxNodes: -2}, "TimeLimit": {TimeLimit: -time.Second},
	} {
		_, _, err := SolveWarm(context.Background(), m, nil, ADMM(admmOpts(10)), o, nil)
		var oe *solver.OptionError
		if !errors.As(err, &oe) || oe.Option != field {
			t.Errorf("%s: error %v", field, err)
		}
	}
}

// Without marginals, branching takes a variable of the factor the solver's
// assignment serves worst.
func TestBranchOnConflict(t *testing.T) {
	m := model.New([]int{2, 2, 3, 2})
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{0, 1}, Table: []float64{0, 1, 1, 0}},
		{Kind: model.Potts, Vars: []int{1, 3}, Weight: 0.5},
	}
	x := []int{0, 0, 0, 1} // loses 1 on the first factor, 0.5 on the second
	r := solver.Result{Assignment: x, Primal: m.Score(x)}
	if v := branchVariable(m, nil, r, factorMax(m)); v != 1 {
		t.Errorf("branched on %d, want 1 (in both violated factors)", v)
	}
	if v := branchVariable(m, model.Evidence{1: 0}, r, factorMax(m)); v != 0 && v != 3 {
		t.Errorf("with 1 fixed, branched on %d", v)
	}
	if v := branchVariable(m, nil, solver.Result{Primal: math.Inf(-1)}, factorMax(m)); v != 2 {
		t.Errorf("without an assignment, branched on %d, want 2 (largest domain)", v)
	}
}
