package oracle

import (
	"math"
	"os"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

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

// ReadMPE is the assignment in the UAI MPE file at path (a run's --out):
// an error reading it fails tb.
func ReadMPE(tb testing.TB, path string) []int {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	x, err := uai.ReadMPE(f, path)
	if err != nil {
		tb.Fatal(err)
	}
	return x
}
