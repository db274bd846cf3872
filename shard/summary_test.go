package shard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
)

// uneven returns a chain of n variables of cardinalities 2 to 5 (in runs)
// whose factors cost unevenly: dense pairs, a dense triple every 7th
// factor with a wide table, Potts factors where neighbours agree in
// cardinality.
func uneven(n int, seed uint64) *model.Model {
	r := rand.New(rand.NewPCG(seed, 1))
	cards := make([]int, n)
	for i := range cards {
		if i == 0 || r.IntN(5) == 0 {
			cards[i] = 2 + r.IntN(4)
		} else {
			cards[i] = cards[i-1]
		}
	}
	m := model.New(cards)
	for i := range m.Unary {
		m.Unary[i] = r.Float64()
	}
	table := func(k int) []float64 {
		t := make([]float64, k)
		for i := range t {
			t[i] = r.NormFloat64()
		}
		return t
	}
	for i := 0; i+1 < n; i++ {
		switch {
		case i%7 == 3 && i+2 < n:
			m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{i, i + 1, i + 2}, Table: table(cards[i] * cards[i+1] * cards[i+2])})
		case cards[i] == cards[i+1] && r.IntN(2) == 0:
			m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{i, i + 1}, Weight: r.NormFloat64()})
		default:
			m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{i, i + 1}, Table: table(cards[i] * cards[i+1])})
		}
	}
	return m
}

// summaryCase is one model written to an indexed file with a Summary
// taken as it was written, folded as conversion folds (or not).
type summaryCase struct {
	name    string
	m       *model.Model
	keep    bool // factors over fewer than two variables stay factors
	workers []int
}

type visited struct {
	a    int
	kind model.Kind
	vars string
}

