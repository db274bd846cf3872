package slaves_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/slaves"
	"github.com/ddrun/ddrun/slaves/slavetest"
)

var logicKinds = []model.Kind{model.XOR, model.AtMostOne, model.OR, model.OROut, model.ANDOut, model.Budget}

// logicRandSlave returns a random logic factor of the kind over n
// variables (logicRandFactor) and its slave.
func logicRandSlave(t *testing.T, rng *rand.Rand, kind model.Kind, n int) (*model.Factor, slaves.Slave) {
	t.Helper()
	f := logicRandFactor(rng, kind, n)
	s, err := slaves.NewLogic(f)
	if err != nil {
		t.Fatal(err)
	}
	return f, s
}

// logicRandFactor returns a random logic factor of the given kind and arity
// (random negations, nil a quarter of the time; random budget in [0,n]).
func logicRandFactor(rng *rand.Rand, kind model.Kind, n int) *model.Factor {
	f := &model.Factor{Kind: kind, Vars: make([]int, n)}
	for k := range f.Vars {
		f.Vars[k] = k
	}
	if rng.IntN(4) != 0 {
		f.SetNegated(make([]bool, n))
		for k := range f.NegatedInputs() {
			f.NegatedInputs()[k] = rng.IntN(2) == 0
		}
	}
	if kind == model.Budget {
		f.SetBudget(rng.IntN(n + 1))
	}
	return f
}

// logicScore is the factor's log-potential by model.LogicSatisfied,
// independent of the slaves.
func logicScore(f *model.Factor) func(y []int) float64 {
	return func(y []int) float64 {
		if model.LogicSatisfied(f, func(k int) bool { return y[k] == 1 }) {
			return 0
		}
		return math.Inf(-1)
	}
}

func logicBinaryCards(n int) []int {
	cards := make([]int, n)
	for k := range cards {
		cards[k] = 2
	}
	return cards
}

// logicRandVec returns a random vector: mostly uniform in [-spread, spread],
// sometimes rounded to produce ties.
func logicRandVec(rng *rand.Rand, n int, spread float64) []float64 {
	v := make([]float64, n)
	round := rng.IntN(5) == 0
	for i := range v {
		v[i] = spread * (2*rng.Float64() - 1)
		if round {
			v[i] = math.Round(2*v[i]) / 2
		}
	}
	return v
}

func logicMinArity(kind model.Kind) int {
	if kind == model.OROut || kind == model.ANDOut {
		return 2
	}
	return 1
}

// TestLogicQUADRef checks every logic QUAD against the reference solver and
// the KKT conditions on random inputs.
func TestLogicQUADRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const perKindArity = 60
	total := 0
	for _, kind := range logicKinds {
		var errs asErrs
		for n := logicMinArity(kind); n <= 6; n++ {
			for it := 0; it < perKindArity; it++ {
				f, s := logicRandSlave(t, rng, kind, n)
				cards := logicBinaryCards(n)
				eta := []float64{0.1, 1, 10}[it%3]
				spread := []float64{3, 1, 0.5}[(it/3)%3]
				c := logicRandVec(rng, 2*n, spread)
				u := make([]float64, 2*n)
				phiq := s.QUAD(c, eta, u)
				if phiq != 0 {
					t.Errorf("%s: phi.q = %v, want 0", kind, phiq)
				}
				errs.addKKT(t, cards, logicScore(f), c, eta, u, phiq)
				total++
				if t.Failed() {
					t.Fatalf("%s n=%d negated %v budget %d", kind, n, f.NegatedInputs(), f.BudgetBound())
				}
			}
		}
		t.Logf("%-9s %v", kind, errs)
	}
	t.Logf("%d random QUAD cases", total)
}

