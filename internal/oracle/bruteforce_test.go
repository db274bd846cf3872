package oracle

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/model"
)

var negInf = math.Inf(-1)

// naiveMAP enumerates every assignment with model.Score, nothing clever.
func naiveMAP(m *model.Model) float64 {
	best := negInf
	for x := range Assignments(m.Cards) {
		best = max(best, m.Score(x))
	}
	return best
}

func TestBruteForceHand(t *testing.T) {
	// Two variables (cards 2 and 3), a dense table with hard entries.
	m := model.New([]int{2, 3})
	copy(m.Unaries(0), []float64{0, 1})
	copy(m.Unaries(1), []float64{0.5, 0, 2})
	m.Constant = 0.25
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0, 1},
		Table: []float64{0, 1, negInf, 3, negInf, 0}}}
	// (0,0)=0.5 (0,1)=1 (0,2)=-Inf (1,0)=4.5 (1,1)=-Inf (1,2)=3, plus 0.25.
	checkBF(t, "dense", m, 4.75, []int{1, 0})

	// Same scope reversed: table index is x1*2+x0.
	m.Factors[0] = model.Factor{Kind: model.Dense, Vars: []int{1, 0},
		Table: []float64{0, 3, 1, negInf, negInf, 0}}
	checkBF(t, "dense reversed", m, 4.75, []int{1, 0})

	// XOR(x0, x1, !x2) with a Pair that would reward x0 = x1 = 1.
	m = model.New([]int{2, 2, 2})
	copy(m.Unaries(0), []float64{0, 1})
	copy(m.Unaries(1), []float64{0, 2})
	copy(m.Unaries(2), []float64{0, -1})
	m.Factors = []model.Factor{
		model.Factor{Kind: model.XOR, Vars: []int{0, 1, 2}}.WithNegated([]bool{false, false, true}),
		{Kind: model.Pair, Vars: []int{0, 1}, Weight: 5},
	}
	// Feasible: (0,0,0)=0, (1,0,1)=0, (0,1,1)=1.
	checkBF(t, "xor", m, 1, []int{0, 1, 1})

	// ANDOut: out = x0 AND x1, out costs 3; best is one input on, out off.
	m = model.New([]int{2, 2, 2})
	copy(m.Unaries(0), []float64{0, 1})
	copy(m.Unaries(1), []float64{0, 1.5})
	copy(m.Unaries(2), []float64{0, -3})
	m.Factors = []model.Factor{{Kind: model.ANDOut, Vars: []int{0, 1, 2}}}
	checkBF(t, "andout", m, 1.5, []int{0, 1, 0})
	// Negated output: !out = x0 AND x1, i.e. out = NAND; out=1 unless both.
	m.Factors[0].SetNegated([]bool{false, false, true})
	copy(m.Unaries(2), []float64{0, -0.5})
	// (1,1,0)=2.5, (0,1,1)=1, (1,0,1)=0.5, (0,0,1)=-0.5.
	checkBF(t, "nand", m, 2.5, []int{1, 1, 0})

	// Budget 2 of 4, each input worth its index+1: take the two largest.
	m = model.New([]int{2, 2, 2, 2})
	for i := 0; i < 4; i++ {
		m.Unaries(i)[1] = float64(i + 1)
	}
	m.Factors = []model.Factor{model.Factor{Kind: model.Budget, Vars: []int{0, 1, 2, 3}}.WithBudget(2)}
	checkBF(t, "budget", m, 7, []int{0, 0, 1, 1})

	// Potts chain of three 3-state variables: attractive couplings beat
	// the unaries pulling x1 away.
	m = model.New([]int{3, 3, 3})
	copy(m.Unaries(0), []float64{0, 0, 1})
	copy(m.Unaries(1), []float64{2, 0, 0})
	copy(m.Unaries(2), []float64{0, 0, 1})
	m.Factors = []model.Factor{
		{Kind: model.Potts, Vars: []int{0, 1}, Weight: 1.5},
		{Kind: model.Potts, Vars: []int{2, 1}, Weight: 1.5},
	}
	// All 2: 1+0+1+3 = 5; all 0: 2+3 = 5.0 tie... make x1's pull 1.9.
	m.Unaries(1)[0] = 1.9
	checkBF(t, "potts", m, 5, []int{2, 2, 2})

	// Infeasible: OR(x0) with x0=1 forbidden by its unary.
	m = model.New([]int{2, 3})
	m.Unaries(0)[1] = negInf
	m.Factors = []model.Factor{{Kind: model.OR, Vars: []int{0}}}
	checkBF(t, "infeasible", m, negInf, nil)

	// Zero-arity dense factor: a constant, or a hard contradiction.
	m = model.New([]int{2})
	m.Unaries(0)[1] = 1
	m.Constant = 2
	m.Factors = []model.Factor{{Kind: model.Dense, Table: []float64{0.5}}}
	checkBF(t, "arity0", m, 3.5, []int{1})
	m.Factors[0].Table[0] = negInf
	checkBF(t, "arity0 infeasible", m, negInf, nil)

	// No variables at all.
	m = model.New(nil)
	m.Constant = -2
	checkBF(t, "empty", m, -2, []int{})

	// Cardinality-1 variables.
	m = model.New([]int{1, 2, 1})
	m.Unaries(0)[0] = 1
	m.Unaries(1)[0] = 0.5
	m.Factors = []model.Factor{{Kind: model.Potts, Vars: []int{0, 2}, Weight: -1}}
	checkBF(t, "card1", m, 0.5, []int{0, 0, 0})
}

