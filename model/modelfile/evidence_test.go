package modelfile

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
)

// Evidence folded into an indexed output: every assignment of the output
// scores what the input scores with the observed states set (brute force
// over every assignment of a small grid), the observed variables have one
// state, and Observed gets the evidence; UAI (streamed) and native JSON
// (Potts factors, made dense) alike.
func TestConvertWithEvidence(t *testing.T) {
	dir := t.TempDir()
	m := generate.Potts(generate.GridOptions{Height: 2, Width: 3, Labels: 3, Rho: 1, Seed: 4})
	ev := model.Evidence{1: 2, 4: 0}
	evid := filepath.Join(dir, "m.evid")
	if err := os.WriteFile(evid, []byte("2 1 2 4 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"m.uai", "m.json"} {
		in := filepath.Join(dir, name)
		if err := Save(in, m); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name+".ddx")
		var got model.Evidence
		err := Convert(context.Background(), in, out, ConvertOptions{Evidence: evid, Observed: func(e model.Evidence) { got = e }})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(ev) {
			t.Errorf("%s: observed %v, want %v", name, got, ev)
		}
		c, err := indexed.ReadFile(out, indexed.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for v := range c.Cards {
			if _, ok := ev[v]; ok != (c.Cards[v] == 1) {
				t.Fatalf("%s: variable %d has %d states", name, v, c.Cards[v])
			}
		}
		x := make([]int, m.NumVars())
		n := 0
		var visit func(v int)
		visit = func(v int) {
			if v == len(x) {
				orig := make([]int, len(x))
				for i := range x {
					orig[i] = x[i]
					if s, ok := ev[i]; ok {
						orig[i] = s
					}
				}
				if a, b := c.Score(x), m.Score(orig); math.Abs(a-b) > 1e-9*math.Max(1, math.Abs(b)) {
					t.Fatalf("%s: %v scores %v, the input with the evidence %v", name, x, a, b)
				}
				n++
				return
			}
			for s := range c.Cards[v] {
				x[v] = s
				visit(v + 1)
			}
		}
		visit(0)
		if n != 81 {
			t.Errorf("%s: %d assignments checked, want 3^4", name, n)
		}
	}
	// Evidence that does not fit the model: a one-line error, no output.
	bad := filepath.Join(dir, "bad.evid")
	if err := os.WriteFile(bad, []byte("1 9 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bad.ddx")
	err := Convert(context.Background(), filepath.Join(dir, "m.uai"), out, ConvertOptions{Evidence: bad})
	if err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("evidence on variable 9 of 6: %v", err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Error("output left behind")
	}
}

// conditioned slices tables of any arity and kind at the observed states.
func TestConditioned(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cards := []int{2, 3, 4, 2}
	m := model.New(cards)
	tab := make([]float64, 2*3*4)
	for i := range tab {
		tab[i] = rng.NormFloat64()
	}
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0, 1, 2}, Table: tab}, {Kind: model.Potts, Vars: []int{1, 3}, Weight: 1.5}}
	card := func(v int) int { return cards[v] }
	for _, ev := range []model.Evidence{{1: 2}, {0: 1, 2: 3}, {0: 0, 1: 1, 2: 2}, {3: 1}} {
		for a := range m.Factors {
			g, err := conditioned(&m.Factors[a], ev, card)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]int, len(cards))
			for trial := 0; trial < 50; trial++ {
				for v := range x {
					x[v] = rng.IntN(cards[v])
					if s, ok := ev[v]; ok {
						x[v] = s
					}
				}
				want := m.FactorScore(a, x)
				one := model.New(cards)
				one.Factors = []model.Factor{*g}
				if got := one.FactorScore(0, x); got != want {
					t.Fatalf("factor %d under %v at %v: %v, want %v", a, ev, x, got, want)
				}
			}
		}
	}
}
