package multilevel

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// DefaultImbalance is the default balance tolerance of Partition: the
// heaviest part may weigh 3% more than the average, as with METIS's default
// ufactor of 30.
const DefaultImbalance = 1.03

// defaultTries is the default number of initial partitionings of the
// coarsest graph, of which Partition keeps the one with the smallest cut.
const defaultTries = 4

// Options tunes Partition. The zero value gives the defaults.
type Options struct {
	// Seed seeds the random visit orders and initial seeds; a given seed
	// gives the same partition on every run and platform.
	Seed uint64
	// Imbalance bounds the heaviest part's weight relative to the average
	// (total vertex weight / k); 0 means DefaultImbalance. It must be >= 1.
	Imbalance float64
	// Tries is the number of initial partitionings (recursive bisections)
	// of the coarsest graph, of which the one with the smallest cut is
	// uncoarsened; 0 means 4. More tries cost little (the coarsest graph is
	// small) and lower the cut by a few percent on average.
	Tries int
}

// Partition partitions g into k parts of nearly equal vertex weight while
// keeping the edge cut (the weight of the edges between parts) small, and
// returns each vertex's part in [0,k).
//
// It is the multilevel k-way scheme of Karypis & Kumar ("Multilevel k-way
// partitioning scheme for irregular graphs", J. Parallel Distrib. Comput.
// 48(1), 1998), the scheme of METIS's gpmetis:
//
//  1. Coarsening: heavy-edge matching, visiting the vertices in a seeded
//     random order sorted by degree, contracts matched pairs until the
//     graph has at most max(n/(20 log2 k), 30k) vertices (or stops
//     shrinking); when too few pairs form (stars, hubs), unmatched
//     vertices that share a neighbour are matched to each other.
//  2. Initial partitioning: Tries recursive bisections of the coarsest
//     graph, keeping the one of smallest cut. Each bisection is itself
//     multilevel: greedy graph growing from 3 random seeds at its coarsest
//     level, each refined by Fiduccia-Mattheyses (Fiduccia & Mattheyses,
//     "A linear-time heuristic for improving network partitions", DAC
//     1982), then FM refinement at every level while it is uncoarsened.
//  3. Uncoarsening: the partition is projected back level by level and
//     improved at each by greedy k-way boundary refinement (METIS 5's):
//     boundary vertices, most promising first, move to the neighbouring
//     part they are most connected to when that lowers the cut, or keeps
//     it and improves the balance (or, for every other vertex, anyway:
//     such plateau moves let boundaries slide and matter on grids), within
//     the weight bounds; a balancing pass first when the bounds are not
//     met.
//
// Small graphs (up to a few tens of thousands of vertices and edges) are
// partitioned up to 8 times, keeping the best result, as their runs are
// cheap. Part weights are kept at most Imbalance times the average, as far
// as the vertex weights allow: the bound is never below ceil(average) (so
// unit weights can always meet it); when single vertices are too heavy
// for it, parts are evened out by moving vertices to the lightest part
// until none exceeds the average by more than the heaviest vertex. With
// k >= n every vertex gets a part of its own. Runtime and memory are
// linear in the size of the graph for fixed k: flat int32 arrays,
// allocated per level, never per vertex.
//
// It fails when g is not a valid graph (see Graph.Validate), k < 1, or the
// options are out of range.
func Partition(g *Graph, k int, opts Options) ([]int32, error) {
	if g == nil {
		return nil, errors.New("multilevel: Partition: nil graph")
	}
	if k < 1 || k > math.MaxInt32 {
		return nil, fmt.Errorf("multilevel: Partition: %d parts, want at least 1", k)
	}
	tol := opts.Imbalance
	if tol == 0 {
		tol = DefaultImbalance
	}
	if !(tol >= 1) || math.IsInf(tol, 1) {
		return nil, fmt.Errorf("multilevel: Partition: imbalance %v, want a finite number >= 1", opts.Imbalance)
	}
	tries := opts.Tries
	if tries == 0 {
		tries = defaultTries
	}
	if tries < 0 {
		return nil, fmt.Errorf("multilevel: Partition: %d tries, want at least 1", opts.Tries)
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("multilevel: Partition: %w", err)
	}
	n := g.NumVertices()
	part := make([]int32, n)
	if k == 1 || n == 0 {
		return part, nil
	}
	if k >= n {
		for v := range part {
			part[v] = int32(v)
		}
		return part, nil
	}
	s := &mlSolver{rng: rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15)), tol: tol, tries: tries}
	top := newMLGraph(g)
	r := newKwayRefiner(n, k, top.tvwgt, tol, s.rng)
	runs := max(1, min(maxRuns, restartBudget/(n+len(g.Adjncy)+1024*k)))
	var bestCut, bestOver int64
	for run := range runs {
		s.partitionOnce(top, k, r)
		over := max(0, slices.Max(r.pwgts)-r.maxw)
		cut := r.cut()
		if run == 0 || over < bestOver || (over == bestOver && cut < bestCut) {
			bestCut, bestOver = cut, over
			copy(part, r.where)
		}
	}
	return part, nil
}

