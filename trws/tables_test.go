package trws

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// snapshot is a deep copy of a model's numbers, to check that a run left
// them alone.
type snapshot struct {
	unary  []float64
	tables [][]float64
	emit   [][]float64
}

func takeSnapshot(m *model.Model) snapshot {
	s := snapshot{unary: slices.Clone(m.Unary)}
	for _, f := range m.Factors {
		s.tables = append(s.tables, slices.Clone(f.Table))
		s.emit = append(s.emit, slices.Clone(f.EmissionScores()))
	}
	return s
}

// sameBits reports whether a and b hold the same float64s bit for bit.
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

func (s snapshot) check(t *testing.T, name string, m *model.Model) {
	t.Helper()
	if !sameBits(s.unary, m.Unary) {
		t.Fatalf("%s: the run changed the model's unaries", name)
	}
	for a, f := range m.Factors {
		if !sameBits(s.tables[a], f.Table) || !sameBits(s.emit[a], f.EmissionScores()) {
			t.Fatalf("%s: the run changed factor %d's table", name, a)
		}
	}
}

// flippedGrid is a dense grid whose factors list about half their
// scopes in the other order (table transposed to match), with a second
// factor on a few pairs, Potts edges, a Sequence over the first row and
// -Inf entries.
func flippedGrid(rng *rand.Rand, h, w, l int) (m *model.Model, flipped, summed int) {
	m = withHoles(rng, denseGrid(rng, h, w, l), 9)
	for a := range m.Factors {
		f := &m.Factors[a]
		if len(f.Vars) != 2 || rng.IntN(2) == 0 {
			continue
		}
		ku, kv := m.Cards[f.Vars[0]], m.Cards[f.Vars[1]]
		tt := make([]float64, len(f.Table))
		for x := range ku {
			for y := range kv {
				tt[y*ku+x] = f.Table[x*kv+y]
			}
		}
		f.Vars = []int{f.Vars[1], f.Vars[0]}
		f.Table = tt
		flipped++
	}
	n := len(m.Factors)
	for a := 0; a < n; a += 7 {
		f := m.Factors[a]
		if len(f.Vars) != 2 {
			continue
		}
		if f.Vars[0] > f.Vars[1] {
			flipped-- // counted once, as summed
		}
		summed++
		if a%2 == 0 {
			m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: slices.Clone(f.Vars), Weight: rng.NormFloat64()})
			continue
		}
		tab := make([]float64, len(f.Table))
		for j := range tab {
			tab[j] = rng.NormFloat64()
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{f.Vars[1], f.Vars[0]}, Table: tab})
	}
	return m, flipped, summed
}

// TestTablesInPlace: plain TRW-S reads the model's dense tables where they
// lie (no copy), gives only the edges whose factor lists the pair in the
// other order (transposed) or whose pair has several factors (summed) a
// table of its own, and every edge's table equals the sum of the model's
// factor scores on its pair (model.FactorScore, an independent
// evaluation), on 1 and 3 threads.
func TestTablesInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	m, flipped, summed := flippedGrid(rng, 7, 8, 3)
	if flipped == 0 || summed == 0 {
		t.Fatalf("test model: %d flipped, %d summed", flipped, summed)
	}
	// The memory of the model's tables, to tell in place from copied.
	inModel := func(p *float64) bool {
		for _, f := range m.Factors {
			if len(f.Table) > 0 && p == &f.Table[0] {
				return true
			}
		}
		return false
	}
	for _, threads := range []int{1, 3} {
		g := testGraph(t, m, threads)
		if threads == 1 && g.copied != flipped+summed {
			t.Errorf("%d threads: %d tables copied, want %d flipped + %d summed", threads, g.copied, flipped, summed)
		}
		copied := 0
		x := make([]int, m.NumVars())
		for e := range g.eu {
			u, v := int(g.eu[e]), int(g.ev[e])
			mu, mv := u, v
			if g.order != nil {
				mu, mv = int(g.order[u]), int(g.order[v])
			}
			if g.toff[e] >= 0 {
				if !inModel(g.tab[e]) {
					copied++
				}
			} else if g.tab[e] != nil {
				t.Fatalf("%d threads: edge %d is not dense but has a table", threads, e)
			}
			for xu := range g.card[u] {
				for xv := range g.card[v] {
					x[mu], x[mv] = xu, xv
					want := 0.0
					for a, f := range m.Factors {
						if len(f.Vars) == 2 && min(f.Vars[0], f.Vars[1]) == min(mu, mv) && max(f.Vars[0], f.Vars[1]) == max(mu, mv) {
							want += m.FactorScore(a, x)
						}
					}
					if got := g.pairScore(e, xu, xv); !(got == want || near(got, want, 1e-12)) {
						t.Fatalf("%d threads: edge %d (%d, %d) at (%d, %d): %v, model %v", threads, e, mu, mv, xu, xv, got, want)
					}
				}
			}
		}
		if copied != g.copied {
			t.Errorf("%d threads: %d tables outside the model, copied says %d", threads, copied, g.copied)
		}
	}
}

