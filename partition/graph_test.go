package partition

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// binaryModel returns a model of n binary variables.
func binaryModel(n int) *model.Model {
	cards := make([]int, n)
	for i := range cards {
		cards[i] = 2
	}
	return model.New(cards)
}

// addPairwise appends a pairwise factor on (u, v) of a kind chosen by k.
func addPairwise(m *model.Model, u, v, k int) {
	switch k % 3 {
	case 0:
		m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{u, v}, Weight: 1})
	case 1:
		m.Factors = append(m.Factors, model.Factor{Kind: model.Pair, Vars: []int{u, v}, Weight: -1})
	default:
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{u, v}, Table: make([]float64, 4)})
	}
}

// randomGraph returns a model over n binary variables with ne random
// pairwise factors (some parallel when multi, in either orientation) and,
// when mixed, interleaved non-pairwise factors: logic factors of arity 2
// and 3, a dense factor of arity 3, a unary dense factor.
func randomGraph(r *rand.Rand, n, ne int, multi, mixed bool) *model.Model {
	m := binaryModel(n)
	for e := 0; e < ne; e++ {
		if mixed && r.IntN(4) == 0 {
			a, b, c := r.IntN(n), r.IntN(n), r.IntN(n)
			switch {
			case a == b || b == c || a == c:
				m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{a}, Table: make([]float64, 2)})
			case r.IntN(3) == 0:
				m.Factors = append(m.Factors, model.Factor{Kind: model.XOR, Vars: []int{a, b}})
			case r.IntN(2) == 0:
				m.Factors = append(m.Factors, model.Factor{Kind: model.OR, Vars: []int{a, b, c}})
			default:
				m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{a, b, c}, Table: make([]float64, 8)})
			}
		}
		u, v := r.IntN(n), r.IntN(n)
		if u == v {
			continue
		}
		addPairwise(m, u, v, r.IntN(3))
		if multi && r.IntN(8) == 0 {
			addPairwise(m, v, u, r.IntN(3)) // parallel, flipped
		}
	}
	return m
}

// randomForest returns a random forest over n variables (each variable
// joins a random earlier one with probability p), its variables shuffled.
func randomForest(r *rand.Rand, n int, p float64) *model.Model {
	m := binaryModel(n)
	perm := r.Perm(n)
	for i := 1; i < n; i++ {
		if r.Float64() < p {
			addPairwise(m, perm[i], perm[r.IntN(i)], i)
		}
	}
	return m
}

// graphStats are what bounds on the number of paths depend on.
type graphStats struct {
	edges   int // pairwise factors
	odd     int // variables of odd pairwise degree
	active  int // variables with a pairwise factor
	comps   int // connected components with an edge
	oddComp int // sum over components of max(1, odd/2)
	maxMult int // most pairwise factors on one pair of variables
	comp    []int
}

// cycleRank is E - V + C, the dimension of the cycle space.
func (s graphStats) cycleRank() int { return s.edges - s.active + s.comps }

func stats(m *model.Model) graphStats {
	n := m.NumVars()
	deg := make([]int, n)
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	var s graphStats
	mult := map[[2]int]int{}
	for a := range m.Factors {
		f := &m.Factors[a]
		if !IsPairwise(f) {
			continue
		}
		u, v := f.Vars[0], f.Vars[1]
		s.edges++
		deg[u]++
		deg[v]++
		parent[find(u)] = find(v)
		k := [2]int{min(u, v), max(u, v)}
		mult[k]++
		s.maxMult = max(s.maxMult, mult[k])
	}
	oddIn := map[int]int{}
	s.comp = make([]int, n)
	for v := range n {
		s.comp[v] = -1
		if deg[v] == 0 {
			continue
		}
		s.active++
		root := find(v)
		s.comp[v] = root
		if _, ok := oddIn[root]; !ok {
			oddIn[root] = 0
			s.comps++
		}
		if deg[v]%2 == 1 {
			s.odd++
			oddIn[root]++
		}
	}
	for _, o := range oddIn {
		s.oddComp += max(1, o/2)
	}
	return s
}

