package modelfile

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// A UAI file converted to .ddx has its structured pairwise tables as the
// UAI reader turns them (the same kinds, factor by factor) and the scores
// of the file: against the reader's model, and against the conversion
// that keeps the tables (KeepDense), on Potts, truncated linear and
// quadratic grids, dense tables and a logic model, with a constant added
// to every pairwise table of one of them (the constants go to the
// model's).
func TestConvertStructuresPairs(t *testing.T) {
	dir := t.TempDir()
	models := map[string]*model.Model{
		"potts.uai":  generate.Potts(generate.GridOptions{Height: 6, Width: 7, Labels: 4, Rho: 1, Seed: 1}),
		"linear.uai": generate.Potts(generate.GridOptions{Height: 5, Width: 5, Labels: 5, Rho: 1, Seed: 2, Pair: generate.PairLinear, Trunc: 2}),
		"quad.uai":   generate.Potts(generate.GridOptions{Height: 5, Width: 4, Labels: 3, Rho: 1, Seed: 3, Pair: generate.PairQuad, Trunc: 3}),
		"dense.uai":  generate.Potts(generate.GridOptions{Height: 4, Width: 4, Labels: 3, Rho: 1, Seed: 4, Pair: generate.PairDense}),
		"logic.uai":  generate.Logic(generate.LogicOptions{Vars: 30, Factors: 20, Couplings: 40, MaxArity: 4, Rho: 1, Seed: 5}),
	}
	shifted := generate.Potts(generate.GridOptions{Height: 4, Width: 5, Labels: 3, Rho: 1, Seed: 6})
	for a := range shifted.Factors {
		f := &shifted.Factors[a]
		if len(f.Vars) == 2 {
			f.Table = shifted.DenseTable(a)
			for k := range f.Table {
				f.Table[k] += 0.25 * float64(a%3)
			}
			f.Kind, f.Weight = model.Dense, 0
		}
	}
	models["shifted.uai"] = shifted
	r := rand.New(rand.NewPCG(1, 2))
	for name, m := range models {
		in := filepath.Join(dir, name)
		if err := uai.WriteFile(in, m); err != nil {
			t.Fatal(err)
		}
		want, err := Load(in) // the reader structures the pairs
		if err != nil {
			t.Fatal(err)
		}
		var got [2]*model.Model
		for k, dense := range []bool{false, true} {
			out := filepath.Join(dir, name+".ddx")
			if err := Convert(context.Background(), in, out, ConvertOptions{KeepDense: dense}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got[k], err = Load(out); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		structured := 0
		var kept []*model.Factor // the reader's factors that .ddx keeps (not folded)
		for a := range want.Factors {
			if len(want.Factors[a].Vars) >= 2 {
				kept = append(kept, &want.Factors[a])
			}
		}
		if len(got[0].Factors) != len(kept) {
			t.Fatalf("%s: %d factors converted, the reader's %d over two variables or more", name, len(got[0].Factors), len(kept))
		}
		for a, w := range kept {
			g := &got[0].Factors[a]
			if g.Kind != w.Kind {
				t.Fatalf("%s: factor %d converted a %v, the reader's a %v", name, a, g.Kind, w.Kind)
			}
			if g.Kind != model.Dense {
				structured++
			}
			if got[1].Factors[a].Kind != model.Dense && len(got[1].Factors[a].Vars) == 2 {
				t.Fatalf("%s: KeepDense: factor %d is a %v", name, a, got[1].Factors[a].Kind)
			}
		}
		if name != "dense.uai" && structured == 0 {
			t.Fatalf("%s: no factor structured", name)
		}
		x := make([]int, len(want.Cards))
		for range 50 {
			for v := range x {
				x[v] = r.IntN(want.Cards[v])
			}
			s := want.Score(x)
			for k := range got {
				if g := got[k].Score(x); math.Abs(g-s) > 1e-9*(1+math.Abs(s)) {
					t.Fatalf("%s (KeepDense %v): score %v, the reader's %v", name, k == 1, g, s)
				}
			}
		}
	}
}
