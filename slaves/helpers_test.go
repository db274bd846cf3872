package slaves_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/slaves/slavetest"
)

// benchMAP times a slave's MAP on 64 random weight vectors of dim entries
// in [-1, 1), taken in turn, into an assignment of vars variables.
func benchMAP(b *testing.B, mapOf func(w []float64, y []int) float64, rng *rand.Rand, dim, vars int) {
	ws := make([][]float64, 64)
	for i := range ws {
		ws[i] = make([]float64, dim)
		for k := range ws[i] {
			ws[i][k] = 2*rng.Float64() - 1
		}
	}
	y := make([]int, vars)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mapOf(ws[i&63], y)
	}
}

// mustPanic fails t unless f panics, naming the case by format and args.
func mustPanic(t *testing.T, f func(), format string, args ...any) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", fmt.Sprintf(format, args...))
		}
	}()
	f()
}

// randWeights is n weights: small integers in {0, 1, 2} (many ties) when
// ties, else uniform in [-spread, spread).
func randWeights(rng *rand.Rand, n int, ties bool, spread float64) []float64 {
	w := make([]float64, n)
	for i := range w {
		if ties {
			w[i] = float64(rng.IntN(3))
		} else {
			w[i] = spread*(2*rng.Float64()) - spread
		}
	}
	return w
}

// asErrs tracks the largest errors of QUAD answers against the reference
// (and, through addKKT, the largest Frank-Wolfe gap).
type asErrs struct{ u, obj, kkt float64 }

func (e *asErrs) add(t testing.TB, cards []int, score func([]int) float64, c []float64, eta float64, u []float64, phiq float64) {
	t.Helper()
	ref, ue := slavetest.CheckQUAD(t, cards, score, c, eta, u, phiq, 1e-6, 1e-9)
	e.u = math.Max(e.u, ue)
	e.obj = math.Max(e.obj, math.Abs(slavetest.QUADObjective(c, eta, u, phiq)-ref.Obj))
}

// addKKT is add, the KKT conditions checked too.
func (e *asErrs) addKKT(t testing.TB, cards []int, score func([]int) float64, c []float64, eta float64, u []float64, phiq float64) {
	t.Helper()
	e.add(t, cards, score, c, eta, u, phiq)
	e.kkt = math.Max(e.kkt, math.Abs(slavetest.CheckKKT(t, cards, score, c, eta, u, phiq, 1e-9)))
}

func (e asErrs) String() string {
	return fmt.Sprintf("max |u - ref| %.2g, max |obj - ref| %.2g, max |FW gap| %.2g", e.u, e.obj, e.kkt)
}
