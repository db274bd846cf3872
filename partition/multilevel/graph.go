package multilevel

import (
	"fmt"
	"math"
)

// Graph is an undirected graph with vertex and edge weights in compressed
// sparse row (CSR) form, the layout of METIS (Karypis & Kumar, "A fast and
// high quality multilevel scheme for partitioning irregular graphs", SIAM J.
// Sci. Comput. 20(1), 1998): the neighbours of vertex v are
// Adjncy[Xadj[v]:Xadj[v+1]] and Adjwgt holds the weights of those edges at
// the same indices. Every edge {u, v} appears twice, in u's list and in v's,
// with the same weight. Vertices are numbered from 0.
//
// A valid graph (see Validate) has no self-loops, no neighbour listed twice
// in one list, non-negative weights, and total vertex weight and total
// Adjwgt (both directions counted) of at most 2^31-1, so that the weights of
// contracted graphs fit in int32.
type Graph struct {
	Xadj   []int32 // len N+1; Xadj[0] == 0
	Adjncy []int32 // neighbours, grouped by vertex
	Adjwgt []int32 // edge weights, parallel to Adjncy; nil means all 1
	Vwgt   []int32 // vertex weights, len N; nil means all 1
}

// Edge is an undirected edge of weight W between vertices U and V, as given
// to NewGraph.
type Edge struct {
	U, V, W int32
}

// NumVertices returns the number of vertices.
func (g *Graph) NumVertices() int {
	if len(g.Xadj) == 0 {
		return 0
	}
	return len(g.Xadj) - 1
}

// NumEdges returns the number of undirected edges.
func (g *Graph) NumEdges() int { return len(g.Adjncy) / 2 }

// vertexWeight returns v's weight (1 when Vwgt is nil).
func (g *Graph) vertexWeight(v int) int64 {
	if g.Vwgt == nil {
		return 1
	}
	return int64(g.Vwgt[v])
}

// TotalVertexWeight returns the sum of the vertex weights.
func (g *Graph) TotalVertexWeight() int64 {
	if g.Vwgt == nil {
		return int64(g.NumVertices())
	}
	var t int64
	for _, w := range g.Vwgt {
		t += int64(w)
	}
	return t
}

