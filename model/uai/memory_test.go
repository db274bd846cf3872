package uai

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/ddrun/ddrun/internal/rusage"
	"github.com/ddrun/ddrun/model"
)

// pottsGridText returns a w x h grid with l labels in UAI text: its
// pairwise tables exactly Potts (couplings of both signs), one unary table
// per variable, the unaries after the pairs as generators write them.
func pottsGridText(w, h, l int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	m := model.New(make([]int, w*h))
	for i := range m.Cards {
		m.Cards[i] = l
	}
	m = model.New(m.Cards)
	for r := range h {
		for c := range w {
			v := r*w + c
			for _, u := range []int{v + 1, v + w} {
				if (u == v+1 && c+1 == w) || u >= w*h {
					continue
				}
				t := make([]float64, l*l)
				wt := rng.Float64()*2 - 1
				for x := range l {
					t[x*l+x] = wt
				}
				m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{v, u}, Table: t})
			}
		}
	}
	for v := range m.Cards {
		t := make([]float64, l)
		for x := range t {
			t[x] = rng.NormFloat64()
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{v}, Table: t})
	}
	var buf bytes.Buffer
	if err := WriteWith(&buf, m, WriteOptions{Log: Ln}); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Reading a Potts grid allocates its factors, its scopes, the tables it
// keeps (the unary ones) and a few words per variable, and nothing else:
// no table of a pairwise factor read as Potts, no scope or table arena
// that is copied or grows by doubling. (Before Potts tables were dropped as
// read and the scopes' offsets and sizes were no longer kept, a 100x100
// 4-label grid took 9.5 MB, 1.65 times what it takes now.)
func TestReadMemoryPotts(t *testing.T) {
	const w, h, l = 100, 100, 4
	text := pottsGridText(w, h, l, 1)
	var m *model.Model
	got := rusage.Allocated(func() {
		var err error
		if m, err = ReadWith(bytes.NewReader(text), "grid.uai", ReadOptions{Log: Ln}); err != nil {
			t.Fatal(err)
		}
	})
	n, pairs := w*h, 2*w*h-w-h
	for a, f := range m.Factors {
		if want := model.Potts; a < pairs && f.Kind != want {
			t.Fatalf("factor %d read as %s, want %s", a, f.Kind, want)
		}
	}
	word := uint64(unsafe.Sizeof(0))
	need := uint64(len(m.Factors))*uint64(unsafe.Sizeof(model.Factor{})) + // the factors
		uint64(2*pairs+n)*word + // their scopes
		uint64(n*l)*8 + // the unary tables
		uint64(n)*word*3 + uint64(n*l)*8 + // Cards, UnaryOff, Unary
		uint64(n)*word*2 // cardinality lines and scope stamps
	const fixed = 512 << 10 // the scanner's and the reader's buffers, a partly used block
	if limit := need + need/8 + fixed; got > limit {
		t.Errorf("reading a %dx%d %d-label Potts grid allocated %d bytes (%.0f per factor), want at most %d (%.0f per factor)",
			w, h, l, got, float64(got)/float64(len(m.Factors)), limit, float64(limit)/float64(len(m.Factors)))
	}
	t.Logf("%d bytes allocated, %.0f per factor (limit %d)", got, float64(got)/float64(len(m.Factors)), need+need/8+fixed)
	if math.IsNaN(m.Constant) {
		t.Fatal("constant NaN")
	}
}

// FoldUnary reads the unary tables into the unaries: the same scores,
// the kept factors as the plain read's multi-variable ones, the folded
// ones counted, and neither their headers nor their tables allocated.
func TestReadFoldUnary(t *testing.T) {
	const w, h, l = 60, 50, 3
	text := pottsGridText(w, h, l, 2)
	plain, err := ReadWith(bytes.NewReader(text), "grid.uai", ReadOptions{Log: Ln})
	if err != nil {
		t.Fatal(err)
	}
	var folded int
	var m *model.Model
	got := rusage.Allocated(func() {
		m, err = ReadWith(bytes.NewReader(text), "grid.uai", ReadOptions{Log: Ln, FoldUnary: true, Folded: &folded})
	})
	if err != nil {
		t.Fatal(err)
	}
	n, pairs := w*h, 2*w*h-w-h
	if len(m.Factors) != pairs || folded != n {
		t.Fatalf("%d factors and %d folded, want %d and %d", len(m.Factors), folded, pairs, n)
	}
	for a, f := range m.Factors {
		p := plain.Factors[a]
		if f.Kind != p.Kind || f.Weight != p.Weight || f.Vars[0] != p.Vars[0] || f.Vars[1] != p.Vars[1] {
			t.Fatalf("factor %d: %+v, plain read %+v", a, f, p)
		}
	}
	for v := range n {
		u, want := m.Unaries(v), plain.Factors[pairs+v].Table
		for s := range u {
			if u[s] != want[s] {
				t.Fatalf("variable %d unaries %v, want the table %v", v, u, want)
			}
		}
	}
	sameScores(t, plain, m, 50, 1e-12)
	plainBytes := rusage.Allocated(func() {
		if _, err := ReadWith(bytes.NewReader(text), "grid.uai", ReadOptions{Log: Ln}); err != nil {
			t.Fatal(err)
		}
	})
	saved := uint64(n) * (uint64(unsafe.Sizeof(model.Factor{})) + uint64(unsafe.Sizeof(0)) + uint64(l)*8)
	if got+saved*3/4 > plainBytes {
		t.Errorf("FoldUnary read allocated %d bytes, plain %d: want at least %d fewer", got, plainBytes, saved*3/4)
	}
	t.Logf("%d bytes folded, %d plain", got, plainBytes)

	// A fold that would overflow keeps the factor, after the others.
	m, err = ReadWith(strings.NewReader("MARKOV 1 2 3 1 0 1 0 1 0 2 1e308 0 2 1e308 1 2 3 4"), "big.uai", ReadOptions{Log: Ln, FoldUnary: true, Folded: &folded})
	if err != nil {
		t.Fatal(err)
	}
	if folded != 2 || len(m.Factors) != 1 || m.Factors[0].Vars[0] != 0 || m.Factors[0].Table[0] != 1e308 || m.Unary[0] != 1e308 || m.Unary[1] != 4 {
		t.Errorf("overflowing fold: %d folded, factors %+v, unaries %v", folded, m.Factors, m.Unary)
	}
}

// BenchmarkReadPotts reads a 300x300 4-label Potts grid (its pairwise
// tables read as Potts factors): bytes allocated per factor (B/factor)
// is what the read costs in memory.
func BenchmarkReadPotts(b *testing.B) {
	text := pottsGridText(300, 300, 4, 1)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	var nf int
	var total uint64
	for b.Loop() {
		total += rusage.Allocated(func() {
			m, err := ReadWith(bytes.NewReader(text), "grid.uai", ReadOptions{Log: Ln})
			if err != nil {
				b.Fatal(err)
			}
			nf = len(m.Factors)
		})
	}
	b.ReportMetric(float64(total)/float64(b.N)/float64(nf), "B/factor")
}
