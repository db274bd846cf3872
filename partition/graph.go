package partition

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
)

// IsPairwise reports whether factor f may be a link of a Chain or Tree
// slave: exactly two variables and kind Dense, Pair, Potts, TruncLinear or
// TruncQuad (chains and trees take their tables). Logic factors
// and factors of any other arity or kind are always Single slaves.
func IsPairwise(f *model.Factor) bool {
	if len(f.Vars) != 2 {
		return false
	}
	switch f.Kind {
	case model.Dense, model.Pair, model.Potts, model.TruncLinear, model.TruncQuad:
		return true
	}
	return false
}

// pairGraph is the multigraph of a model's pairwise factors: one edge per
// pairwise factor, in factor order, stored as flat int32 arrays.
//
// Edge e has two half-edges, 2e (at its first variable) and 2e+1 (at its
// second); end[h] is the variable half-edge h sits at, so its neighbour is
// end[h^1]. After buildAdj, the half-edges at variable v are
// adj[off[v]:off[v+1]], the unused ones first: adj[off[v]:off[v]+cnt[v]],
// in edge order until edges are removed; nbr[i] is the far end of adj[i]
// and pos[h] is h's index in adj. Removing an edge keeps the unused part
// of every list compact (remove), so cnt[v] is v's number of unused edges.
type pairGraph struct {
	n   int     // number of variables
	fac []int32 // fac[e]: the factor of edge e
	end []int32 // end[h]: the variable of half-edge h
	off []int32 // len n+1: CSR offsets into adj
	cnt []int32 // unused half-edges at each variable
	adj []int32 // half-edge ids, grouped by variable
	nbr []int32 // nbr[i] = end[adj[i]^1], the neighbour across adj[i]
	pos []int32 // pos[h]: index of h in adj
}

// newPairGraph collects m's pairwise factors (not their adjacency: see
// buildAdj). It fails when a pairwise factor's variables are out of range
// or equal, or when the model is too large for int32 indices.
func newPairGraph(m *model.Model) (*pairGraph, error) {
	n := m.NumVars()
	if n > math.MaxInt32 || len(m.Factors) > math.MaxInt32/2 {
		return nil, fmt.Errorf("partition: model too large (%d variables, %d factors)", n, len(m.Factors))
	}
	g := &pairGraph{n: n, fac: make([]int32, 0, len(m.Factors)), end: make([]int32, 0, 2*len(m.Factors))}
	for a := range m.Factors {
		f := &m.Factors[a]
		if !IsPairwise(f) {
			continue
		}
		u, v := f.Vars[0], f.Vars[1]
		if u < 0 || u >= n || v < 0 || v >= n {
			return nil, fmt.Errorf("partition: factor %d: variables (%d, %d) out of range [0,%d)", a, u, v, n)
		}
		if u == v {
			return nil, fmt.Errorf("partition: factor %d: variable %d appears twice", a, u)
		}
		g.fac = append(g.fac, int32(a))
		g.end = append(g.end, int32(u), int32(v))
	}
	return g, nil
}

// buildAdj builds the adjacency lists, all edges unused.
func (g *pairGraph) buildAdj() {
	g.off = make([]int32, g.n+1)
	g.cnt = make([]int32, g.n)
	for _, v := range g.end {
		g.cnt[v]++
	}
	for v := range g.n {
		g.off[v+1] = g.off[v] + g.cnt[v]
		g.cnt[v] = 0 // a cursor below, the degree again after
	}
	g.adj = make([]int32, len(g.end))
	g.nbr = make([]int32, len(g.end))
	g.pos = make([]int32, len(g.end))
	for h, v := range g.end {
		i := g.off[v] + g.cnt[v]
		g.cnt[v]++
		g.adj[i] = int32(h)
		g.nbr[i] = g.end[h^1]
		g.pos[h] = i
	}
}

// numEdges returns the number of pairwise factors.
func (g *pairGraph) numEdges() int { return len(g.fac) }

