package trws

import (
	"math"
	"math/rand/v2"
	"testing"

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
