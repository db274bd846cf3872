package native

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// allKinds returns a model with every factor kind, negated inputs, -Inf
// entries, a -0, an empty-scope dense factor, and sequences with shared and
// per-position transitions, with and without emission.
func allKinds() *model.Model {
	inf := math.Inf(-1)
	m := model.New([]int{2, 2, 2, 2, 3, 3, 2, 2, 4})
	copy(m.Unary, []float64{
		0, 0.5, // x0
		-1.25, 0, // x1
		inf, 2, // x2
		0, math.Copysign(0, -1), // x3
		1, 2, inf, // x4
		0.1, 0.2, 0.3, // x5
		1e-300, -1e300, // x6
		0, 0, // x7
		3, inf, inf, 4, // x8
	})
	m.Constant = -7.5
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{0, 4}, Table: []float64{0, 1, inf, 2.5, -3, 0.125}},
		{Kind: model.Dense, Vars: []int{}, Table: []float64{1.5}},
		{Kind: model.Dense, Vars: []int{4, 8, 2}, Table: seq(24, inf)},
		{Kind: model.Pair, Vars: []int{0, 1}, Weight: 1.5},
		{Kind: model.Potts, Vars: []int{4, 5}, Weight: -2},
		{Kind: model.Potts, Vars: []int{6, 7}, Weight: 1e-9},
		model.Factor{Kind: model.XOR, Vars: []int{0, 1, 2}}.WithNegated([]bool{false, true, false}),
		{Kind: model.XOR, Vars: []int{6}},
		{Kind: model.AtMostOne, Vars: []int{1, 2, 3}},
		model.Factor{Kind: model.OR, Vars: []int{2, 3}}.WithNegated([]bool{true, true}),
		model.Factor{Kind: model.OROut, Vars: []int{0, 1, 2, 3}}.WithNegated([]bool{true, false, false, true}),
		{Kind: model.ANDOut, Vars: []int{1, 2}},
		model.Factor{Kind: model.Budget, Vars: []int{0, 1, 2, 3, 6, 7}}.WithNegated([]bool{false, false, true, false, false, true}).WithBudget(2),
		model.Factor{Kind: model.Budget, Vars: []int{7}}.WithBudget(0),
		// Shared 2x2 transitions, emission with -Inf and -0.
		model.Factor{Kind: model.Sequence, Vars: []int{0, 1, 2, 3}, Table: []float64{0.5, inf, -1, 2}}.WithEmission([]float64{0, 1, inf, 0.25, math.Copysign(0, -1), 3, 1e-300, -2}),
		// Per position (3x4 then 4x3), no emission.
		{Kind: model.Sequence, Vars: []int{4, 8, 5}, Table: seq(24, inf)},
		// Two variables; an emission of zeros stays one.
		model.Factor{Kind: model.Sequence, Vars: []int{7, 6}, Table: []float64{1, 2, 3, inf}}.WithEmission(make([]float64, 4)),
		// Per position although the cardinalities are equal.
		{Kind: model.Sequence, Vars: []int{1, 3, 6}, Table: seq(8, inf)},
		{Kind: model.TruncLinear, Vars: []int{5, 4}, Weight: 1.25, Trunc: 1.5},
		{Kind: model.TruncQuad, Vars: []int{4, 5}, Weight: -0.5, Trunc: 1e300},
	}
	return m
}

// sequenceModel returns a chain of n variables with one Sequence factor over
// them (in reverse order when reverse is set): shared transitions when cards
// are all equal and shared is set, else per position; with an emission when
// emission is set. Every seventh value is -Inf.
func sequenceModel(cards []int, shared, emission, reverse bool) *model.Model {
	rng := rand.New(rand.NewPCG(uint64(len(cards)), 7))
	draw := func(i int) float64 {
		if i%7 == 6 {
			return math.Inf(-1)
		}
		return float64(rng.IntN(64)-32) / 8
	}
	m := model.New(cards)
	for i := range m.Unary {
		m.Unary[i] = draw(0)
	}
	vars := make([]int, len(cards))
	for k := range vars {
		vars[k] = k
		if reverse {
			vars[k] = len(cards) - 1 - k
		}
	}
	f := model.Factor{Kind: model.Sequence, Vars: vars}
	size := cards[0] * cards[0]
	if !shared {
		size = 0
		for k := 0; k+1 < len(vars); k++ {
			size += cards[vars[k]] * cards[vars[k+1]]
		}
	}
	f.Table = make([]float64, size)
	for i := range f.Table {
		f.Table[i] = draw(i)
	}
	if emission {
		f.SetEmission(make([]float64, len(m.Unary)))
		for i := range f.EmissionScores() {
			f.EmissionScores()[i] = draw(i + 3)
		}
	}
	m.Factors = []model.Factor{f}
	return m
}