// TestUAIGridTablesInPlace: on a dense grid as `coordinator gen potts
// --pair dense` writes it and the UAI reader reads it, one-thread TRW-S
// copies no table; with 2 threads only the edges from the separator to
// later variables (order.go: one per separator node on a grid) are
// transposed.
func TestUAIGridTablesInPlace(t *testing.T) {
	src := generate.Potts(generate.GridOptions{Height: 20, Width: 30, Labels: 4, Rho: 1, Seed: 5, Pair: generate.PairDense})
	var buf bytes.Buffer
	if err := uai.Write(&buf, src); err != nil {
		t.Fatal(err)
	}
	m, err := uai.Read(&buf, "grid.uai")
	if err != nil {
		t.Fatal(err)
	}
	red := reduced(t, m)
	for _, threads := range []int{1, 2} {
		g := testGraph(t, red, threads)
		want := 0
		if threads == 2 {
			want = g.n - g.parts[2]
		}
		if g.copied != want || len(g.own) != 16*want {
			t.Errorf("%d threads: %d tables copied (%d entries), want %d", threads, g.copied, len(g.own), want)
		}
		if g.tabLen != 16*len(g.eu) || len(g.data) != 4*len(g.eu) {
			t.Errorf("%d threads: %d table entries, %d message entries for %d edges", threads, g.tabLen, len(g.data), len(g.eu))
		}
		for s := range g.n {
			if g.kern[s] != 4 {
				t.Fatalf("%d threads: node %d takes the general code", threads, s)
			}
		}
	}
}

// TestModelReadOnly: TRW-S (1 and 2 threads, the unrolled steps and the
// general code) and TRW-S(LP-C) leave the model's unaries and tables as
// they were, bit for bit, also when the model needs no reduction (so the
// graph reads the model's own arrays) and with -Inf entries.
func TestModelReadOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	models := []*model.Model{denseGrid(rng, 9, 9, 4), denseGrid(rng, 6, 7, 8), denseGrid(rng, 6, 7, 3)}
	fg, _, _ := flippedGrid(rng, 6, 6, 4)
	models = append(models, fg, randomTree(rng, 30, 5, true, false))
	seq := denseGrid(rng, 4, 5, 2)
	seq.Factors = append(seq.Factors, model.Factor{Kind: model.Sequence, Vars: []int{0, 6, 12, 18}, Table: []float64{1, -2, 0.5, 3}})
	models = append(models, seq)
	for i, m := range models {
		if err := m.Validate(); err != nil {
			t.Fatalf("model %d: %v", i, err)
		}
		snap := takeSnapshot(m)
		for _, threads := range []int{1, 2} {
			for _, cycles := range []bool{false, true} {
				o := testOpts(20)
				o.Threads, o.Cycles, o.Tol = threads, cycles, 0
				o.BoundWindow = 2
				if _, err := Solve(context.Background(), m, nil, o, nil); err != nil {
					t.Fatalf("model %d: %v", i, err)
				}
				snap.check(t, "Solve", m)
			}
			// The passes on the unreduced model directly, general code and
			// unrolled steps.
			for _, general := range []bool{false, true} {
				g := testGraph(t, m, threads)
				if general {
					clear(g.kern)
				}
				r := newRun(g, DefaultOptions())
				for range 5 {
					r.iterate()
				}
				r.close()
				snap.check(t, "passes", m)
			}
		}
	}
}