// logicInHull checks z-space membership of u in conv(S) by the polytope's
// inequalities (AD3 Sect. 4.2), for arities too large to enumerate.
func logicInHull(f *model.Factor, u []float64, tol float64) error {
	n := len(f.Vars)
	z := make([]float64, n)
	for k := range z {
		z[k] = u[2*k+1]
		if f.NegatedInputs() != nil && f.NegatedInputs()[k] {
			z[k] = u[2*k]
		}
		if z[k] < -tol || z[k] > 1+tol || math.Abs(u[2*k]+u[2*k+1]-1) > tol {
			return fmt.Errorf("variable %d: u = (%v, %v)", k, u[2*k], u[2*k+1])
		}
	}
	sum := func(m int) float64 {
		s := 0.0
		for _, x := range z[:m] {
			s += x
		}
		return s
	}
	switch f.Kind {
	case model.XOR:
		if math.Abs(sum(n)-1) > tol {
			return fmt.Errorf("sum z = %v", sum(n))
		}
	case model.AtMostOne:
		if sum(n) > 1+tol {
			return fmt.Errorf("sum z = %v", sum(n))
		}
	case model.OR:
		if sum(n) < 1-tol {
			return fmt.Errorf("sum z = %v", sum(n))
		}
	case model.Budget:
		if sum(n) > float64(f.BudgetBound())+tol {
			return fmt.Errorf("sum z = %v > %d", sum(n), f.BudgetBound())
		}
	case model.OROut, model.ANDOut:
		if f.Kind == model.ANDOut { // AND = OR-out on flipped literals
			for k := range z {
				z[k] = 1 - z[k]
			}
		}
		m := n - 1
		for k := 0; k < m; k++ {
			if z[k] > z[m]+tol {
				return fmt.Errorf("input %d: %v above output %v", k, z[k], z[m])
			}
		}
		if z[m] > sum(m)+tol {
			return fmt.Errorf("output %v above sum of inputs %v", z[m], sum(m))
		}
	}
	return nil
}

// TestLogicQUADLarge checks large arities (exercising the long-slice sort)
// without enumeration: membership by the polytope's inequalities, and the
// Frank-Wolfe gap computed with the slave's MAP (itself checked against
// brute force in TestLogicMAP).
func TestLogicQUADLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	cases, maxGap := 0, 0.0
	for _, kind := range logicKinds {
		for _, n := range []int{7, 16, 17, 33, 64, 200} {
			for it := 0; it < 30; it++ {
				f, s := logicRandSlave(t, rng, kind, n)
				eta := []float64{0.1, 1, 10}[it%3]
				spread := []float64{3, 1, 0.3}[(it/3)%3]
				c := logicRandVec(rng, 2*n, spread)
				u := make([]float64, 2*n)
				s.QUAD(c, eta, u)
				if err := logicInHull(f, u, 1e-9); err != nil {
					t.Fatalf("%s n=%d: %v", kind, n, err)
				}
				// FW gap: max_y <c - u, y> - <c - u, u> (phi = 0).
				d := make([]float64, 2*n)
				base := 0.0
				for i := range d {
					d[i] = c[i] - u[i]
					base += d[i] * u[i]
				}
				y := make([]int, n)
				gap := s.MAP(d, y) - base
				if math.Abs(gap) > 1e-9 {
					t.Fatalf("%s n=%d negated %v budget %d: FW gap %g", kind, n, f.NegatedInputs(), f.BudgetBound(), gap)
				}
				maxGap = math.Max(maxGap, math.Abs(gap))
				cases++
			}
		}
	}
	t.Logf("%d large cases, max |FW gap| %.2g", cases, maxGap)
}

// TestLogicMAP checks MAP against brute force, and that the returned
// configuration is accepted and scores the returned value.
func TestLogicMAP(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	cases := 0
	for _, kind := range logicKinds {
		for n := logicMinArity(kind); n <= 7; n++ {
			for it := 0; it < 80; it++ {
				f, s := logicRandSlave(t, rng, kind, n)
				cards := logicBinaryCards(n)
				w := logicRandVec(rng, 2*n, []float64{3, 0.3, 0.03}[it%3])
				y := make([]int, n)
				got := s.MAP(w, y)
				want, _ := slavetest.BruteMAP(cards, logicScore(f), w)
				if math.Abs(got-want) > 1e-12 {
					t.Fatalf("%s n=%d negated %v budget %d w %v: MAP %v, brute force %v", kind, n, f.NegatedInputs(), f.BudgetBound(), w, got, want)
				}
				if sc := s.Score(y); sc != 0 {
					t.Fatalf("%s: MAP configuration %v scores %v", kind, y, sc)
				}
				if v := slavetest.Linear(cards, w, y); math.Abs(v-got) > 1e-12 {
					t.Fatalf("%s: MAP returned %v but its configuration %v is worth %v", kind, got, y, v)
				}
				cases++
			}
		}
	}
	t.Logf("%d random MAP cases", cases)
}

