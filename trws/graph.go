package trws

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
)

var negInf = math.Inf(-1)

// graph is a pairwise model prepared for TRW-S: nodes in the model's
// variable order, one edge per pair of variables linked by factors (their
// tables summed), messages, and the CSR adjacency of each node split into
// edges to later nodes (forward) and to earlier nodes (backward).
type graph struct {
	n        int
	card     []int
	uoff     []int     // unary offsets, len n+1
	theta    []float64 // unaries; -Inf marks a state forbidden by a one-variable factor
	constant float64
	// shift is added to the bound, not to scores: TRW-S(LP-C)'s
	// sum over cycles of u.(|F|-1) (see cycles.go).
	shift float64

	// Edge e joins eu[e] < ev[e]. A Potts edge (toff[e] < 0) scores pw[e]
	// when both ends agree; a dense one has its table at toff[e], row x_u,
	// column x_v (entries may be -Inf).
	eu, ev []int32
	pw     []float64
	toff   []int
	tables []float64
	// orig, when not nil, holds the tables before TRW-S(LP-C) moved cycle
	// multipliers into tables; scores are taken on orig.
	orig []float64

	// Messages: M_{u->v} (card v entries) at mUV[e], M_{v->u} (card u
	// entries) at mVU[e], normalised to a maximum of 0.
	mUV, mVU []int
	msg      []float64

	// Edges (s, v) with v > s are outE[outOff[s]:outOff[s+1]]; edges (u, s)
	// with u < s are inE[inOff[s]:inOff[s+1]].
	outOff, inOff []int
	outE, inE     []int32

	// gamma[s] = 1/n_s with n_s = max(#in, #out, 1), the number of
	// monotonic chains through s; endF[s] = (n_s - #out)/n_s, the weight of
	// the chains that end at s (they add max(hat_s)/n_s to the bound), and
	// endB[s] = (n_s - #in)/n_s for the chains that start there.
	gamma, endF, endB []float64

	// Scratch of the largest cardinality.
	hat, a, lab []float64
}

// buildEdge collects the factors over one pair before the graph is laid out.
type buildEdge struct {
	u, v  int
	potts bool // table == nil: a Potts coupling of weight w
	w     float64
	table []float64 // row u, column v
}

// checkPairwise returns an error naming the first factor of m that TRW-S
// cannot take: one over more than two variables (Sequence factors, chains
// of pairwise terms, are accepted).
func checkPairwise(m *model.Model) error {
	for a := range m.Factors {
		f := &m.Factors[a]
		if f.Kind != model.Sequence && len(f.Vars) > 2 {
			return fmt.Errorf("trws: factor %d (%s) has %d variables; TRW-S takes pairwise models only (factors over at most two variables, or sequences)", a, f.Kind, len(f.Vars))
		}
	}
	return nil
}

// newGraph lays out a reduced, pairwise model m.
func newGraph(m *model.Model) (*graph, error) {
	n := m.NumVars()
	g := &graph{n: n, card: m.Cards, uoff: m.UnaryOff, theta: append([]float64(nil), m.Unary...), constant: m.Constant}
	index := make(map[[2]int]int)
	var edges []*buildEdge
	edge := func(u, v int) *buildEdge {
		key := [2]int{min(u, v), max(u, v)}
		if k, ok := index[key]; ok {
			return edges[k]
		}
		index[key] = len(edges)
		e := &buildEdge{u: key[0], v: key[1], potts: true}
		edges = append(edges, e)
		return e
	}
	// addTable adds a table over (x, y), row x, column y.
	addTable := func(x, y int, t []float64) {
		e := edge(x, y)
		ku, kv := m.Cards[e.u], m.Cards[e.v]
		if e.potts {
			e.potts = false
			e.table = make([]float64, ku*kv)
			for i := 0; i < min(ku, kv); i++ {
				e.table[i*kv+i] = e.w
			}
		}
		for i := 0; i < m.Cards[x]; i++ {
			for j := 0; j < m.Cards[y]; j++ {
				if x == e.u {
					e.table[i*kv+j] += t[i*m.Cards[y]+j]
				} else {
					e.table[j*kv+i] += t[i*m.Cards[y]+j]
				}
			}
		}
	}
	for a := range m.Factors {
		f := &m.Factors[a]
		switch {
		case f.Kind == model.Sequence:
			if err := g.addSequence(m, f, addTable); err != nil {
				return nil, fmt.Errorf("trws: factor %d (sequence): %w", a, err)
			}
		case len(f.Vars) > 2:
			return nil, fmt.Errorf("trws: factor %d (%s) has %d variables; TRW-S takes pairwise models only", a, f.Kind, len(f.Vars))
		case len(f.Vars) == 0:
			g.constant += m.DenseTable(a)[0]
		case len(f.Vars) == 1:
			u := g.theta[g.uoff[f.Vars[0]]:g.uoff[f.Vars[0]+1]]
			for s, t := range m.DenseTable(a) {
				u[s] += t
			}
		case f.Kind == model.Potts:
			if e := edge(f.Vars[0], f.Vars[1]); e.potts {
				e.w += f.Weight
			} else {
				for i := 0; i < m.Cards[e.u]; i++ {
					e.table[i*m.Cards[e.v]+i] += f.Weight
				}
			}
		default:
			addTable(f.Vars[0], f.Vars[1], m.DenseTable(a))
		}
	}
	g.layout(edges)
	return g, nil
}