// remove marks edge e used: it leaves the unused part of the lists of
// both its variables, swapping places with the last unused entry. O(1).
func (g *pairGraph) remove(e int32) {
	for h := 2 * e; h <= 2*e+1; h++ {
		v := g.end[h]
		i := g.pos[h]
		last := g.off[v] + g.cnt[v] - 1
		h2 := g.adj[last]
		g.adj[i], g.adj[last] = h2, h
		g.nbr[i], g.nbr[last] = g.nbr[last], g.nbr[i]
		g.pos[h2], g.pos[h] = i, last
		g.cnt[v]--
	}
}

// gridLayout describes a pairwise graph that is exactly an h x w lattice
// (h, w >= 2) on variables 0 .. h*w-1 in row-major order: variable r*w+c at
// row r, column c, with one edge between horizontal and vertical
// neighbours and no other edge. Further variables may exist but carry no
// pairwise factor. hor[r*w+c] is the edge (r,c)-(r,c+1) and ver[r*w+c] the
// edge (r,c)-(r+1,c) (-1 on the last column and the last row).
type gridLayout struct {
	h, w     int
	hor, ver []int32
}

// grid detects a lattice, whatever the order of the factors and of the two
// variables in each; one numbered column-major is found as its transpose.
// It returns nil for anything else, including lattices with a missing or a
// parallel factor, 1 x w and h x 1 grids (paths) and lattices numbered in
// any other way. O(n + edges).
func (g *pairGraph) grid() *gridLayout {
	ne := g.numEdges()
	w := 0
	for e := range ne {
		d := g.end[2*e+1] - g.end[2*e]
		if d < 0 {
			d = -d
		}
		if d != 1 {
			w = int(d)
			break
		}
	}
	// An h x w lattice has h(w-1) + (h-1)w = h(2w-1) - w edges.
	if w < 2 || (ne+w)%(2*w-1) != 0 {
		return nil
	}
	h := (ne + w) / (2*w - 1)
	if h < 2 || h > g.n/w {
		return nil
	}
	nv := int32(h * w)
	l := &gridLayout{h: h, w: w, hor: make([]int32, nv), ver: make([]int32, nv)}
	for i := range l.hor {
		l.hor[i] = -1
		l.ver[i] = -1
	}
	w32 := int32(w)
	for e := range ne {
		a, b := g.end[2*e], g.end[2*e+1]
		if a > b {
			a, b = b, a
		}
		if b >= nv {
			return nil
		}
		var slot *int32
		switch {
		case b-a == 1 && a%w32 != w32-1:
			slot = &l.hor[a]
		case b-a == w32:
			slot = &l.ver[a]
		default:
			return nil
		}
		if *slot >= 0 {
			return nil // parallel factors
		}
		*slot = int32(e)
	}
	// ne distinct lattice edges out of the h(2w-1)-w there are: all of them.
	return l
}

// slaveArena hands out the Vars, Factors and Parent slices of many slaves
// from a few large arrays, so a plan for millions of factors costs a few
// allocations. Each slice has its capacity capped at its length.
type slaveArena struct {
	buf []int
}

// take returns a zeroed slice of length k carved from the arena.
func (a *slaveArena) take(k int) []int {
	if k > len(a.buf) {
		a.buf = make([]int, max(k, 1<<16))
	}
	s := a.buf[:k:k]
	a.buf = a.buf[k:]
	return s
}

// singles appends one Single slave per factor of m that is not pairwise
// (not in g), in factor order, in the form PerFactor uses.
func singles(m *model.Model, g *pairGraph, out []Slave, arena *slaveArena) []Slave {
	k := 0 // g.fac[k] is the next pairwise factor
	for a := range m.Factors {
		if k < len(g.fac) && int(g.fac[k]) == a {
			k++
			continue
		}
		f := arena.take(1)
		f[0] = a
		out = append(out, Slave{Shape: Single, Vars: m.Factors[a].Vars, Factors: f})
	}
	return out
}
