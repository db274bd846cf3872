package oracle

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

const lpTol = 1e-7

func near(a, b float64) bool {
	if math.IsInf(a, -1) || math.IsInf(b, -1) {
		return a == b
	}
	return math.Abs(a-b) <= lpTol*(1+math.Abs(b))
}

// lpAndMAP solves both and checks the LP solution's mu: a distribution per
// variable, zero on forbidden unary states.
func lpAndMAP(t *testing.T, name string, m *model.Model) (lpv, mapv float64, mu []float64) {
	t.Helper()
	mapv, _, err := BruteForceMAP(m)
	if err != nil {
		t.Fatalf("%s: brute force: %v", name, err)
	}
	lpv, mu, err = LocalPolytopeLPSolution(m)
	if err != nil {
		t.Fatalf("%s: LP: %v", name, err)
	}
	if math.IsInf(lpv, -1) {
		if mu != nil {
			t.Errorf("%s: infeasible LP with mu %v", name, mu)
		}
		return
	}
	if len(mu) != len(m.Unary) {
		t.Fatalf("%s: len(mu) = %d, want %d", name, len(mu), len(m.Unary))
	}
	for i := range m.Cards {
		sum := 0.0
		for s, v := range mu[m.UnaryOff[i]:m.UnaryOff[i+1]] {
			if v < 0 || (math.IsInf(m.Unaries(i)[s], -1) && v > lpTol) {
				t.Errorf("%s: mu_%d(%d) = %v", name, i, s, v)
			}
			sum += v
		}
		if math.Abs(sum-1) > lpTol {
			t.Errorf("%s: mu_%d sums to %v", name, i, sum)
		}
	}
	return
}

// checkRelaxation checks LP >= MAP, and LP == MAP when tight is set.
func checkRelaxation(t *testing.T, name string, m *model.Model, tight bool) (lpv, mapv float64, mu []float64) {
	t.Helper()
	lpv, mapv, mu = lpAndMAP(t, name, m)
	switch {
	case tight && !near(lpv, mapv):
		t.Errorf("%s: LP %v, MAP %v: the relaxation should be tight", name, lpv, mapv)
	case lpv < mapv-lpTol*(1+math.Abs(mapv)):
		t.Errorf("%s: LP %v below MAP %v", name, lpv, mapv)
	}
	return
}

func TestLPRandomUpperBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	strict, lpOnly := 0, 0
	for it := 0; it < 300; it++ {
		opts := TinyOptions{MaxVars: 6, MaxFactors: 7, AllowInfeasible: it%4 == 0, IntegerWeights: it%5 == 0}
		m := RandomTinyModel(rng, opts)
		lpv, mapv, _ := checkRelaxation(t, "random", m, false)
		if t.Failed() {
			t.Fatalf("model %d: %+v", it, m)
		}
		if math.IsInf(mapv, -1) && !math.IsInf(lpv, -1) {
			lpOnly++
		} else if lpv > mapv+1e-6 {
			strict++
		}
	}
	t.Logf("LP strictly above MAP on %d models, LP feasible with MAP infeasible on %d", strict, lpOnly)
}

// randomFactorTree draws an acyclic factor graph: each factor joins one
// existing variable to new ones, so the local polytope is tight.
func randomFactorTree(rng *rand.Rand, binary bool) *model.Model {
	cards := []int{2 + rng.IntN(2)}
	if binary {
		cards[0] = 2
	}
	var facs []model.Factor
	for len(cards) < 9 {
		old := rng.IntN(len(cards))
		arity := 1 + rng.IntN(3)
		vars := []int{old}
		for len(vars) < arity {
			c := 2
			if !binary {
				c = 1 + rng.IntN(3)
			}
			vars = append(vars, len(cards))
			cards = append(cards, c)
		}
		rng.Shuffle(len(vars), func(i, j int) { vars[i], vars[j] = vars[j], vars[i] })
		facs = append(facs, model.Factor{Vars: vars})
	}
	m := model.New(cards)
	for j := range m.Unary {
		m.Unary[j] = rng.NormFloat64()
		if rng.IntN(30) == 0 {
			m.Unary[j] = negInf
		}
	}
	for _, f := range facs {
		allBinary := true
		for _, v := range f.Vars {
			allBinary = allBinary && cards[v] == 2
		}
		switch r := rng.IntN(4); {
		case r == 0 && allBinary:
			kinds := []model.Kind{model.XOR, model.AtMostOne, model.OR, model.OROut, model.ANDOut, model.Budget}
			f.Kind = kinds[rng.IntN(len(kinds))]
			if (f.Kind == model.OROut || f.Kind == model.ANDOut) && len(f.Vars) < 2 {
				f.Kind = model.OR
			}
			f.SetNegated(make([]bool, len(f.Vars)))
			for k := range f.NegatedInputs() {
				f.NegatedInputs()[k] = rng.IntN(2) == 0
			}
			if f.Kind == model.Budget {
				f.SetBudget(rng.IntN(len(f.Vars) + 1))
			}
		case r == 1 && len(f.Vars) == 2 && cards[f.Vars[0]] == cards[f.Vars[1]]:
			f.Kind = model.Potts
			f.Weight = 2 * rng.NormFloat64()
		default:
			f.Kind = model.Dense
			size := 1
			for _, v := range f.Vars {
				size *= cards[v]
			}
			f.Table = make([]float64, size)
			for j := range f.Table {
				f.Table[j] = 2 * rng.NormFloat64()
				if rng.IntN(6) == 0 {
					f.Table[j] = negInf
				}
			}
		}
		m.Factors = append(m.Factors, f)
	}
	// Extra unary-scope factors are leaves: still a tree.
	for range rng.IntN(3) {
		v := rng.IntN(len(cards))
		t := make([]float64, cards[v])
		for j := range t {
			t[j] = rng.NormFloat64()
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{v}, Table: t})
	}
	return m
}

func TestLPTightOnTrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	feasible := 0
	for it := 0; it < 150; it++ {
		m := randomFactorTree(rng, it%2 == 0)
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		_, mapv, _ := checkRelaxation(t, "tree", m, true)
		if t.Failed() {
			t.Fatalf("model %d: %+v", it, m)
		}
		if !math.IsInf(mapv, -1) {
			feasible++
		}
	}
	if feasible < 50 {
		t.Errorf("only %d feasible trees", feasible)
	}
}

// chain returns a chain of n variables with card labels and random dense
// pairwise tables.
func chain(rng *rand.Rand, n, card int) *model.Model {
	m := generate.GaussianUnaries(rng, slices.Repeat([]int{card}, n))
	for i := 0; i+1 < n; i++ {
		tab := make([]float64, card*card)
		for j := range tab {
			tab[j] = rng.NormFloat64()
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{i, i + 1}, Table: tab})
	}
	return m
}

func TestLPTightOnChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for it := 0; it < 10; it++ {
		m := chain(rng, 7, 3)
		lpv, mapv, mu := checkRelaxation(t, "chain", m, true)
		_, x, _ := BruteForceMAP(m)
		// Continuous random potentials: the MAP and the LP optimum are
		// unique, so mu is the MAP's indicator.
		for i := range m.Cards {
			if got := mu[m.UnaryOff[i]+x[i]]; math.Abs(got-1) > 1e-6 {
				t.Errorf("chain %d: mu_%d(%d) = %v, MAP (%v = LP %v) picks it", it, i, x[i], got, mapv, lpv)
			}
		}
	}
}

func triangle(w [3]float64) *model.Model {
	m := model.New([]int{2, 2, 2})
	m.Factors = []model.Factor{
		{Kind: model.Potts, Vars: []int{0, 1}, Weight: w[0]},
		{Kind: model.Potts, Vars: []int{1, 2}, Weight: w[1]},
		{Kind: model.Potts, Vars: []int{2, 0}, Weight: w[2]},
	}
	return m
}

func TestLPFrustratedTriangle(t *testing.T) {
	// Three repulsive edges: some edge has equal ends (MAP -1); the LP puts
	// mass 1/2 on (0,1) and (1,0) of every edge (value 0), and mu = 1/2 is
	// its unique optimum (each edge forces mu_i(0) = mu_j(1)).
	// Two attractive and one repulsive edge: MAP 1, LP 2 at mu = 1/2.
	for _, c := range []struct {
		w       [3]float64
		mapv, v float64
	}{
		{[3]float64{-1, -1, -1}, -1, 0},
		{[3]float64{1, 1, -1}, 1, 2},
	} {
		m := triangle(c.w)
		lpv, mapv, mu := lpAndMAP(t, "triangle", m)
		if mapv != c.mapv || !near(lpv, c.v) {
			t.Errorf("weights %v: MAP %v LP %v, want %v and %v", c.w, mapv, lpv, c.mapv, c.v)
		}
		for j, v := range mu {
			if math.Abs(v-0.5) > 1e-6 {
				t.Errorf("weights %v: mu[%d] = %v, want 1/2", c.w, j, v)
			}
		}
	}
	// Same with a Dense encoding and a small unary: still fractional.
	m := triangle([3]float64{-1, -1, -1})
	m.Unaries(0)[1] = 0.3
	lpv, mapv, _ := lpAndMAP(t, "triangle+unary", m)
	if !(lpv > mapv+0.5) {
		t.Errorf("triangle with unary: LP %v not strictly above MAP %v", lpv, mapv)
	}
}