// sequenceModels are the sequence round-trip cases.
func sequenceModels() []struct {
	name string
	m    *model.Model
} {
	return []struct {
		name string
		m    *model.Model
	}{
		{"shared+emission", sequenceModel([]int{3, 3, 3, 3, 3}, true, true, false)},
		{"shared", sequenceModel([]int{4, 4, 4}, true, false, true)},
		{"per-position+emission", sequenceModel([]int{2, 3, 1, 4}, false, true, true)},
		{"per-position", sequenceModel([]int{3, 2, 3}, false, false, false)},
		{"per-position-equal-cards", sequenceModel([]int{2, 2, 2, 2}, false, true, false)},
		{"two-vars+emission", sequenceModel([]int{3, 3}, false, true, false)},
		{"two-vars", sequenceModel([]int{2, 5}, false, false, true)},
	}
}

// seq returns n table entries, every fifth one -Inf.
func seq(n int, inf float64) []float64 {
	t := make([]float64, n)
	for i := range t {
		t[i] = float64(i)/3 - 2
		if i%5 == 4 {
			t[i] = inf
		}
	}
	return t
}

// gridModel is the benchmark model: an h x w grid of l-label variables with
// random unaries and a Potts factor (or a dense l x l table) on each edge.
func gridModel(h, w, l int, dense bool) *model.Model {
	rng := rand.New(rand.NewPCG(1, 2))
	cards := make([]int, h*w)
	for i := range cards {
		cards[i] = l
	}
	m := model.New(cards)
	for i := range m.Unary {
		m.Unary[i] = rng.Float64()*2 - 1
	}
	edge := func(a, b int) {
		f := model.Factor{Kind: model.Potts, Vars: []int{a, b}, Weight: rng.Float64()*20 - 10}
		if dense {
			f = model.Factor{Kind: model.Dense, Vars: []int{a, b}, Table: make([]float64, l*l)}
			for k := range f.Table {
				f.Table[k] = rng.Float64()*20 - 10
			}
		}
		m.Factors = append(m.Factors, f)
	}
	for r := 0; r < h; r++ {
		for c := 0; c+1 < w; c++ {
			edge(r*w+c, r*w+c+1)
		}
	}
	for r := 0; r+1 < h; r++ {
		for c := 0; c < w; c++ {
			edge(r*w+c, (r+1)*w+c)
		}
	}
	return m
}

func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

func sameFloats(a, b []float64) bool {
	return (a == nil) == (b == nil) && slices.EqualFunc(a, b, sameFloat)
}

func sameBools(a, b []bool) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

// diffModels describes the first difference between a and b ("" if none):
// floats compare bit for bit, Negated, Table and Emission nil-ness too.
func diffModels(a, b *model.Model) string {
	switch {
	case !slices.Equal(a.Cards, b.Cards):
		return "cards"
	case !slices.Equal(a.UnaryOff, b.UnaryOff):
		return "unary offsets"
	case !sameFloats(a.Unary, b.Unary):
		return "unaries"
	case !sameFloat(a.Constant, b.Constant):
		return "constant"
	case len(a.Factors) != len(b.Factors):
		return "number of factors"
	}
	for i := range a.Factors {
		fa, fb := &a.Factors[i], &b.Factors[i]
		if fa.Kind != fb.Kind || !slices.Equal(fa.Vars, fb.Vars) || !sameBools(fa.NegatedInputs(), fb.NegatedInputs()) ||
			!sameFloats(fa.Table, fb.Table) || !sameFloats(fa.EmissionScores(), fb.EmissionScores()) ||
			!sameFloat(fa.Weight, fb.Weight) || fa.BudgetBound() != fb.BudgetBound() {
			return fmt.Sprintf("factor %d (%s)", i, fa.Kind)
		}
	}
	return ""
}

// roundTrip writes m in f and reads it back.
func roundTrip(t testing.TB, m *model.Model, f Format) *model.Model {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, m, f); err != nil {
		t.Fatalf("write %v: %v", f, err)
	}
	m2, err := Read(&b, "rt."+f.String(), f)
	if err != nil {
		t.Fatalf("read back %v: %v", f, err)
	}
	return m2
}