// checkPlan checks p against m beyond Validate: every pairwise factor is a
// link of a slave of shape want, every other factor is a Single slave in
// PerFactor's form, and no slave is empty. It returns the coarse slaves.
func checkPlan(t *testing.T, m *model.Model, p Plan, want Shape) []Slave {
	t.Helper()
	if err := p.Validate(m); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var coarse []Slave
	var singleFacs []int
	for s, sl := range p.Slaves {
		if len(sl.Factors) == 0 {
			t.Fatalf("slave %d has no factor", s)
		}
		switch sl.Shape {
		case want:
			if len(singleFacs) > 0 {
				t.Fatalf("slave %d: a %s after a single", s, want)
			}
			coarse = append(coarse, sl)
			for _, a := range sl.Factors {
				if !IsPairwise(&m.Factors[a]) {
					t.Fatalf("slave %d (%s) holds factor %d, which is not pairwise", s, sl.Shape, a)
				}
			}
		case Single:
			a := sl.Factors[0]
			if IsPairwise(&m.Factors[a]) {
				t.Fatalf("slave %d: pairwise factor %d left as a single", s, a)
			}
			singleFacs = append(singleFacs, a)
		default:
			t.Fatalf("slave %d has shape %s, want %s or single", s, sl.Shape, want)
		}
	}
	if !slices.IsSorted(singleFacs) {
		t.Fatalf("single slaves not in factor order")
	}
	return coarse
}

// samePlan reports whether two plans are identical.
func samePlan(p, q Plan) bool {
	return slices.EqualFunc(p.Slaves, q.Slaves, func(a, b Slave) bool {
		return a.Shape == b.Shape && slices.Equal(a.Vars, b.Vars) && slices.Equal(a.Factors, b.Factors) && slices.Equal(a.Parent, b.Parent)
	})
}

// shuffled returns a copy of m with its factors in random order and each
// pairwise scope in random orientation; perm maps new factor indices to old.
func shuffled(r *rand.Rand, m *model.Model) *model.Model {
	c := *m
	c.Factors = slices.Clone(m.Factors)
	r.Shuffle(len(c.Factors), func(i, j int) { c.Factors[i], c.Factors[j] = c.Factors[j], c.Factors[i] })
	for a := range c.Factors {
		f := &c.Factors[a]
		if f.Kind == model.Potts && r.IntN(2) == 0 {
			f.Vars = []int{f.Vars[1], f.Vars[0]}
		}
	}
	return &c
}

func TestGridDetection(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, hw := range [][2]int{{2, 2}, {2, 3}, {3, 2}, {5, 7}, {9, 4}} {
		m := generate.Potts(generate.GridOptions{Height: hw[0], Width: hw[1], Labels: 2, Rho: 1, Seed: 3})
		for _, mm := range []*model.Model{m, shuffled(r, m)} {
			g, err := newPairGraph(mm)
			if err != nil {
				t.Fatal(err)
			}
			l := g.grid()
			if l == nil || l.h != hw[0] || l.w != hw[1] {
				t.Fatalf("%dx%d grid: detected %+v", hw[0], hw[1], l)
			}
		}
	}
	// Numbered column-major: the transpose.
	for _, hw := range [][2]int{{2, 3}, {7, 4}} {
		h, w := hw[0], hw[1]
		perm := make([]int, h*w)
		for v := range perm {
			perm[v] = v%w*h + v/w
		}
		g, err := newPairGraph(gridModel(h, w, 0, perm))
		if err != nil {
			t.Fatal(err)
		}
		if l := g.grid(); l == nil || l.h != w || l.w != h {
			t.Fatalf("%dx%d grid numbered column-major: detected %+v", h, w, l)
		}
	}
	// Not lattices: paths, a missing edge, a parallel edge, a diagonal, a
	// transposed numbering with a missing edge.
	m := generate.Potts(generate.GridOptions{Height: 4, Width: 5, Labels: 2, Rho: 1, Seed: 3})
	notGrid := map[string]*model.Model{
		"1x6":     generate.Potts(generate.GridOptions{Height: 1, Width: 6, Labels: 2, Rho: 1}),
		"6x1":     generate.Potts(generate.GridOptions{Height: 6, Width: 1, Labels: 2, Rho: 1}),
		"missing": {Cards: m.Cards, Factors: m.Factors[1:]},
		"parallel": {Cards: m.Cards, Factors: append(slices.Clone(m.Factors),
			model.Factor{Kind: model.Potts, Vars: []int{6, 7}})},
		"diagonal": {Cards: m.Cards, Factors: append(slices.Clone(m.Factors[:len(m.Factors)-1]),
			model.Factor{Kind: model.Potts, Vars: []int{0, 6}})},
		"wrap": {Cards: m.Cards, Factors: append(slices.Clone(m.Factors[:len(m.Factors)-1]),
			model.Factor{Kind: model.Potts, Vars: []int{4, 5}})},
	}
	for name, mm := range notGrid {
		g, err := newPairGraph(mm)
		if err != nil {
			t.Fatal(err)
		}
		if l := g.grid(); l != nil {
			t.Errorf("%s: detected a %dx%d grid", name, l.h, l.w)
		}
	}
}

