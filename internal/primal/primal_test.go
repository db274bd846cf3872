package primal

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// enumerate calls fn on every joint assignment of m (small).
func enumerate(m *model.Model, fn func(x []int)) {
	n := m.NumVars()
	x := make([]int, n)
	for {
		fn(x)
		k := n - 1
		for ; k >= 0; k-- {
			if x[k]++; x[k] < m.Cards[k] {
				break
			}
			x[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// heavy draws a constraint-heavy model: n variables of cardinality 2..3,
// dense tables of arity 1..3 with about frac of their entries -Inf, a few
// logic factors, and finite unaries.
func heavy(rng *rand.Rand, n int, frac float64) *model.Model {
	cards := make([]int, n)
	for i := range cards {
		cards[i] = 2 + rng.IntN(2)
	}
	m := model.New(cards)
	for i := range m.Unary {
		m.Unary[i] = rng.NormFloat64()
	}
	for range 2 * n {
		k := 1 + rng.IntN(3)
		vars := rng.Perm(n)[:k]
		size := 1
		for _, v := range vars {
			size *= cards[v]
		}
		t := make([]float64, size)
		for e := range t {
			t[e] = rng.NormFloat64()
			if rng.Float64() < frac {
				t[e] = math.Inf(-1)
			}
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: vars, Table: t})
	}
	var bin []int
	for i, c := range cards {
		if c == 2 {
			bin = append(bin, i)
		}
	}
	kinds := []model.Kind{model.XOR, model.AtMostOne, model.OR, model.OROut, model.ANDOut, model.Budget}
	for range 2 {
		if len(bin) < 3 {
			break
		}
		kind := kinds[rng.IntN(len(kinds))]
		k := 2 + rng.IntN(2)
		perm := rng.Perm(len(bin))[:k]
		f := model.Factor{Kind: kind}.WithNegated(make([]bool, k)).WithBudget(rng.IntN(k))
		for j, q := range perm {
			f.Vars = append(f.Vars, bin[q])
			f.NegatedInputs()[j] = rng.IntN(3) == 0
		}
		m.Factors = append(m.Factors, f)
	}
	return m
}

// models returns the test models: oracle's tiny models (every kind, some
// infeasible) and constraint-heavy ones.
func models(t *testing.T) []*model.Model {
	t.Helper()
	rng := rand.New(rand.NewPCG(14, 1))
	var ms []*model.Model
	for range 150 {
		ms = append(ms, oracle.RandomTinyModel(rng, oracle.TinyOptions{MaxVars: 9, AllowInfeasible: true}))
	}
	for k := range 150 {
		m := heavy(rng, 4+k%7, 0.2+0.4*rng.Float64())
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// Propagation never removes a state that a feasible assignment uses, under
// random evidence too; and it detects infeasibility only when there is
// no feasible assignment.
func TestPropagationKeepsFeasibleStates(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for mi, m := range models(t) {
		var ev model.Evidence
		if rng.IntN(2) == 0 {
			v := rng.IntN(m.NumVars())
			ev = model.Evidence{v: rng.IntN(m.Cards[v])}
		}
		used := make([]bool, len(m.Unary))
		feasible := 0
		enumerate(m, func(x []int) {
			for v, s := range ev {
				if x[v] != s {
					return
				}
			}
			if math.IsInf(m.Score(x), -1) {
				return
			}
			feasible++
			for i, s := range x {
				used[m.UnaryOff[i]+s] = true
			}
		})
		dom, ok := Domains(m, ev)
		if !ok {
			if feasible > 0 {
				t.Fatalf("model %d: propagation says infeasible, brute force finds %d feasible assignments", mi, feasible)
			}
			continue
		}
		removed := 0
		for s, u := range used {
			if u && !dom[s] {
				t.Fatalf("model %d: propagation removed state %d used by a feasible assignment", mi, s)
			}
			if !dom[s] {
				removed++
			}
		}
		_ = removed
	}
}

// Propagation reaches generalized arc consistency on single constraints:
// on a model with one hard factor, every surviving state is used by a
// feasible assignment.
func TestPropagationIsGAC(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	kinds := []model.Kind{model.Dense, model.XOR, model.AtMostOne, model.OR, model.OROut, model.ANDOut, model.Budget}
	for it := range 400 {
		kind := kinds[it%len(kinds)]
		k := 2 + rng.IntN(3)
		cards := make([]int, k)
		vars := make([]int, k)
		for i := range cards {
			cards[i] = 2
			if kind == model.Dense {
				cards[i] = 2 + rng.IntN(3)
			}
			vars[i] = i
		}
		m := model.New(cards)
		f := model.Factor{Kind: kind, Vars: vars}.WithNegated(make([]bool, k)).WithBudget(rng.IntN(k + 1))
		for j := range f.NegatedInputs() {
			f.NegatedInputs()[j] = rng.IntN(2) == 0
		}
		if kind == model.Dense {
			size := 1
			for _, c := range cards {
				size *= c
			}
			f.Table = make([]float64, size)
			for e := range f.Table {
				if rng.Float64() < 0.6 {
					f.Table[e] = math.Inf(-1)
				}
			}
		}
		m.Factors = []model.Factor{f}
		// Evidence-like unary restrictions.
		for s := range m.Unary {
			if rng.Float64() < 0.15 {
				m.Unary[s] = math.Inf(-1)
			}
		}
		if m.Validate() != nil {
			continue
		}
		used := make([]bool, len(m.Unary))
		any := false
		enumerate(m, func(x []int) {
			if !math.IsInf(m.Score(x), -1) {
				any = true
				for i, s := range x {
					used[m.UnaryOff[i]+s] = true
				}
			}
		})
		dom, ok := Domains(m, nil)
		if ok != any {
			t.Fatalf("case %d (%s): propagation feasible=%v, brute force %v", it, kind, ok, any)
		}
		if !ok {
			continue
		}
		for s := range used {
			if used[s] != dom[s] {
				t.Fatalf("case %d (%s): state %d: used by a feasible assignment %v, kept %v", it, kind, s, used[s], dom[s])
			}
		}
	}
}

// With a complete budget, Search returns a feasible assignment whose score
// is brute force's best, reported as optimal; on infeasible models it
// reports not ok without panicking.
func TestSearchMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for mi, m := range models(t) {
		best, _ := oracle.BruteMAP(t, m)
		var hint []float64
		if mi%2 == 0 {
			hint = make([]float64, len(m.Unary))
			for i := range hint {
				hint[i] = rng.Float64()
			}
		}
		r := NewSearcher(m).Run(context.Background(), hint, Options{Complete: 1 << 20, Seed: uint64(mi)})
		if math.IsInf(best, -1) {
			if r.OK {
				t.Fatalf("model %d: infeasible, Search returned %v (score %v)", mi, r.X, r.Score)
			}
			continue
		}
		if !r.OK {
			t.Fatalf("model %d: feasible (best %v), Search found nothing (infeasible=%v)", mi, best, r.Infeasible)
		}
		if got := m.Score(r.X); got != r.Score {
			t.Fatalf("model %d: reported score %v, assignment scores %v", mi, r.Score, got)
		}
		if !r.Optimal {
			t.Fatalf("model %d: complete search did not finish in %d nodes", mi, r.Nodes)
		}
		if math.Abs(r.Score-best) > 1e-9*math.Max(1, math.Abs(best)) {
			t.Fatalf("model %d: Search %v, brute force %v", mi, r.Score, best)
		}
	}
}

// Without the complete search, Search still finds a feasible assignment of
// every feasible model (construction is exhaustive on tiny models), never
// scores above the optimum, and respects evidence.
func TestSearchFeasibleWithEvidence(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for mi, m := range models(t) {
		v := rng.IntN(m.NumVars())
		ev := model.Evidence{v: rng.IntN(m.Cards[v])}
		best := math.Inf(-1)
		enumerate(m, func(x []int) {
			if x[v] == ev[v] {
				best = math.Max(best, m.Score(x))
			}
		})
		x, sc, ok := Search(context.Background(), m, nil, Options{Evidence: ev})
		if ok != !math.IsInf(best, -1) {
			t.Fatalf("model %d: ok=%v, best under evidence %v", mi, ok, best)
		}
		if !ok {
			continue
		}
		if x[v] != ev[v] {
			t.Fatalf("model %d: evidence x%d=%d, got %d", mi, v, ev[v], x[v])
		}
		if sc != m.Score(x) || sc > best+1e-9 {
			t.Fatalf("model %d: score %v (assignment %v), best %v", mi, sc, m.Score(x), best)
		}
	}
}

// A cancelled context or a spent budget returns promptly, with or
// without an assignment, and a Start that is feasible is never made
// worse.
func TestSearchBudgets(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2))
	m := heavy(rng, 60, 0.3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if x, sc, ok := Search(ctx, m, nil, Options{}); ok && sc != m.Score(x) {
		t.Fatalf("cancelled: score %v, assignment scores %v", sc, m.Score(x))
	}
	r := NewSearcher(m).Run(context.Background(), nil, Options{MaxNodes: 1, Neighbourhoods: -1})
	if r.Nodes > 2 {
		t.Fatalf("node budget 1: %d nodes", r.Nodes)
	}
	// A feasible start on a model without hard constraints.
	soft := oracle.RandomTinyModel(rng, oracle.TinyOptions{MaxVars: 8, Soft: true})
	start := make([]int, soft.NumVars())
	r = NewSearcher(soft).Run(context.Background(), nil, Options{Start: start, MaxNodes: -1})
	if !r.OK || r.Score < soft.Score(start) {
		t.Fatalf("start scores %v, result %v ok=%v", soft.Score(start), r.Score, r.OK)
	}
}

// Move keeps the evidence and the moved state, reports the exact score of
// the assignment it leaves, never beats brute force's best under the
// evidence, never does worse than the plain move (with the evidence's
// forced states), and on models small enough for its neighbourhood and
// with every variable free after propagation finds that best.
func TestMoveAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 3))
	found := 0
	for mi, m := range models(t) {
		n := m.NumVars()
		v, u := rng.IntN(n), rng.IntN(n)
		st := rng.IntN(m.Cards[v])
		x0 := make([]int, n)
		for i := range x0 {
			x0[i] = rng.IntN(m.Cards[i])
		}
		ev := model.Evidence{u: x0[u], v: st}
		if u == v {
			ev = model.Evidence{v: st}
		}
		best := math.Inf(-1)
		enumerate(m, func(y []int) {
			for i, s := range ev {
				if y[i] != s {
					return
				}
			}
			best = math.Max(best, m.Score(y))
		})
		s := NewSearcher(m)
		x := append([]int(nil), x0...)
		vars := []int{v}
		if mi%2 == 1 && u != v {
			vars = append(vars, u) // a joint move (u keeps its state)
		}
		sc := s.Move(context.Background(), x, ev, vars, n, 1<<20, 1)
		if sc != m.Score(x) && !(math.IsInf(sc, -1) && math.IsInf(m.Score(x), -1)) {
			t.Fatalf("model %d: Move says %v, its assignment scores %v", mi, sc, m.Score(x))
		}
		if sc > best+1e-9 {
			t.Fatalf("model %d: Move %v above brute force's %v", mi, sc, best)
		}
		if math.IsInf(best, -1) {
			continue
		}
		for i, s := range ev {
			if x[i] != s {
				t.Fatalf("model %d: x%d=%d, evidence %d", mi, i, x[i], s)
			}
		}
		plain := append([]int(nil), x0...)
		plain[v] = st
		if u != v {
			plain[u] = x0[u]
		}
		allowed, _ := Domains(m, ev)
		free := 0
		for i := range n {
			k := 0
			for t := m.UnaryOff[i]; t < m.UnaryOff[i+1]; t++ {
				if allowed[t] {
					k, plain[i] = k+1, t-m.UnaryOff[i]
				}
			}
			if k > 1 {
				plain[i], free = x0[i], free+1
			}
		}
		if sc < m.Score(plain)-1e-9 {
			t.Fatalf("model %d: Move %v below the plain move's %v", mi, sc, m.Score(plain))
		}
		if free == n-len(ev) && connectedFree(m, allowed, v) && sc < best-1e-9 {
			t.Fatalf("model %d: Move %v, brute force %v", mi, sc, best)
		}
		if sc == best {
			found++
		}
	}
	if found == 0 {
		t.Fatal("Move never found the best under the evidence")
	}
}

