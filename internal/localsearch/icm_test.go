package localsearch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// Scores is the unary plus each touching factor's FactorScore, and Sweeps
// never lowers the score, on Potts grids and on reduced logic models
// (dense tables of arity up to 4).
func TestScoresAndSweeps(t *testing.T) {
	for mi, m := range testModels(t) {
		l := New(m)
		rng := rand.New(rand.NewPCG(uint64(mi), 5))
		x := make([]int, m.NumVars())
		for i, c := range m.Cards {
			x[i] = rng.IntN(c)
		}
		for i, c := range m.Cards {
			loc := make([]float64, c)
			l.Scores(i, x, loc)
			orig := x[i]
			for s := range loc {
				x[i] = s
				want := m.Unaries(i)[s]
				for _, a := range l.Factors(i) {
					want += m.FactorScore(a, x)
				}
				if loc[s] != want {
					t.Fatalf("model %d var %d state %d: Scores %v, want %v", mi, i, s, loc[s], want)
				}
			}
			x[i] = orig
		}
		before := m.Score(x)
		buf := make([]float64, 64)
		// The even variables fixed: they keep their states.
		fixed := make([]bool, len(x))
		kept := slices.Clone(x)
		for i := range fixed {
			fixed[i] = i%2 == 0
		}
		l.Sweeps(x, 100, buf, fixed)
		for i := 0; i < len(x); i += 2 {
			if x[i] != kept[i] {
				t.Fatalf("model %d: fixed variable %d moved from %d to %d", mi, i, kept[i], x[i])
			}
		}
		l.Sweeps(x, 100, buf, nil)
		if after := m.Score(x); after < before {
			t.Fatalf("model %d: Sweeps lowered the score from %v to %v", mi, before, after)
		}
	}
}

// testModels returns Potts grids and reduced logic models, whose factors
// are dense tables of arity up to 4.
func testModels(t *testing.T) []*model.Model {
	t.Helper()
	ms := make([]*model.Model, 0, 6)
	for seed := range int64(3) {
		red, err := model.Reduce(generate.Logic(generate.LogicOptions{Vars: 30, Factors: 15, Couplings: 30, MaxArity: 4, Rho: 1, Seed: seed + 1}), nil)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, red.Model, generate.Potts(generate.GridOptions{Height: 6, Width: 7, Labels: 4, Rho: 1, Seed: seed + 1}))
	}
	return ms
}

// plainSweeps is Sweeps as it was before it skipped visits: every
// variable visited in every sweep.
func plainSweeps(l *Local, x []int, sweeps int, buf []float64, fixed []bool) bool {
	for range sweeps {
		moved := false
		for i, c := range l.m.Cards {
			if c == 1 || fixed != nil && fixed[i] {
				continue
			}
			loc := buf[:c]
			l.Scores(i, x, loc)
			if best := Best(loc, x[i]); best != x[i] {
				x[i], moved = best, true
			}
		}
		if !moved {
			return true
		}
	}
	return false
}

// Sweeps, which skips the visits that cannot move a variable, makes the
// moves of plain sweeps, budget cut-offs included.
func TestSweepsSkipExact(t *testing.T) {
	buf := make([]float64, 64)
	for mi, m := range append(testModels(t), generate.Potts(generate.GridOptions{Height: 30, Width: 40, Labels: 5, Rho: 1, Seed: 9})) {
		l := New(m)
		rng := rand.New(rand.NewPCG(uint64(mi), 7))
		fixed := make([]bool, m.NumVars())
		for i := range fixed {
			fixed[i] = rng.IntN(5) == 0
		}
		for _, budget := range []int{1, 2, 3, 100} {
			x := make([]int, m.NumVars())
			for i, c := range m.Cards {
				x[i] = rng.IntN(c)
			}
			want := slices.Clone(x)
			wantDone := plainSweeps(l, want, budget, buf, fixed)
			done := l.Sweeps(x, budget, buf, fixed)
			if !slices.Equal(x, want) || done != wantDone {
				t.Fatalf("model %d, %d sweeps: Sweeps ended at %v (done %v), plain sweeps at %v (done %v)", mi, budget, x, done, want, wantDone)
			}
		}
	}
}
