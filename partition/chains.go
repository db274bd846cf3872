package partition

import (
	"math"

	"github.com/ddrun/ddrun/model"
)

// Chains is a coarse decomposition into chains: every pairwise factor (see
// IsPairwise) is a link of exactly one Chain slave, and every other factor
// is a Single slave of its own, as in PerFactor. The chains come first,
// then the Single slaves in factor order. The output is deterministic.
//
// When the pairwise factors form exactly an H x W lattice (H, W >= 2) on
// variables numbered row-major, as package generate builds them, the
// chains are the H rows (left to right) and then the W columns (top to
// bottom). (A lattice numbered column-major is the transpose of one
// numbered row-major, and is found as such.)
//
// Any other pairwise graph is cut into simple paths greedily (pathCover):
// trails are walked along unused edges, first from each vertex of odd
// degree, then from any vertex with unused edges left, and each trail is
// split where it would repeat a variable. Two factors on the same pair of
// variables never share a chain. On a forest this is optimal (#odd/2
// chains); in general the number of chains is at most
// #odd/2 + 2*(E - V + C), E edges over V non-isolated variables in C
// components. Time and memory are linear in the model's size.
//
// Chains fails only when a pairwise factor's scope is out of range or
// repeats a variable, or the model has more than 2^30 factors.
func Chains(m *model.Model) (Plan, error) { return coarse(m, gridChains, pathCover) }

// coarse groups m's pairwise factors into slaves, by onGrid when the
// pairwise graph is a detected lattice and by general otherwise, and
// appends a Single slave for each other factor.
func coarse(m *model.Model,
	onGrid func(*pairGraph, *gridLayout, []Slave, *slaveArena) []Slave,
	general func(*pairGraph, []Slave, *slaveArena) []Slave) (Plan, error) {
	g, err := newPairGraph(m)
	if err != nil {
		return Plan{}, err
	}
	var arena slaveArena
	out := make([]Slave, 0, len(m.Factors)-g.numEdges())
	if l := g.grid(); l != nil {
		out = onGrid(g, l, out, &arena)
	} else {
		g.buildAdj()
		out = general(g, out, &arena)
	}
	return Plan{Slaves: singles(m, g, out, &arena)}, nil
}

// gridChains appends the rows, then the columns, of lattice l as chains.
func gridChains(g *pairGraph, l *gridLayout, out []Slave, arena *slaveArena) []Slave {
	for r := range l.h {
		out = append(out, gridLine(g, arena, r*l.w, 1, l.w, l.hor))
	}
	for c := range l.w {
		out = append(out, gridLine(g, arena, c, l.w, l.h, l.ver))
	}
	return out
}

// gridLine returns the chain of the n variables first, first+stride, ...
// of a lattice, linked by the edges link[v] from each variable v to the
// next (l.hor for a row, l.ver for a column).
func gridLine(g *pairGraph, arena *slaveArena, first, stride, n int, link []int32) Slave {
	vars, facs := arena.take(n), arena.take(n-1)
	for i := range n {
		v := first + i*stride
		vars[i] = v
		if i+1 < n {
			facs[i] = int(g.fac[link[v]])
		}
	}
	return Slave{Shape: Chain, Vars: vars, Factors: facs}
}

// pathLookahead bounds how many edges of a variable the walk looks at, to
// choose where to go next and to score each choice.
const pathLookahead = 8

// next returns the index in g.adj of the unused edge by which a walk at u
// should leave u, or -1 if each of the first pathLookahead unused edges of u
// leads back onto the current path (onPath[x] == id). Among the others it
// picks the one whose far end w has the fewest other neighbours on the
// path (so as not to walk into a pocket the path encloses), then the fewest
// unused edges (Warnsdorff's rule: visit the variables about to be cut off
// first), then the first. On lattices whose variables are numbered in no
// useful order this makes chains about 1.5 times as long as taking the
// first edge that does not close a cycle; on random graphs both are within
// a few percent of the lower bound.
func (g *pairGraph) next(u int32, onPath []int32, id int32) int32 {
	var cand [pathLookahead]int32
	nc := 0
	base := g.off[u]
	for i := base; i < base+min(g.cnt[u], pathLookahead); i++ {
		if onPath[g.nbr[i]] != id {
			cand[nc] = i
			nc++
		}
	}
	switch nc {
	case 0:
		return -1
	case 1:
		return cand[0]
	}
	best, bestScore := int32(-1), int32(math.MaxInt32)
	for _, i := range cand[:nc] {
		w := g.nbr[i]
		var near int32
		for _, x := range g.nbr[g.off[w]:min(g.off[w+1], g.off[w]+pathLookahead)] {
			if x != u && onPath[x] == id {
				near++
			}
		}
		if score := near<<16 + min(g.cnt[w], 1<<16-1); score < bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// pathCover appends a decomposition of g's edges into simple paths, as
// Chain slaves, and uses up g's edges.
//
// Walk: from a start s, repeatedly leave the current variable u by an
// unused edge, one whose far end is not on the current path if next finds
// one; if not, the path ends at u and a new one starts at u with u's first
// unused edge (a cut). The walk stops at a variable with no unused edge.
// Walks start first at each variable of odd unused degree, in index order,
// then at each variable with unused edges left. A walk from a variable of odd unused degree ends at another one,
// so the first phase makes exactly #odd/2 walks and leaves every degree
// even; second-phase walks are closed.
//
// Bound: the edges of the path before a cut plus the edge that forced it
// contain a cycle whose newest edge is that edge, so the cycles of all cuts
// are independent in the cycle space and cuts <= E - V + C. The closed
// walks are edge-disjoint nonempty even subgraphs, also independent, so
// there are at most E - V + C of them too. Hence
// paths = walks + cuts <= #odd/2 + 2(E - V + C).
func pathCover(g *pairGraph, out []Slave, arena *slaveArena) []Slave {
	// onPath[v] == id while v is on path number id (ids start at 1).
	onPath := make([]int32, g.n)
	var id int32
	var vars, facs []int // the current path
	start := func(v int32) {
		id++
		onPath[v] = id
		vars = append(vars[:0], int(v))
		facs = facs[:0]
	}
	emit := func() {
		vs, fs := arena.take(len(vars)), arena.take(len(facs))
		copy(vs, vars)
		copy(fs, facs)
		out = append(out, Slave{Shape: Chain, Vars: vs, Factors: fs})
	}
	walk := func(u int32) {
		start(u)
		for g.cnt[u] > 0 {
			i := g.next(u, onPath, id)
			if i < 0 {
				// Every edge looked at closes a cycle: cut here.
				emit()
				start(u)
				i = g.off[u]
			}
			h, w := g.adj[i], g.nbr[i]
			g.remove(h >> 1)
			facs = append(facs, int(g.fac[h>>1]))
			vars = append(vars, int(w))
			onPath[w] = id
			u = w
		}
		emit()
	}
	for v := range int32(g.n) {
		if g.cnt[v]%2 == 1 {
			walk(v)
		}
	}
	for v := range int32(g.n) {
		if g.cnt[v] > 0 {
			walk(v)
		}
	}
	return out
}
