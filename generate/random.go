package generate

import (
	"math/rand/v2"

	"github.com/ddrun/ddrun/model"
)

// GaussianUnaries returns a model over variables with the given
// cardinalities, no factors and unaries drawn from N(0, 1) by r, entry by
// entry in the model's order: the start of many random test models.
func GaussianUnaries(r *rand.Rand, cards []int) *model.Model {
	m := model.New(cards)
	for j := range m.Unary {
		m.Unary[j] = r.NormFloat64()
	}
	return m
}

// DenseGrid returns an h x w grid of variables with labels states:
// GaussianUnaries, then a Dense factor on every edge whose entries are
// scale times N(0, 1) draws. Unlike Ising and Potts it draws from the
// caller's r, and its edges come variable by variable (row-major), each
// variable's edge to the right before its edge downwards.
func DenseGrid(r *rand.Rand, h, w, labels int, scale float64) *model.Model {
	cards := make([]int, h*w)
	for i := range cards {
		cards[i] = labels
	}
	m := GaussianUnaries(r, cards)
	edge := func(u, v int) {
		tab := make([]float64, labels*labels)
		for j := range tab {
			tab[j] = scale * r.NormFloat64()
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{u, v}, Table: tab})
	}
	for i := range h {
		for j := range w {
			if j+1 < w {
				edge(i*w+j, i*w+j+1)
			}
			if i+1 < h {
				edge(i*w+j, (i+1)*w+j)
			}
		}
	}
	return m
}
