package multilevel

import (
	"math"
	"math/rand/v2"
	"slices"
)

// kwayPasses bounds the greedy refinement passes per level (METIS uses 10;
// passes stop as soon as one leaves the cut unchanged, and more of them
// keep improving grids at little cost).
const kwayPasses = 40

// kwayRefiner refines a k-way partition level by level while the hierarchy
// is uncoarsened (the greedy boundary refinement of Karypis & Kumar
// 1998). id[v] is the weight of v's edges inside its part, ed[v] of
// those to other parts; the boundary (ed > 0) is kept in bndind with
// positions bndptr. Its arrays are sized for the finest graph once and
// resliced for each level.
type kwayRefiner struct {
	g          *mlGraph
	where, alt []int32 // current level's parts; buffer for the projection
	pwgts      []int64
	maxw, minw int64
	boundary
	conn    []int64 // per part, zero between uses
	touched []int32 // parts with a non-zero conn entry
	order   []int32
	cands   []kwayCand
	heap    *gainHeap
	status  []uint8 // refine: 0 not queued, 1 queued, 2 extracted
	visited []int32 // refine: vertices with a non-zero status
	rng     *rand.Rand
}

type kwayCand struct {
	v    int32
	gain int64
}

func newKwayRefiner(n, k int, tvw int64, tol float64, rng *rand.Rand) *kwayRefiner {
	avg := float64(tvw) / float64(k)
	r := &kwayRefiner{
		where:    make([]int32, n),
		alt:      make([]int32, n),
		pwgts:    make([]int64, k),
		maxw:     max(int64(tol*avg), int64(math.Ceil(avg))),
		minw:     int64(avg / tol),
		boundary: newBoundary(n),
		conn:     make([]int64, k),
		heap:     newGainHeap(n),
		status:   make([]uint8, n),
		rng:      rng,
	}
	if avg >= 1 {
		r.minw = max(r.minw, 1) // refinement never empties a part
	}
	return r
}

// setLevel starts refinement on g with the given partition.
func (r *kwayRefiner) setLevel(g *mlGraph, part []int32) {
	r.g = g
	r.where = r.where[:g.n()]
	copy(r.where, part)
	r.computeParams()
}

// project moves to the next finer graph, whose vertices take the part of
// their coarse vertex.
func (r *kwayRefiner) project(fine *mlGraph) {
	n := fine.n()
	dst := r.alt[:n]
	for v, c := range fine.cmap[:n] {
		dst[v] = r.where[c]
	}
	r.alt, r.where = r.where[:cap(r.where)], dst
	r.g = fine
	r.computeParams()
}

func (r *kwayRefiner) computeParams() {
	clear(r.pwgts)
	computeBoundary(&r.boundary, r.g, r.where, r.pwgts)
}

func (r *kwayRefiner) bndUpdate(v int32) {
	if r.ed[v] > 0 && r.bndptr[v] < 0 {
		r.bndInsert(v)
	} else if r.ed[v] == 0 && r.bndptr[v] >= 0 {
		r.bndDelete(v)
	}
}

// refineLevel balances the current level if needed and refines it.
func (r *kwayRefiner) refineLevel() {
	r.balance()
	r.refine(kwayPasses)
}

// connectivity fills conn/touched with the weight of v's edges to each
// other part.
func (r *kwayRefiner) connectivity(v int32) {
	g := r.g
	me := r.where[v]
	for p := g.xadj[v]; p < g.xadj[v+1]; p++ {
		q := r.where[g.adjncy[p]]
		if q == me || g.adjwgt[p] == 0 {
			continue
		}
		if r.conn[q] == 0 {
			r.touched = append(r.touched, q)
		}
		r.conn[q] += int64(g.adjwgt[p])
	}
}

func (r *kwayRefiner) clearConn() {
	for _, q := range r.touched {
		r.conn[q] = 0
	}
	r.touched = r.touched[:0]
}

