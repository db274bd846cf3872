package multilevel

import (
	"math"
	"slices"
)

// bisectCoarsenTo is the size down to which each bisection of the initial
// partitioning coarsens its graph before growing the initial bisections.
const bisectCoarsenTo = 100

// fmPasses bounds the FM passes per level of a bisection.
const fmPasses = 10

// growTries is the number of greedy-growing starts at the coarsest level of
// each bisection.
const growTries = 3

// initialPartition returns the best of s.tries recursive bisections of g
// into k parts: the one whose heaviest part exceeds maxw the least, then
// the one of smallest cut.
func (s *mlSolver) initialPartition(g *mlGraph, k int, maxw int64) []int32 {
	var best []int32
	var bestCut, bestOver int64
	pw := make([]int64, k)
	for range s.tries {
		part := s.recursiveBisection(g, k)
		clear(pw)
		for v, p := range part {
			pw[p] += int64(g.vwgt[v])
		}
		over := max(0, slices.Max(pw)-maxw)
		if c := g.cut(part); best == nil || over < bestOver || (over == bestOver && c < bestCut) {
			best, bestCut, bestOver = part, c, over
		}
	}
	return best
}

// cut returns the weight of the edges of g between different parts.
func (g *mlGraph) cut(part []int32) int64 {
	var c int64
	for v := range g.n() {
		for p := g.xadj[v]; p < g.xadj[v+1]; p++ {
			if part[g.adjncy[p]] != part[v] {
				c += int64(g.adjwgt[p])
			}
		}
	}
	return c / 2
}

// recursiveBisection partitions g into k parts by recursive multilevel
// bisection: the first k/2 parts get the first side, in proportion to their
// number. Each bisection's balance tolerance is tol^(1/ceil(log2 k)), so
// that the tolerances of the nested bisections compound to about tol.
func (s *mlSolver) recursiveBisection(g *mlGraph, k int) []int32 {
	part := make([]int32, g.n())
	labels := make([]int32, g.n())
	for i := range labels {
		labels[i] = int32(i)
	}
	ub := math.Pow(s.tol, 1/float64(log2ceil(k)))
	s.rb(g, labels, k, 0, part, ub)
	return part
}

func (s *mlSolver) rb(g *mlGraph, labels []int32, k int, first int32, part []int32, ub float64) {
	n := g.n()
	if k == 1 || n == 0 {
		for _, l := range labels {
			part[l] = first
		}
		return
	}
	if n <= k {
		for v, l := range labels {
			part[l] = first + int32(v)
		}
		return
	}
	k0 := k / 2
	where := s.bisect(g, float64(k0)/float64(k), ub)
	subs, subLabels := splitGraph(g, where, labels)
	s.rb(subs[0], subLabels[0], k0, first, part, ub)
	s.rb(subs[1], subLabels[1], k-k0, first+int32(k0), part, ub)
}

// splitGraph returns the subgraphs induced by the two sides of a bisection,
// with the labels of their vertices.
func splitGraph(g *mlGraph, where []uint8, labels []int32) ([2]*mlGraph, [2][]int32) {
	n := g.n()
	rename := make([]int32, n)
	var nv, ne [2]int32
	for v := range n {
		sd := where[v]
		rename[v] = nv[sd]
		nv[sd]++
		for p := g.xadj[v]; p < g.xadj[v+1]; p++ {
			if where[g.adjncy[p]] == sd {
				ne[sd]++
			}
		}
	}
	var subs [2]*mlGraph
	var subLabels [2][]int32
	for sd := range 2 {
		subs[sd] = &mlGraph{
			xadj:   make([]int32, 1, nv[sd]+1),
			adjncy: make([]int32, 0, ne[sd]),
			adjwgt: make([]int32, 0, ne[sd]),
			vwgt:   make([]int32, 0, nv[sd]),
		}
		subLabels[sd] = make([]int32, 0, nv[sd])
	}
	for v := range n {
		sd := where[v]
		sg := subs[sd]
		for p := g.xadj[v]; p < g.xadj[v+1]; p++ {
			if u := g.adjncy[p]; where[u] == sd {
				sg.adjncy = append(sg.adjncy, rename[u])
				sg.adjwgt = append(sg.adjwgt, g.adjwgt[p])
			}
		}
		sg.xadj = append(sg.xadj, int32(len(sg.adjncy)))
		sg.vwgt = append(sg.vwgt, g.vwgt[v])
		sg.tvwgt += int64(g.vwgt[v])
		subLabels[sd] = append(subLabels[sd], labels[v])
	}
	return subs, subLabels
}

