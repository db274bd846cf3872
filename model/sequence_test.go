package model_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// randomSequence returns a model with one Sequence factor (shared or
// per-position transitions) and the same model with the sequence written as
// dense pairwise factors plus unaries.
func randomSequence(rng *rand.Rand, shared bool) (seq, dense *model.Model) {
	n := 2 + rng.IntN(4)
	cards := make([]int, n)
	l := 1 + rng.IntN(3)
	for k := range cards {
		cards[k] = l
		if !shared {
			cards[k] = 1 + rng.IntN(3)
		}
	}
	if shared && n == 2 {
		n, cards = 3, append(cards, l)
	}
	seq, dense = model.New(cards), model.New(cards)
	vars := make([]int, n)
	for k := range vars {
		vars[k] = k
	}
	draw := func() float64 {
		if rng.IntN(8) == 0 {
			return math.Inf(-1)
		}
		return rng.Float64()*4 - 2
	}
	var emission []float64
	for k := range vars {
		for s := 0; s < cards[k]; s++ {
			e := rng.Float64()*2 - 1
			emission = append(emission, e)
			dense.Unary[dense.UnaryOff[k]+s] = e
		}
	}
	var trans []float64
	if shared {
		for e := 0; e < l*l; e++ {
			trans = append(trans, draw())
		}
	}
	for k := 0; k+1 < n; k++ {
		t := make([]float64, cards[k]*cards[k+1])
		for e := range t {
			if shared {
				t[e] = trans[e]
			} else {
				t[e] = draw()
			}
		}
		if !shared {
			trans = append(trans, t...)
		}
		dense.Factors = append(dense.Factors, model.Factor{Kind: model.Dense, Vars: []int{k, k + 1}, Table: t})
	}
	seq.Factors = []model.Factor{model.Factor{Kind: model.Sequence, Vars: vars, Table: trans}.WithEmission(emission)}
	return seq, dense
}

func TestSequenceScoreMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for it := 0; it < 300; it++ {
		seq, dense := randomSequence(rng, it%2 == 0)
		if err := seq.Validate(); err != nil {
			t.Fatalf("case %d: %v", it, err)
		}
		a, _ := oracle.BruteMAP(t, seq)
		b, _, _ := oracle.BruteForceMAP(dense)
		if a != b && !(math.Abs(a-b) < 1e-12) {
			t.Fatalf("case %d: sequence MAP %v, dense MAP %v", it, a, b)
		}
		// Evidence on the first variable: Reduce slices the sequence.
		ev := model.Evidence{0: rng.IntN(seq.Cards[0])}
		reducedMAP := func(m *model.Model) float64 {
			r, err := model.Reduce(m, ev)
			if errors.Is(err, model.ErrInfeasible) {
				return math.Inf(-1)
			}
			if err != nil {
				t.Fatalf("case %d: %v", it, err)
			}
			v, _ := oracle.BruteMAP(t, r.Model)
			return v
		}
		a, b = reducedMAP(seq), reducedMAP(dense)
		if a != b && !(math.Abs(a-b) < 1e-12) {
			t.Fatalf("case %d: reduced sequence MAP %v, reduced dense MAP %v", it, a, b)
		}
	}
}

func TestSequenceValidate(t *testing.T) {
	m := model.New([]int{2, 2, 3})
	m.Factors = []model.Factor{{Kind: model.Sequence, Vars: []int{0, 1, 2}, Table: make([]float64, 5)}}
	if err := m.Validate(); err == nil {
		t.Error("transitions of the wrong size accepted")
	}
	m.Factors[0].Table = make([]float64, 2*2+2*3)
	m.Factors[0].SetEmission(make([]float64, 6))
	if err := m.Validate(); err == nil {
		t.Error("emission of the wrong size accepted")
	}
	m.Factors[0].SetEmission(make([]float64, 7))
	if err := m.Validate(); err != nil {
		t.Errorf("valid sequence rejected: %v", err)
	}
}
