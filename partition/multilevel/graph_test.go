package multilevel

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// csrNeighbours returns v's neighbours and weights as a map.
func csrNeighbours(g *Graph, v int) map[int32]int32 {
	m := map[int32]int32{}
	for p := g.Xadj[v]; p < g.Xadj[v+1]; p++ {
		m[g.Adjncy[p]] = g.weightAt(int(p))
	}
	return m
}

func TestNewGraphMergesParallelEdges(t *testing.T) {
	g, err := NewGraph(4, []Edge{{0, 1, 2}, {1, 0, 3}, {1, 2, 1}, {2, 2, 9}, {0, 1, 1}, {3, 2, 4}}, []int32{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if g.NumVertices() != 4 || g.NumEdges() != 3 {
		t.Fatalf("n=%d m=%d, want 4 and 3", g.NumVertices(), g.NumEdges())
	}
	want := []map[int32]int32{{1: 6}, {0: 6, 2: 1}, {1: 1, 3: 4}, {2: 4}}
	for v, w := range want {
		got := csrNeighbours(g, v)
		if len(got) != len(w) {
			t.Fatalf("vertex %d: neighbours %v, want %v", v, got, w)
		}
		for u, x := range w {
			if got[u] != x {
				t.Fatalf("vertex %d: neighbours %v, want %v", v, got, w)
			}
		}
	}
	if g.TotalVertexWeight() != 10 {
		t.Fatalf("total vertex weight %d", g.TotalVertexWeight())
	}
	// First-appearance order is kept.
	if !slices.Equal(g.Adjncy[g.Xadj[1]:g.Xadj[2]], []int32{0, 2}) {
		t.Fatalf("vertex 1's list %v, want [0 2]", g.Adjncy[g.Xadj[1]:g.Xadj[2]])
	}
}

func TestNewGraphEmptyAndIsolated(t *testing.T) {
	g, err := NewGraph(0, nil, nil)
	if err != nil || g.NumVertices() != 0 || g.Validate() != nil {
		t.Fatalf("empty graph: %v %v", g, err)
	}
	g, err = NewGraph(3, nil, nil)
	if err != nil || g.NumVertices() != 3 || g.NumEdges() != 0 || g.Validate() != nil {
		t.Fatalf("edgeless graph: %+v %v", g, err)
	}
	if (&Graph{}).NumVertices() != 0 || (&Graph{}).Validate() != nil {
		t.Fatal("zero Graph should be the valid empty graph")
	}
}

func TestNewGraphErrors(t *testing.T) {
	cases := []struct {
		n     int
		edges []Edge
		vwgt  []int32
		want  string
	}{
		{-1, nil, nil, "out of range"},
		{2, []Edge{{0, 2, 1}}, nil, "edge 0: vertices (0, 2) out of range"},
		{2, []Edge{{-1, 0, 1}}, nil, "out of range"},
		{2, []Edge{{0, 1, -1}}, nil, "negative weight"},
		{2, nil, []int32{1}, "1 vertex weights for 2 vertices"},
		{2, nil, []int32{1, -1}, "vertex 1: negative weight"},
		{2, nil, []int32{math.MaxInt32, 1}, "total vertex weight"},
		{2, []Edge{{0, 1, math.MaxInt32}, {1, 0, 1}}, nil, "merged weight"},
		{3, []Edge{{0, 1, math.MaxInt32 / 2}, {1, 2, math.MaxInt32 / 2}}, nil, "total edge weight"},
	}
	for _, c := range cases {
		_, err := NewGraph(c.n, c.edges, c.vwgt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewGraph(%d, %v, %v): error %v, want one containing %q", c.n, c.edges, c.vwgt, err, c.want)
		}
	}
}

func TestValidateErrors(t *testing.T) {
	ok := func() *Graph {
		return &Graph{Xadj: []int32{0, 1, 3, 4}, Adjncy: []int32{1, 0, 2, 1}, Adjwgt: []int32{5, 5, 2, 2}, Vwgt: []int32{1, 1, 1}}
	}
	if err := ok().Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		mod  func(g *Graph)
		want string
	}{
		{func(g *Graph) { g.Xadj[0] = 1 }, "Xadj[0]"},
		{func(g *Graph) { g.Xadj[1] = 4 }, "decreases"},
		{func(g *Graph) { g.Xadj[3] = 3 }, "Adjncy has 4"},
		{func(g *Graph) { g.Adjwgt = g.Adjwgt[:3] }, "Adjwgt has 3"},
		{func(g *Graph) { g.Vwgt = g.Vwgt[:2] }, "Vwgt has 2"},
		{func(g *Graph) { g.Adjncy[0] = 3 }, "vertex 0: neighbour 3 out of range"},
		{func(g *Graph) { g.Adjncy[0] = 0 }, "vertex 0: self-loop"},
		{func(g *Graph) { g.Adjncy[2] = 0 }, "vertex 1 lists neighbour 0 twice"},
		{func(g *Graph) { g.Adjwgt[0] = 4 }, "edge (0, 1) has weight 4 in the first's list and 5 in the second's"},
		{func(g *Graph) { g.Adjwgt[0], g.Adjwgt[1] = -1, -1 }, "negative weight"},
		{func(g *Graph) { g.Vwgt[2] = -3 }, "vertex 2: negative weight"},
		{func(g *Graph) { g.Adjncy[3] = 0; g.Adjncy[0] = 2; g.Adjwgt[3] = 5; g.Adjwgt[0] = 2 }, "which does not list it"},
	}
	for i, c := range cases {
		g := ok()
		c.mod(g)
		err := g.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: Validate: %v, want an error containing %q", i, err, c.want)
		}
	}
	// Asymmetric lists of equal length: 0-1, 1-2 listed only one way each.
	g := &Graph{Xadj: []int32{0, 1, 2, 2}, Adjncy: []int32{1, 2}}
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "does not list it") {
		t.Fatalf("asymmetric graph: %v", err)
	}
}

