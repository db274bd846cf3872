package slaves_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/slaves"
	"github.com/ddrun/ddrun/slaves/slavetest"
)

// truncTable returns the dense table of a truncated factor, as the model
// scores it.
func truncTable(kind model.Kind, l int, w, t float64) []float64 {
	m := model.New([]int{l, l})
	m.Factors = []model.Factor{{Kind: kind, Vars: []int{0, 1}, Weight: w, Trunc: t}}
	return m.DenseTable(0)
}

func randomTrunc(rng *rand.Rand) (model.Kind, int, float64, float64) {
	kind := []model.Kind{model.TruncLinear, model.TruncQuad}[rng.IntN(2)]
	l := 1 + rng.IntN(9)
	w := 4*rng.Float64() - 2
	if rng.IntN(4) == 0 {
		w = float64(rng.IntN(5) - 2)
	}
	t := []float64{0.5, 1, 2.5, 3, 100}[rng.IntN(5)]
	return kind, l, w, t
}

// The distance-transform MAP against brute force and against Dense
// enumeration of the materialised table, both signs of the weight, with
// -Inf entries in the scores it is given.
func TestTruncMAP(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for it := 0; it < 5000 && !t.Failed(); it++ {
		kind, l, W, T := randomTrunc(rng)
		w := make([]float64, 2*l)
		for i := range w {
			switch {
			case it%3 == 0:
				w[i] = float64(rng.IntN(3))
			case rng.IntN(8) == 0:
				w[i] = math.Inf(-1)
			default:
				w[i] = 4*rng.Float64() - 2
			}
		}
		s := slaves.NewTrunc(kind, l, W, T)
		tab := truncTable(kind, l, W, T)
		d := slaves.NewDense([]int{l, l}, tab)
		y, yd := make([]int, 2), make([]int, 2)
		got, want := s.MAP(w, y), d.MAP(w, yd)
		if math.IsInf(want, -1) {
			if !math.IsInf(got, -1) {
				t.Fatalf("%v L %d: MAP %v, Dense -Inf", kind, l, got)
			}
			continue
		}
		if math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
			t.Fatalf("%v L %d W %v T %v w %v: MAP %v %v, Dense %v %v", kind, l, W, T, w, got, y, want, yd)
		}
		if v := s.Score(y) + w[y[0]] + w[l+y[1]]; math.Abs(v-got) > 1e-12*(1+math.Abs(v)) {
			t.Fatalf("MAP returned %v but %v scores %v", got, y, v)
		}
		if s.Score(y) != tab[y[0]*l+y[1]] {
			t.Fatalf("Score %v, table %v", s.Score(y), tab[y[0]*l+y[1]])
		}
		if bv, _ := slavetest.BruteMAP(s.Cards(), s.Score, w); math.Abs(bv-got) > 1e-12*(1+math.Abs(bv)) {
			t.Fatalf("MAP %v, brute force %v", got, bv)
		}
	}
}

// QUAD against the reference solver and against Dense on the same table.
func TestTruncQUAD(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	var errs asErrs
	maxDiff := 0.0
	for it := 0; it < 1000 && !t.Failed(); it++ {
		kind, l, W, T := randomTrunc(rng)
		l = min(l, 6)
		eta := []float64{0.1, 1, 10}[it%3]
		c := make([]float64, 2*l)
		for i := range c {
			c[i] = 1.4*rng.Float64() - 0.2
		}
		s := slaves.NewTrunc(kind, l, W, T)
		u := make([]float64, 2*l)
		phiq, _ := asUntilStable(s, c, eta, u, 100)
		errs.add(t, s.Cards(), s.Score, c, eta, u, phiq)
		d := slaves.NewDense([]int{l, l}, truncTable(kind, l, W, T))
		ud := make([]float64, 2*l)
		asUntilStable(d, c, eta, ud, 100)
		for i := range u {
			maxDiff = math.Max(maxDiff, math.Abs(u[i]-ud[i]))
		}
	}
	t.Logf("max |u - ref| %.3g, max |obj - ref| %.3g, max |u - dense| %.3g", errs.u, errs.obj, maxDiff)
	if maxDiff > 1e-6 {
		t.Errorf("Trunc and Dense QUAD differ by %.3g", maxDiff)
	}
}

// ForFactor builds a Trunc for the truncated kinds, and Build materialises
// them as chain links.
func TestTruncForFactor(t *testing.T) {
	m := model.New([]int{5, 5})
	m.Factors = []model.Factor{{Kind: model.TruncQuad, Vars: []int{1, 0}, Weight: -0.5, Trunc: 4}}
	s, err := slaves.ForFactor(m, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*slaves.Trunc); !ok {
		t.Fatalf("ForFactor gave a %T", s)
	}
}

func BenchmarkTruncMAP(b *testing.B) {
	for _, l := range []int{4, 16, 64} {
		w := make([]float64, 2*l)
		rng := rand.New(rand.NewPCG(1, uint64(l)))
		for i := range w {
			w[i] = rng.NormFloat64()
		}
		y := make([]int, 2)
		s := slaves.NewTrunc(model.TruncLinear, l, 1, 3)
		d := slaves.NewDense([]int{l, l}, truncTable(model.TruncLinear, l, 1, 3))
		b.Run("trunc/L="+itoa(l), func(b *testing.B) {
			for b.Loop() {
				s.MAP(w, y)
			}
		})
		b.Run("dense/L="+itoa(l), func(b *testing.B) {
			for b.Loop() {
				d.MAP(w, y)
			}
		})
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