// TestLogicScore checks Score on every configuration against
// model.LogicSatisfied.
func TestLogicScore(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, kind := range logicKinds {
		for n := logicMinArity(kind); n <= 6; n++ {
			for it := 0; it < 10; it++ {
				f, s := logicRandSlave(t, rng, kind, n)
				score := logicScore(f)
				for _, y := range slavetest.EnumerateConfigs(logicBinaryCards(n)) {
					if got, want := s.Score(y), score(y); got != want {
						t.Fatalf("%s negated %v budget %d: Score(%v) = %v, want %v", kind, f.NegatedInputs(), f.BudgetBound(), y, got, want)
					}
				}
			}
		}
	}
}

// TestLogicEdgeCases pins closed-form answers at the edges: arity 1, budget 0
// and budget n.
func TestLogicEdgeCases(t *testing.T) {
	u := make([]float64, 6)
	y := make([]int, 3)
	// XOR over one variable: forced true.
	x := slaves.NewXOR(1, nil)
	x.QUAD([]float64{5, -5}, 1, u[:2])
	if u[0] != 0 || u[1] != 1 {
		t.Errorf("XOR(1) QUAD u = %v", u[:2])
	}
	if v := x.MAP([]float64{5, -5}, y[:1]); v != -5 || y[0] != 1 {
		t.Errorf("XOR(1) MAP = %v %v", v, y[:1])
	}
	// Negated XOR over one variable: forced false.
	xn := slaves.NewXOR(1, []bool{true})
	xn.QUAD([]float64{-5, 5}, 1, u[:2])
	if u[0] != 1 || u[1] != 0 {
		t.Errorf("negated XOR(1) QUAD u = %v", u[:2])
	}
	// Budget 0: everything false, whatever the targets.
	b0 := slaves.NewBudget(3, nil, 0)
	b0.QUAD([]float64{-3, 3, -3, 3, 0, 0}, 1, u)
	for k := 0; k < 3; k++ {
		if u[2*k] != 1 || u[2*k+1] != 0 {
			t.Errorf("Budget 0 QUAD u = %v", u)
		}
	}
	if v := b0.MAP([]float64{0, 1, 0, 2, 0, 3}, y); v != 0 || y[0]+y[1]+y[2] != 0 {
		t.Errorf("Budget 0 MAP = %v %v", v, y)
	}
	// Budget n: the box projection (clip).
	bn := slaves.NewBudget(3, nil, 3)
	bn.QUAD([]float64{0, 3, 0, 0.5, 0, -2}, 1, u)
	want := []float64{0, 1, 0.25, 0.75, 1, 0}
	for i := range want {
		if math.Abs(u[i]-want[i]) > 1e-15 {
			t.Errorf("Budget n QUAD u = %v, want %v", u, want)
			break
		}
	}
	if v := bn.MAP([]float64{0, 1, 0, 2, 0, 3}, y); v != 6 || y[0]+y[1]+y[2] != 3 {
		t.Errorf("Budget n MAP = %v %v", v, y)
	}
	if b := slaves.NewBudget(3, []bool{true, false, true}, 2); b.Bound() != 2 || !b.Negated()[0] || b.Negated()[1] {
		t.Errorf("Budget accessors: %d %v", b.Bound(), b.Negated())
	}
	// OR over one variable: forced true.
	o := slaves.NewOR(1, nil)
	if v := o.MAP([]float64{1, -1}, y[:1]); v != -1 || y[0] != 1 {
		t.Errorf("OR(1) MAP = %v %v", v, y[:1])
	}
}

