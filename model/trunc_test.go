package model_test

import (
	"math"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// TestTruncScore checks the truncated kinds' scores against their
// definitions, with both signs of the weight.
func TestTruncScore(t *testing.T) {
	m := model.New([]int{5, 5})
	m.Factors = []model.Factor{
		{Kind: model.TruncLinear, Vars: []int{0, 1}, Weight: 2, Trunc: 2.5},
		{Kind: model.TruncQuad, Vars: []int{1, 0}, Weight: -0.5, Trunc: 5},
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for x := range 5 {
		for y := range 5 {
			d := math.Abs(float64(x - y))
			lin := -2 * math.Min(d, 2.5)
			quad := 0.5 * math.Min(d*d, 5)
			if got := m.Score([]int{x, y}); got != lin+quad {
				t.Fatalf("score(%d, %d) = %v, want %v", x, y, got, lin+quad)
			}
		}
	}
}

func TestTruncValidate(t *testing.T) {
	for _, c := range []struct {
		cards []int
		f     model.Factor
		msg   string
	}{
		{[]int{3, 4}, model.Factor{Kind: model.TruncLinear, Vars: []int{0, 1}, Weight: 1, Trunc: 1}, "cardinalities differ"},
		{[]int{3, 3}, model.Factor{Kind: model.TruncLinear, Vars: []int{0, 1}, Weight: 1}, "truncation 0"},
		{[]int{3, 3}, model.Factor{Kind: model.TruncQuad, Vars: []int{0, 1}, Weight: 1, Trunc: math.Inf(1)}, "truncation +Inf"},
		{[]int{3, 3}, model.Factor{Kind: model.TruncQuad, Vars: []int{0, 1}, Weight: math.NaN(), Trunc: 1}, "weight NaN"},
		{[]int{3, 3}, model.Factor{Kind: model.TruncQuad, Vars: []int{0, 1}, Weight: -1e300, Trunc: 1e300}, "overflows"},
		{[]int{3, 3, 3}, model.Factor{Kind: model.TruncQuad, Vars: []int{0, 1, 2}, Weight: 1, Trunc: 1}, "needs 2 variables"},
	} {
		m := model.New(c.cards)
		m.Factors = []model.Factor{c.f}
		err := m.Validate()
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.msg)
		}
	}
	if k, err := model.ParseKind("truncquad"); err != nil || k != model.TruncQuad || model.TruncLinear.String() != "trunclinear" {
		t.Fatalf("names: %v %v %v", k, err, model.TruncLinear)
	}
}