func TestLPSingleXOR(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for it := 0; it < 20; it++ {
		n := 1 + rng.IntN(5)
		m := generate.GaussianUnaries(rng, slices.Repeat([]int{2}, n))
		f := model.Factor{Kind: model.XOR, Vars: rng.Perm(n)}.WithNegated(make([]bool, n))
		for k := range f.NegatedInputs() {
			f.NegatedInputs()[k] = rng.IntN(3) == 0
		}
		m.Factors = []model.Factor{f}
		_, _, mu := checkRelaxation(t, "xor", m, true)
		_, x, _ := BruteForceMAP(m)
		for i := range n {
			if math.Abs(mu[m.UnaryOff[i]+x[i]]-1) > 1e-6 {
				t.Errorf("xor %d: mu %v not the MAP %v", it, mu, x)
				break
			}
		}
	}
}

func TestLPHardConstraints(t *testing.T) {
	// A factor without a feasible configuration.
	m := model.New([]int{2, 2})
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0, 1}, Table: []float64{negInf, negInf, negInf, negInf}}}
	if lpv, mapv, _ := lpAndMAP(t, "all -Inf", m); !math.IsInf(lpv, -1) || !math.IsInf(mapv, -1) {
		t.Errorf("all -Inf: LP %v MAP %v", lpv, mapv)
	}
	// Two factors forcing contradictory states of one variable: the
	// equations themselves are inconsistent.
	m = model.New([]int{3})
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{0}, Table: []float64{0, negInf, negInf}},
		{Kind: model.Dense, Vars: []int{0}, Table: []float64{negInf, negInf, 1}},
	}
	if lpv, _, _ := lpAndMAP(t, "contradiction", m); !math.IsInf(lpv, -1) {
		t.Errorf("contradiction: LP %v", lpv)
	}
	// Contradiction through a chain of equalities: x0 = x1, x1 = x2, x0 != x2
	// on binary variables with XOR/negations: infeasible for the LP too?
	// No: x0=x1 (XOR with one negation), x1=x2, x2 != x0 is an odd cycle of
	// "differ" constraints (two negated), which the LP satisfies at 1/2.
	m = model.New([]int{2, 2, 2})
	m.Factors = []model.Factor{
		{Kind: model.XOR, Vars: []int{0, 1}},
		{Kind: model.XOR, Vars: []int{1, 2}},
		{Kind: model.XOR, Vars: []int{2, 0}},
	}
	m.Unaries(0)[1] = 1
	lpv, mapv, mu := lpAndMAP(t, "odd xor cycle", m)
	if !math.IsInf(mapv, -1) || !near(lpv, 0.5) {
		t.Errorf("odd XOR cycle: MAP %v (want -Inf), LP %v (want 0.5)", mapv, lpv)
	}
	for j, v := range mu {
		if math.Abs(v-0.5) > 1e-6 {
			t.Errorf("odd XOR cycle: mu[%d] = %v", j, v)
		}
	}
	// Even cycle of "differ": feasible and integral.
	m = model.New([]int{2, 2, 2, 2})
	for i := 0; i < 4; i++ {
		m.Factors = append(m.Factors, model.Factor{Kind: model.XOR, Vars: []int{i, (i + 1) % 4}})
		m.Unaries(i)[1] = 0.1 * float64(i)
	}
	lpv, mapv, _ = lpAndMAP(t, "even xor cycle", m)
	if !near(mapv, 0.4) || !near(lpv, 0.4) {
		t.Errorf("even XOR cycle: MAP %v LP %v, want 0.4", mapv, lpv)
	}
	// Redundant rows: a variable in several one-variable factors that leave
	// it a single state, and in a pairwise factor with hard entries. Unary
	// factors are leaves, so the graph is a tree and the LP is tight.
	m = model.New([]int{3, 2, 2})
	copy(m.Unaries(0), []float64{0, 5, negInf})
	m.Unaries(2)[0] = negInf
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{0}, Table: []float64{1, negInf, 2}},
		{Kind: model.Dense, Vars: []int{0}, Table: []float64{0, negInf, negInf}},
		{Kind: model.Dense, Vars: []int{0}, Table: []float64{0.5, negInf, 0}},
		{Kind: model.Dense, Vars: []int{1, 0}, Table: []float64{negInf, 0, 0, 3, negInf, 1}},
		{Kind: model.Pair, Vars: []int{1, 2}, Weight: -2},
		{Kind: model.OR, Vars: []int{1}},
	}
	// x0 = 0, x1 = 1 (OR), x2 = 1 (unary): 1 + 0.5 + 3 - 2 = 2.5.
	lpv, mapv, _ = checkRelaxation(t, "redundant", m, true)
	if mapv != 2.5 || !near(lpv, 2.5) {
		t.Errorf("redundant: MAP %v LP %v, want 2.5", mapv, lpv)
	}
	// Zero-arity factors and cardinality-1 variables.
	m = model.New([]int{1, 2})
	m.Unaries(1)[1] = 1
	m.Constant = 1
	m.Factors = []model.Factor{
		{Kind: model.Dense, Table: []float64{0.5}},
		{Kind: model.Dense, Vars: []int{0, 1}, Table: []float64{0, -0.25}},
	}
	if lpv, mapv, _ := checkRelaxation(t, "arity0", m, true); mapv != 2.25 {
		t.Errorf("arity0: LP %v MAP %v, want 2.25", lpv, mapv)
	}
	m.Factors[0].Table[0] = negInf
	if lpv, _, _ := lpAndMAP(t, "arity0 -Inf", m); !math.IsInf(lpv, -1) {
		t.Errorf("arity0 -Inf: LP %v", lpv)
	}
	// No variables: the constant and zero-arity factors.
	m = model.New(nil)
	m.Constant = 1.5
	m.Factors = []model.Factor{{Kind: model.Dense, Table: []float64{-1}}}
	if lpv, mapv, mu := checkRelaxation(t, "empty", m, true); lpv != 0.5 || len(mu) != 0 {
		t.Errorf("empty: LP %v MAP %v mu %v, want 0.5", lpv, mapv, mu)
	}
	// Every state of a variable forbidden by its unaries.
	m = model.New([]int{2})
	m.Unary[0], m.Unary[1] = negInf, negInf
	if lpv, _, _ := lpAndMAP(t, "no state", m); !math.IsInf(lpv, -1) {
		t.Errorf("no state: LP %v", lpv)
	}
}