func TestCutAndWeights(t *testing.T) {
	// Path 0-1-2-3 with weights 1, 2, 3; vertex weights 1..4.
	g, err := NewGraph(4, []Edge{{0, 1, 1}, {1, 2, 2}, {2, 3, 3}}, []int32{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	part := []int32{0, 0, 1, 1}
	if c := EdgeCut(g, part); c != 2 {
		t.Fatalf("cut %d, want 2", c)
	}
	if w := PartWeights(g, part, 2); !slices.Equal(w, []int64{3, 7}) {
		t.Fatalf("part weights %v", w)
	}
	if x := Imbalance(g, part, 2); math.Abs(x-1.4) > 1e-12 {
		t.Fatalf("imbalance %v, want 1.4", x)
	}
	if x := Imbalance(g, []int32{0, 1, 0, 1}, 3); math.Abs(x-1.8) > 1e-12 {
		t.Fatalf("imbalance with an empty part %v, want 1.8", x)
	}
	zero := &Graph{Xadj: []int32{0, 0}, Vwgt: []int32{0}}
	if x := Imbalance(zero, []int32{0}, 2); x != 1 {
		t.Fatalf("zero-weight imbalance %v, want 1", x)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("EdgeCut with a short part slice should panic")
		}
	}()
	EdgeCut(g, part[:2])
}

// randomCSR returns a random valid graph with n vertices and about m edges,
// with random weights when weighted.
func randomCSR(r *rand.Rand, n, m int, weighted bool) *Graph {
	edges := make([]Edge, 0, m)
	for range m {
		u, v := r.IntN(n), r.IntN(n)
		w := int32(1)
		if weighted {
			w = int32(r.IntN(5))
		}
		edges = append(edges, Edge{int32(u), int32(v), w})
	}
	var vwgt []int32
	if weighted {
		vwgt = make([]int32, n)
		for i := range vwgt {
			vwgt[i] = int32(r.IntN(4))
		}
	}
	g, err := NewGraph(n, edges, vwgt)
	if err != nil {
		panic(err)
	}
	return g
}

func TestRandomGraphsValidate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 50 {
		g := randomCSR(r, 1+r.IntN(40), r.IntN(120), i%2 == 0)
		if err := g.Validate(); err != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
	}
}