// Small graphs are partitioned several times, and the best result kept:
// up to maxRuns runs while runs * (vertices + adjacency entries + 1024 k),
// an estimate of the work, stays within restartBudget (so one run for
// large graphs, such as a 1000x1000 grid).
const (
	maxRuns       = 8
	restartBudget = 1 << 18
)

// partitionOnce runs the three phases on top, leaving the partition in r.
func (s *mlSolver) partitionOnce(top *mlGraph, k int, r *kwayRefiner) {
	n := top.n()
	coarsenTo := max(n/(20*log2ceil(k)), 30*k)
	levels := s.coarsen(top, coarsenTo)
	coarsest := levels[len(levels)-1]
	cpart := s.initialPartition(coarsest, k, r.maxw)
	r.setLevel(coarsest, cpart)
	r.refineLevel()
	for l := len(levels) - 2; l >= 0; l-- {
		r.project(levels[l])
		r.refineLevel()
	}
	r.enforceBalance()
}

// shuffleBlock is the size of the blocks of consecutive vertices whose
// order the matching randomises.
const shuffleBlock = 256

// log2ceil returns ceil(log2(k)) for k >= 2, and 1 for k < 2.
func log2ceil(k int) int {
	if k < 2 {
		return 1
	}
	return bits.Len(uint(k - 1))
}

// mlSolver holds what the phases of one Partition call share.
type mlSolver struct {
	rng   *rand.Rand
	tol   float64
	tries int
}

// mlGraph is a graph of the multilevel hierarchy: the input graph with its
// weights made explicit, or a contraction of the previous level.
type mlGraph struct {
	xadj, adjncy, adjwgt, vwgt []int32
	tvwgt                      int64
	// cmap maps each vertex to its vertex in the next coarser graph (set
	// when this graph is coarsened).
	cmap []int32
}

func (g *mlGraph) n() int { return len(g.xadj) - 1 }

// degrees returns the internal and external degrees of vertex v under the
// partition where: the weights of its edges to vertices of its own part and
// to the others (METIS's id and ed).
func degrees[P uint8 | int32](g *mlGraph, where []P, v int) (in, ex int32) {
	me := where[v]
	for p := g.xadj[v]; p < g.xadj[v+1]; p++ {
		if where[g.adjncy[p]] == me {
			in += g.adjwgt[p]
		} else {
			ex += g.adjwgt[p]
		}
	}
	return in, ex
}

// boundary is what both refiners (bisection's FM, the k-way greedy
// refinement) keep per vertex under a partition: its internal and external
// degrees id and ed, and the boundary, the vertices with ed > 0, listed in
// bndind with each one's index in bndptr (-1 off the boundary): METIS's
// id, ed, bndind and bndptr (Karypis and Kumar, "A fast and high quality
// multilevel scheme for partitioning irregular graphs", SIAM J. Sci.
// Comput. 20(1), 1998, section 5).
type boundary struct {
	id, ed []int32
	bndptr []int32
	bndind []int32
}

// newBoundary holds n vertices.
func newBoundary(n int) boundary {
	return boundary{id: make([]int32, n), ed: make([]int32, n), bndptr: make([]int32, n), bndind: make([]int32, 0, n)}
}

// computeBoundary sets the degrees and the boundary of g's vertices under where,
// adds each vertex's weight to its part's entry of pwgts, and returns the
// sum of the external degrees (twice the cut).
func computeBoundary[P uint8 | int32](b *boundary, g *mlGraph, where []P, pwgts []int64) (ext int64) {
	n := g.n()
	b.id, b.ed, b.bndptr = b.id[:n], b.ed[:n], b.bndptr[:n]
	b.bndind = b.bndind[:0]
	for v := range n {
		pwgts[where[v]] += int64(g.vwgt[v])
		in, ex := degrees(g, where, v)
		b.id[v], b.ed[v] = in, ex
		b.bndptr[v] = -1
		if ex > 0 {
			b.bndInsert(int32(v))
		}
		ext += int64(ex)
	}
	return ext
}

