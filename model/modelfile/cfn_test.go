package modelfile

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// A CFN file is read plain, gzip- and xz-compressed, under its name's
// format, with the objective in its own units and direction (Options.Cost).
func TestLoadCFN(t *testing.T) {
	dir := t.TempDir()
	const text = `{problem: {name: m, mustbe: ">-5.0"}, variables: {v1: [a b], v2: [c d]},
 functions: {c0: {scope: [], costs: [-6.0]}, c1: {scope: [v1], costs: [1.0, 0.5]},
  c2: {scope: [v2], costs: [1.0, 0.5]}, c12: {scope: [v1, v2], costs: [-1.0, 0.5, -2.0, 5.5]}}}`
	for _, p := range writeEncodings(t, dir, "a.cfn", text) {
		if FormatOf(p) != CFN {
			t.Fatalf("%s: format %v", p, FormatOf(p))
		}
		var cost func(float64) float64
		m, err := LoadWith(context.Background(), p, Options{Cost: &cost})
		if err != nil {
			t.Fatal(err)
		}
		// The best assignment (b, d): -6 + 0.5 + 0.5 + 5.5, the value
		// toulbar2 prints as its optimum; (a, c) is below the bound.
		if got := cost(m.Score([]int{1, 1})); got != 0.5 {
			t.Fatalf("%s: objective %v, want 0.5", filepath.Base(p), got)
		}
		if s := m.Score([]int{0, 0}); !math.IsInf(s, -1) {
			t.Fatalf("%s: (a, c) scores %v, want forbidden", filepath.Base(p), s)
		}
	}
	var cost func(float64) float64
	if _, err := LoadWith(context.Background(), writeXZ(t, dir, "b.uai.xz", "MARKOV 1 2 1 1 0 2 0.5 0.5"), Options{Cost: &cost}); err != nil || cost != nil {
		t.Fatalf("a UAI file has no objective of its own: %v", err)
	}
}

// UAI -> wcsp -> cfn -> UAI -> cfn -> wcsp by Convert keeps the score of
// every assignment (brute force), on random models.
func TestConvertUAIWCSPCFN(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	dir := t.TempDir()
	chain := []string{"a.uai", "b.wcsp", "c.cfn.gz", "d.uai", "e.cfn", "f.wcsp.gz", "g.uai"}
	for it := 0; it < 40; it++ {
		// Integer scores, some entries forbidden, unaries, a constant and
		// dense factors of arity 1 to 3.
		m := oracle.RandomTinyModel(r, oracle.TinyOptions{MaxVars: 4, MaxFactors: 3, Kinds: []model.Kind{model.Dense}, IntegerWeights: true, AllowInfeasible: true})
		if err := Save(filepath.Join(dir, chain[0]), m); err != nil {
			t.Fatal(err)
		}
		for k := 1; k < len(chain); k++ {
			in, out := filepath.Join(dir, chain[k-1]), filepath.Join(dir, chain[k])
			if err := Convert(context.Background(), in, out, ConvertOptions{}); err != nil {
				t.Fatalf("%s -> %s: %v", chain[k-1], chain[k], err)
			}
			got, err := Load(out)
			if err != nil {
				t.Fatal(err)
			}
			for x := range oracle.Assignments(m.Cards) {
				a, b := m.Score(x), got.Score(x)
				if math.IsInf(a, -1) != math.IsInf(b, -1) || (!math.IsInf(a, -1) && math.Abs(a-b) > 1e-9*math.Max(1, math.Abs(a))) {
					t.Fatalf("model %d, %s: %v scores %v, want %v", it, chain[k], x, b, a)
				}
			}
		}
	}
}