// TestLogicNewLogicErrors checks the dispatcher's validation.
func TestLogicNewLogicErrors(t *testing.T) {
	bad := []model.Factor{
		{Kind: model.Dense, Vars: []int{0}},
		{Kind: model.Pair, Vars: []int{0, 1}},
		{Kind: model.XOR},
		{Kind: model.OROut, Vars: []int{0}},
		{Kind: model.ANDOut, Vars: []int{0}},
		model.Factor{Kind: model.OR, Vars: []int{0, 1}}.WithNegated([]bool{true}),
		model.Factor{Kind: model.Budget, Vars: []int{0, 1}}.WithBudget(3),
		model.Factor{Kind: model.Budget, Vars: []int{0, 1}}.WithBudget(-1),
	}
	for i := range bad {
		if s, err := slaves.NewLogic(&bad[i]); err == nil {
			t.Errorf("NewLogic(%+v) = %T, want an error", bad[i], s)
		}
	}
	for _, kind := range logicKinds {
		g := model.Factor{Kind: kind, Vars: []int{3, 4, 5}}.WithBudget(2)
		f := &g
		s, err := slaves.NewLogic(f)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if c := s.Cards(); len(c) != 3 || c[0] != 2 || c[1] != 2 || c[2] != 2 {
			t.Errorf("%s: Cards = %v", kind, c)
		}
	}
}

// TestLogicConstructorPanics checks the constructors reject invalid
// arguments.
func TestLogicConstructorPanics(t *testing.T) {
	cases := map[string]func(){
		"XOR(0)":         func() { slaves.NewXOR(0, nil) },
		"OR negated":     func() { slaves.NewOR(2, []bool{true}) },
		"OROut(1)":       func() { slaves.NewOROut(1, nil) },
		"ANDOut(1)":      func() { slaves.NewANDOut(1, nil) },
		"AtMostOne(0)":   func() { slaves.NewAtMostOne(0, nil) },
		"Budget(2, 3)":   func() { slaves.NewBudget(2, nil, 3) },
		"Budget(2, -1)":  func() { slaves.NewBudget(2, nil, -1) },
		"Pair NaN table": func() { slaves.NewPair([4]float64{0, math.NaN(), 0, 0}) },
		"Pair -Inf":      func() { slaves.NewPair([4]float64{0, 0, math.Inf(-1), 0}) },
	}
	for name, f := range cases {
		mustPanic(t, f, "%s", name)
	}
}

// TestLogicAllocs checks the hot methods allocate nothing, for short
// (insertion sort) and long (slices.Sort) scopes.
func TestLogicAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, kind := range logicKinds {
		for _, n := range []int{5, 64} {
			f := logicRandFactor(rng, kind, n)
			f.SetBudget(n / 3)
			s, err := slaves.NewLogic(f)
			if err != nil {
				t.Fatal(err)
			}
			c := logicRandVec(rng, 2*n, 3)
			u := make([]float64, 2*n)
			y := make([]int, n)
			allocs := testing.AllocsPerRun(100, func() {
				s.QUAD(c, 1, u)
				s.MAP(c, y)
				s.Score(y)
			})
			if allocs != 0 {
				t.Errorf("%s n=%d: %v allocations per run", kind, n, allocs)
			}
		}
	}
}

func benchLogicQUAD(b *testing.B, f *model.Factor, spread float64) {
	s, err := slaves.NewLogic(f)
	if err != nil {
		b.Fatal(err)
	}
	n := len(f.Vars)
	rng := rand.New(rand.NewPCG(21, 22))
	const nIn = 64
	cs := make([][]float64, nIn)
	for i := range cs {
		cs[i] = make([]float64, 2*n)
		for j := range cs[i] {
			cs[i][j] = spread * (2*rng.Float64() - 1)
		}
	}
	u := make([]float64, 2*n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.QUAD(cs[i%nIn], 1, u)
	}
}

func logicBenchFactor(kind model.Kind, n, budget int) *model.Factor {
	g := model.Factor{Kind: kind, Vars: make([]int, n)}.WithNegated(make([]bool, n)).WithBudget(budget)
	f := &g
	for k := range f.Vars {
		f.Vars[k] = k
		f.NegatedInputs()[k] = k%3 == 0
	}
	return f
}

// The targets are spread so that the sort-based branch runs (sum of the
// clipped targets violates the dropped constraint) in most calls.
func BenchmarkXORQUAD(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchLogicQUAD(b, logicBenchFactor(model.XOR, n, 0), 1) })
	}
}

func BenchmarkOROutQUAD(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchLogicQUAD(b, logicBenchFactor(model.OROut, n, 0), 1) })
	}
}

func BenchmarkBudgetQUAD(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchLogicQUAD(b, logicBenchFactor(model.Budget, n, n/4), 1) })
	}
}