// bndInsert puts v on the boundary.
func (b *boundary) bndInsert(v int32) {
	b.bndptr[v] = int32(len(b.bndind))
	b.bndind = append(b.bndind, v)
}

// bndDelete takes v off the boundary.
func (b *boundary) bndDelete(v int32) {
	i := b.bndptr[v]
	last := b.bndind[len(b.bndind)-1]
	b.bndind[i] = last
	b.bndptr[last] = i
	b.bndind = b.bndind[:len(b.bndind)-1]
	b.bndptr[v] = -1
}

// newMLGraph wraps g, filling in unit weights where g has none.
func newMLGraph(g *Graph) *mlGraph {
	n := g.NumVertices()
	m := &mlGraph{xadj: g.Xadj, adjncy: g.Adjncy, adjwgt: g.Adjwgt, vwgt: g.Vwgt}
	if m.adjwgt == nil {
		m.adjwgt = make([]int32, len(g.Adjncy))
		for i := range m.adjwgt {
			m.adjwgt[i] = 1
		}
	}
	if m.vwgt == nil {
		m.vwgt = make([]int32, n)
		for i := range m.vwgt {
			m.vwgt[i] = 1
		}
	}
	for _, w := range m.vwgt {
		m.tvwgt += int64(w)
	}
	return m
}

// Coarsening stops when a contraction keeps more than this fraction of the
// vertices (the graph is no longer shrinking, as for edgeless graphs).
const coarsenMinShrink = 0.9

// twoHopThreshold: when heavy-edge matching leaves more than this fraction
// of the vertices as coarse vertices, unmatched vertices that share a
// neighbour (the leaves of stars) are matched to each other.
const twoHopThreshold = 0.75

// coarsen returns the hierarchy g = levels[0], levels[1], ..., each the
// contraction of a heavy-edge matching of the previous one, down to at most
// `to` vertices. Coarse vertices weigh at most 1.5 * total / to, as in
// METIS, unless a single vertex already does.
func (s *mlSolver) coarsen(g *mlGraph, to int) []*mlGraph {
	levels := []*mlGraph{g}
	maxvw := int64(1.5 * float64(g.tvwgt) / float64(max(to, 1)))
	n0 := g.n()
	match := make([]int32, n0)
	perm := make([]int32, n0)
	tmp := make([]int32, n0)
	for g.n() > to {
		n := g.n()
		cn := s.matchHeavyEdges(g, maxvw, match[:n], perm[:n], tmp[:n])
		if float64(cn) > coarsenMinShrink*float64(n) {
			break
		}
		c := contract(g, match[:n], cn)
		levels = append(levels, c)
		g = c
	}
	return levels
}

// randomPermByDegree fills perm with the vertices in increasing order of
// degree (METIS's sorted heavy-edge matching visits low-degree vertices
// first, as they have the fewest choices), ties in an order randomised
// within blocks of shuffleBlock consecutive vertices.
func (s *mlSolver) randomPermByDegree(g *mlGraph, perm, tmp []int32) {
	n := g.n()
	for i := range tmp {
		tmp[i] = int32(i)
	}
	// Shuffle within consecutive blocks: a random order that keeps the
	// memory locality of the numbering (a full shuffle makes matching a
	// third slower on large graphs, for no better cuts).
	for lo := 0; lo < n; lo += shuffleBlock {
		hi := min(lo+shuffleBlock, n)
		for i := hi - 1; i > lo; i-- {
			j := lo + s.rng.IntN(i-lo+1)
			tmp[i], tmp[j] = tmp[j], tmp[i]
		}
	}
	// Counting sort by degree, capped: high degrees share the last bucket.
	const maxKey = 64
	var cnt [maxKey + 2]int32
	key := func(v int32) int {
		return min(int(g.xadj[v+1]-g.xadj[v]), maxKey)
	}
	for _, v := range tmp {
		cnt[key(v)+1]++
	}
	for i := 1; i < len(cnt); i++ {
		cnt[i] += cnt[i-1]
	}
	for _, v := range tmp {
		k := key(v)
		perm[cnt[k]] = v
		cnt[k]++
	}
}

