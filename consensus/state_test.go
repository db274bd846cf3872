package consensus

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/solver"
)

// A run resumed from a state taken after iteration k continues like the
// run that took it: the coordinator's numeric step is deterministic, and a
// restored worker differs only in its slaves' warm starts (MAP slaves have
// none, so DD-subgradient continues bit for bit).
// runSaving runs m in this process on the given number of workers, saving
// a state every 7 iterations, and returns the result and the states (at
// least two, or the test fails: the model would be too easy to test
// anything).
func runSaving(t *testing.T, m *model.Model, plan partition.Plan, opts Options, workers int) (solver.Result, []*State) {
	t.Helper()
	var states []*State
	s, entries, done, err := newLocal(m, plan, opts, workers)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.run(context.Background(), entries, &Checkpointing{Every: 7, Save: func(_ context.Context, st *State) error {
		states = append(states, st)
		return nil
	}}, nil)
	done()
	if err != nil {
		t.Fatal(err)
	}
	if len(states) < 2 {
		t.Fatalf("%d states in %d iterations: the model is too easy to test anything", len(states), want.Iterations)
	}
	return want, states
}

// resumeLocal runs m in this process on the given number of workers from
// state st: the workers restore their parts, the coordinator resumes.
func resumeLocal(t *testing.T, m *model.Model, plan partition.Plan, opts Options, workers int, st *State) solver.Result {
	t.Helper()
	s, entries := testLocal(t, m, plan, opts, workers)
	for w, l := range s.links {
		if err := l.(LocalLink).W.Restore(&st.Parts[w]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.run(context.Background(), entries, &Checkpointing{Resume: st}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestStateResumeContinues(t *testing.T) {
	cases := []namedModel{
		{"potts", generate.Potts(generate.GridOptions{Height: 10, Width: 10, Labels: 3, Rho: 1, Seed: 5})},
		{"logic", generate.Logic(generate.LogicOptions{Vars: 30, Factors: 20, Couplings: 30, MaxArity: 4, Rho: 1, Seed: 6})},
	}
	for _, c := range cases {
		for _, algo := range []Algo{ADMM, Subgradient} {
			for _, workers := range []int{1, 3} {
				t.Run(fmt.Sprintf("%s/%s/%d", c.name, algo, workers), func(t *testing.T) {
					opts := algoOptions(algo, PerFactor)
					opts.MaxIter, opts.AdaptEta = 120, algo == ADMM
					red, err := model.Reduce(c.m, nil)
					if err != nil {
						t.Fatal(err)
					}
					plan := mustPlan(t, red.Model, PerFactor)
					want, states := runSaving(t, red.Model, plan, opts, workers)
					st := states[len(states)/2]
					got := resumeLocal(t, red.Model, plan, opts, workers, st)
					tol := 1e-6
					if algo == Subgradient {
						tol = 0
					}
					if got.Status != want.Status || !relClose(got.Dual, want.Dual, tol) || !relClose(got.Primal, want.Primal, tol) ||
						abs(got.Iterations-want.Iterations) > 2 || algo == Subgradient && got.Iterations != want.Iterations {
						t.Errorf("resumed at %d: %s after %d, dual %.12g primal %.12g; uninterrupted: %s after %d, dual %.12g primal %.12g",
							st.Iter, got.Status, got.Iterations, got.Dual, got.Primal, want.Status, want.Iterations, want.Dual, want.Primal)
					}
				})
			}
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Restore rejects states that do not fit the part, and non-finite ones.
func TestRestoreRejectsBadState(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 3, Width: 3, Labels: 2, Rho: 1, Seed: 1})
	s, _ := testLocal(t, m, mustPlan(t, m, PerFactor), DefaultOptions(), 1)
	w := s.links[0].(LocalLink).W
	good := w.State()
	short := good
	short.Lambda = short.Lambda[1:]
	nan := w.State()
	nan.Mu[0] = math.NaN()
	for name, st := range map[string]PartState{"short": short, "nan": nan} {
		if err := w.Restore(&st); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
	if err := s.restore(&State{Iter: 0, Eta: 1}); err == nil {
		t.Error("a state of iteration 0 with no arrays was restored")
	}
}

// mustPlan is PartitionPlan for a test: it fails tb on an error.
func mustPlan(tb testing.TB, m *model.Model, d Decomposition) partition.Plan {
	tb.Helper()
	p, err := PartitionPlan(m, d)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// A state regrouped onto another number of workers continues like the run
// that took it (Regroup only moves replica entries between layouts).
func TestRegroupContinues(t *testing.T) {
	m := generate.Logic(generate.LogicOptions{Vars: 30, Factors: 20, Couplings: 30, MaxArity: 4, Rho: 1, Seed: 6})
	red, err := model.Reduce(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan := mustPlan(t, red.Model, PerFactor)
	contiguous := func(w int) []int32 {
		p := make([]int32, len(plan.Slaves))
		for s := range p {
			p[s] = int32(s * w / len(plan.Slaves))
		}
		return p
	}
	for _, algo := range []Algo{ADMM, Subgradient} {
		for _, c := range []struct{ from, to int }{{3, 2}, {3, 1}, {1, 3}, {2, 5}} {
			t.Run(fmt.Sprintf("%s/%d-to-%d", algo, c.from, c.to), func(t *testing.T) {
				opts := algoOptions(algo, PerFactor)
				opts.MaxIter = 150
				want, states := runSaving(t, red.Model, plan, opts, c.from)
				st := states[len(states)/2]
				moved, err := Regroup(red.Model, plan, st, contiguous(c.from), contiguous(c.to), c.to)
				if err != nil {
					t.Fatal(err)
				}
				got := resumeLocal(t, red.Model, plan, opts, c.to, moved)
				if got.Status != want.Status || !relClose(got.Dual, want.Dual, 1e-6) || !relClose(got.Primal, want.Primal, 1e-6) || abs(got.Iterations-want.Iterations) > 2 {
					t.Errorf("regrouped at %d: %s after %d, dual %.12g primal %.12g; uninterrupted: %s after %d, dual %.12g primal %.12g",
						st.Iter, got.Status, got.Iterations, got.Dual, got.Primal, want.Status, want.Iterations, want.Dual, want.Primal)
				}
			})
		}
	}
}