// writeSummarized writes c.m to a file with a Summary of chunk factors
// per chunk (0: the Summary's own, maxChunk) and returns the file, the
// Summary and what its visit saw.
func writeSummarized(t *testing.T, c summaryCase, chunk int) (string, *Summary, *[]visited) {
	t.Helper()
	seen := &[]visited{}
	sum := NewSummary(func(a int, f *model.Factor) {
		*seen = append(*seen, visited{a, f.Kind, fmt.Sprint(f.Vars)})
	})
	if chunk > 0 {
		sum.chunk = chunk
	}
	path := filepath.Join(t.TempDir(), "m.ddx")
	err := indexed.WriteStreamFile(path, model.SourceOf(c.m), indexed.WriteOptions{FoldUnary: !c.keep, Report: sum.Report()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return path, sum, seen
}

// PlanLayout given the Summary taken as the file was written plans what
// it plans by walking the file: the same layout (cut, chunk positions,
// boundary, specs) or the same error, and its visit saw the factors the
// walk's visit sees; on grids, a -Inf unary (given or folded in), a unary
// factor kept, uneven costs and cardinalities, a budget too small, with
// chunks of the Summary's size and smaller ones (the walk for them).
func TestPlanSummaryMatchesWalk(t *testing.T) {
	forbidden := generate.Potts(generate.GridOptions{Height: 30, Width: 30, Labels: 3, Rho: 1, Seed: 5})
	forbidden.Unary[3*400+2] = math.Inf(-1)
	forbidden.Unary[3*700+1] = math.Inf(-1)
	folded := generate.Potts(generate.GridOptions{Height: 30, Width: 30, Labels: 3, Rho: 1, Seed: 6})
	folded.Factors = append(folded.Factors, model.Factor{Kind: model.Dense, Vars: []int{500}, Table: []float64{0, math.Inf(-1), 1}})
	kept := generate.Potts(generate.GridOptions{Height: 30, Width: 30, Labels: 3, Rho: 1, Seed: 7})
	kept.Factors = slices.Insert(kept.Factors, 900, model.Factor{Kind: model.Dense, Vars: []int{17}, Table: []float64{0, 1, 2}})
	both := generate.Potts(generate.GridOptions{Height: 30, Width: 30, Labels: 3, Rho: 1, Seed: 8})
	both.Factors = slices.Insert(both.Factors, 10, model.Factor{Kind: model.Dense, Vars: []int{3}, Table: []float64{0, 1, 2}})
	both.Unary[3*800] = math.Inf(-1)
	cases := []summaryCase{
		{"grid 260x260", generate.Potts(generate.GridOptions{Height: 260, Width: 260, Labels: 4, Rho: 0.5, Seed: 1}), false, []int{1, 2}},
		{"grid 40x50", generate.Potts(generate.GridOptions{Height: 40, Width: 50, Labels: 4, Rho: 0.5, Seed: 2}), false, []int{1, 2, 3, 5}},
		{"ising 20x20", generate.Ising(generate.GridOptions{Height: 20, Width: 20, Rho: 1, Seed: 3}), false, []int{2, 4}},
		{"uneven", uneven(3000, 4), false, []int{1, 2, 3, 7}},
		{"uneven 10^5", uneven(100_000, 5), false, []int{1}},
		{"forbidden", forbidden, false, []int{2}},
		{"forbidden by a fold", folded, false, []int{2}},
		{"unary factor kept", kept, true, []int{2}},
		{"forbidden and a unary factor", both, true, []int{2}},
		{"logic", generate.Logic(generate.LogicOptions{Vars: 60, Factors: 50, Couplings: 70, MaxArity: 5, Rho: 1, Seed: 9}), false, []int{1, 2}},
	}
	used := 0
	for _, c := range cases {
		for _, w := range c.workers {
			for _, budget := range []int{0, 5000} {
				// The Summary's own chunks, and those this plan cuts.
				path, _, _ := writeSummarized(t, c, 0)
				sc := scanFile(t, path)
				for _, chunk := range []int{0, chunkFor(sc.NumFactors(), w)} {
					name := fmt.Sprintf("%s, %d workers, budget %d, summary chunk %d", c.name, w, budget, chunk)
					path, sum, seen := writeSummarized(t, c, chunk)
					var walked []visited
					want, werr := PlanLayout(path, w, PlanOptions{MaxEntries: budget, Visit: func(a int, f *model.Factor) {
						walked = append(walked, visited{a, f.Kind, fmt.Sprint(f.Vars)})
					}})
					p, gerr := planWith(path, w, PlanOptions{MaxEntries: budget, Summary: sum, Visit: func(int, *model.Factor) {
						t.Fatalf("%s: Visit called with a summary", name)
					}})
					if fmt.Sprint(werr) != fmt.Sprint(gerr) {
						t.Fatalf("%s: error %v, the walk's %v", name, gerr, werr)
					}
					if werr != nil {
						if _, ok := werr.(*UnshardableError); ok != isUnshardable(gerr) {
							t.Fatalf("%s: error %T, the walk's %T", name, gerr, werr)
						}
						continue
					}
					if !reflect.DeepEqual(p.result, want) {
						t.Fatalf("%s: the summary's layout differs from the walk's", name)
					}
					if !slices.Equal(*seen, walked) {
						t.Fatalf("%s: the summary's visit saw %d factors, the walk's %d", name, len(*seen), len(walked))
					}
					if (p.from == "summary") != (chunk == 0 && sc.NumFactors() >= 64*w*maxChunk || chunk == chunkFor(sc.NumFactors(), w)) {
						t.Fatalf("%s: the first pass came from %q", name, p.from)
					}
					if p.from == "summary" {
						used++
					}
				}
			}
		}
	}
	if used < 10 {
		t.Fatalf("the summary was taken %d times: the test checks little", used)
	}
}

func isUnshardable(err error) bool {
	_, ok := err.(*UnshardableError)
	return ok
}

// A Summary serves the file it was taken of, once: a file written again
// since, or a second plan, is refused.
func TestPlanSummaryRefused(t *testing.T) {
	c := summaryCase{name: "grid", m: generate.Potts(generate.GridOptions{Height: 20, Width: 20, Labels: 3, Rho: 1, Seed: 1})}
	path, sum, _ := writeSummarized(t, c, 0)
	if _, err := PlanLayout(path, 2, PlanOptions{Summary: sum}); err != nil {
		t.Fatal(err)
	}
	if _, err := PlanLayout(path, 2, PlanOptions{Summary: sum}); err == nil || !strings.Contains(err.Error(), "taken by another plan") {
		t.Fatalf("error %v, want: taken by another plan", err)
	}
	path, sum, _ = writeSummarized(t, c, 0)
	other := generate.Potts(generate.GridOptions{Height: 20, Width: 20, Labels: 3, Rho: 1, Seed: 2})
	if err := indexed.WriteFile(path, other); err != nil {
		t.Fatal(err)
	}
	if _, err := PlanLayout(path, 2, PlanOptions{Summary: sum}); err == nil || !strings.Contains(err.Error(), "changed since it was written") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line: changed since it was written", err)
	}
	if _, err := PlanLayout(path, 2, PlanOptions{Summary: NewSummary(nil)}); err == nil || !strings.Contains(err.Error(), "did not end") {
		t.Fatalf("error %v, want: a write that did not end", err)
	}
}

// BenchmarkWriteSummary: the cost of a Summary's hooks on a write (a
// 300x300 4-label grid, 179,400 factors), against the walk it saves.
func BenchmarkWriteSummary(b *testing.B) {
	m := generate.Potts(generate.GridOptions{Height: 300, Width: 300, Labels: 4, Rho: 0.5, Seed: 1})
	path := filepath.Join(b.TempDir(), "m.ddx")
	write := func(rep indexed.WriteReport) {
		if err := indexed.WriteStreamFile(path, model.SourceOf(m), indexed.WriteOptions{FoldUnary: true, Report: rep}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			write(indexed.WriteReport{})
		}
	})
	b.Run("summary", func(b *testing.B) {
		for b.Loop() {
			write(NewSummary(func(int, *model.Factor) {}).Report())
		}
	})
	b.Run("walk", func(b *testing.B) {
		write(indexed.WriteReport{})
		sc := scanFile(b, path)
		for b.Loop() {
			p := &planner{sc: sc, path: path, workers: 2}
			if err := p.ranges(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
