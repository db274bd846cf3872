package model_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// Reduce must preserve the score of every assignment that respects the
// evidence and the forbidden states, and so the MAP.
func TestReducePreservesScores(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for it := 0; it < 600; it++ {
		opts := oracle.TinyOptions{AllowInfeasible: true}
		if it >= 400 { // the truncated kinds, which evidence turns dense
			opts.Kinds = []model.Kind{model.Dense, model.Potts, model.TruncLinear, model.TruncQuad, model.XOR}
			opts.MaxCard = 5
		}
		m := oracle.RandomTinyModel(rng, opts)
		ev := model.Evidence{}
		for v := range m.Cards {
			if rng.IntN(4) == 0 {
				ev[v] = rng.IntN(m.Cards[v])
			}
		}
		// The same conditioning expressed as -Inf unaries, for brute force.
		clamped := *m
		clamped.Unary = append([]float64(nil), m.Unary...)
		for v, s := range ev {
			u := clamped.Unary[clamped.UnaryOff[v]:clamped.UnaryOff[v+1]]
			for k := range u {
				if k != s {
					u[k] = math.Inf(-1)
				}
			}
		}
		want, _, err := oracle.BruteForceMAP(&clamped)
		if err != nil {
			t.Fatal(err)
		}
		r, err := model.Reduce(m, ev)
		if errors.Is(err, model.ErrInfeasible) {
			if !math.IsInf(want, -1) {
				t.Fatalf("model %d: Reduce says infeasible, brute force finds %v", it, want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("model %d: %v", it, err)
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("model %d: reduced model invalid: %v", it, err)
		}
		for i, u := range r.Unary {
			if math.IsInf(u, 0) {
				t.Fatalf("model %d: reduced unary entry %d is %v", it, i, u)
			}
		}
		got, x, err := oracle.BruteForceMAP(r.Model)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsInf(want, -1) != math.IsInf(got, -1) || (!math.IsInf(want, -1) && math.Abs(got-want) > 1e-9) {
			t.Fatalf("model %d: reduced MAP %v, original MAP %v", it, got, want)
		}
		if x != nil {
			full := r.Expand(x)
			if s := clamped.Score(full); math.Abs(s-got) > 1e-9 {
				t.Fatalf("model %d: expanded assignment scores %v in the original, %v reduced", it, s, got)
			}
			for v, s := range ev {
				if full[v] != s {
					t.Fatalf("model %d: expanded assignment breaks evidence on %d", it, v)
				}
			}
		}
	}
}

func TestReduceRejectsBadEvidence(t *testing.T) {
	m := model.New([]int{2, 3})
	if _, err := model.Reduce(m, model.Evidence{1: 3}); err == nil {
		t.Error("state out of range accepted")
	}
	if _, err := model.Reduce(m, model.Evidence{2: 0}); err == nil {
		t.Error("variable out of range accepted")
	}
}
