package oracle

import (
	"math/rand/v2"

	"github.com/ddrun/ddrun/model"
)

// FrustratedTriangle is the triangle of binary variables whose three
// couplings each score 1 for disagreement: the local polytope's optimum is
// 3 (mu = 1/2 everywhere, every edge disagreeing), LP-S + SOC gives 2.25
// (Q >= f(3/2) = 3/8 per label) and the MAP is 2.
func FrustratedTriangle() *model.Model {
	m := model.New([]int{2, 2, 2})
	for _, e := range [3][2]int{{0, 1}, {1, 2}, {0, 2}} {
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: e[:], Table: []float64{0, 1, 1, 0}})
	}
	return m
}

// SOCTestModel returns a model with many triangles for testing LP-S + SOC
// relaxations: on the complete graph K_n when h == 0 (n = w), else on an
// h x w grid with one diagonal per cell (alternating direction), with
// `labels` states per variable, Gaussian unaries of deviation 0.3 and
// Dense couplings whose entries are Gaussian with deviation 0.5, plus 1
// for disagreement (frustrated) so that the local polytope is loose.
func SOCTestModel(rng *rand.Rand, h, w, labels int) *model.Model {
	var edges [][2]int
	n := w
	if h == 0 {
		for a := 0; a < w; a++ {
			for b := a + 1; b < w; b++ {
				edges = append(edges, [2]int{a, b})
			}
		}
	} else {
		n = h * w
		for r := 0; r < h; r++ {
			for c := 0; c < w; c++ {
				v := r*w + c
				if c+1 < w {
					edges = append(edges, [2]int{v, v + 1})
				}
				if r+1 < h {
					edges = append(edges, [2]int{v, v + w})
				}
				if r+1 < h && c+1 < w {
					if (r+c)%2 == 0 {
						edges = append(edges, [2]int{v, v + w + 1})
					} else {
						edges = append(edges, [2]int{v + 1, v + w})
					}
				}
			}
		}
	}
	cards := make([]int, n)
	for i := range cards {
		cards[i] = labels
	}
	m := model.New(cards)
	for j := range m.Unary {
		m.Unary[j] = 0.3 * rng.NormFloat64()
	}
	for _, e := range edges {
		t := make([]float64, labels*labels)
		for i := range labels {
			for j := range labels {
				t[i*labels+j] = 0.5 * rng.NormFloat64()
				if i != j {
					t[i*labels+j] += 1
				}
			}
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{e[0], e[1]}, Table: t})
	}
	return m
}
