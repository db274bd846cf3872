package multilevel

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// gridGraph returns the h x w lattice graph (4-neighbour), vertex r*w+c.
func gridGraph(h, w int) *Graph {
	edges := make([]Edge, 0, h*(w-1)+(h-1)*w)
	for r := range h {
		for c := range w {
			v := int32(r*w + c)
			if c+1 < w {
				edges = append(edges, Edge{v, v + 1, 1})
			}
			if r+1 < h {
				edges = append(edges, Edge{v, v + int32(w), 1})
			}
		}
	}
	g, err := NewGraph(h*w, edges, nil)
	if err != nil {
		panic(err)
	}
	return g
}

// cliquesGraph returns c disjoint cliques of s vertices each (clique i is
// vertices i*s .. i*s+s-1), plus the given extra edges.
func cliquesGraph(c, s int, extra ...Edge) *Graph {
	var edges []Edge
	for i := range c {
		for a := range s {
			for b := a + 1; b < s; b++ {
				edges = append(edges, Edge{int32(i*s + a), int32(i*s + b), 1})
			}
		}
	}
	g, err := NewGraph(c*s, append(edges, extra...), nil)
	if err != nil {
		panic(err)
	}
	return g
}

// mustPartition runs Partition and checks the result's shape: one part
// in [0,k) per vertex.
func mustPartition(t testing.TB, g *Graph, k int, opts Options) []int32 {
	t.Helper()
	part, err := Partition(g, k, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(part) != g.NumVertices() {
		t.Fatalf("%d parts for %d vertices", len(part), g.NumVertices())
	}
	for v, p := range part {
		if p < 0 || int(p) >= k {
			t.Fatalf("vertex %d in part %d, outside [0,%d)", v, p, k)
		}
	}
	return part
}

// checkBalance fails unless every part weighs at most the bound Partition
// promises for unit-like weights: max(tol * average, ceil(average)).
func checkBalance(t testing.TB, g *Graph, part []int32, k int, tol float64) {
	t.Helper()
	w := PartWeights(g, part, k)
	avg := float64(g.TotalVertexWeight()) / float64(k)
	bound := max(math.Floor(tol*avg), math.Ceil(avg))
	for p, x := range w {
		if float64(x) > bound {
			t.Fatalf("part %d weighs %d, bound %.0f (average %.1f, tolerance %.3f; weights %v)", p, x, bound, avg, tol, w)
		}
	}
}

func TestMultilevelTwoCliques(t *testing.T) {
	// Two 10-cliques joined by one edge: the best bisection cuts it.
	g := cliquesGraph(2, 10, Edge{3, 17, 1})
	for seed := range uint64(10) {
		part := mustPartition(t, g, 2, Options{Seed: seed})
		if c := EdgeCut(g, part); c != 1 {
			t.Fatalf("seed %d: cut %d, want 1 (%v)", seed, c, part)
		}
		checkBalance(t, g, part, 2, DefaultImbalance)
	}
	// Four 8-cliques in a ring: 4 parts cut the 4 ring edges.
	ring := cliquesGraph(4, 8, Edge{0, 8, 1}, Edge{9, 16, 1}, Edge{17, 24, 1}, Edge{25, 1, 1})
	for seed := range uint64(5) {
		part := mustPartition(t, ring, 4, Options{Seed: seed})
		if c := EdgeCut(ring, part); c != 4 {
			t.Fatalf("ring seed %d: cut %d, want 4 (%v)", seed, c, part)
		}
	}
}

func TestMultilevelGridBisection(t *testing.T) {
	// The best balanced bisection of an h x w grid cuts min(h, w) edges;
	// multilevel schemes get within about 20% of it (gpmetis cuts 117 and
	// 366 edges on 100x100 and 300x300 grids).
	for _, s := range [][2]int{{8, 8}, {20, 30}, {50, 50}, {40, 100}, {100, 40}, {7, 200}, {150, 150}} {
		h, w := s[0], s[1]
		g := gridGraph(h, w)
		part := mustPartition(t, g, 2, Options{Seed: 1})
		c := EdgeCut(g, part)
		opt := min(h, w)
		if float64(c) > 1.25*float64(opt)+2 {
			t.Errorf("%dx%d grid: bisection cut %d, optimum %d", h, w, c, opt)
		}
		checkBalance(t, g, part, 2, DefaultImbalance)
	}
}

func TestMultilevelGridKWay(t *testing.T) {
	// A 120x120 grid into k parts: compare with the cut of k (near-)square
	// blocks, which is about the optimum.
	g := gridGraph(120, 120)
	for _, k := range []int{3, 4, 9, 16, 25, 64} {
		part := mustPartition(t, g, k, Options{})
		checkBalance(t, g, part, k, DefaultImbalance)
		side := math.Sqrt(float64(k))
		blocks := 2 * 120 * (side - 1) // cuts of a side x side block layout
		if k == 3 {
			blocks = 120 + 80 // a third cut off, the rest halved
		}
		if c := EdgeCut(g, part); float64(c) > 1.25*blocks+10 {
			t.Errorf("k=%d: cut %d, blocks cut %.0f", k, c, blocks)
		}
	}
}

func TestMultilevelDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	graphs := []*Graph{gridGraph(40, 45), randomCSR(r, 1500, 4000, true), cliquesGraph(30, 6)}
	for i, g := range graphs {
		for _, k := range []int{2, 7, 32} {
			opts := Options{Seed: 42}
			a := mustPartition(t, g, k, opts)
			b := mustPartition(t, g, k, opts)
			if !slices.Equal(a, b) {
				t.Fatalf("graph %d, k=%d: two runs with the same seed differ", i, k)
			}
		}
	}
}