// bisect returns a bisection of g whose side 0 should weigh frac of the
// total: multilevel, with growTries initial bisections of its coarsest
// graph.
func (s *mlSolver) bisect(g *mlGraph, frac float64, ub float64) []uint8 {
	t0 := int64(math.Round(frac * float64(g.tvwgt)))
	tpw := [2]int64{t0, g.tvwgt - t0}
	levels := s.coarsen(g, bisectCoarsenTo)
	ws := newBisectScratch(g.n())
	b := s.initialBisection(levels[len(levels)-1], tpw, ub, ws)
	for l := len(levels) - 2; l >= 0; l-- {
		fine := levels[l]
		nb := newBisection(fine, tpw, ub, ws)
		for v := range fine.n() {
			nb.where[v] = b.where[fine.cmap[v]]
		}
		nb.computeParams()
		nb.balance()
		nb.fm(fmPasses, s)
		b = nb
	}
	return b.where
}

// bisectScratch is memory shared by the levels of one bisection.
type bisectScratch struct {
	heaps [2]*gainHeap
	moved []int32 // moved[v]: index of v's move in the current pass, or -1
	swaps []int32
}

func newBisectScratch(n int) *bisectScratch {
	ws := &bisectScratch{
		heaps: [2]*gainHeap{newGainHeap(n), newGainHeap(n)},
		moved: make([]int32, n),
		swaps: make([]int32, 0, n),
	}
	for i := range ws.moved {
		ws.moved[i] = -1
	}
	return ws
}

// bisection is a 2-way partition of one graph with the bookkeeping of FM:
// id[v] (ed[v]) is the weight of v's edges to its own (the other) side, and
// the boundary (vertices with ed > 0) is kept in bndind with positions
// bndptr.
type bisection struct {
	g     *mlGraph
	where []uint8
	boundary
	pwgts  [2]int64
	tpwgts [2]int64
	maxpw  [2]int64
	cut    int64
	ws     *bisectScratch
}

func newBisection(g *mlGraph, tpw [2]int64, ub float64, ws *bisectScratch) *bisection {
	n := g.n()
	b := &bisection{
		g: g, where: make([]uint8, n), boundary: newBoundary(n), tpwgts: tpw, ws: ws,
	}
	for sd := range 2 {
		b.maxpw[sd] = int64(ub * float64(tpw[sd]))
	}
	return b
}

// computeParams recomputes id, ed, the boundary, the part weights and the
// cut from where.
func (b *bisection) computeParams() {
	b.pwgts = [2]int64{}
	b.cut = computeBoundary(&b.boundary, b.g, b.where, b.pwgts[:]) / 2
}

