package trws

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// randomUnaries is a model of n variables with k states, unaries drawn
// from U[-1, 1] and no factors.
func randomUnaries(rng *rand.Rand, n, k int) *model.Model {
	m := &model.Model{Cards: make([]int, n), UnaryOff: make([]int, n+1)}
	for v := range n {
		m.Cards[v] = k
		m.UnaryOff[v+1] = m.UnaryOff[v] + k
	}
	m.Unary = make([]float64, n*k)
	for i := range m.Unary {
		m.Unary[i] = rng.Float64()*2 - 1
	}
	return m
}

// randomChain is a chain of n variables with k states, dense edges.
func randomChain(rng *rand.Rand, n, k int) *model.Model {
	m := randomUnaries(rng, n, k)
	for v := 0; v+1 < n; v++ {
		t := make([]float64, k*k)
		for i := range t {
			t[i] = rng.Float64()*2 - 1
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{v, v + 1}, Table: t})
	}
	return m
}

// maxMarginals enumerates m's max-marginals.
func maxMarginals(m *model.Model) [][]float64 {
	n := m.NumVars()
	mm := make([][]float64, n)
	for v := range mm {
		mm[v] = make([]float64, m.Cards[v])
		for i := range mm[v] {
			mm[v][i] = math.Inf(-1)
		}
	}
	x := make([]int, n)
	for {
		s := m.Score(x)
		for v := range x {
			mm[v][x[v]] = max(mm[v][x[v]], s)
		}
		v := 0
		for ; v < n; v++ {
			if x[v]++; x[v] < m.Cards[v] {
				break
			}
			x[v] = 0
		}
		if v == n {
			return mm
		}
	}
}

// TestPartBeliefsOnChain: on a chain (one chain through every node) a
// Part's beliefs after an iteration are the exact max-marginals up to a
// constant, also after its unaries change; its bound is the MAP.
func TestPartBeliefsOnChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 26))
	for range 20 {
		m := randomChain(rng, 6, 3)
		watch := []int{0, 2, 5}
		p, err := NewPart(m, watch)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 3 {
			if round > 0 { // change two watched unaries, in the Part and in m
				for _, v := range watch[:2] {
					d := []float64{rng.Float64(), -rng.Float64(), 0.5}
					p.AddUnary(v, d)
					for i, x := range d {
						m.Unary[m.UnaryOff[v]+i] += x
					}
				}
			}
			_, bb, _ := p.Iterate()
			mm := maxMarginals(m)
			best := math.Inf(-1)
			for _, x := range mm[0] {
				best = max(best, x)
			}
			if math.Abs(bb-best) > 1e-9 {
				t.Errorf("round %d: bound %v, MAP %v", round, bb, best)
			}
			for _, v := range watch {
				if p.Chains(v) != 1 {
					t.Errorf("variable %d on %d chains", v, p.Chains(v))
				}
				b := make([]float64, 3)
				p.Belief(v, b)
				c := mm[v][0] - b[0]
				for i := range b {
					if math.Abs(b[i]+c-mm[v][i]) > 1e-9 {
						t.Errorf("round %d, variable %d: belief %v, max-marginal %v", round, v, b, mm[v])
						break
					}
				}
			}
		}
	}
	if _, err := NewPart(randomChain(rng, 3, 2), []int{3}); err == nil {
		t.Error("a watched variable outside the model accepted")
	}
}