func TestMultilevelImbalanceRespected(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	grid := gridGraph(45, 55)
	for _, tol := range []float64{1, 1.03, 1.1, 1.5} {
		for _, k := range []int{2, 3, 5, 8, 13, 32} {
			part := mustPartition(t, grid, k, Options{Imbalance: tol, Seed: uint64(k)})
			checkBalance(t, grid, part, k, tol)
			g := randomCSR(r, 600, 1500, false)
			part = mustPartition(t, g, k, Options{Imbalance: tol})
			checkBalance(t, g, part, k, tol)
		}
	}
}

func TestMultilevelWeightedBalance(t *testing.T) {
	// Vertex weights 1..4 on a grid: the tolerance is met.
	r := rand.New(rand.NewPCG(11, 12))
	g := gridGraph(80, 80)
	g.Vwgt = make([]int32, g.NumVertices())
	for i := range g.Vwgt {
		g.Vwgt[i] = 1 + int32(r.IntN(4))
	}
	for _, k := range []int{2, 6, 16} {
		part := mustPartition(t, g, k, Options{})
		if x := Imbalance(g, part, k); x > DefaultImbalance {
			t.Fatalf("k=%d: imbalance %.4f", k, x)
		}
	}
	// Heavy vertices make the tolerance unreachable: no part exceeds the
	// average by more than the heaviest vertex.
	for trial := range 20 {
		n := 20 + r.IntN(200)
		h := randomCSR(r, n, 3*n, false)
		h.Vwgt = make([]int32, n)
		var maxw int32
		for i := range h.Vwgt {
			h.Vwgt[i] = 1
			if r.IntN(10) == 0 {
				h.Vwgt[i] = int32(1 + r.IntN(60))
			}
			maxw = max(maxw, h.Vwgt[i])
		}
		k := 2 + r.IntN(8)
		part := mustPartition(t, h, k, Options{Seed: uint64(trial)})
		avg := float64(h.TotalVertexWeight()) / float64(k)
		for p, x := range PartWeights(h, part, k) {
			if float64(x) > max(DefaultImbalance*avg, avg+float64(maxw)) {
				t.Fatalf("trial %d: part %d weighs %d, average %.1f, heaviest vertex %d", trial, p, x, avg, maxw)
			}
		}
	}
}

