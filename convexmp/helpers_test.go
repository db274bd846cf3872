package convexmp

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// spinGlass returns the paper's spin glass (Sect. 6): a side x side grid of
// variables with `labels` states, unaries drawn from N(0,1), and on every
// edge a table w*(+1 on the diagonal, -1 off it) with w ~ N(0,1). With
// fullTables, every pairwise entry is drawn from N(0,1) instead.
func spinGlass(rng *rand.Rand, side, labels int, fullTables bool) *model.Model {
	m := generate.GaussianUnaries(rng, slices.Repeat([]int{labels}, side*side))
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

// ring returns a frustrated cycle of n variables with `labels` states:
// unaries from N(0,1) and on each edge w*(+1 diagonal, -1 off it), w from
// N(0,1) with one sign flipped around the cycle at least.
func ring(rng *rand.Rand, n, labels int) *model.Model {
	m := generate.GaussianUnaries(rng, slices.Repeat([]int{labels}, n))
	for i := range n {
		w := math.Abs(rng.NormFloat64())
		if i == 0 {
			w = -w // frustration: the product of the signs is negative
		}
		tab := make([]float64, labels*labels)
		for j := range tab {
			if j/labels == j%labels {
				tab[j] = w
			} else {
				tab[j] = -w
			}
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{i, (i + 1) % n}, Table: tab})
	}
	return m
}

// withSequence returns a model with a Sequence factor over a chain and a
// few extra dense pairwise factors closing cycles over it.
func withSequence(rng *rand.Rand) *model.Model {
	cards := []int{3, 2, 3, 3, 2}
	m := generate.GaussianUnaries(rng, cards)
	seq := model.Factor{Kind: model.Sequence, Vars: []int{0, 1, 2, 3, 4}}
	for k := range 4 {
		for range cards[k] * cards[k+1] {
			seq.Table = append(seq.Table, 2*rng.NormFloat64())
		}
	}
	for range 13 {
		seq.SetEmission(append(seq.EmissionScores(), rng.NormFloat64()))
	}
	m.Factors = append(m.Factors, seq)
	for _, e := range [][2]int{{0, 2}, {0, 4}, {1, 3}} {
		tab := make([]float64, cards[e[0]]*cards[e[1]])
		for j := range tab {
			tab[j] = 2 * rng.NormFloat64()
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{e[0], e[1]}, Table: tab})
	}
	return m
}
