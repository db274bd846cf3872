package consensus

import (
	"math"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// Pairs.Validate refuses what model.Model.Validate refuses of the same
// factors, with a message naming the factor.
func TestPairsValidate(t *testing.T) {
	cards := []int{3, 3, 2, 2}
	for _, c := range []struct {
		name string
		q    Pairs
		want string // "" for valid
	}{
		{"potts", Pairs{Kind: model.Potts, I: []int32{0}, J: []int32{1}, W: []float64{-2}}, ""},
		{"pair", Pairs{Kind: model.Pair, I: []int32{2}, J: []int32{3}, W: []float64{1}}, ""},
		{"kind", Pairs{Kind: model.Dense, I: []int32{0}, J: []int32{1}, W: []float64{1}}, "pairs of kind"},
		{"lengths", Pairs{Kind: model.Potts, I: []int32{0}, J: []int32{}, W: []float64{1}}, "entries"},
		{"range", Pairs{Kind: model.Potts, I: []int32{0}, J: []int32{4}, W: []float64{1}}, "out of range"},
		{"negative", Pairs{Kind: model.Potts, I: []int32{-1}, J: []int32{1}, W: []float64{1}}, "out of range"},
		{"twice", Pairs{Kind: model.Potts, I: []int32{1}, J: []int32{1}, W: []float64{1}}, "twice"},
		{"pair not binary", Pairs{Kind: model.Pair, I: []int32{0}, J: []int32{2}, W: []float64{1}}, "binary"},
		{"potts cards", Pairs{Kind: model.Potts, I: []int32{0}, J: []int32{2}, W: []float64{1}}, "cardinalities differ"},
		{"nan", Pairs{Kind: model.Potts, I: []int32{0}, J: []int32{1}, W: []float64{math.NaN()}}, "not finite"},
		{"inf", Pairs{Kind: model.Potts, I: []int32{0}, J: []int32{1}, W: []float64{math.Inf(-1)}}, "not finite"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.q.Validate(cards)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("valid pairs refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
			if c.want != "" || c.q.Kind == model.Dense {
				return
			}
			// The same factors in a model pass its Validate, and score
			// alike.
			m := model.New(cards)
			m.Factors = c.q.AppendFactors(m.Factors)
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			for x0 := range 2 {
				x := []int{x0, 1, 1, x0}
				if got, want := c.q.score(0, x), m.FactorScore(0, x); got != want {
					t.Fatalf("x %v: score %v, the model's %v", x, got, want)
				}
			}
		})
	}
}