func TestMultilevelDisconnected(t *testing.T) {
	// Ten disjoint 5-cliques into 2 parts: five cliques each, nothing cut.
	g := cliquesGraph(10, 5)
	for seed := range uint64(5) {
		part := mustPartition(t, g, 2, Options{Seed: seed})
		if c := EdgeCut(g, part); c != 0 {
			t.Fatalf("seed %d: cut %d, want 0", seed, c)
		}
		checkBalance(t, g, part, 2, 1)
	}
	// Isolated vertices only: balanced parts, nothing to cut.
	e, _ := NewGraph(1000, nil, nil)
	for _, k := range []int{2, 7, 64} {
		part := mustPartition(t, e, k, Options{})
		checkBalance(t, e, part, k, DefaultImbalance)
	}
	// A grid plus many isolated vertices.
	grid := gridGraph(30, 30)
	edges := make([]Edge, 0)
	for v := range grid.NumVertices() {
		for p := grid.Xadj[v]; p < grid.Xadj[v+1]; p++ {
			if u := grid.Adjncy[p]; int(u) > v {
				edges = append(edges, Edge{int32(v), u, 1})
			}
		}
	}
	mixed, err := NewGraph(900+500, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	part := mustPartition(t, mixed, 4, Options{})
	checkBalance(t, mixed, part, 4, DefaultImbalance)
	if c := EdgeCut(mixed, part); c > 80 {
		t.Fatalf("grid with isolated vertices: cut %d", c)
	}
}

func TestMultilevelSmallK(t *testing.T) {
	g := gridGraph(10, 10)
	part := mustPartition(t, g, 1, Options{})
	for _, p := range part {
		if p != 0 {
			t.Fatal("k=1 must put everything in part 0")
		}
	}
	// k >= n: one vertex per part.
	for _, k := range []int{100, 150} {
		part := mustPartition(t, g, k, Options{})
		seen := map[int32]bool{}
		for _, p := range part {
			if seen[p] {
				t.Fatalf("k=%d: part %d used twice", k, p)
			}
			seen[p] = true
		}
	}
	// Near n: every part gets one or two vertices.
	part = mustPartition(t, g, 60, Options{})
	for p, w := range PartWeights(g, part, 60) {
		if w < 1 || w > 2 {
			t.Fatalf("k=60: part %d weighs %d", p, w)
		}
	}
	empty, _ := NewGraph(0, nil, nil)
	if part := mustPartition(t, empty, 3, Options{}); len(part) != 0 {
		t.Fatal("empty graph: non-empty partition")
	}
	one, _ := NewGraph(1, nil, nil)
	if part := mustPartition(t, one, 2, Options{}); part[0] != 0 {
		t.Fatal("single vertex: not in part 0")
	}
}

func TestMultilevelZeroWeights(t *testing.T) {
	// Half of a grid's vertices weigh nothing: the weighted balance holds.
	g := gridGraph(40, 40)
	g.Vwgt = make([]int32, g.NumVertices())
	for i := range g.Vwgt {
		if i%2 == 0 {
			g.Vwgt[i] = 2
		}
	}
	for _, k := range []int{2, 5, 16} {
		part := mustPartition(t, g, k, Options{})
		if x := Imbalance(g, part, k); x > DefaultImbalance {
			t.Fatalf("k=%d: imbalance %.4f", k, x)
		}
	}
	// All weights zero: any partition is balanced; it must still be valid.
	for i := range g.Vwgt {
		g.Vwgt[i] = 0
	}
	part := mustPartition(t, g, 4, Options{})
	if x := Imbalance(g, part, 4); x != 1 {
		t.Fatalf("zero weights: imbalance %v", x)
	}
	// Zero-weight edges.
	z, err := NewGraph(4, []Edge{{0, 1, 0}, {1, 2, 5}, {2, 3, 0}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	part = mustPartition(t, z, 2, Options{})
	if c := EdgeCut(z, part); c != 0 {
		t.Fatalf("zero-weight edges: cut %d, want 0 (%v)", c, part)
	}
}

func TestMultilevelStar(t *testing.T) {
	// A hub with many leaves, and several hubs linked in a path: coarsening
	// must still shrink the graph (two-hop matching of the leaves).
	const hubs, leaves = 8, 3000
	var edges []Edge
	n := hubs * (leaves + 1)
	for h := range hubs {
		hub := int32(h * (leaves + 1))
		for l := 1; l <= leaves; l++ {
			edges = append(edges, Edge{hub, hub + int32(l), 1})
		}
		if h > 0 {
			edges = append(edges, Edge{hub - int32(leaves+1), hub, 1})
		}
	}
	g, err := NewGraph(n, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{2, 4, 8} {
		part := mustPartition(t, g, k, Options{})
		checkBalance(t, g, part, k, DefaultImbalance)
		if c := EdgeCut(g, part); c > int64(leaves) {
			t.Fatalf("k=%d: cut %d", k, c)
		}
	}
}

func TestMultilevelRandomGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for trial := range 60 {
		n := 1 + r.IntN(400)
		g := randomCSR(r, n, r.IntN(4*n), trial%3 == 0)
		k := 1 + r.IntN(12)
		part := mustPartition(t, g, k, Options{Seed: uint64(trial), Tries: 1 + r.IntN(3)})
		if trial%3 != 0 {
			checkBalance(t, g, part, k, DefaultImbalance)
		}
	}
}

func TestMultilevelErrors(t *testing.T) {
	g := gridGraph(4, 4)
	bad := &Graph{Xadj: []int32{0, 1, 1}, Adjncy: []int32{1}}
	cases := []struct {
		g    *Graph
		k    int
		opts Options
		want string
	}{
		{g, 0, Options{}, "0 parts"},
		{g, -3, Options{}, "-3 parts"},
		{g, 2, Options{Imbalance: 0.9}, "imbalance 0.9"},
		{g, 2, Options{Imbalance: math.NaN()}, "imbalance NaN"},
		{g, 2, Options{Imbalance: math.Inf(1)}, "imbalance +Inf"},
		{g, 2, Options{Tries: -1}, "-1 tries"},
		{bad, 2, Options{}, "does not list it"},
		{nil, 2, Options{}, "nil graph"},
	}
	for _, c := range cases {
		_, err := Partition(c.g, c.k, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Partition(k=%d, %+v): error %v, want one containing %q", c.k, c.opts, err, c.want)
		}
	}
}

func benchmarkGrid(b *testing.B, h, w, k int) {
	g := gridGraph(h, w)
	b.ResetTimer()
	var part []int32
	for b.Loop() {
		var err error
		if part, err = Partition(g, k, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(EdgeCut(g, part)), "cut")
	b.ReportMetric(Imbalance(g, part, k), "imbalance")
}

func BenchmarkMultilevelGrid1000x1000k64(b *testing.B) { benchmarkGrid(b, 1000, 1000, 64) }
func BenchmarkMultilevelGrid1000x1000k16(b *testing.B) { benchmarkGrid(b, 1000, 1000, 16) }
func BenchmarkMultilevelGrid1000x1000k4(b *testing.B)  { benchmarkGrid(b, 1000, 1000, 4) }
func BenchmarkMultilevelGrid1000x1000k2(b *testing.B)  { benchmarkGrid(b, 1000, 1000, 2) }
func BenchmarkMultilevelGrid300x300k16(b *testing.B)   { benchmarkGrid(b, 300, 300, 16) }
func BenchmarkMultilevelGrid100x100k4(b *testing.B)    { benchmarkGrid(b, 100, 100, 4) }

// FuzzMultilevel partitions small graphs decoded from the input (vertex
// count, k, tolerance, weights, edges) and checks the result's shape and,
// for unit vertex weights, its balance.
func FuzzMultilevel(f *testing.F) {
	f.Add([]byte{10, 3, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9})
	f.Add([]byte{40, 7, 5, 1, 0, 39, 1, 38, 2, 37, 3, 36, 0, 1, 1, 2, 2, 3, 9, 9})
	f.Add([]byte{3, 2, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		n := 1 + int(data[0])%64
		k := 1 + int(data[1])%12
		tol := 1 + float64(data[2]%20)/20
		weighted := data[3]%2 == 1
		data = data[4:]
		var vwgt []int32
		if weighted {
			vwgt = make([]int32, n)
			for i := range vwgt {
				if i < len(data) {
					vwgt[i] = int32(data[i] % 5)
				}
			}
		}
		var edges []Edge
		for i := 0; i+2 < len(data); i += 3 {
			edges = append(edges, Edge{int32(int(data[i]) % n), int32(int(data[i+1]) % n), int32(data[i+2] % 4)})
		}
		g, err := NewGraph(n, edges, vwgt)
		if err != nil {
			t.Fatal(err)
		}
		part := mustPartition(t, g, k, Options{Imbalance: tol, Seed: uint64(len(data))})
		if !weighted {
			checkBalance(t, g, part, k, tol)
			return
		}
		avg := float64(g.TotalVertexWeight()) / float64(k)
		heaviest := float64(slices.Max(vwgt))
		for p, w := range PartWeights(g, part, k) {
			if float64(w) > max(math.Floor(tol*avg), math.Ceil(avg), avg+heaviest) {
				t.Fatalf("part %d weighs %d: average %.2f, heaviest vertex %.0f, tolerance %.2f", p, w, avg, heaviest, tol)
			}
		}
	})
}