// matchHeavyEdges computes a matching of g: match[v] is v's partner, or v
// itself when unmatched. It returns the number of coarse vertices.
func (s *mlSolver) matchHeavyEdges(g *mlGraph, maxvw int64, match, perm, tmp []int32) int {
	n := g.n()
	for i := range match {
		match[i] = -1
	}
	s.randomPermByDegree(g, perm, tmp)
	cn := n
	xadj, adjncy, adjwgt, vwgt := g.xadj, g.adjncy, g.adjwgt, g.vwgt
	for _, v := range perm {
		if match[v] >= 0 {
			continue
		}
		best, bw, bvw := int32(-1), int32(-1), int32(0)
		vw := int64(vwgt[v])
		for p := xadj[v]; p < xadj[v+1]; p++ {
			u := adjncy[p]
			if match[u] >= 0 || vw+int64(vwgt[u]) > maxvw {
				continue
			}
			// Heaviest edge; ties go to the lighter neighbour, keeping
			// coarse vertex weights even.
			if w := adjwgt[p]; w > bw || (w == bw && vwgt[u] < bvw) {
				best, bw, bvw = u, w, vwgt[u]
			}
		}
		if best >= 0 {
			match[v], match[best] = best, v
			cn--
		}
	}
	if float64(cn) > twoHopThreshold*float64(n) {
		// Match unmatched vertices through a common neighbour (the leaves of
		// a star), then pair up vertices without neighbours.
		for p := range n {
			pending := int32(-1)
			for q := xadj[p]; q < xadj[p+1]; q++ {
				u := adjncy[q]
				if match[u] < 0 {
					cn -= pairUp(match, vwgt, maxvw, &pending, u)
				}
			}
		}
		pending := int32(-1)
		for v := range int32(n) {
			if match[v] < 0 && xadj[v+1] == xadj[v] {
				cn -= pairUp(match, vwgt, maxvw, &pending, v)
			}
		}
	}
	for v := range match {
		if match[v] < 0 {
			match[v] = int32(v)
		}
	}
	return cn
}

// pairUp matches u with the vertex pending, when their weights together
// are at most maxvw, and then none is pending; with none pending, u is.
// It returns the pairs it made, 0 or 1.
func pairUp(match, vwgt []int32, maxvw int64, pending *int32, u int32) int {
	switch {
	case *pending < 0:
		*pending = u
	case int64(vwgt[*pending])+int64(vwgt[u]) <= maxvw:
		match[*pending], match[u] = u, *pending
		*pending = -1
		return 1
	}
	return 0
}

// contract builds the coarse graph of a matching with cn pairs and
// singletons: coarse vertices are numbered in the order of their smaller
// fine vertex (keeping the fine graph's locality), their weight is the sum
// of their members', and the edges between two coarse vertices are merged
// into one with the summed weight. It sets g.cmap.
func contract(g *mlGraph, match []int32, cn int) *mlGraph {
	n := g.n()
	if cap(g.cmap) < n {
		g.cmap = make([]int32, n)
	}
	cmap := g.cmap[:n]
	g.cmap = cmap
	c := int32(0)
	for v := range int32(n) {
		if u := match[v]; u >= v {
			cmap[v] = c
			cmap[u] = c
			c++
		}
	}
	cg := &mlGraph{xadj: make([]int32, cn+1), vwgt: make([]int32, cn), tvwgt: g.tvwgt}
	adj := make([]int32, len(g.adjncy))
	wgt := make([]int32, len(g.adjncy))
	htable := make([]int32, cn)
	for i := range htable {
		htable[i] = -1
	}
	e := int32(0)
	c = 0
	xadj, adjncy, adjwgt := g.xadj, g.adjncy, g.adjwgt
	for v := range int32(n) {
		u := match[v]
		if u < v {
			continue
		}
		start := e
		vw := g.vwgt[v]
		for x := v; ; x = u {
			for p := xadj[x]; p < xadj[x+1]; p++ {
				cu := cmap[adjncy[p]]
				if cu == c {
					continue
				}
				if h := htable[cu]; h >= 0 {
					wgt[h] += adjwgt[p]
				} else {
					htable[cu] = e
					adj[e], wgt[e] = cu, adjwgt[p]
					e++
				}
			}
			if x == u {
				break
			}
			vw += g.vwgt[u]
		}
		for p := start; p < e; p++ {
			htable[adj[p]] = -1
		}
		cg.vwgt[c] = vw
		c++
		cg.xadj[c] = e
	}
	cg.adjncy = append([]int32(nil), adj[:e]...)
	cg.adjwgt = append([]int32(nil), wgt[:e]...)
	return cg
}
