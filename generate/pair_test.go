package generate

import (
	"testing"

	"github.com/ddrun/ddrun/model"
)

// A truncated term changes the edges' kind, not the draws: unaries and
// weights are those of the Potts grid of the same seed.
func TestPairTerms(t *testing.T) {
	o := GridOptions{Height: 4, Width: 5, Labels: 6, Rho: 2, Seed: 3}
	potts := Potts(o)
	for _, c := range []struct {
		pair PairTerm
		kind model.Kind
	}{{PairLinear, model.TruncLinear}, {PairQuad, model.TruncQuad}} {
		o.Pair, o.Trunc = c.pair, 2.5
		m := Potts(o)
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		for i := range m.Unary {
			if m.Unary[i] != potts.Unary[i] {
				t.Fatalf("%v: unary %d differs", c.pair, i)
			}
		}
		for a, f := range m.Factors {
			p := potts.Factors[a]
			if f.Kind != c.kind || f.Weight != p.Weight || f.Trunc != 2.5 || f.Vars[0] != p.Vars[0] || f.Vars[1] != p.Vars[1] {
				t.Fatalf("%v: factor %d is %+v, Potts grid's %+v", c.pair, a, f, p)
			}
		}
	}
	for _, bad := range []GridOptions{
		{Height: 2, Width: 2, Rho: 1, Pair: PairLinear},
		{Height: 2, Width: 2, Rho: 1, Pair: PairQuad, Trunc: -1},
		{Height: 2, Width: 2, Rho: 1, Pair: 7, Trunc: 1},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if p, err := ParsePairTerm("quad"); err != nil || p != PairQuad || PairLinear.String() != "linear" {
		t.Fatalf("names: %v %v", p, err)
	}
	if _, err := ParsePairTerm("cubic"); err == nil {
		t.Fatal("cubic parsed")
	}
}

// PairDense: general tables of Labels^2 entries in [-Rho, Rho], distinct
// from edge to edge, with the Potts grid's unaries; the stream and the
// built model agree, and the same seed gives the same tables.
func TestPairDense(t *testing.T) {
	o := GridOptions{Height: 3, Width: 4, Labels: 3, Rho: 2, Seed: 5}
	potts := Potts(o)
	o.Pair = PairDense
	m := Potts(o)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := range m.Unary {
		if m.Unary[i] != potts.Unary[i] {
			t.Fatalf("unary %d differs from the Potts grid's", i)
		}
	}
	seen := map[float64]bool{}
	for a, f := range m.Factors {
		p := potts.Factors[a]
		if f.Kind != model.Dense || len(f.Table) != 9 || f.Vars[0] != p.Vars[0] || f.Vars[1] != p.Vars[1] {
			t.Fatalf("factor %d is %+v", a, f)
		}
		for _, v := range f.Table {
			if v < -2 || v > 2 || seen[v] {
				t.Fatalf("factor %d: entry %v out of range or repeated", a, v)
			}
			seen[v] = true
		}
	}
	again := 0
	PottsStream(o).EachFactor(func(a int, f *model.Factor) {
		for j, v := range f.Table {
			if v != m.Factors[a].Table[j] {
				t.Fatalf("stream factor %d entry %d: %v, model %v", a, j, v, m.Factors[a].Table[j])
			}
		}
		again++
	})
	if again != len(m.Factors) {
		t.Fatalf("stream gave %d factors, model has %d", again, len(m.Factors))
	}
	if p, err := ParsePairTerm("dense"); err != nil || p != PairDense || PairDense.String() != "dense" {
		t.Fatalf("names: %v %v", p, err)
	}
}