func checkBF(t *testing.T, name string, m *model.Model, want float64, wantX []int) {
	t.Helper()
	got, x, err := BruteForceMAP(m)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got != want && math.Abs(got-want) > 1e-12 {
		t.Errorf("%s: best %v, want %v", name, got, want)
	}
	if !slices.Equal(x, wantX) || (x == nil) != (wantX == nil) {
		t.Errorf("%s: x %v, want %v", name, x, wantX)
	}
	if x != nil && m.Score(x) != got {
		t.Errorf("%s: Score(x) = %v, best %v", name, m.Score(x), got)
	}
}

func TestBruteForceErrors(t *testing.T) {
	m := model.New(make23(2))
	if _, _, err := BruteForceMAP(m); err == nil {
		t.Error("2^23 assignments: no error")
	}
	m = model.New([]int{2, 2})
	m.Factors = []model.Factor{{Kind: model.Pair, Vars: []int{0}}}
	if _, _, err := BruteForceMAP(m); err == nil {
		t.Error("invalid model: no error")
	}
	// 2^22 exactly is accepted (and fast thanks to pruning on a
	// model with strong unaries).
	m = model.New(make23(2)[:22])
	for i := range m.Cards {
		m.Unaries(i)[1] = 1
	}
	best, x, err := BruteForceMAP(m)
	if err != nil || best != 22 || len(x) != 22 {
		t.Errorf("2^22: best %v, len(x) %d, err %v", best, len(x), err)
	}
}

func make23(c int) []int { return slices.Repeat([]int{c}, 23) }

func TestBruteForceMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	infeasible := 0
	for it := 0; it < 1500; it++ {
		opts := TinyOptions{AllowInfeasible: true, IntegerWeights: it%3 == 0, MaxVars: 1 + it%10}
		m := RandomTinyModel(rng, opts)
		want := naiveMAP(m)
		got, x, err := BruteForceMAP(m)
		if err != nil {
			t.Fatalf("model %d: %v", it, err)
		}
		if math.IsInf(want, -1) {
			infeasible++
			if !math.IsInf(got, -1) || x != nil {
				t.Fatalf("model %d: infeasible, got %v %v", it, got, x)
			}
			continue
		}
		if x == nil || m.Score(x) != got || math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
			t.Fatalf("model %d: got %v (x %v), naive %v", it, got, x, want)
		}
	}
	if infeasible == 0 {
		t.Error("no infeasible model drawn: the test misses that case")
	}
}

// Assignments yields each joint assignment once, the last variable
// fastest, one empty assignment for no variables, none when a variable
// has no state, and stops when the loop does.
func TestAssignments(t *testing.T) {
	var got [][]int
	for x := range Assignments([]int{2, 3}) {
		got = append(got, slices.Clone(x))
	}
	want := [][]int{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("cards 2, 3: %v, want %v", got, want)
	}
	n := 0
	for x := range Assignments(nil) {
		if len(x) != 0 {
			t.Errorf("no variables: assignment %v", x)
		}
		n++
	}
	for range Assignments([]int{2, 0, 2}) {
		n += 10
	}
	for range Assignments([]int{4, 4}) {
		if n++; n == 4 {
			break
		}
	}
	if n != 4 {
		t.Errorf("counted %d, want 1 empty assignment, none with a stateless variable, 3 before the break", n)
	}
}

// Clamped forbids every other state of an observed variable, in a copy.
func TestClamped(t *testing.T) {
	m := model.New([]int{3, 2})
	copy(m.Unary, []float64{1, 2, 3, 4, 5})
	c := Clamped(m, model.Evidence{0: 1})
	if want := []float64{negInf, 2, negInf, 4, 5}; !slices.Equal(c.Unary, want) {
		t.Errorf("clamped unaries %v, want %v", c.Unary, want)
	}
	if want := []float64{1, 2, 3, 4, 5}; !slices.Equal(m.Unary, want) {
		t.Errorf("the model's unaries became %v", m.Unary)
	}
}
