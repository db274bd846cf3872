package learn

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// bruteLP maximises the local-polytope LP of a binary pairwise model by
// enumerating the half-integral node marginals {0, 1/2, 1}^L (the local
// polytope of binary pairwise models has half-integral vertices), each
// pair marginal at its best value given the nodes: min(mu_a, mu_b) when
// its weight is positive, max(0, mu_a+mu_b-1) otherwise.
func bruteLP(s, pair []float64, L int) float64 {
	mu := make([]float64, L)
	idx := make([]int, L)
	best := math.Inf(-1)
	for {
		for l := range mu {
			mu[l] = float64(idx[l]) / 2
		}
		best = max(best, lpValueAt(s, pair, mu, L))
		if !nextTuple(idx, 3) {
			return best
		}
	}
}

// lpValueAt is the LP objective of node marginals mu (pairs at their best).
func lpValueAt(s, pair, mu []float64, L int) float64 {
	v := 0.0
	for a := 0; a < L; a++ {
		v += s[a] * mu[a]
		for b := a + 1; b < L; b++ {
			p := pair[a*L+b]
			if p > 0 {
				v += p * min(mu[a], mu[b])
			} else {
				v += p * max(0, mu[a]+mu[b]-1)
			}
		}
	}
	return v
}

func TestMLLPMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var g lpGraph
	for it := 0; it < 400; it++ {
		L := 1 + rng.IntN(8)
		w := NewWeights(KindMultilabel, L, 1)
		s := make([]float64, L)
		for l := range s {
			s[l] = rng.NormFloat64()
		}
		for a := 0; a < L; a++ {
			for b := a + 1; b < L; b++ {
				switch rng.IntN(3) {
				case 0:
					w.Pair[a*L+b] = 2 * rng.NormFloat64()
				case 1:
					w.Pair[a*L+b] = float64(rng.IntN(3) - 1) // ties
				}
			}
		}
		mu := make([]float64, L)
		got := mlLP(s, w, nil, mu, &g)
		want := bruteLP(s, w.Pair, L)
		if math.Abs(got-want) > 1e-9 {
			t.Fatalf("it %d L %d: max-flow LP %v, enumeration %v", it, L, got, want)
		}
		if at := lpValueAt(s, w.Pair, mu, L); math.Abs(at-want) > 1e-9 {
			t.Fatalf("it %d L %d: the returned marginals %v score %v, optimum %v", it, L, mu[:L], at, want)
		}
		// The LP bounds the integral maximum from above.
		sc := MLScratch{s: s, y: make([]bool, L)}
		if ib := mlBrute(w, &sc); ib > got+1e-9 {
			t.Fatalf("it %d: integral maximum %v above the LP %v", it, ib, got)
		}
	}
}

func TestPrimalLPBoundsPrimal(t *testing.T) {
	tr, _, _ := gen(t, GenMultilabel, MLGenOptions{Labels: 8, Features: 20, Train: 40, Test: 1, Seed: 3})
	rng := rand.New(rand.NewPCG(1, 1))
	for it := 0; it < 3; it++ {
		w := randomWeights(rng, KindMultilabel, 8, 20)
		exact, ok, err := Primal(context.Background(), w, &Data{ML: tr}, 1, 2)
		if err != nil || !ok {
			t.Fatal(err, ok)
		}
		lp, err := PrimalLP(context.Background(), w, tr, 1, 2, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if lp < exact-1e-9 {
			t.Fatalf("LP primal %v below the exact primal %v", lp, exact)
		}
	}
}