// bestTarget returns the neighbouring part that v is most connected to
// among those that can take v's weight (ties: the lighter part), and the
// weight of v's edges to it; to is -1 when there is none. Parts reached
// only through zero-weight edges are not considered.
func (r *kwayRefiner) bestTarget(v int32) (to int32, c int64) {
	r.connectivity(v)
	vw := int64(r.g.vwgt[v])
	to, c = -1, -1
	for _, q := range r.touched {
		if r.pwgts[q]+vw > r.maxw {
			continue
		}
		if x := r.conn[q]; x > c || (x == c && r.pwgts[q] < r.pwgts[to]) {
			to, c = q, x
		}
	}
	r.clearConn()
	return to, c
}

// move moves v to part to; c is the weight of v's edges to that part.
func (r *kwayRefiner) move(v, to int32, c int64) {
	g := r.g
	from := r.where[v]
	vw := int64(g.vwgt[v])
	r.pwgts[from] -= vw
	r.pwgts[to] += vw
	r.where[v] = to
	total := r.id[v] + r.ed[v]
	r.id[v] = int32(c)
	r.ed[v] = total - int32(c)
	r.bndUpdate(v)
	for p := g.xadj[v]; p < g.xadj[v+1]; p++ {
		u := g.adjncy[p]
		w := g.adjwgt[p]
		switch r.where[u] {
		case from:
			r.id[u] -= w
			r.ed[u] += w
		case to:
			r.id[u] += w
			r.ed[u] -= w
		default:
			continue
		}
		r.bndUpdate(u)
	}
}

// refine runs up to npasses greedy passes (the greedy refinement of
// METIS 5, after Karypis & Kumar 1998). A pass puts the vertices whose move
// would not increase the cut (ed >= id) in a priority queue, most promising
// first (key ed/sqrt(number of neighbouring parts) - id), and takes them out
// one by one: a vertex moves to the neighbouring part it is most connected
// to that has room when that reduces the cut, or when the cut stays the
// same and the move improves the balance or (every other vertex) anyway,
// which lets boundaries slide along plateaus. A move updates the queue
// entries of the neighbours, which may join the queue in the same pass;
// each vertex leaves the queue at most once per pass. Passes stop when one
// no longer reduces the cut.
func (r *kwayRefiner) refine(npasses int) {
	g := r.g
	h := r.heap
	status := r.status[:g.n()] // 0: not in queue, 1: in queue, 2: extracted
	for range npasses {
		r.order = append(r.order[:0], r.bndind...)
		order := r.order
		for i := len(order) - 1; i > 0; i-- {
			j := r.rng.IntN(i + 1)
			order[i], order[j] = order[j], order[i]
		}
		h.reset()
		for _, v := range order {
			if r.ed[v] >= r.id[v] {
				h.push(v, r.queueKey(v))
				status[v] = 1
				r.visited = append(r.visited, v)
			}
		}
		oldcut := r.cut()
		cut := oldcut
		moves := 0
		for iter := 0; ; iter++ {
			v, _, ok := h.pop()
			if !ok {
				break
			}
			status[v] = 2
			from := r.where[v]
			vw := int64(g.vwgt[v])
			if r.pwgts[from]-vw < r.minw {
				continue
			}
			to, c := r.bestTarget(v)
			if to < 0 {
				continue
			}
			gain := c - int64(r.id[v])
			if !(gain > 0 || (gain == 0 && (r.pwgts[from] > r.maxw || r.pwgts[to]+vw < r.pwgts[from] || iter%2 == 0))) {
				continue
			}
			r.move(v, to, c)
			cut -= gain
			moves++
			for p := g.xadj[v]; p < g.xadj[v+1]; p++ {
				u := g.adjncy[p]
				switch status[u] {
				case 1:
					if r.ed[u] >= r.id[u] {
						h.update(u, r.queueKey(u))
					} else {
						h.remove(u)
						status[u] = 0
					}
				case 0:
					if r.ed[u] > 0 && r.ed[u] >= r.id[u] {
						h.push(u, r.queueKey(u))
						status[u] = 1
						r.visited = append(r.visited, u)
					}
				}
			}
		}
		h.reset()
		for _, v := range r.visited {
			status[v] = 0
		}
		r.visited = r.visited[:0]
		if moves == 0 || cut == oldcut {
			break
		}
	}
}

