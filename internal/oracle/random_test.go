package oracle

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ddrun/ddrun/model"
)

func TestRandomTinyModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	kinds := map[model.Kind]int{}
	negated, hardDense, hardUnary, infeasible, card1, arity3 := 0, 0, 0, 0, 0, 0
	for it := 0; it < 1000; it++ {
		opts := TinyOptions{AllowInfeasible: it%2 == 0, MaxVars: 1 + it%14}
		m := RandomTinyModel(rng, opts)
		if err := m.Validate(); err != nil {
			t.Fatalf("model %d invalid: %v", it, err)
		}
		if n := m.NumVars(); n < 1 || n > min(opts.MaxVars, 12) {
			t.Fatalf("model %d: %d variables, MaxVars %d", it, n, opts.MaxVars)
		}
		total := 1
		for _, c := range m.Cards {
			total *= c
			if c > 3 {
				t.Fatalf("model %d: cardinality %d", it, c)
			}
			if c == 1 {
				card1++
			}
		}
		if total > 4096 {
			t.Fatalf("model %d: %d assignments", it, total)
		}
		if len(m.Factors) > 2*min(opts.MaxVars, 12) {
			t.Fatalf("model %d: %d factors", it, len(m.Factors))
		}
		for _, u := range m.Unary {
			if math.IsInf(u, -1) {
				hardUnary++
			}
		}
		for _, f := range m.Factors {
			kinds[f.Kind]++
			for _, b := range f.NegatedInputs() {
				if b {
					negated++
				}
			}
			if f.Kind == model.Dense && len(f.Vars) == 3 {
				arity3++
			}
			for _, v := range f.Table {
				if math.IsInf(v, -1) {
					hardDense++
				}
			}
		}
		best, _ := BruteMAP(t, m)
		if math.IsInf(best, -1) {
			if !opts.AllowInfeasible {
				t.Fatalf("model %d infeasible without AllowInfeasible", it)
			}
			infeasible++
		}
	}
	for _, k := range allKinds {
		if kinds[k] == 0 {
			t.Errorf("kind %s never drawn", k)
		}
	}
	if negated == 0 || hardDense == 0 || hardUnary == 0 || infeasible == 0 || card1 == 0 || arity3 == 0 {
		t.Errorf("missing cases: negated %d, -Inf dense entries %d, -Inf unaries %d, infeasible %d, card-1 variables %d, arity-3 dense %d",
			negated, hardDense, hardUnary, infeasible, card1, arity3)
	}
	t.Logf("kinds %v, infeasible %d of 500", kinds, infeasible)
}

func TestRandomTinyModelOptions(t *testing.T) {
	// Deterministic given the stream.
	a := RandomTinyModel(rand.New(rand.NewPCG(1, 1)), TinyOptions{})
	b := RandomTinyModel(rand.New(rand.NewPCG(1, 1)), TinyOptions{})
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different models")
	}
	rng := rand.New(rand.NewPCG(17, 18))
	for it := 0; it < 300; it++ {
		// Soft: no -Inf anywhere, no logic kinds.
		m := RandomTinyModel(rng, TinyOptions{Soft: true, MaxCard: 4, MaxAssignments: 500})
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		total := 1
		for _, c := range m.Cards {
			total *= c
		}
		if total > 500 {
			t.Fatalf("soft: %d assignments", total)
		}
		for _, u := range m.Unary {
			if math.IsInf(u, -1) {
				t.Fatal("soft: -Inf unary")
			}
		}
		for _, f := range m.Factors {
			if f.Kind.IsLogic() {
				t.Fatalf("soft: %s factor", f.Kind)
			}
			for _, v := range f.Table {
				if math.IsInf(v, -1) {
					t.Fatal("soft: -Inf entry")
				}
			}
		}
		// Kinds restriction (Dense is the fallback) and integer weights.
		m = RandomTinyModel(rng, TinyOptions{Kinds: []model.Kind{model.XOR, model.Potts}, IntegerWeights: true})
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, f := range m.Factors {
			if f.Kind != model.XOR && f.Kind != model.Potts && f.Kind != model.Dense {
				t.Fatalf("kinds: %s factor", f.Kind)
			}
			for _, v := range append([]float64{f.Weight}, f.Table...) {
				if !math.IsInf(v, -1) && v != math.Round(v) {
					t.Fatalf("integer weights: %v", v)
				}
			}
		}
		for _, u := range m.Unary {
			if !math.IsInf(u, -1) && u != math.Round(u) {
				t.Fatalf("integer weights: unary %v", u)
			}
		}
	}
}