// TestPartScoresOnModel: a Part's own scores (Score, Scores, Sweeps) are
// the model's, whatever AddUnary did to its unaries: Score(x) is
// m.Score(x); Scores(v) is v's unary plus the scores of the factors on v
// at each state of v (localScore); Sweeps moves as ICM on those does, the
// fixed variables kept.
func TestPartScoresOnModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 5))
	for trial := range 200 {
		m := tinyPairwise(rng, oracle.TinyOptions{MaxVars: 7, MaxCard: 3, Soft: trial%2 == 0})
		if trial%3 == 0 {
			m = randomTree(rng, 8, 3, trial%2 == 1, false)
		}
		if m.NumVars() == 0 {
			continue
		}
		p, err := NewPart(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		for v := range m.NumVars() { // the passes' unaries move, the scores' must not
			d := make([]float64, m.Cards[v])
			for i := range d {
				d[i] = rng.Float64()
			}
			p.AddUnary(v, d)
		}
		p.Iterate()
		x := make([]int, m.NumVars())
		for v := range x {
			x[v] = rng.IntN(m.Cards[v])
		}
		if got, want := p.Score(x), m.Score(x); !near(got, want, 1e-9) {
			t.Fatalf("trial %d: Score %v, m.Score %v", trial, got, want)
		}
		loc := make([]float64, 3)
		for v := range x {
			k := m.Cards[v]
			p.Scores(v, x, loc)
			orig := x[v]
			for j := range k {
				x[v] = j
				if want := localScore(m, v, x); !near(loc[j], want, 1e-9) {
					t.Fatalf("trial %d, variable %d: Scores %v, state %d scores %v", trial, v, loc[:k], j, want)
				}
			}
			x[v] = orig
		}
		fixed := make([]bool, len(x))
		for v := range fixed {
			fixed[v] = rng.IntN(3) == 0
		}
		want := append([]int(nil), x...)
		icmByFactors(m, want, 3, fixed)
		got := append([]int(nil), x...)
		p.Sweeps(got, 3, fixed)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: Sweeps %v, ICM on m.Score %v (from %v, fixed %v)", trial, got, want, x, fixed)
		}
		// SweepsNear from a local optimum whose fixed variables then
		// changed makes the moves of the plain schedule (icmByFactors).
		if !p.Sweeps(got, 100, fixed) {
			continue
		}
		var changed []int
		for v := range got {
			if fixed[v] && m.Cards[v] > 1 && rng.IntN(2) == 0 {
				got[v] = (got[v] + 1 + rng.IntN(m.Cards[v]-1)) % m.Cards[v]
				changed = append(changed, v)
			}
		}
		want = append(want[:0], got...)
		icmByFactors(m, want, 3, fixed)
		p.SweepsNear(got, 3, fixed, changed)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: SweepsNear %v after changing %v, ICM on m.Score %v", trial, got, changed, want)
		}
	}
}

// localScore is v's unary at x[v] plus the scores at x of the factors on v.
func localScore(m *model.Model, v int, x []int) float64 {
	s := m.Unaries(v)[x[v]]
	for a := range m.Factors {
		if slices.Contains(m.Factors[a].Vars, v) {
			s += m.FactorScore(a, x)
		}
	}
	return s
}

// icmByFactors is ICM on the model's factors (localScore): each variable
// not fixed, in index order, moves to its first strictly better state, for
// at most sweeps sweeps.
func icmByFactors(m *model.Model, x []int, sweeps int, fixed []bool) {
	for range sweeps {
		moved := false
		for v := range x {
			if fixed[v] {
				continue
			}
			cur := x[v]
			best, bestS := cur, localScore(m, v, x)
			for j := range m.Cards[v] {
				x[v] = j
				if s := localScore(m, v, x); s > bestS {
					best, bestS = j, s
				}
			}
			x[v] = best
			moved = moved || best != cur
		}
		if !moved {
			return
		}
	}
}