func TestLPVariableDegrees(t *testing.T) {
	// Variable 0 in many factors (a star, plus repeated scopes that close
	// cycles), 5 in one, 6 in none.
	rng := rand.New(rand.NewPCG(11, 12))
	for it := 0; it < 20; it++ {
		cards := []int{3, 2, 3, 2, 3, 2, 3}
		m := generate.GaussianUnaries(rng, cards)
		dense := func(vars ...int) model.Factor {
			size, _ := m.TableSize(vars)
			tab := make([]float64, size)
			for j := range tab {
				tab[j] = rng.NormFloat64()
				if rng.IntN(8) == 0 {
					tab[j] = negInf
				}
			}
			return model.Factor{Kind: model.Dense, Vars: vars, Table: tab}
		}
		m.Factors = []model.Factor{dense(0, 1), dense(2, 0), dense(0, 3), dense(4, 0), dense(0), dense(1, 5)}
		checkRelaxation(t, "star", m, true)
		// Repeated scope (0,1) and a triangle 0-2-4: cycles, only LP >= MAP.
		m.Factors = append(m.Factors, dense(1, 0), dense(2, 4), model.Factor{Kind: model.Potts, Vars: []int{4, 0}, Weight: rng.NormFloat64()})
		checkRelaxation(t, "star+cycles", m, false)
	}
}

func TestLPGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for it := 0; it < 3; it++ {
		checkRelaxation(t, "grid 3x3", generate.DenseGrid(rng, 3, 3, 3, 2), false)
	}
	start := time.Now()
	lpv, err := LocalPolytopeLP(generate.DenseGrid(rng, 4, 4, 3, 2))
	if err != nil || math.IsInf(lpv, 0) || math.IsNaN(lpv) {
		t.Fatalf("4x4 grid: %v, %v", lpv, err)
	}
	t.Logf("4x4 grid, 3 labels: LP %v in %v", lpv, time.Since(start))
}

func TestLPErrors(t *testing.T) {
	m := model.New([]int{2})
	m.Factors = []model.Factor{{Kind: model.Potts, Vars: []int{0}}}
	if _, err := LocalPolytopeLP(m); err == nil {
		t.Error("invalid model: no error")
	}
	// One dense factor with 4^6 = 4096 configurations.
	m = model.New([]int{4, 4, 4, 4, 4, 4})
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0, 1, 2, 3, 4, 5}, Table: make([]float64, 4096)}}
	if _, err := LocalPolytopeLP(m); err == nil {
		t.Error("4096 configurations: no error")
	}
	// Many small factors adding up past the bound.
	m = model.New(make23(4)[:20])
	for i := 0; i+1 < 20; i++ {
		for range 10 {
			m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{i, i + 1}, Table: make([]float64, 16)})
		}
	}
	if _, err := LocalPolytopeLP(m); err == nil {
		t.Error("3000+ LP variables: no error")
	}
}