// connectedFree reports whether every variable with more than one allowed
// state is reached from v through factors and such variables.
func connectedFree(m *model.Model, allowed []bool, v int) bool {
	multi := func(i int) bool {
		k := 0
		for t := m.UnaryOff[i]; t < m.UnaryOff[i+1]; t++ {
			if allowed[t] {
				k++
			}
		}
		return k > 1
	}
	seen := make([]bool, m.NumVars())
	seen[v] = true
	queue := []int{v}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for a := range m.Factors {
			in := false
			for _, w := range m.Factors[a].Vars {
				in = in || w == i
			}
			if !in {
				continue
			}
			for _, w := range m.Factors[a].Vars {
				if !seen[w] && multi(w) {
					seen[w] = true
					queue = append(queue, w)
				}
			}
		}
	}
	for i := range m.NumVars() {
		if multi(i) && !seen[i] {
			return false
		}
	}
	return true
}

// Hard tells models with hard constraints from those without: a model
// whose factors are all finite has none; a -Inf entry makes one.
func TestSearcherHard(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	m := heavy(rng, 6, 0)
	m.Factors = m.Factors[:len(m.Factors)-2] // the logic factors
	for _, f := range m.Factors {
		if f.Kind.IsLogic() {
			t.Fatal("a logic factor left")
		}
	}
	if NewSearcher(m).Hard() {
		t.Fatal("a model of finite tables has hard constraints")
	}
	m.Factors[0].Table[0] = math.Inf(-1)
	if !NewSearcher(m).Hard() {
		t.Fatal("a -Inf table entry is no hard constraint")
	}
}