// TestPartPottsIsNewPart: a Part made of flat Potts terms (NewPartPotts)
// runs as NewPart's of the same model with those terms as factors, bit for
// bit: bounds, beliefs and chains of the watched variables, labels, and
// the part's own scores (on the unaries as found, though NewPartPotts's
// AddUnary writes its model's), through unary changes of watched and
// other variables; pairs listed either way round and repeated pairs
// included. Bad terms are refused.
func TestPartPottsIsNewPart(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 7))
	for trial := range 60 {
		n, k := 2+rng.IntN(30), 2+rng.IntN(4)
		m := randomUnaries(rng, n, k)
		var ti, tj []int32
		var tw []float64
		for range 1 + rng.IntN(3*n) {
			u, v := rng.IntN(n), rng.IntN(n)
			if u == v {
				continue
			}
			ti, tj, tw = append(ti, int32(u)), append(tj, int32(v)), append(tw, rng.Float64()*2-1)
			m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{u, v}, Weight: tw[len(tw)-1]})
		}
		var watch []int
		for v := range n {
			if rng.IntN(4) == 0 {
				watch = append(watch, v)
			}
		}
		want, err := NewPart(m, watch)
		if err != nil {
			t.Fatal(err)
		}
		// NewPartPotts takes the unaries it is given (AddUnary writes them);
		// NewPart reads m's as found.
		flat := &model.Model{Cards: m.Cards, UnaryOff: m.UnaryOff, Unary: slices.Clone(m.Unary)}
		got, err := NewPartPotts(flat, ti, tj, tw, watch)
		if err != nil {
			t.Fatal(err)
		}
		bw, bg := make([]float64, k), make([]float64, k)
		for round := range 4 {
			for _, v := range append(slices.Clone(watch), rng.IntN(n)) {
				d := make([]float64, k)
				for i := range d {
					d[i] = rng.Float64() - 0.5
				}
				want.AddUnary(v, d)
				got.AddUnary(v, d)
			}
			f1, b1, s1 := want.Iterate()
			f2, b2, s2 := got.Iterate()
			if f1 != f2 || b1 != b2 || s1 != s2 || !slices.Equal(want.Labels(), got.Labels()) {
				t.Fatalf("trial %d, round %d: NewPart (%v %v %v %v), NewPartPotts (%v %v %v %v)", trial, round, f1, b1, s1, want.Labels(), f2, b2, s2, got.Labels())
			}
			for _, v := range watch {
				want.Belief(v, bw)
				got.Belief(v, bg)
				if !slices.Equal(bw, bg) || want.Chains(v) != got.Chains(v) {
					t.Fatalf("trial %d, round %d, variable %d: beliefs %v and %v, chains %d and %d", trial, round, v, bw, bg, want.Chains(v), got.Chains(v))
				}
			}
		}
		x := slices.Clone(want.Labels())
		if want.Score(x) != got.Score(x) {
			t.Fatalf("trial %d: scores %v and %v", trial, want.Score(x), got.Score(x))
		}
		for v := range n {
			want.Scores(v, x, bw)
			got.Scores(v, x, bg)
			if !slices.Equal(bw, bg) {
				t.Fatalf("trial %d, variable %d: local scores %v and %v", trial, v, bw, bg)
			}
		}
		fixed := make([]bool, n)
		y := slices.Clone(x)
		want.Sweeps(x, 3, fixed)
		got.Sweeps(y, 3, fixed)
		if !slices.Equal(x, y) {
			t.Fatalf("trial %d: sweeps %v and %v", trial, x, y)
		}
	}
	m := &model.Model{Cards: []int{2, 2, 3}, UnaryOff: []int{0, 2, 4, 7}, Unary: make([]float64, 7)}
	for _, c := range []struct {
		i, j []int32
		w    []float64
	}{
		{[]int32{0}, []int32{0}, []float64{1}},          // a repeated variable
		{[]int32{0}, []int32{3}, []float64{1}},          // out of range
		{[]int32{0}, []int32{2}, []float64{1}},          // cardinalities differ
		{[]int32{0}, []int32{1}, []float64{math.NaN()}}, // not finite
		{[]int32{0}, []int32{1, 0}, []float64{1}},       // lengths differ
	} {
		if _, err := NewPartPotts(m, c.i, c.j, c.w, nil); err == nil {
			t.Errorf("terms (%v, %v, %v) accepted", c.i, c.j, c.w)
		}
	}
}
