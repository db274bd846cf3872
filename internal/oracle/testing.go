package oracle

import (
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
