package convexmp

import (
	"math/rand/v2"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// spinGlass returns the paper's spin glass (Sect. 6): a side x side grid of
// variables with `labels` states, unaries drawn from N(0,1), and on every
// edge a table w*(+1 on the diagonal, -1 off it) with w ~ N(0,1). With
// fullTables, every pairwise entry is drawn from N(0,1) instead.
func spinGlass(rng *rand.Rand, side, labels int, fullTables bool) *model.Model {
	cards := make([]int, side*side)
	for i := range cards {
		cards[i] = labels
	}
	m := generate.GaussianUnaries(rng, cards)
	for r := 0; r < side; r++ {
		for c := 0; c < side; c++ {
			v := r*side + c
			for _, u := range []int{v + 1, v + side} {
				if (u == v+1 && c+1 == side) || u >= side*side {
					continue
				}
				tab := make([]float64, labels*labels)
				w := rng.NormFloat64()
				for j := range tab {
					switch {
					case fullTables:
						tab[j] = rng.NormFloat64()
					case j/labels == j%labels:
						tab[j] = w
					default:
						tab[j] = -w
					}
				}
				m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{v, u}, Table: tab})
			}
		}
	}
	return m
}
