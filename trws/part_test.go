package trws

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// randomChain is a chain of n variables with k states, dense edges.
func randomChain(rng *rand.Rand, n, k int) *model.Model {
	m := &model.Model{Cards: make([]int, n), UnaryOff: make([]int, n+1)}
	for v := range n {
		m.Cards[v] = k
		m.UnaryOff[v+1] = m.UnaryOff[v] + k
	}
	m.Unary = make([]float64, n*k)
	for i := range m.Unary {
		m.Unary[i] = rng.Float64()*2 - 1
	}
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
