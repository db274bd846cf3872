package pairterm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// bruteMessage is the O(L^2) definition of Message.
func bruteMessage(t Term, out, a []float64) float64 {
	m := negInf
	for j := range out {
		best := negInf
		for i, ai := range a {
			best = max(best, ai+t.Theta(i, j))
		}
		out[j] = best
		m = max(m, best)
	}
	if m == negInf {
		return m
	}
	for j := range out {
		out[j] -= m
	}
	return m
}

// tableMessage is the O(L^2) message on a materialised table (row i),
// the loop a general pairwise table takes: the benchmarks' baseline.
func tableMessage(tab, out, a []float64) float64 {
	l := len(a)
	for j := range out {
		out[j] = negInf
	}
	for i, ai := range a {
		if ai == negInf {
			continue
		}
		row := tab[i*l : i*l+l]
		for j, tv := range row {
			out[j] = fmax(out[j], ai+tv)
		}
	}
	return normalise(out)
}

// close reports whether x and y agree to 1e-12 relative to the magnitudes
// that went into them (scale), both -Inf included.
func close(x, y, scale float64) bool {
	if math.IsInf(x, -1) || math.IsInf(y, -1) {
		return x == y
	}
	return math.Abs(x-y) <= 1e-12*(1+scale)
}

func randomTerm(r *rand.Rand) Term {
	t := Term{Kind: Kind(r.IntN(3))}
	switch r.IntN(4) {
	case 0:
		t.W = 0
	case 1:
		t.W = r.NormFloat64() * 5
	case 2:
		t.W = -r.ExpFloat64()
	default:
		t.W = r.ExpFloat64()
	}
	switch r.IntN(5) {
	case 0:
		t.T = 1e-3 * r.Float64() // below every nonzero distance
	case 1:
		t.T = float64(1 + r.IntN(45)) // integer, sometimes >= L
	case 2:
		t.T = 1e6 // no truncation
	case 3:
		t.T = float64(r.IntN(1700)) + 0.5 // quadratic range
	default:
		t.T = 40 * r.Float64()
	}
	if t.T == 0 {
		t.T = 0.25
	}
	return t
}

func randomVector(r *rand.Rand, l int) []float64 {
	a := make([]float64, l)
	mode := r.IntN(6)
	for i := range a {
		switch {
		case mode == 0:
			a[i] = negInf
		case mode == 1 && r.IntN(2) == 0, r.IntN(5) == 0:
			a[i] = negInf
		case mode == 2:
			a[i] = float64(r.IntN(3)) // ties
		default:
			a[i] = r.NormFloat64() * 10
		}
	}
	return a
}

func TestMessageMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 4))
	for n := 0; n < 40000; n++ {
		l := 1 + r.IntN(40)
		term := randomTerm(r)
		if err := term.Check(); err != nil {
			t.Fatalf("random term %+v: %v", term, err)
		}
		a := randomVector(r, l)
		want := make([]float64, l)
		wm := bruteMessage(term, want, a)
		got := make([]float64, l)
		for j := range got {
			got[j] = math.NaN()
		}
		scratch := make([]float64, ScratchLen(l))
		gm := term.Message(got, a, scratch)
		scale := math.Abs(term.W) * min(term.T, float64(l*l))
		for _, v := range a {
			if !math.IsInf(v, -1) {
				scale = max(scale, math.Abs(v))
			}
		}
		if term.Kind == Potts {
			scale = max(scale, math.Abs(term.W))
		}
		if !close(gm, wm, scale) {
			t.Fatalf("case %d %v L=%d a=%v: M = %v, brute force %v", n, term, l, a, gm, wm)
		}
		for j := range got {
			if !close(got[j], want[j], scale) {
				t.Fatalf("case %d %+v L=%d a=%v: out[%d] = %v, brute force %v\ngot  %v\nwant %v", n, term, l, a, j, got[j], want[j], got, want)
			}
		}
	}
}

