package model_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// structuredTable returns the l x l table c + theta of a structured kind,
// evaluated as the model scores it.
func structuredTable(k model.Kind, l int, w, t, c float64) []float64 {
	m := model.New([]int{l, l})
	m.Factors = []model.Factor{{Kind: k, Vars: []int{0, 1}, Weight: w, Trunc: t}}
	tab := m.DenseTable(0)
	for i := range tab {
		tab[i] += c
	}
	return tab
}

// TestPairStructureFinds draws tables of every structured kind with random
// constants and checks that PairStructure finds a structure that gives
// back every entry bit for bit (the kind may differ where the table fits
// several, e.g. a truncation below 1 is Potts).
func TestPairStructureFinds(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	found := map[model.Kind]int{}
	for n := 0; n < 20000; n++ {
		l := 2 + r.IntN(12)
		k := []model.Kind{model.Potts, model.TruncLinear, model.TruncQuad}[r.IntN(3)]
		w := r.NormFloat64() * 3
		if r.IntN(3) == 0 {
			w = float64(r.IntN(9) - 4)
		}
		tr := float64(1+r.IntN(l*l)) / float64(1+r.IntN(2))
		c := r.NormFloat64() * 10
		if r.IntN(4) == 0 {
			c = 0
		}
		tab := structuredTable(k, l, w, tr, c)
		gk, gw, gt, gc, ok := model.PairStructure(l, tab)
		if !ok {
			// Rounding can make a table that no (w, t, c) reproduces
			// exactly; with c = 0 and integer weights none may fail.
			if c == 0 && w == math.Trunc(w) && tr == math.Trunc(tr) {
				t.Fatalf("%v l=%d w=%v t=%v: not found", k, l, w, tr)
			}
			continue
		}
		found[gk]++
		back := structuredTable(gk, l, gw, gt, 0)
		for i := range tab {
			if math.Float64bits(gc+back[i]) != math.Float64bits(tab[i]) {
				t.Fatalf("%v l=%d w=%v t=%v c=%v: found %v w=%v t=%v c=%v, entry %d = %v, table %v", k, l, w, tr, c, gk, gw, gt, gc, i, gc+back[i], tab[i])
			}
		}
	}
	for _, k := range []model.Kind{model.Potts, model.TruncLinear, model.TruncQuad} {
		if found[k] < 1000 {
			t.Errorf("%v found %d times", k, found[k])
		}
	}
}

// TestPairStructureRejects checks that tables one ulp off a structure, or
// with -Inf, or not symmetric, stay dense.
func TestPairStructureRejects(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for n := 0; n < 5000; n++ {
		l := 3 + r.IntN(8)
		k := []model.Kind{model.Potts, model.TruncLinear, model.TruncQuad}[r.IntN(3)]
		tab := structuredTable(k, l, float64(1+r.IntN(5)), float64(2+r.IntN(l)), float64(r.IntN(5)))
		i := r.IntN(len(tab))
		switch r.IntN(3) {
		case 0:
			tab[i] = math.Nextafter(tab[i], math.Inf(1))
		case 1:
			tab[i] = math.Inf(-1)
		default:
			tab[i] += 0.5
		}
		if gk, gw, gt, gc, ok := model.PairStructure(l, tab); ok {
			back := structuredTable(gk, l, gw, gt, gc)
			for j := range tab {
				if math.Float64bits(back[j]) != math.Float64bits(tab[j]) {
					t.Fatalf("%v: perturbed table %v taken as %v w=%v t=%v c=%v", k, tab, gk, gw, gt, gc)
				}
			}
		}
	}
	// Approximately Potts (the UAI writer's rounding) is not Potts.
	tab := []float64{1, 0, 0, 0, 1, 0, 0, 0, 1 + 1e-15}
	if _, _, _, _, ok := model.PairStructure(3, tab); ok {
		t.Fatal("approximate Potts table taken as structured")
	}
}

// TestStructurePairs checks the model-level conversion: kinds, constant,
// and that every assignment scores as before up to the summation order.
func TestStructurePairs(t *testing.T) {
	m := model.New([]int{4, 4, 4, 3})
	m.Constant = 0.5
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{0, 1}, Table: structuredTable(model.Potts, 4, -1.5, 0, 2)},
		{Kind: model.Dense, Vars: []int{1, 2}, Table: structuredTable(model.TruncLinear, 4, 2, 2, -1)},
		{Kind: model.Dense, Vars: []int{2, 0}, Table: structuredTable(model.TruncQuad, 4, 0.5, 4, 0)},
		{Kind: model.Dense, Vars: []int{2, 3}, Table: make([]float64, 12)}, // unequal cards
		{Kind: model.Dense, Vars: []int{0, 2}, Table: []float64{0, 1, 2, 3, 1, 0, 1, 2, 2, 1, 0, 1, 3, 2, 1, 0.5}},
	}
	orig := *m
	orig.Factors = append([]model.Factor(nil), m.Factors...)
	if n := m.StructurePairs(); n != 3 {
		t.Fatalf("StructurePairs = %d, want 3", n)
	}
	want := []model.Kind{model.Potts, model.TruncLinear, model.TruncQuad, model.Dense, model.Dense}
	for a, k := range want {
		if m.Factors[a].Kind != k {
			t.Errorf("factor %d: %v, want %v", a, m.Factors[a].Kind, k)
		}
	}
	if m.Constant != 0.5+2-1 {
		t.Errorf("constant %v, want 1.5", m.Constant)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	x := make([]int, 4)
	for x[0] = range 4 {
		for x[1] = range 4 {
			for x[2] = range 4 {
				for x[3] = range 3 {
					if a, b := orig.Score(x), m.Score(x); math.Abs(a-b) > 1e-12 {
						t.Fatalf("score %v: %v, was %v", x, b, a)
					}
				}
			}
		}
	}
}
