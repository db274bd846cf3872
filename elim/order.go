package elim

import (
	"context"
	"math"
	"slices"
)

// heuristic is a greedy elimination order's choice of the next variable.
type heuristic int

const (
	// minFill eliminates the variable whose neighbours need the fewest
	// new edges, ties broken by the smaller table (log domain sizes).
	minFill heuristic = iota
	// minWeight eliminates the variable whose table (itself and its
	// neighbours) is the smallest, ties broken by the fill.
	minWeight
)

func (h heuristic) String() string {
	if h == minFill {
		return "min-fill"
	}
	return "min-weight"
}

// ordering is an elimination order and what it costs.
type ordering struct {
	order []int32
	// heur made it.
	heur heuristic
	// entries is the number of entries of all exact messages (the
	// variable's neighbours when it is eliminated); maxLog2 the log2 of
	// the largest one; width the induced width (most neighbours).
	entries float64
	maxLog2 float64
	width   int
	// complete: the order covers every variable; otherwise it stopped
	// when entries passed the abort bound (the partial figures are lower
	// bounds).
	complete bool
}

// interaction is the interaction graph of scopes over n variables:
// sorted, deduplicated adjacency lists.
func interaction(n int, scopes [][]int32) [][]int32 {
	adj := make([][]int32, n)
	for _, s := range scopes {
		for _, a := range s {
			for _, b := range s {
				if a != b {
					adj[a] = append(adj[a], b)
				}
			}
		}
	}
	for v := range adj {
		slices.Sort(adj[v])
		adj[v] = slices.Compact(adj[v])
	}
	return adj
}

// orderer runs one greedy elimination on a copy of the graph.
type orderer struct {
	adj   [][]int32
	logc  []float64
	heur  heuristic
	gone  []bool
	stamp []uint32
	gen   uint32
	// the heap of remaining variables by (k1, k2, variable)
	heap []int32
	pos  []int32 // index in heap, -1 when out
	k1   []float64
	k2   []float64
}

// greedyOrder returns the greedy order of heuristic h on the graph adj
// (not modified) of variables with cardinalities cards. It stops, with
// complete false, as soon as the messages so far have more than abort
// entries, or one has more than 2^maxLog2, or ctx is cancelled.
func greedyOrder(ctx context.Context, adj0 [][]int32, cards []int, h heuristic, abort, maxLog2 float64) ordering {
	n := len(adj0)
	o := &orderer{adj: make([][]int32, n), logc: make([]float64, n), heur: h, gone: make([]bool, n),
		stamp: make([]uint32, n), pos: make([]int32, n), k1: make([]float64, n), k2: make([]float64, n)}
	for v := range adj0 {
		o.adj[v] = append(make([]int32, 0, len(adj0[v])+4), adj0[v]...)
		o.logc[v] = math.Log2(float64(cards[v]))
	}
	o.heap = make([]int32, n)
	for v := range n {
		o.heap[v], o.pos[v] = int32(v), int32(v)
		o.score(int32(v))
	}
	for i := n/2 - 1; i >= 0; i-- {
		o.down(i)
	}
	out := ordering{heur: h, order: make([]int32, 0, n)}
	for len(o.heap) > 0 {
		if len(out.order)%1024 == 1023 && ctx.Err() != nil {
			return out
		}
		v := o.pop()
		lg := 0.0
		for _, u := range o.adj[v] {
			lg += o.logc[u]
		}
		out.entries += math.Exp2(lg)
		out.maxLog2 = max(out.maxLog2, lg)
		out.width = max(out.width, len(o.adj[v]))
		out.order = append(out.order, v)
		if out.entries > abort || lg > maxLog2 {
			return out
		}
		o.eliminate(v)
	}
	out.complete = true
	return out
}

// mark stamps v's neighbours with a new generation and returns it.
func (o *orderer) mark(v int32) uint32 {
	o.gen++
	if o.gen == 0 {
		clear(o.stamp)
		o.gen = 1
	}
	for _, u := range o.adj[v] {
		o.stamp[u] = o.gen
	}
	return o.gen
}

// fill is the number of edges missing between v's neighbours.
func (o *orderer) fill(v int32) float64 {
	d := len(o.adj[v])
	g := o.mark(v)
	edges := 0
	for _, a := range o.adj[v] {
		for _, b := range o.adj[a] {
			if o.stamp[b] == g {
				edges++
			}
		}
	}
	return float64(d*(d-1)/2 - edges/2)
}

// score sets v's keys.
func (o *orderer) score(v int32) {
	w := 0.0
	for _, u := range o.adj[v] {
		w += o.logc[u]
	}
	if o.heur == minFill {
		o.k1[v], o.k2[v] = o.fill(v), w
	} else {
		o.k1[v], o.k2[v] = w+o.logc[v], o.fill(v)
	}
}

// eliminate removes v and joins its neighbours into a clique, then
// rescores the variables whose keys changed.
func (o *orderer) eliminate(v int32) {
	o.gone[v] = true
	nb := o.adj[v]
	for _, a := range nb {
		o.adj[a] = slices.DeleteFunc(o.adj[a], func(u int32) bool { return u == v })
	}
	for _, a := range nb {
		g := o.mark(a)
		for _, b := range nb {
			if b != a && o.stamp[b] != g {
				o.adj[a] = append(o.adj[a], b)
			}
		}
	}
	// Rescore the neighbours and (for the fill) their neighbours.
	o.gen++
	if o.gen == 0 {
		clear(o.stamp)
		o.gen = 1
	}
	g := o.gen
	var touched []int32
	for _, a := range nb {
		if o.stamp[a] != g {
			o.stamp[a] = g
			touched = append(touched, a)
		}
		for _, b := range o.adj[a] {
			if o.stamp[b] != g {
				o.stamp[b] = g
				touched = append(touched, b)
			}
		}
	}
	for _, u := range touched {
		o.score(u)
		o.fix(int(o.pos[u]))
	}
}

func (o *orderer) less(i, j int) bool {
	a, b := o.heap[i], o.heap[j]
	if o.k1[a] != o.k1[b] {
		return o.k1[a] < o.k1[b]
	}
	if o.k2[a] != o.k2[b] {
		return o.k2[a] < o.k2[b]
	}
	return a < b
}

func (o *orderer) swap(i, j int) {
	o.heap[i], o.heap[j] = o.heap[j], o.heap[i]
	o.pos[o.heap[i]], o.pos[o.heap[j]] = int32(i), int32(j)
}

func (o *orderer) down(i int) {
	n := len(o.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && o.less(r, l) {
			c = r
		}
		if !o.less(c, i) {
			return
		}
		o.swap(i, c)
		i = c
	}
}

func (o *orderer) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !o.less(i, p) {
			return
		}
		o.swap(i, p)
		i = p
	}
}

func (o *orderer) fix(i int) {
	v := o.heap[i]
	o.up(i)
	o.down(int(o.pos[v]))
}

func (o *orderer) pop() int32 {
	v := o.heap[0]
	last := len(o.heap) - 1
	o.swap(0, last)
	o.heap = o.heap[:last]
	o.pos[v] = -1
	if last > 0 {
		o.down(0)
	}
	return v
}