// move moves v to the other side, updating the cut, the part weights, the
// degrees and the boundary. For every neighbour u whose gain changed, it
// calls touch(u) (if not nil) after the update.
func (b *bisection) move(v int32, touch func(u int32)) {
	g := b.g
	from := b.where[v]
	to := 1 - from
	b.cut -= int64(b.ed[v] - b.id[v])
	vw := int64(g.vwgt[v])
	b.pwgts[from] -= vw
	b.pwgts[to] += vw
	b.where[v] = to
	b.id[v], b.ed[v] = b.ed[v], b.id[v]
	if b.ed[v] == 0 && b.bndptr[v] >= 0 {
		b.bndDelete(v)
	} else if b.ed[v] > 0 && b.bndptr[v] < 0 {
		b.bndInsert(v)
	}
	for p := g.xadj[v]; p < g.xadj[v+1]; p++ {
		u := g.adjncy[p]
		w := g.adjwgt[p]
		if b.where[u] == to {
			b.id[u] += w
			b.ed[u] -= w
		} else {
			b.id[u] -= w
			b.ed[u] += w
		}
		if b.ed[u] == 0 && b.bndptr[u] >= 0 {
			b.bndDelete(u)
		} else if b.ed[u] > 0 && b.bndptr[u] < 0 {
			b.bndInsert(u)
		}
		if touch != nil {
			touch(u)
		}
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// balanced reports whether both sides are within their bounds.
func (b *bisection) balanced() bool {
	return b.pwgts[0] <= b.maxpw[0] && b.pwgts[1] <= b.maxpw[1]
}

// overflow is how much the sides exceed their bounds, in total.
func (b *bisection) overflow() int64 {
	return max(0, b.pwgts[0]-b.maxpw[0]) + max(0, b.pwgts[1]-b.maxpw[1])
}

// balance moves vertices from the side heavier than its target to the
// other, best gain first, boundary vertices before interior ones, while
// the sides are not within their bounds (METIS's Balance2Way, extended for
// heavy vertices). A move is taken when it brings the side weights closer
// to the targets, even when the lighter side then passes its own bound.
// When no such move is left (the heavy side holds only vertices too heavy
// for its excess), its lightest vertex crosses anyway, and lighter ones
// may come back in the next round. A vertex moves at most once per call,
// and the moves after the state of least overflow are undone.
func (b *bisection) balance() {
	if b.balanced() {
		return
	}
	g := b.g
	h := b.ws.heaps[0]
	locked := b.ws.moved // -1: free; >= 0: moved by this call
	moves := b.ws.swaps[:0]
	bestOver, bestLen := b.overflow(), 0
	record := func(v int32) {
		locked[v] = int32(len(moves))
		moves = append(moves, v)
		if o := b.overflow(); o < bestOver {
			bestOver, bestLen = o, len(moves)
		}
	}
	for round := 0; !b.balanced() && round < 2*fmPasses; round++ {
		from := uint8(0)
		if b.pwgts[1]-b.tpwgts[1] > b.pwgts[0]-b.tpwgts[0] {
			from = 1
		}
		moved := 0
		// Boundary vertices first; interior ones when those are not enough
		// (disconnected graphs, or a side with no boundary).
		for pass := range 2 {
			h.reset()
			for v := range int32(g.n()) {
				if b.where[v] == from && locked[v] < 0 && (b.bndptr[v] >= 0) == (pass == 0) {
					h.push(v, int64(b.ed[v]-b.id[v]))
				}
			}
			for !b.balanced() {
				excess := b.pwgts[from] - b.tpwgts[from]
				if excess <= 0 {
					break
				}
				v, _, ok := h.pop()
				if !ok {
					break
				}
				vw := int64(g.vwgt[v])
				if vw == 0 || vw >= 2*excess {
					continue // no better balanced after the move
				}
				b.move(v, func(u int32) {
					if h.contains(u) {
						h.update(u, int64(b.ed[u]-b.id[u]))
					} else if pass == 0 && b.where[u] == from && b.bndptr[u] >= 0 && locked[u] < 0 {
						h.push(u, int64(b.ed[u]-b.id[u]))
					}
				})
				record(v)
				moved++
			}
			if b.balanced() || b.pwgts[from]-b.tpwgts[from] <= 0 {
				break
			}
		}
		if moved == 0 && !b.balanced() && b.pwgts[from] > b.tpwgts[from] {
			// Stuck: move the lightest free vertex of the heavy side.
			best := int32(-1)
			for v := range int32(g.n()) {
				if b.where[v] == from && locked[v] < 0 && g.vwgt[v] > 0 && (best < 0 || g.vwgt[v] < g.vwgt[best]) {
					best = v
				}
			}
			if best < 0 {
				break
			}
			b.move(best, nil)
			record(best)
		}
	}
	for i := len(moves) - 1; i >= bestLen; i-- {
		b.move(moves[i], nil)
	}
	for _, v := range moves {
		locked[v] = -1
	}
	b.ws.swaps = moves
	h.reset()
}

// fm runs up to npasses passes of Fiduccia-Mattheyses refinement: each pass
// moves boundary vertices one at a time, highest gain first, from the side
// heavier relative to its target, locks each moved vertex, and rolls back
// to the best cut seen whose balance is no worse than at the start (so
// hill-climbing over negative gains is possible for a bounded number of
// moves). Passes stop when one no longer improves the cut.
func (b *bisection) fm(npasses int, s *mlSolver) {
	g := b.g
	n := g.n()
	if n == 0 {
		return
	}
	limit := min(max(n/100, 15), 100)
	tvw := b.pwgts[0] + b.pwgts[1]
	avgvw := min(tvw/20, 2*tvw/int64(n))
	moved := b.ws.moved
	q := b.ws.heaps
	for range npasses {
		q[0].reset()
		q[1].reset()
		swaps := b.ws.swaps[:0]
		origdiff := abs64(b.tpwgts[0] - b.pwgts[0])
		initover := b.overflow()
		initcut := b.cut
		mincut, mindiff := b.cut, origdiff
		mincutorder := -1
		// Insert the boundary in a random order so that ties vary.
		bnd := b.bndind
		for i := len(bnd) - 1; i > 0; i-- {
			j := s.rng.IntN(i + 1)
			bnd[i], bnd[j] = bnd[j], bnd[i]
			b.bndptr[bnd[i]] = int32(i)
			b.bndptr[bnd[j]] = int32(j)
		}
		for _, v := range bnd {
			q[b.where[v]].push(v, int64(b.ed[v]-b.id[v]))
		}
		for nswaps := 0; nswaps < n; nswaps++ {
			from := uint8(1)
			if b.tpwgts[0]-b.pwgts[0] < b.tpwgts[1]-b.pwgts[1] {
				from = 0
			}
			v, _, ok := q[from].pop()
			if !ok {
				break
			}
			vw := int64(g.vwgt[v])
			newcut := b.cut - int64(b.ed[v]-b.id[v])
			newdiff := abs64(b.tpwgts[0] - b.pwgts[0] + map01(from)*vw)
			// The state after the move may become the best when it is
			// within the bounds, or no further off them than at the start,
			// and (METIS's rule) no less balanced than at the start but
			// for one average vertex weight.
			pw := b.pwgts
			pw[from] -= vw
			pw[1-from] += vw
			newover := max(0, pw[0]-b.maxpw[0]) + max(0, pw[1]-b.maxpw[1])
			fits := newover == 0 || newover <= initover
			if fits && ((newcut < mincut && (newover == 0 || newdiff <= origdiff+avgvw)) || (newcut == mincut && newdiff < mindiff)) {
				mincut, mindiff, mincutorder = newcut, newdiff, nswaps
			} else if nswaps-mincutorder > limit {
				break
			}
			b.move(v, func(u int32) {
				if moved[u] >= 0 {
					return
				}
				wu := b.where[u]
				switch {
				case q[wu].contains(u) && b.bndptr[u] < 0:
					q[wu].remove(u)
				case q[wu].contains(u):
					q[wu].update(u, int64(b.ed[u]-b.id[u]))
				case b.bndptr[u] >= 0:
					q[wu].push(u, int64(b.ed[u]-b.id[u]))
				}
			})
			moved[v] = int32(nswaps)
			swaps = append(swaps, v)
		}
		// Roll back the moves after the best prefix.
		for i := len(swaps) - 1; i > mincutorder; i-- {
			b.move(swaps[i], nil)
		}
		for _, v := range swaps {
			moved[v] = -1
		}
		b.ws.swaps = swaps
		if mincutorder < 0 || b.cut >= initcut {
			break
		}
	}
	q[0].reset()
	q[1].reset()
}

// map01 returns +1 for side 0 and -1 for side 1: moving weight w away from
// side `from` changes tpwgts[0]-pwgts[0] by map01(from)*w.
func map01(from uint8) int64 {
	if from == 0 {
		return 1
	}
	return -1
}

// initialBisection grows growTries bisections of g by greedy graph growing
// (GGGP: side 0 grows from a random vertex, always absorbing the frontier
// vertex of highest gain), balances and refines each with FM, and keeps
// the one with the smallest cut among the balanced ones.
func (s *mlSolver) initialBisection(g *mlGraph, tpw [2]int64, ub float64, ws *bisectScratch) *bisection {
	var best *bisection
	n := g.n()
	order := make([]int32, n)
	for range growTries {
		b := newBisection(g, tpw, ub, ws)
		for i := range order {
			order[i] = int32(i)
		}
		for i := n - 1; i > 0; i-- {
			j := s.rng.IntN(i + 1)
			order[i], order[j] = order[j], order[i]
		}
		b.grow(order)
		b.computeParams()
		b.balance()
		b.fm(fmPasses, s)
		if best == nil || better(b, best) {
			best = b
		}
		if n <= 1 {
			break
		}
	}
	return best
}

// better reports whether bisection a beats b: balanced before unbalanced,
// then smaller cut, then smaller deviation from the targets.
func better(a, b *bisection) bool {
	if ab, bb := a.balanced(), b.balanced(); ab != bb {
		return ab
	}
	if a.cut != b.cut {
		return a.cut < b.cut
	}
	return abs64(a.tpwgts[0]-a.pwgts[0]) < abs64(b.tpwgts[0]-b.pwgts[0])
}

// grow fills b.where by greedy graph growing: everything starts on side 1
// and side 0 absorbs, from the first vertex of order, the frontier vertex
// whose move reduces the cut most, restarting from the next unabsorbed
// vertex of order when the frontier is empty (disconnected graphs), until
// side 0 reaches its target weight.
func (b *bisection) grow(order []int32) {
	g := b.g
	n := g.n()
	for v := range n {
		b.where[v] = 1
		var d int32
		for p := g.xadj[v]; p < g.xadj[v+1]; p++ {
			d += g.adjwgt[p]
		}
		b.id[v], b.ed[v] = d, 0
		b.bndptr[v] = -1
	}
	b.bndind = b.bndind[:0]
	b.pwgts = [2]int64{0, g.tvwgt}
	b.cut = 0
	h := b.ws.heaps[0]
	h.reset()
	next := 0
	for b.pwgts[0] < b.tpwgts[0] {
		v, _, ok := h.pop()
		if !ok {
			for next < n && b.where[order[next]] == 0 {
				next++
			}
			if next == n {
				break
			}
			v = order[next]
		}
		if b.pwgts[0]+int64(g.vwgt[v]) > b.maxpw[0] && b.pwgts[0] > 0 {
			break
		}
		b.move(v, func(u int32) {
			if b.where[u] != 1 {
				return
			}
			if h.contains(u) {
				h.update(u, int64(b.ed[u]-b.id[u]))
			} else {
				h.push(u, int64(b.ed[u]-b.id[u]))
			}
		})
	}
	h.reset()
}
