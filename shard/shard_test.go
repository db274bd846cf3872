package shard

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
)

// writeDDX writes m as an indexed file in a test directory.
func writeDDX(t testing.TB, m *model.Model) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.ddx")
	if err := indexed.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// reducedDDX reduces m (as the coordinator does before it shards) and
// writes the reduced model to an indexed file.
func reducedDDX(t testing.TB, m *model.Model) (*model.Model, string) {
	t.Helper()
	red, err := model.Reduce(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return red.Model, writeDDX(t, red.Model)
}

// loaded is a sharded job in this process: the plan, and the workers that
// loaded their parts from the file.
type loaded struct {
	layout  *Layout
	workers []*consensus.Worker
	links   []consensus.WorkerLink
	sums    []consensus.PartSummary
	parts   []*consensus.Part
}

func load(t *testing.T, path string, w int, opts consensus.Options) *loaded {
	t.Helper()
	return loadWith(t, path, w, opts, Load)
}

// loadWith is load with the parts built by loader (Load or LoadFlat), from
// specs that went through their encoding.
func loadWith(t *testing.T, path string, w int, opts consensus.Options, loader func(context.Context, *Spec) (*consensus.Part, error)) *loaded {
	t.Helper()
	l, err := PlanLayout(path, w, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := &loaded{layout: l}
	for k := range l.Specs {
		spec := specTrip(t, &l.Specs[k])
		p, err := loader(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		wopts := opts
		wopts.Threads = 1
		wk, err := consensus.NewWorker(p, wopts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(wk.Close)
		out.parts = append(out.parts, p)
		out.workers = append(out.workers, wk)
		out.links = append(out.links, consensus.LocalLink{W: wk})
		out.sums = append(out.sums, wk.Summary())
	}
	return out
}

func testModels() []struct {
	name string
	m    *model.Model
} {
	return []struct {
		name string
		m    *model.Model
	}{
		{"potts", generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 4, Rho: 1, Seed: 3})},
		{"ising", generate.Ising(generate.GridOptions{Height: 10, Width: 10, Rho: 0.5, Seed: 2})},
		{"logic", generate.Logic(generate.LogicOptions{Vars: 40, Factors: 30, Couplings: 40, MaxArity: 5, Rho: 1, Seed: 4})},
	}
}

// The parts the workers read from the file are those a split of the whole
// model into the same ranges gives: the same variables, factors, degrees
// and boundary, and the plan's boundary is the split's.
func TestLoadedPartsMatchSplit(t *testing.T) {
	for _, c := range testModels() {
		m, path := reducedDDX(t, c.m)
		plan, err := consensus.PartitionPlan(m, consensus.PerFactor)
		if err != nil {
			t.Fatal(err)
		}
		for w := 1; w <= 4; w++ {
			t.Run(fmt.Sprintf("%s/%d", c.name, w), func(t *testing.T) {
				l := load(t, path, w, consensus.DefaultOptions())
				place := make([]int32, len(m.Factors))
				for k, s := range l.layout.Specs {
					for a := s.From; a < s.To; a++ {
						place[a] = int32(k)
					}
				}
				parts, b, err := consensus.Split(m, plan, place, w)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := fmt.Sprint(l.layout.BoundaryVars), fmt.Sprint(b.Vars()); w > 1 && got != want {
					t.Fatalf("boundary %s, the split's %s", got, want)
				}
				for k, p := range parts {
					q := l.parts[k]
					if fmt.Sprint(q.Vars, q.Degree, q.Boundary) != fmt.Sprint(p.Vars, p.Degree, p.Boundary) {
						t.Errorf("part %d: vars/degrees/boundary %v %v %v, the split's %v %v %v", k, q.Vars, q.Degree, q.Boundary, p.Vars, p.Degree, p.Boundary)
					}
					if len(q.Model.Factors) != len(p.Model.Factors) || fmt.Sprint(q.Model.Unary) != fmt.Sprint(p.Model.Unary) {
						t.Errorf("part %d: %d factors, the split's %d, or other unaries", k, len(q.Model.Factors), len(p.Model.Factors))
					}
					x := make([]int, q.Model.NumVars())
					for i := range x {
						x[i] = (i * 7) % q.Model.Cards[i]
					}
					if a, b := q.Model.Score(x)-q.Model.Constant, p.Model.Score(x)-p.Model.Constant; math.Abs(a-b) > 1e-9*math.Max(1, math.Abs(b)) {
						t.Errorf("part %d scores %v, the split's %v", k, a, b)
					}
				}
			})
		}
	}
}

// A sharded run over parts read from the file takes the iterations of a
// run in one process; its primal is the exact score of the assignment its
// parts put together, and with one worker the run is the same.
func TestShardedRunMatchesSolve(t *testing.T) {
	for _, c := range testModels() {
		m, path := reducedDDX(t, c.m)
		opts := consensus.DefaultOptions()
		opts.MaxIter, opts.Threads = 120, 1
		want, err := consensus.Solve(context.Background(), m, nil, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		for w := 1; w <= 4; w++ {
			t.Run(fmt.Sprintf("%s/%d", c.name, w), func(t *testing.T) {
				l := load(t, path, w, opts)
				b, err := consensus.NewShardBoundary(l.layout.Boundary.Cards, l.layout.Of, l.layout.Deg)
				if err != nil {
					t.Fatal(err)
				}
				got, err := consensus.CoordinateShards(context.Background(), l.layout.Boundary, l.sums, b, l.links, opts, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if math.IsInf(got.Primal, -1) {
					t.Fatalf("no assignment (%s after %d)", got.Status, got.Iterations)
				}
				x := make([]int, m.NumVars())
				for j, v := range l.layout.BoundaryVars {
					x[v] = got.Boundary[j]
				}
				for _, wk := range l.workers {
					for k, last := 0, false; !last; k++ {
						var vars []int
						var states []int32
						if vars, states, last, err = wk.BestPiece(k, 1000); err != nil {
							t.Fatal(err)
						}
						for i, v := range vars {
							x[v] = int(states[i])
						}
					}
				}
				if sc := m.Score(x); math.Abs(sc-got.Primal) > 1e-9*math.Max(1, math.Abs(sc)) {
					t.Errorf("primal %.12g, the assignment scores %.12g", got.Primal, sc)
				}
				same := want.Status != "optimal" && got.Status != "optimal"
				if same && (got.Iterations != want.Iterations || math.Abs(got.Dual-want.Dual) > 1e-9*math.Max(1, math.Abs(want.Dual))) {
					t.Errorf("%s after %d, dual %.12g; solve: %s after %d, dual %.12g", got.Status, got.Iterations, got.Dual, want.Status, want.Iterations, want.Dual)
				}
				if w == 1 && (got.Status != want.Status || got.Iterations != want.Iterations || math.Abs(got.Primal-want.Primal) > 1e-9*math.Max(1, math.Abs(want.Primal))) {
					t.Errorf("one worker: %s after %d, primal %.12g; solve: %s after %d, primal %.12g", got.Status, got.Iterations, got.Primal, want.Status, want.Iterations, want.Primal)
				}
			})
		}
	}
}

// What a sharded run cannot take is a one-line error naming the file and
// the reason; a worker given another file than the coordinator planned
// refuses it.
func TestPlanAndLoadErrors(t *testing.T) {
	grid := generate.Potts(generate.GridOptions{Height: 4, Width: 4, Labels: 3, Rho: 1, Seed: 1})
	unaryFactor := generate.Potts(generate.GridOptions{Height: 3, Width: 3, Labels: 2, Rho: 1, Seed: 1})
	unaryFactor.Factors = append(unaryFactor.Factors, model.Factor{Kind: model.Dense, Vars: []int{0}, Table: []float64{0, 1}})
	forbidden := generate.Potts(generate.GridOptions{Height: 3, Width: 3, Labels: 2, Rho: 1, Seed: 1})
	forbidden.Unary[1] = math.Inf(-1)
	cases := []struct {
		name    string
		m       *model.Model
		workers int
		want    string
	}{
		{"unary factor", unaryFactor, 2, "over 1 variables"},
		{"forbidden state", forbidden, 2, "forbidden"},
		{"too many workers", grid, 1000, "factors for 1000 workers"},
		{"no workers", grid, 0, "0 workers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := PlanLayout(writeDDX(t, c.m), c.workers, PlanOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line with %q", err, c.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		if _, err := PlanLayout(filepath.Join(t.TempDir(), "none.ddx"), 2, PlanOptions{}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("another file", func(t *testing.T) {
		path := writeDDX(t, grid)
		l, err := PlanLayout(path, 2, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		other := generate.Potts(generate.GridOptions{Height: 4, Width: 4, Labels: 3, Rho: 1, Seed: 2})
		if err := indexed.WriteFile(path, other); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(context.Background(), &l.Specs[0]); err == nil || !strings.Contains(err.Error(), "not the same model file") {
			t.Fatalf("error %v, want: not the same model file", err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(context.Background(), &l.Specs[0]); err == nil {
			t.Fatal("no error for a missing file")
		}
	})
}

// BenchmarkPlan: the coordinator's two passes over a 300x300 4-label
// grid's file, cut for 4 workers (what it keeps: the boundary).
func BenchmarkPlan(b *testing.B) {
	m := generate.Potts(generate.GridOptions{Height: 300, Width: 300, Labels: 4, Rho: 0.5, Seed: 1})
	path := writeDDX(b, m)
	b.ReportAllocs()
	for b.Loop() {
		l, err := PlanLayout(path, 4, PlanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(l.BoundaryVars) == 0 {
			b.Fatal("no boundary")
		}
	}
}

// BenchmarkLoad: one worker's part of the same grid, read from the file.
func BenchmarkLoad(b *testing.B) {
	m := generate.Potts(generate.GridOptions{Height: 300, Width: 300, Labels: 4, Rho: 0.5, Seed: 1})
	path := writeDDX(b, m)
	l, err := PlanLayout(path, 4, PlanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(context.Background(), &l.Specs[1]); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzLoadSpec: a spec comes over the network, so any bytes must give a
// part or an error, never a panic; a decoded part always passes the
// worker's own checks (consensus.NewWorker).
func FuzzLoadSpec(f *testing.F) {
	m := generate.Potts(generate.GridOptions{Height: 4, Width: 5, Labels: 3, Rho: 1, Seed: 1})
	path := filepath.Join(f.TempDir(), "m.ddx")
	if err := indexed.WriteFile(path, m); err != nil {
		f.Fatal(err)
	}
	l, err := PlanLayout(path, 2, PlanOptions{})
	if err != nil {
		f.Fatal(err)
	}
	b, err := hashFile(path, MinBlockSize)
	if err != nil {
		f.Fatal(err)
	}
	for _, announce := range []bool{false, true} {
		if announce { // specs with the blocks' digest (ship.go) too
			if err := b.Announce(l); err != nil {
				f.Fatal(err)
			}
		}
		for k := range l.Specs {
			data, err := l.Specs[k].Encode()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := DecodeSpec(data)
		if err != nil {
			return
		}
		spec.Path = path // only the planned file: no other path is read
		p, err := Load(context.Background(), spec)
		if err != nil {
			return
		}
		w, err := consensus.NewWorker(p, consensus.DefaultOptions())
		if err == nil {
			w.Close()
		}
	})
}

// TestPiecesAddUp: the pieces' scores and the constant add up to the
// model's score (docs/distributed-trws.md, eq. 1), and every variable is
// interior to one piece or a boundary variable of the pieces that hold it.
func TestPiecesAddUp(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 9, Width: 7, Labels: 3, Rho: 0.5, Seed: 4})
	m.Constant = 1.25
	path := writeDDX(t, m)
	for w := 1; w <= 4; w++ {
		l, err := PlanLayout(path, w, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		copies := l.Copies()
		pieces := make([]*Piece, w)
		held := make([]int, m.NumVars())
		for k := range l.Specs {
			cnt := make([]int32, len(l.Of[k]))
			for i, j := range l.Of[k] {
				cnt[i] = int32(len(copies[j]))
			}
			if pieces[k], err = LoadPiece(context.Background(), &l.Specs[k], cnt); err != nil {
				t.Fatal(err)
			}
			if pc := pieces[k]; pc.Potts == nil || len(pc.Model.Factors) != 0 || pc.Factors() != pc.Potts.Len() {
				t.Errorf("%d workers: a Potts grid's piece %d not read flat", w, k)
			}
			for _, v := range pieces[k].Vars {
				held[v]++
			}
			if _, err := LoadPiece(context.Background(), &l.Specs[k], append(cnt, 2)); err == nil {
				t.Error("a piece loaded with one copy count too many")
			}
		}
		for j, v := range l.BoundaryVars {
			if held[v] != len(copies[j]) || len(copies[j]) < 2 {
				t.Errorf("%d workers: boundary variable %d held by %d pieces, %d copies", w, v, held[v], len(copies[j]))
			}
			held[v] = 1
		}
		for v, h := range held {
			if h != 1 {
				t.Errorf("%d workers: variable %d in %d pieces", w, v, h)
			}
		}
		for seed := range 5 {
			x := make([]int, m.NumVars())
			for v := range x {
				x[v] = (v*7 + seed*3 + v/5) % m.Cards[v]
			}
			sum := l.Boundary.Constant
			for _, pc := range pieces {
				xl := make([]int, len(pc.Vars))
				for i, v := range pc.Vars {
					xl[i] = x[v]
				}
				sum += pieceModel(pc).Score(xl)
			}
			if want := m.Score(x); math.Abs(sum-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("%d workers: pieces score %v, model %v", w, sum, want)
			}
		}
	}
}

// pieceModel is the piece's model with its factors (those read flat,
// Piece.Potts, as model.Factors).
func pieceModel(pc *Piece) *model.Model {
	if pc.Potts == nil {
		return pc.Model
	}
	m := *pc.Model
	m.Factors = pc.Potts.AppendFactors(nil)
	return &m
}

// specTrip encodes sp, as the coordinator sends it, and decodes it, as a
// worker receives it.
func specTrip(t *testing.T, sp *Spec) *Spec {
	t.Helper()
	data, err := sp.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeSpec(data)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// MaxEntries is one process's budget, not the model's: a model whose
// total states and table entries exceed it runs when each part's fit (the
// plan and every worker's load pass); a part whose table entries exceed it
// stops the plan, and one whose states exceed it stops its worker's load,
// each with one line that names the part and the budget.
func TestBudgetBoundsEachPart(t *testing.T) {
	// 8x8 grid, 3 labels, dense pair tables: 192 states, 112 factors of 9
	// entries (1008) in all; about half of each per part on 2 workers.
	m := generate.Potts(generate.GridOptions{Height: 8, Width: 8, Labels: 3, Rho: 1, Seed: 4, Pair: generate.PairDense})
	path := writeDDX(t, m)
	states, entries := len(m.Unary), 0
	for _, f := range m.Factors {
		entries += len(f.Table)
	}
	budget := 600 // over each part's states and entries, under the model's entries
	if entries <= budget || states > budget {
		t.Fatalf("%d states and %d entries: the budget %d does not test the parts", states, entries, budget)
	}
	l, err := PlanLayout(path, 2, PlanOptions{MaxEntries: budget})
	if err != nil {
		t.Fatalf("a model whose parts fit the budget: %v", err)
	}
	for w := range l.Specs {
		if _, err := Load(context.Background(), &l.Specs[w]); err != nil {
			t.Fatalf("part %d within the budget: %v", w, err)
		}
	}
	// The rewrite in breadth-first order (run's localize), whose windows
	// bound its memory, takes the model the plan took.
	if err := Reorder(path, filepath.Join(t.TempDir(), "bfs.ddx"), ReorderOptions{MaxEntries: budget}); err != nil {
		t.Fatalf("reordering a model whose parts fit the budget: %v", err)
	}
	// On 4 workers the plan's walks read several parts at once (half the
	// workers forward): the budget is each part's, not theirs.
	if l, err = PlanLayout(path, 4, PlanOptions{MaxEntries: 350}); err != nil {
		t.Fatalf("4 parts that fit a budget of 350: %v", err)
	}
	for w := range l.Specs {
		if _, err := Load(context.Background(), &l.Specs[w]); err != nil {
			t.Fatalf("part %d of 4 within the budget: %v", w, err)
		}
	}
	// A part's table entries over the budget: the plan says so.
	_, err = PlanLayout(path, 2, PlanOptions{MaxEntries: 300})
	if err == nil || !strings.Contains(err.Error(), "part 0 of 2") || !strings.Contains(err.Error(), "budget of 300") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line naming part 0 and the budget of 300", err)
	}
	// A part's states over the budget (a Potts grid has no tables): its
	// worker says so as it reads them; the plan, holding no part, passes.
	potts := generate.Potts(generate.GridOptions{Height: 8, Width: 8, Labels: 3, Rho: 1, Seed: 4})
	l, err = PlanLayout(writeDDX(t, potts), 2, PlanOptions{MaxEntries: 60})
	if err != nil {
		t.Fatalf("the plan of a model of %d states on a budget of 60: %v", len(potts.Unary), err)
	}
	_, err = Load(context.Background(), &l.Specs[1])
	if err == nil || !strings.Contains(err.Error(), "limit of 60") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line with the limit of 60", err)
	}
}
