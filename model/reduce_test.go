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
		clamped := oracle.Clamped(m, ev)
		want, _ := oracle.BruteMAP(t, clamped)
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
		got, x := oracle.BruteMAP(t, r.Model)
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

// When only one-variable factors are folded (no evidence, no forbidden
// state), the reduced model shares the run of multi-variable factors with
// the original instead of copying it, capped so that appending copies;
// interleaved one-variable factors give the same factors, copied.
func TestReduceSharesFactors(t *testing.T) {
	pairs := func(m *model.Model) {
		for v := 0; v+1 < len(m.Cards); v++ {
			m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{v, v + 1}, Weight: float64(v) - 1.5})
		}
	}
	unaries := func(m *model.Model) {
		for v := range m.Cards {
			m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{v}, Table: []float64{float64(v), -1, 0.5}})
		}
	}
	tail, head, mixed := model.New([]int{3, 3, 3, 3}), model.New([]int{3, 3, 3, 3}), model.New([]int{3, 3, 3, 3})
	pairs(tail)
	unaries(tail)
	unaries(head)
	pairs(head)
	pairs(mixed)
	unaries(mixed)
	mixed.Factors[1], mixed.Factors[len(mixed.Factors)-1] = mixed.Factors[len(mixed.Factors)-1], mixed.Factors[1]
	for name, c := range map[string]struct {
		m     *model.Model
		first int // where the run of pairs starts in m.Factors, -1 if none
	}{"tail": {tail, 0}, "head": {head, 4}, "mixed": {mixed, -1}} {
		r, err := model.Reduce(c.m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Factors) != 3 || cap(r.Factors) != 3 {
			t.Fatalf("%s: %d factors (cap %d), want 3 (cap 3)", name, len(r.Factors), cap(r.Factors))
		}
		if shared := &r.Factors[0] == &c.m.Factors[max(c.first, 0)]; shared != (c.first >= 0) {
			t.Errorf("%s: factors shared %v, want %v", name, shared, c.first >= 0)
		}
		for k, f := range r.Factors {
			if f.Kind != model.Potts || f.Vars[0] != f.Vars[1]-1 || f.Weight != float64(f.Vars[0])-1.5 {
				t.Errorf("%s: reduced factor %d is %+v", name, k, f)
			}
		}
		for v := range c.m.Cards {
			if got, want := r.Unaries(v), []float64{float64(v), -1, 0.5}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
				t.Errorf("%s: variable %d unaries %v, want %v", name, v, got, want)
			}
		}
		x := []int{0, 2, 1, 1}
		if got, want := r.Score(x), c.m.Score(x); math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: reduced score %v, original %v", name, got, want)
		}
	}
}

// BenchmarkReduceGrid reduces a 300x300 4-label Potts grid whose unaries
// are one-variable factors after the pairs (as the UAI reader reads a
// generated grid): the pairs are shared, not copied, so B/op is about the
// folded unaries and the state maps.
func BenchmarkReduceGrid(b *testing.B) {
	const w, h, l = 300, 300, 4
	cards := make([]int, w*h)
	for i := range cards {
		cards[i] = l
	}
	m := model.New(cards)
	rng := rand.New(rand.NewPCG(1, 2))
	for v := range cards {
		if v%w+1 < w {
			m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{v, v + 1}, Weight: rng.Float64() - 0.5})
		}
		if v+w < len(cards) {
			m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{v, v + w}, Weight: rng.Float64() - 0.5})
		}
	}
	for v := range cards {
		t := make([]float64, l)
		for s := range t {
			t[s] = rng.NormFloat64()
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{v}, Table: t})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := model.Reduce(m, nil); err != nil {
			b.Fatal(err)
		}
	}
}