// queueKey is the priority of v in the greedy refinement queue:
// ed/sqrt(number of neighbouring parts) - id, in 1/64 units.
func (r *kwayRefiner) queueKey(v int32) int64 {
	r.connectivity(v)
	nn := len(r.touched)
	r.clearConn()
	x := -float64(r.id[v])
	if nn > 0 {
		x += float64(r.ed[v]) / math.Sqrt(float64(nn))
	}
	return int64(math.Round(64 * x))
}

func (r *kwayRefiner) overweight() bool {
	for _, w := range r.pwgts {
		if w > r.maxw {
			return true
		}
	}
	return false
}

// balance moves boundary vertices out of parts over the weight bound, to
// the neighbouring part they are most connected to among those with room,
// smallest cut increase first.
func (r *kwayRefiner) balance() {
	for round := 0; round < kwayPasses && r.overweight(); round++ {
		r.cands = r.cands[:0]
		for _, v := range r.bndind {
			if r.pwgts[r.where[v]] <= r.maxw {
				continue
			}
			if to, c := r.bestTarget(v); to >= 0 {
				r.cands = append(r.cands, kwayCand{v, c - int64(r.id[v])})
			}
		}
		if len(r.cands) == 0 {
			break
		}
		slices.SortFunc(r.cands, func(a, b kwayCand) int {
			if a.gain != b.gain {
				if a.gain > b.gain {
					return -1
				}
				return 1
			}
			return int(a.v - b.v)
		})
		moves := 0
		for _, cd := range r.cands {
			if r.pwgts[r.where[cd.v]] <= r.maxw {
				continue
			}
			if to, c := r.bestTarget(cd.v); to >= 0 {
				r.move(cd.v, to, c)
				moves++
			}
		}
		if moves == 0 {
			break
		}
	}
}

// enforceBalance is the last step on the finest graph: after balance, any
// part still over the bound (no neighbouring part has room, as with
// disconnected graphs or heavy vertices) sends vertices to the lightest
// part while that lowers the heavier of the two, then the cut is refined
// again within the bounds.
func (r *kwayRefiner) enforceBalance() {
	r.balance()
	if !r.overweight() {
		return
	}
	g := r.g
	n := g.n()
	lightest := func() int32 {
		q := int32(0)
		for p, w := range r.pwgts {
			if w < r.pwgts[q] {
				q = int32(p)
			}
		}
		return q
	}
	q := lightest()
	for sweep := 0; sweep < 64 && r.overweight(); sweep++ {
		moves := 0
		for v := range int32(n) {
			from := r.where[v]
			vw := int64(g.vwgt[v])
			if r.pwgts[from] <= r.maxw || vw == 0 || from == q {
				continue
			}
			if r.pwgts[q]+vw <= r.maxw || r.pwgts[q]+vw < r.pwgts[from] {
				var c int64
				for p := g.xadj[v]; p < g.xadj[v+1]; p++ {
					if r.where[g.adjncy[p]] == q {
						c += int64(g.adjwgt[p])
					}
				}
				r.move(v, q, c)
				moves++
				q = lightest()
			}
		}
		if moves == 0 {
			break
		}
	}
	r.refine(kwayPasses)
}

// cut returns the current edge cut (boundary vertices' external degrees).
func (r *kwayRefiner) cut() int64 {
	var c int64
	for _, v := range r.bndind {
		c += int64(r.ed[v])
	}
	return c / 2
}
