package oracle

import (
	"math"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// MustBruteForceMAP is BruteForceMAP for a test: an error fails tb.
func MustBruteForceMAP(tb testing.TB, m *model.Model) (best float64, x []int) {
	tb.Helper()
	best, x, err := BruteForceMAP(m)
	if err != nil {
		tb.Fatal(err)
	}
	return best, x
}

// MustLocalPolytopeLP is LocalPolytopeLP for a test: an error fails tb.
func MustLocalPolytopeLP(tb testing.TB, m *model.Model) float64 {
	tb.Helper()
	v, err := LocalPolytopeLP(m)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// Clamped is m conditioned on ev the plain way, as toulbar2 reads
// evidence: a copy of m whose observed variables have every other state
// forbidden (a -Inf unary). It is the reference that reductions by
// evidence (model.Reduce) are checked against; m is not changed.
func Clamped(m *model.Model, ev model.Evidence) *model.Model {
	c := *m
	c.Unary = slices.Clone(m.Unary)
	for v, s := range ev {
		u := c.Unaries(v)
		for k := range u {
			if k != s {
				u[k] = math.Inf(-1)
			}
		}
	}
	return &c
}
