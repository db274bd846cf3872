package shard

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/rusage"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
)

// twoPassOwners is the plan's second pass as it was, in two walks (the
// owner of every variable, then each worker's slaves over each boundary
// variable): the oracle of the one-walk planner.owners.
func twoPassOwners(t *testing.T, p *planner) {
	t.Helper()
	owner := make([]int16, p.sc.NumVars()) // -1 none, -2 several
	for i := range owner {
		owner[i] = -1
	}
	w := 0
	err := p.sc.Walk(indexed.Visitor{Factor: func(a int, _ indexed.Record, f *model.Factor) error {
		for a >= p.cut[w+1] {
			w++
		}
		for _, v := range f.Vars {
			switch o := owner[v]; {
			case o == -1:
				owner[v] = int16(w)
			case o >= 0 && int(o) != w:
				owner[v] = -2
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for v, o := range owner {
		switch o {
		case -2:
			p.bvars = append(p.bvars, v)
		case -1:
			p.isolated = append(p.isolated, v)
		}
	}
	p.of, p.deg, p.entries = make([][]int, p.workers), make([][]int, p.workers), make([]int, p.workers)
	count := make([]int32, len(p.bvars))
	var touched []int
	w = 0
	flush := func() {
		slices.Sort(touched)
		for _, j := range touched {
			p.of[w] = append(p.of[w], j)
			p.deg[w] = append(p.deg[w], int(count[j]))
			count[j] = 0
		}
		touched = touched[:0]
	}
	err = p.sc.Walk(indexed.Visitor{Factor: func(a int, _ indexed.Record, f *model.Factor) error {
		for a >= p.cut[w+1] {
			flush()
			w++
		}
		for _, v := range f.Vars {
			p.entries[w] += p.cards.Card(v)
			j, ok := slices.BinarySearch(p.bvars, v)
			if !ok {
				continue
			}
			if count[j] == 0 {
				touched = append(touched, j)
			}
			count[j]++
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	flush()
}

// scanFile opens a Scanner of the indexed file at path, closed when the
// test ends.
func scanFile(t testing.TB, path string) *indexed.Scanner {
	t.Helper()
	f, size, err := openSized(path, "shard")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	sc, err := indexed.OpenScan(f, size, path, indexed.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// ownersBoth runs the windowed second pass (owners.go) and the second pass
// from the hulls (hulls.go, where its candidates are few enough), each on a
// fresh planner of the file at path (windows of 2^bits slots to start and
// at most, 0: the defaults), and the two walks of before, and fails unless
// they all agree on the boundary, the isolated variables, the slaves per
// worker and the replica entries. It returns the planner that the windowed
// pass ran on, and whether the hulls' pass ran (rather than fell back).
func ownersBoth(t *testing.T, path string, workers, bits int, what string) (*planner, bool) {
	t.Helper()
	return ownersWith(t, path, workers, bits, 0, what)
}

// ownersWith is ownersBoth with the hulls' candidates bounded by maxCand
// (0: maxCandidates).
func ownersWith(t *testing.T, path string, workers, bits, maxCand int, what string) (*planner, bool) {
	t.Helper()
	sc := scanFile(t, path)
	got := &planner{sc: sc, path: path, workers: workers, tableBits: bits, tableMost: bits, windowed: true}
	if err := got.ranges(nil); err != nil {
		t.Fatal(err)
	}
	want, hulls := *got, *got
	hulls.windowed, hulls.maxCand = false, maxCand
	if err := got.owners(); err != nil {
		t.Fatal(err)
	}
	if err := hulls.owners(); err != nil {
		t.Fatal(err)
	}
	twoPassOwners(t, &want)
	for _, p := range []*planner{got, &hulls} {
		for _, c := range []struct {
			what      string
			got, want any
		}{{"boundary", p.bvars, want.bvars}, {"isolated", p.isolated, want.isolated},
			{"of", p.of, want.of}, {"deg", p.deg, want.deg}, {"entries", p.entries, want.entries}} {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Fatalf("%s, %d workers, windows of 2^%d, the pass from %s: %s %v, the two passes found %v", what, workers, bits, p.from2, c.what, c.got, c.want)
			}
		}
	}
	return got, hulls.from2 == "hulls"
}

// randomCards is a model of n variables of 2 to 4 states, no factor.
func randomCards(r *rand.Rand, n int) *model.Model {
	cards := make([]int, n)
	for i := range cards {
		cards[i] = 2 + r.IntN(3)
	}
	return model.New(cards)
}

// addDense adds to m a dense factor over vars (sorted, repeats dropped;
// none when fewer than two are left), its entries uniform in [0, 1).
func addDense(r *rand.Rand, m *model.Model, vars []int) {
	slices.Sort(vars)
	if vars = slices.Compact(vars); len(vars) < 2 {
		return
	}
	size, _ := m.TableSize(vars)
	tab := make([]float64, size)
	for k := range tab {
		tab[k] = r.Float64()
	}
	m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: vars, Table: tab})
}

// The windowed second pass finds what the two walks found: the same
// boundary, isolated variables, slaves per worker and replica entries, on
// random pairwise and triple factors in random order over hubs of more
// than 255 factors and variables in no factor. Windows of at most 8 slots
// retire variables that come back (the suspects, counted again); windows
// of the default sizes on these small models grow to hold them all.
func TestOwnersMatchTwoPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	maxDeg, recounted := 0, 0
	for trial := range 12 {
		n := 20 + r.IntN(400)
		m := randomCards(r, n)
		nf := 50 + r.IntN(3000)
		hub := r.IntN(n)
		for range nf {
			vs := []int{r.IntN(n), r.IntN(n)}
			if r.IntN(2) == 0 {
				vs[0] = hub
			}
			if r.IntN(5) == 0 {
				vs = append(vs, r.IntN(n))
			}
			addDense(r, m, vs)
		}
		path := writeDDX(t, m)
		for _, workers := range []int{1, 2, 3, 7} {
			for _, bits := range []int{3, 0} {
				got, _ := ownersBoth(t, path, workers, bits, fmt.Sprintf("trial %d", trial))
				if got.suspects > 0 {
					recounted++
				}
				for _, d := range got.deg {
					maxDeg = max(maxDeg, slices.Max(append(d, 0)))
				}
				if workers > 1 && len(got.bvars) == 0 {
					t.Fatalf("trial %d, %d workers: no boundary: the test tests nothing", trial, workers)
				}
			}
		}
	}
	if maxDeg <= 255 {
		t.Fatalf("no worker has more than 255 slaves over a boundary variable (%d at most): the hubs are not tested", maxDeg)
	}
	if recounted == 0 {
		t.Fatal("no suspect was counted again: the recount is not tested")
	}
}

// On grids in row order, chains and grids with variables in no factor,
// the windows lose no variable (nothing is counted again) and find what
// the two walks found, with windows of the default sizes; a grid written column by column (its variables numbered by
// row) too.
func TestOwnersLocalOrders(t *testing.T) {
	grid := func(h, w int) *model.Model {
		return generate.Potts(generate.GridOptions{Height: h, Width: w, Labels: 3, Rho: 1, Seed: 5})
	}
	two := make([]int, 70000+3)
	for i := range two {
		two[i] = 2
	}
	isolated := model.New(two)
	for v := 0; v+3 < len(isolated.Cards); v += 3 { // every third variable in no factor
		isolated.Factors = append(isolated.Factors, model.Factor{Kind: model.Dense, Vars: []int{v, v + 1}, Table: []float64{0, 1, 1, 0}})
	}
	cols := grid(30, 40)
	slices.SortStableFunc(cols.Factors, func(a, b model.Factor) int { return a.Vars[0]%40 - b.Vars[0]%40 })
	for _, c := range []struct {
		name string
		m    *model.Model
	}{{"grid 60x50", grid(60, 50)}, {"grid 300x7", grid(300, 7)}, {"grid 20x3000", grid(20, 3000)}, {"chain", grid(1, 5000)},
		{"every third variable isolated", isolated}, {"grid by columns", cols}} {
		path := writeDDX(t, c.m)
		for _, workers := range []int{1, 2, 5} {
			got, hulls := ownersBoth(t, path, workers, 0, c.name)
			if got.suspects != 0 {
				t.Errorf("%s, %d workers: %d suspects counted again: the window lost variables of a local order", c.name, workers, got.suspects)
			}
			if !hulls && c.name != "grid by columns" {
				t.Errorf("%s, %d workers: the hulls' pass fell back to the windows on a local order", c.name, workers)
			}
			// Over a bound of 8 candidates, the hulls' pass leaves it to
			// the windows.
			wide := c.name == "grid 60x50" || c.name == "grid 20x3000" // a cut holds more than 8
			if _, hulls := ownersWith(t, path, workers, 0, 8, c.name); hulls && workers > 1 && wide {
				t.Errorf("%s, %d workers: the hulls' pass ran with more than 8 candidates", c.name, workers)
			}
		}
	}
}

// The second pass holds a window, not the variables: on 4-label grids 100
// wide, 10^5 and 4*10^5 variables, planned for 2 workers, the live heap
// once the walks end (their windows and sets still held) differs by less
// than 64 KiB. The arrays of before (3 bytes a variable and group) would
// add 1.8 MB.
func TestOwnersMemoryFlat(t *testing.T) {
	live := func(h int) uint64 {
		path := writeDDX(t, generate.Potts(generate.GridOptions{Height: h, Width: 100, Labels: 4, Rho: 0.5, Seed: 1}))
		sc := scanFile(t, path)
		var heap uint64
		p := &planner{sc: sc, path: path, workers: 2, windowed: true, measure: func() {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heap = ms.HeapAlloc
		}}
		if err := p.ranges(nil); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		if err := p.owners(); err != nil {
			t.Fatal(err)
		}
		if p.suspects != 0 || len(p.bvars) == 0 {
			t.Fatalf("%d variables: %d suspects, boundary %d", h*100, p.suspects, len(p.bvars))
		}
		return heap
	}
	small, large := live(1000), live(4000)
	t.Logf("live heap after the walks: %d bytes at 10^5 variables, %d at 4*10^5", small, large)
	if large > small+64<<10 {
		t.Fatalf("live heap after the walks grew from %d to %d bytes with 4x the variables: the pass holds something per variable", small, large)
	}
}

// BenchmarkPlanMillion: PlanLayout (both passes) on a 1000x1000 4-label
// grid's file cut for 2 workers, the plan of issue 26's bar; cpu-ms/op is
// the CPU time of both passes' goroutines.
func BenchmarkPlanMillion(b *testing.B) {
	path := writeDDX(b, generate.Potts(generate.GridOptions{Height: 1000, Width: 1000, Labels: 4, Rho: 0.5, Seed: 1}))
	runtime.GC()
	b.ReportAllocs()
	cpu := rusage.CPU().Nanoseconds()
	for b.Loop() {
		if _, err := PlanLayout(path, 2, PlanOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rusage.CPU().Nanoseconds()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// A factor over more variables than the largest window holds (a logic
// factor over many binary variables) keeps all its variables at one step:
// the window grows past its largest size instead of looping for a free
// slot (it hung), and the owners are still the two walks'.
func TestOwnersFactorWiderThanWindow(t *testing.T) {
	const n = 300
	m := model.New(slices.Repeat([]int{2}, n))
	wide := make([]int, n)
	for i := range wide {
		wide[i] = i
	}
	m.Factors = append(m.Factors, model.Factor{Kind: model.AtMostOne, Vars: wide})
	for i := 0; i+1 < n; i++ {
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{i, i + 1}, Table: []float64{0, 1, 1, 0}})
	}
	path := writeDDX(t, m)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, workers := range []int{2, 3} {
			ownersBoth(t, path, workers, 3, "one factor over 300 variables")
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the plan's window did not end on a factor wider than it (30 s)")
	}
}