// NewGraph builds the graph on n vertices with the given undirected edges.
// Parallel edges (in either orientation) are merged into one whose weight is
// the sum of theirs; self-loops are dropped, as they never cross a cut.
// vwgt gives the vertex weights (it is copied; nil means all 1). The
// adjacency lists keep the order in which the edges first appear.
func NewGraph(n int, edges []Edge, vwgt []int32) (*Graph, error) {
	if n < 0 || n >= math.MaxInt32 {
		return nil, fmt.Errorf("multilevel: graph: %d vertices out of range [0,%d)", n, math.MaxInt32)
	}
	if vwgt != nil && len(vwgt) != n {
		return nil, fmt.Errorf("multilevel: graph: %d vertex weights for %d vertices", len(vwgt), n)
	}
	deg := make([]int32, n+1)
	var half int64
	for i, e := range edges {
		if e.U < 0 || int(e.U) >= n || e.V < 0 || int(e.V) >= n {
			return nil, fmt.Errorf("multilevel: graph: edge %d: vertices (%d, %d) out of range [0,%d)", i, e.U, e.V, n)
		}
		if e.W < 0 {
			return nil, fmt.Errorf("multilevel: graph: edge %d (%d, %d): negative weight %d", i, e.U, e.V, e.W)
		}
		if e.U == e.V {
			continue
		}
		deg[e.U+1]++
		deg[e.V+1]++
		half += 2
		if half > math.MaxInt32 {
			return nil, fmt.Errorf("multilevel: graph: more than %d adjacency entries", math.MaxInt32)
		}
	}
	xadj := deg // prefix sums in place: xadj[v] = start of v's list
	for v := 0; v < n; v++ {
		xadj[v+1] += xadj[v]
	}
	adjncy := make([]int32, half)
	wgt := make([]int64, half) // merged weights may exceed int32 before the check
	fill := make([]int32, n)
	copy(fill, xadj[:n])
	for _, e := range edges {
		if e.U == e.V {
			continue
		}
		p := fill[e.U]
		adjncy[p], wgt[p] = e.V, int64(e.W)
		fill[e.U]++
		p = fill[e.V]
		adjncy[p], wgt[p] = e.U, int64(e.W)
		fill[e.V]++
	}
	// Merge parallel edges row by row: mark[u] is the index, in the row being
	// compacted, of neighbour u's entry, or -1.
	mark := fill
	for i := range mark {
		mark[i] = -1
	}
	adjwgt := make([]int32, half)
	out := int32(0)
	var total int64
	start := int32(0)
	for v := 0; v < n; v++ {
		end := xadj[v+1]
		rowStart := out
		for p := start; p < end; p++ {
			u := adjncy[p]
			if q := mark[u]; q >= 0 {
				wgt[q] += wgt[p]
				continue
			}
			mark[u] = out
			adjncy[out], wgt[out] = u, wgt[p]
			out++
		}
		for p := rowStart; p < out; p++ {
			mark[adjncy[p]] = -1
			if wgt[p] > math.MaxInt32 {
				return nil, fmt.Errorf("multilevel: graph: edge (%d, %d): merged weight %d exceeds %d", v, adjncy[p], wgt[p], math.MaxInt32)
			}
			adjwgt[p] = int32(wgt[p])
			total += wgt[p]
		}
		start = end
		xadj[v+1] = out
	}
	if total > math.MaxInt32 {
		return nil, fmt.Errorf("multilevel: graph: total edge weight %d (both directions) exceeds %d", total, math.MaxInt32)
	}
	g := &Graph{Xadj: xadj, Adjncy: adjncy[:out:out], Adjwgt: adjwgt[:out:out]}
	if vwgt != nil {
		g.Vwgt = append([]int32(nil), vwgt...)
	}
	if err := g.checkVertexWeights(); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *Graph) checkVertexWeights() error {
	var t int64
	for v, w := range g.Vwgt {
		if w < 0 {
			return fmt.Errorf("multilevel: graph: vertex %d: negative weight %d", v, w)
		}
		t += int64(w)
	}
	if t > math.MaxInt32 {
		return fmt.Errorf("multilevel: graph: total vertex weight %d exceeds %d", t, math.MaxInt32)
	}
	return nil
}

// Validate checks that g is a well-formed undirected graph: consistent CSR
// offsets and array lengths, neighbours in range, no self-loops, no
// neighbour listed twice by one vertex, every edge listed by both ends with
// the same weight, non-negative weights, and weight totals that fit in
// int32 (see Graph). It runs in time and extra memory linear in the size of
// the graph.
func (g *Graph) Validate() error {
	if len(g.Xadj) == 0 {
		if len(g.Adjncy) != 0 || len(g.Adjwgt) != 0 || len(g.Vwgt) != 0 {
			return fmt.Errorf("multilevel: graph: empty Xadj with non-empty adjacency or weights")
		}
		return nil
	}
	n := len(g.Xadj) - 1
	if n >= math.MaxInt32 {
		return fmt.Errorf("multilevel: graph: too many vertices (%d)", n)
	}
	if g.Xadj[0] != 0 {
		return fmt.Errorf("multilevel: graph: Xadj[0] is %d, want 0", g.Xadj[0])
	}
	for v := 0; v < n; v++ {
		if g.Xadj[v+1] < g.Xadj[v] {
			return fmt.Errorf("multilevel: graph: Xadj decreases at vertex %d", v)
		}
	}
	if int(g.Xadj[n]) != len(g.Adjncy) {
		return fmt.Errorf("multilevel: graph: Xadj[%d] is %d, Adjncy has %d entries", n, g.Xadj[n], len(g.Adjncy))
	}
	if g.Adjwgt != nil && len(g.Adjwgt) != len(g.Adjncy) {
		return fmt.Errorf("multilevel: graph: Adjwgt has %d entries, Adjncy %d", len(g.Adjwgt), len(g.Adjncy))
	}
	if g.Vwgt != nil && len(g.Vwgt) != n {
		return fmt.Errorf("multilevel: graph: Vwgt has %d entries for %d vertices", len(g.Vwgt), n)
	}
	if err := g.checkVertexWeights(); err != nil {
		return err
	}
	var total int64
	for p, w := range g.Adjwgt {
		if w < 0 {
			v := g.ownerOf(p)
			return vertexErrorf(v, 2, "edge (%d, %d): negative weight %d", v, g.Adjncy[p], w)
		}
		total += int64(w)
	}
	if g.Adjwgt == nil {
		total = int64(len(g.Adjncy))
	}
	if total > math.MaxInt32 {
		return fmt.Errorf("multilevel: graph: total edge weight %d (both directions) exceeds %d", total, math.MaxInt32)
	}
	return g.checkSymmetric()
}