func TestPairGraphErrors(t *testing.T) {
	for name, f := range map[string]model.Factor{
		"range": {Kind: model.Potts, Vars: []int{0, 3}},
		"neg":   {Kind: model.Dense, Vars: []int{-1, 0}, Table: make([]float64, 4)},
		"loop":  {Kind: model.Pair, Vars: []int{1, 1}},
	} {
		m := binaryModel(3)
		m.Factors = []model.Factor{f}
		if _, err := Chains(m); err == nil {
			t.Errorf("%s: Chains: no error", name)
		}
		if _, err := Trees(m); err == nil {
			t.Errorf("%s: Trees: no error", name)
		}
	}
}

func TestNoPairwise(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	m := randomGraph(r, 20, 30, false, true)
	var kept []model.Factor
	for _, f := range m.Factors {
		if !IsPairwise(&f) {
			kept = append(kept, f)
		}
	}
	m.Factors = kept
	for _, build := range []func(*model.Model) (Plan, error){Chains, Trees} {
		p, err := build(m)
		if err != nil {
			t.Fatal(err)
		}
		if !samePlan(p, PerFactor(m)) {
			t.Fatalf("without pairwise factors the plan should be PerFactor's")
		}
	}
	for _, build := range []func(*model.Model) (Plan, error){Chains, Trees} {
		p, err := build(binaryModel(0))
		if err != nil || len(p.Slaves) != 0 {
			t.Fatalf("empty model: %d slaves, %v", len(p.Slaves), err)
		}
	}
}

// gridModel returns an h x w lattice of binary variables built directly
// (much faster than generate for large grids), with scopes in the
// documented generate order; extra variables follow the lattice. With a
// permutation perm of the h*w+extra variables, lattice variable v is
// perm[v] instead (so no lattice is detected, in general).
func gridModel(h, w, extra int, perm []int) *model.Model {
	m := binaryModel(h*w + extra)
	ne := h*(w-1) + (h-1)*w
	m.Factors = make([]model.Factor, 0, ne)
	vars := make([]int, 0, 2*ne)
	add := func(u, v int) {
		if perm != nil {
			u, v = perm[u], perm[v]
		}
		vars = append(vars, u, v)
		m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: vars[len(vars)-2 : len(vars) : len(vars)], Weight: 1})
	}
	for r := range h {
		for c := 0; c+1 < w; c++ {
			add(r*w+c, r*w+c+1)
		}
		if r+1 < h {
			for c := range w {
				add(r*w+c, (r+1)*w+c)
			}
		}
	}
	return m
}

// permutedGrid returns an h x w lattice with its variables renumbered by a
// random permutation and its factors shuffled.
func permutedGrid(r *rand.Rand, h, w int) *model.Model {
	return shuffled(r, gridModel(h, w, 0, r.Perm(h*w)))
}

// scrambledGrid1000 is permutedGrid(1000, 1000) without the copy.
func scrambledGrid1000() *model.Model {
	r := rand.New(rand.NewPCG(1, 2))
	m := gridModel(1000, 1000, 0, r.Perm(1000*1000))
	r.Shuffle(len(m.Factors), func(i, j int) { m.Factors[i], m.Factors[j] = m.Factors[j], m.Factors[i] })
	return m
}