// TestMessageExactOnIntegers checks exact agreement where no rounding can
// occur (small integers everywhere).
func TestMessageExactOnIntegers(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for n := 0; n < 5000; n++ {
		l := 1 + r.IntN(20)
		term := Term{Kind: Kind(r.IntN(3)), W: float64(r.IntN(7) - 3), T: float64(1 + r.IntN(25))}
		a := make([]float64, l)
		for i := range a {
			a[i] = float64(r.IntN(21) - 10)
			if r.IntN(6) == 0 {
				a[i] = negInf
			}
		}
		want, got := make([]float64, l), make([]float64, l)
		wm := bruteMessage(term, want, a)
		gm := term.Message(got, a, make([]float64, ScratchLen(l)))
		if gm != wm {
			t.Fatalf("%+v a=%v: M = %v, want %v", term, a, gm, wm)
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("%+v a=%v: out = %v, want %v", term, a, got, want)
			}
		}
	}
}

func TestMessageAllocatesNothing(t *testing.T) {
	for _, term := range []Term{{Potts, 1, 0}, {Potts, -1, 0}, {TruncLinear, 1, 3}, {TruncLinear, -1, 3}, {TruncQuad, 1, 9}, {TruncQuad, -1, 9}} {
		a := randomVector(rand.New(rand.NewPCG(1, 2)), 32)
		a[3] = 1
		out, sc := make([]float64, 32), make([]float64, ScratchLen(32))
		if n := testing.AllocsPerRun(20, func() { term.Message(out, a, sc) }); n != 0 {
			t.Errorf("%v: %v allocations per message", term.Kind, n)
		}
	}
}

func TestCheck(t *testing.T) {
	bad := []Term{
		{Kind: 3, W: 1, T: 1},
		{Potts, math.NaN(), 0},
		{TruncLinear, math.Inf(1), 1},
		{TruncLinear, 1, 0},
		{TruncQuad, 1, -1},
		{TruncQuad, 1, math.Inf(1)},
		{TruncQuad, 1, math.NaN()},
		{TruncLinear, 1e200, 1e200},
	}
	for _, b := range bad {
		if b.Check() == nil {
			t.Errorf("%+v passes Check", b)
		}
	}
	for _, g := range []Term{{Potts, -2, 0}, {TruncLinear, -1, 0.5}, {TruncQuad, 0, 1e9}} {
		if err := g.Check(); err != nil {
			t.Errorf("%+v: %v", g, err)
		}
	}
}

func TestFill(t *testing.T) {
	term := Term{TruncQuad, 2, 5}
	tab := make([]float64, 16)
	term.Fill(tab, 4)
	want := []float64{0, -2, -8, -10, -2, 0, -2, -8, -8, -2, 0, -2, -10, -8, -2, 0}
	for i := range want {
		if tab[i] != want[i] {
			t.Fatalf("Fill = %v, want %v", tab, want)
		}
	}
}

func BenchmarkMessage(b *testing.B) {
	for _, term := range []Term{{Potts, 1, 0}, {Potts, -1, 0}, {TruncLinear, 1, 4}, {TruncLinear, -1, 4}, {TruncQuad, 1, 16}, {TruncQuad, -1, 16}} {
		for _, l := range []int{4, 16, 64, 256} {
			a := randomVector(rand.New(rand.NewPCG(uint64(l), 5)), l)
			a[0] = 0
			out, sc := make([]float64, l), make([]float64, ScratchLen(l))
			tab := make([]float64, l*l)
			term.Fill(tab, l)
			name := fmt.Sprintf("%v/w=%g/L=%d", term.Kind, term.W, l)
			b.Run(name+"/dt", func(b *testing.B) {
				for b.Loop() {
					term.Message(out, a, sc)
				}
			})
			b.Run(name+"/brute", func(b *testing.B) {
				for b.Loop() {
					tableMessage(tab, out, a)
				}
			})
		}
	}
}