// addSequence adds a Sequence factor's emissions to the unaries and its
// transitions as edges.
func (g *graph) addSequence(m *model.Model, f *model.Factor, addTable func(x, y int, t []float64)) error {
	shared, offs, err := model.SequenceTransitions(m, f)
	if err != nil {
		return err
	}
	eoff := 0
	for k, v := range f.Vars {
		c := m.Cards[v]
		if f.Emission != nil {
			u := g.theta[g.uoff[v]:g.uoff[v+1]]
			for s := range u {
				u[s] += f.Emission[eoff+s]
			}
		}
		eoff += c
		if k+1 < len(f.Vars) {
			next := f.Vars[k+1]
			t := 0
			if !shared {
				t = offs[k]
			}
			addTable(v, next, f.Table[t:t+c*m.Cards[next]])
		}
	}
	return nil
}

// layout fills the flat edge, message and adjacency arrays.
func (g *graph) layout(edges []*buildEdge) {
	n, ne := g.n, len(edges)
	g.eu, g.ev = make([]int32, ne), make([]int32, ne)
	g.pw, g.toff = make([]float64, ne), make([]int, ne)
	g.mUV, g.mVU = make([]int, ne), make([]int, ne)
	nIn, nOut := make([]int, n), make([]int, n)
	tsize, msize := 0, 0
	for e, b := range edges {
		g.eu[e], g.ev[e] = int32(b.u), int32(b.v)
		nOut[b.u]++
		nIn[b.v]++
		g.mUV[e] = msize
		msize += g.card[b.v]
		g.mVU[e] = msize
		msize += g.card[b.u]
		if b.potts {
			g.toff[e] = -1
			g.pw[e] = b.w
		} else {
			g.toff[e] = tsize
			tsize += len(b.table)
		}
	}
	g.tables = make([]float64, 0, tsize)
	for _, b := range edges {
		if !b.potts {
			g.tables = append(g.tables, b.table...)
		}
	}
	g.msg = make([]float64, msize)
	g.outOff, g.inOff = make([]int, n+1), make([]int, n+1)
	for s := 0; s < n; s++ {
		g.outOff[s+1] = g.outOff[s] + nOut[s]
		g.inOff[s+1] = g.inOff[s] + nIn[s]
	}
	g.outE, g.inE = make([]int32, ne), make([]int32, ne)
	po, pi := append([]int(nil), g.outOff[:n]...), append([]int(nil), g.inOff[:n]...)
	for e, b := range edges {
		g.outE[po[b.u]] = int32(e)
		po[b.u]++
		g.inE[pi[b.v]] = int32(e)
		pi[b.v]++
	}
	g.gamma, g.endF, g.endB = make([]float64, n), make([]float64, n), make([]float64, n)
	maxCard := 1
	for s := 0; s < n; s++ {
		ns := max(nIn[s], nOut[s], 1)
		g.gamma[s] = 1 / float64(ns)
		g.endF[s] = float64(ns-nOut[s]) / float64(ns)
		g.endB[s] = float64(ns-nIn[s]) / float64(ns)
		maxCard = max(maxCard, g.card[s])
	}
	g.hat, g.a, g.lab = make([]float64, maxCard), make([]float64, maxCard), make([]float64, maxCard)
}

// score returns the exact score of x under the graph's potentials (the
// reduced model's score, up to the order of the additions).
func (g *graph) score(x []int) float64 {
	tables := g.tables
	if g.orig != nil {
		tables = g.orig
	}
	s := g.constant
	for i := 0; i < g.n; i++ {
		s += g.theta[g.uoff[i]+x[i]]
	}
	for e := range g.eu {
		xu, xv := x[g.eu[e]], x[g.ev[e]]
		if g.toff[e] < 0 {
			if xu == xv {
				s += g.pw[e]
			}
		} else {
			s += tables[g.toff[e]+xu*g.card[g.ev[e]]+xv]
		}
	}
	return s
}

// densify gives every Potts edge a dense table (TRW-S(LP-C) changes edge
// tables entry by entry).
func (g *graph) densify() {
	for e := range g.eu {
		if g.toff[e] >= 0 {
			continue
		}
		ku, kv := g.card[g.eu[e]], g.card[g.ev[e]]
		g.toff[e] = len(g.tables)
		for i := 0; i < ku; i++ {
			for j := 0; j < kv; j++ {
				w := 0.0
				if i == j {
					w = g.pw[e]
				}
				g.tables = append(g.tables, w)
			}
		}
	}
}