// ownerOf returns the vertex whose list holds adjacency entry p (for error
// messages only).
func (g *Graph) ownerOf(p int) int {
	lo, hi := 0, len(g.Xadj)-1
	for hi-lo > 1 { // Xadj[lo] <= p < Xadj[hi]
		mid := (lo + hi) / 2
		if int(g.Xadj[mid]) <= p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// checkSymmetric checks neighbours, self-loops, duplicates and symmetry. It
// builds the transpose (the list of u is every v that lists u, in
// increasing v, with the weight v gives) and compares each vertex's list to
// its transposed list through a marker array.
func (g *Graph) checkSymmetric() error {
	n := len(g.Xadj) - 1
	cnt := make([]int32, n+1)
	for v := 0; v < n; v++ {
		for p := g.Xadj[v]; p < g.Xadj[v+1]; p++ {
			u := g.Adjncy[p]
			if u < 0 || int(u) >= n {
				return vertexErrorf(v, 1, "vertex %d: neighbour %d out of range [0,%d)", v, u, n)
			}
			if int(u) == v {
				return vertexErrorf(v, 1, "vertex %d: self-loop", v)
			}
			cnt[u+1]++
		}
	}
	for v := 0; v < n; v++ {
		cnt[v+1] += cnt[v]
	}
	tadj := make([]int32, len(g.Adjncy))
	twgt := make([]int32, len(g.Adjncy))
	fill := make([]int32, n)
	copy(fill, cnt[:n])
	for v := 0; v < n; v++ {
		for p := g.Xadj[v]; p < g.Xadj[v+1]; p++ {
			u := g.Adjncy[p]
			tadj[fill[u]] = int32(v)
			twgt[fill[u]] = g.weightAt(int(p))
			fill[u]++
		}
	}
	mark := fill // mark[u] = 1 + index of u in the current list, or 0
	for i := range mark {
		mark[i] = 0
	}
	for v := 0; v < n; v++ {
		lo, hi := g.Xadj[v], g.Xadj[v+1]
		for p := lo; p < hi; p++ {
			u := g.Adjncy[p]
			if mark[u] != 0 {
				return vertexErrorf(v, 2, "vertex %d lists neighbour %d twice", v, u)
			}
			mark[u] = 1
		}
		for p := lo; p < hi; p++ {
			mark[g.Adjncy[p]] = 0
		}
	}
	for v := 0; v < n; v++ {
		lo, hi := g.Xadj[v], g.Xadj[v+1]
		for p := lo; p < hi; p++ {
			mark[g.Adjncy[p]] = p - lo + 1
		}
		if cnt[v+1]-cnt[v] != hi-lo {
			// Some u lists v without v listing u, or the reverse.
			for q := cnt[v]; q < cnt[v+1]; q++ {
				if mark[tadj[q]] == 0 {
					return vertexErrorf(int(tadj[q]), 2, "vertex %d lists neighbour %d, which does not list it", tadj[q], v)
				}
			}
			for p := lo; p < hi; p++ {
				found := false
				for q := cnt[v]; q < cnt[v+1] && !found; q++ {
					found = tadj[q] == g.Adjncy[p]
				}
				if !found {
					return vertexErrorf(v, 2, "vertex %d lists neighbour %d, which does not list it", v, g.Adjncy[p])
				}
			}
		}
		for q := cnt[v]; q < cnt[v+1]; q++ {
			u := tadj[q]
			if mark[u] == 0 {
				return vertexErrorf(int(u), 2, "vertex %d lists neighbour %d, which does not list it", u, v)
			}
			if w := g.weightAt(int(lo + mark[u] - 1)); w != twgt[q] {
				return vertexErrorf(v, 2, "edge (%d, %d) has weight %d in the first's list and %d in the second's", v, u, w, twgt[q])
			}
		}
		for p := lo; p < hi; p++ {
			mark[g.Adjncy[p]] = 0
		}
	}
	return nil
}

// graphError is a problem Validate found at a vertex. The tests' ReadMETIS
// reports it at the vertex's line, with 1-based vertex numbers.
type graphError struct {
	v   int                   // vertex at fault
	msg func(base int) string // the message, vertices numbered from base
}

func (e *graphError) Error() string { return "multilevel: graph: " + e.msg(0) }

// vertexErrorf returns a graphError at vertex v; the first nv args are
// vertex numbers (shifted by the base when printed).
func vertexErrorf(v int, nv int, format string, args ...any) error {
	return &graphError{v: v, msg: func(base int) string {
		a := append([]any(nil), args...)
		for i := 0; i < nv; i++ {
			switch x := a[i].(type) {
			case int:
				a[i] = x + base
			case int32:
				a[i] = int(x) + base
			}
		}
		return fmt.Sprintf(format, a...)
	}}
}

func (g *Graph) weightAt(p int) int32 {
	if g.Adjwgt == nil {
		return 1
	}
	return g.Adjwgt[p]
}

// EdgeCut returns the total weight of the edges whose ends lie in different
// parts. It panics if len(part) is not the number of vertices.
func EdgeCut(g *Graph, part []int32) int64 {
	n := g.NumVertices()
	if len(part) != n {
		panic(fmt.Sprintf("multilevel: EdgeCut: %d part entries for %d vertices", len(part), n))
	}
	var cut int64
	for v := 0; v < n; v++ {
		pv := part[v]
		for p := g.Xadj[v]; p < g.Xadj[v+1]; p++ {
			if part[g.Adjncy[p]] != pv {
				cut += int64(g.weightAt(int(p)))
			}
		}
	}
	return cut / 2
}

// PartWeights returns the total vertex weight of each of the k parts. It
// panics if len(part) is not the number of vertices or a part is outside
// [0,k).
func PartWeights(g *Graph, part []int32, k int) []int64 {
	n := g.NumVertices()
	if len(part) != n {
		panic(fmt.Sprintf("multilevel: PartWeights: %d part entries for %d vertices", len(part), n))
	}
	w := make([]int64, k)
	for v, p := range part {
		w[p] += g.vertexWeight(v)
	}
	return w
}

// Imbalance returns the weight of the heaviest of the k parts divided by the
// average part weight (total vertex weight / k): 1 is perfect balance, and
// METIS's ufactor u corresponds to 1 + u/1000. It returns 1 when the total
// weight is 0. It panics as PartWeights does.
func Imbalance(g *Graph, part []int32, k int) float64 {
	w := PartWeights(g, part, k)
	var total, heaviest int64
	for _, x := range w {
		total += x
		heaviest = max(heaviest, x)
	}
	if total == 0 {
		return 1
	}
	return float64(heaviest) * float64(k) / float64(total)
}
