package trws

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/ddrun/ddrun/internal/pairterm"
	"github.com/ddrun/ddrun/model"
)

var negInf = math.Inf(-1)

// graph is a pairwise model prepared for TRW-S: nodes in processing order
// (the model's variable order, or with several threads the order of
// partition, see order.go), one edge per pair of variables linked by
// factors (their tables summed), and the messages.
//
// Layout (Kolmogorov's, MRFEnergy v1.3, in flat arrays): edges are sorted
// by their earlier end, so the edges from node s to later nodes are the
// range outOff[s]:outOff[s+1] and a pass streams through them; and an edge
// holds ONE message, the one into the node processed next: M_{v->u}
// between a backward pass and the next forward pass, M_{u->v} between a
// forward pass and the next backward pass. This is exact, not an
// approximation: when a node is processed every message it reads is one
// into it, and the message it overwrites (the one from the node it sends
// to) is read only to form that very update (gamma hat_s - M_{t->s});
// nothing reads it afterwards.
//
// Tables are not copied (Kolmogorov's layout keeps each table beside its
// message; here the model already holds it): a dense edge reads the
// model's table in place when one factor makes it and the factor's scope
// is (u, v) in graph order, which is every edge of a grid read from a UAI
// file on one thread. TRW-S never writes a table, so the model stays
// untouched (TestModelReadOnly). Only edges whose factor lists (v, u) (a
// transposed copy: with threads, the edges from the separator to later
// variables of the model, see order.go) or whose pair has several factors
// (their sum) get a table of their own, in own. TRW-S(LP-C) changes
// tables, so it moves them all into data beside the messages (densify).
type graph struct {
	n     int
	card  []int
	uoff  []int     // unary offsets, len n+1
	theta []float64 // unaries; -Inf marks a state forbidden by a one-variable factor
	// origTheta, when not nil, is theta before the SOC global step
	// (socglobal.go) reparameterised it; scores are taken on it.
	origTheta []float64
	constant  float64
	// shift is added to the bound, not to scores: TRW-S(LP-C)'s
	// sum over cycles of u.(|F|-1) (see cycles.go).
	shift float64
	// order[s] is the model variable at node s and pos its inverse; both
	// nil when node s is variable s.
	order, pos []int32

	// Edge e joins eu[e] < ev[e]. Its message (max(card u, card v)
	// entries) is data[moff[e]:]. A Potts edge (toff[e] == -1) scores pw[e]
	// when both ends agree; a truncated one (toff[e] <= -2, a single
	// TruncLinear or TruncQuad factor) is terms[-toff[e]-2], whose messages
	// are O(L) distance transforms (package internal/pairterm); a dense
	// one (toff[e] >= 0) has its table at tab[e] (table(e)), row x_u,
	// column x_v (entries may be -Inf): the model's own table, read in
	// place, or one in own (see above); with TRW-S(LP-C) it is in data at
	// toff[e], right after the message. pw is nil when no edge is Potts.
	eu, ev []int32
	pw     []float64
	terms  []pairterm.Term
	moff   []int
	toff   []int
	data   []float64
	// tab[e] points to the first entry of dense edge e's table, nil at
	// other edges. A pointer and not a slice (8 bytes per edge instead of
	// 24, 32 MB less on a 1000x1000 grid); table(e) makes the slice.
	tab []*float64
	// own holds the tables TRW-S made (transposed or summed), copied
	// counts them, tabLen counts the entries of all tables outside data.
	own    []float64
	copied int
	tabLen int
	// orig, when not nil, is data before TRW-S(LP-C) moved cycle
	// multipliers into tables; scores are taken on its tables.
	orig []float64
	// fwd, when not nil (TRW-S(LP-C)), receives a copy of every forward
	// message M_{u->v} at fwd[moff[e]:], so that both messages of an edge
	// are known after a backward pass.
	fwd []float64

	// Edges (s, v) with v > s are outOff[s] <= e < outOff[s+1]; edges
	// (u, s) with u < s are inE[inOff[s]:inOff[s+1]].
	outOff, inOff []int
	inE           []int32

	// A node s lies on n_s = max(#in, #out, 1) monotonic chains; gamma_s =
	// 1/n_s = recip[n_s]; the chains that end at s weigh endF = (n_s -
	// #out)/n_s (they add max(hat_s)/n_s to the bound), those that start
	// there endB = (n_s - #in)/n_s (weights). They are computed from the
	// degrees when needed, not stored per node (24 bytes a node, 24 MB on
	// a 1000x1000 grid); recip has an entry per n_s up to the largest.
	recip []float64

	// parts[c]:parts[c+1] are the nodes of part c, processed by one thread
	// each; parts[len(parts)-1]:n is the separator, processed after the
	// parts in a forward pass and before them in a backward pass (order.go).
	parts []int

	// kern[s] is the state count of node s's unrolled step (kernels.go; plus
	// kernMix when some edges are Potts),
	// 0 for the general code.
	kern []uint8
	// prefetch: data is large enough for the passes to prefetch (pass.go).
	prefetch bool

	maxCard int
}

// scratch is one thread's working memory: vectors of the largest
// cardinality.
type scratch struct {
	hat, a, lab []float64
	dt          []float64 // pairterm.Message's scratch
	_           [64]byte  // no false sharing between threads' scratch
}

// newScratch returns a thread's scratch. Its vectors are cut from one
// block with a cache line of padding at both ends: allocated one by one
// they are small objects that sit next to another thread's in memory,
// and threads that write the same cache line slow each other down.
func (g *graph) newScratch() *scratch {
	const pad = 8 // float64s: a 64-byte line
	k, d := g.maxCard, pairterm.ScratchLen(g.maxCard)
	b := make([]float64, pad+3*k+d+pad)[pad:]
	return &scratch{hat: b[:k:k], a: b[k : 2*k : 2*k], lab: b[2*k : 3*k : 3*k], dt: b[3*k : 3*k+d : 3*k+d]}
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

// pairRef is one pairwise term before the edges are laid out: factor a
// over graph nodes u < v, or link k of Sequence factor a (k >= 0); flip
// when the term's table is over (v, u).
type pairRef struct {
	u, v int32
	a, k int32
}

// newGraph lays out a reduced, pairwise model m for the given number of
// threads (see order.go): the pairwise terms, the node order, the unaries
// (theta), then the edges, merged per pair of nodes (Kolmogorov 2006,
// Sec. 2: one edge per pair, its potential the sum of the terms on it).
func newGraph(m *model.Model, threads int) (*graph, error) {
	if err := checkPairwise(m); err != nil {
		return nil, err
	}
	g := &graph{n: m.NumVars(), constant: m.Constant}
	refs, seqs, ownTheta, err := pairTerms(m)
	if err != nil {
		return nil, err
	}
	g.order, g.pos, g.parts = partition(m, refs, threads)
	if g.order == nil && !ownTheta {
		// Nodes are variables and only the unaries make theta: the graph
		// reads the model's arrays (the passes never write them) instead
		// of copying them.
		g.card, g.uoff, g.theta = m.Cards, m.UnaryOff, m.Unary
		for _, c := range g.card {
			g.maxCard = max(g.maxCard, c)
		}
		g.maxCard = max(g.maxCard, 1)
	} else {
		g.nodeArrays(m)
		g.addLowOrder(m) // without ownTheta there is nothing to add
	}
	g.sortTerms(refs)
	b := edgeBuilder{g: g, m: m, seqs: seqs, refs: refs}
	b.allocEdges()
	b.fillEdges()
	g.layout()
	g.setKernels()
	return g, nil
}

// newPottsGraph is newGraph(m, 1) of m with the Potts factors given flat
// (NewPartPotts, which checks them): the same terms in the same order
// (pottsOrder), so the same graph (pottsEdges, TestPottsGraphIsNewGraph);
// the nodes are the variables and theta m's unaries.
func newPottsGraph(m *model.Model, i, j []int32, w []float64) *graph {
	n := m.NumVars()
	g := &graph{n: n, constant: m.Constant, parts: []int{0, n}, card: m.Cards, uoff: m.UnaryOff, theta: m.Unary, maxCard: 1}
	for _, c := range g.card {
		g.maxCard = max(g.maxCard, c)
	}
	g.pottsEdges(i, j, w, pottsOrder(i, j))
	g.layout()
	g.setKernels()
	return g
}

// pairTerms lists the pairwise terms of m in factor order, over model
// variables: one per two-variable factor, one per link of a Sequence
// factor. seqs maps each Sequence factor to the offsets of its links'
// tables in its Table (from model.SequenceTransitions; all zero when the
// links share one table). ownTheta reports whether factors other than the
// pairwise ones add to the unaries (so theta must be a copy).
func pairTerms(m *model.Model) (refs []pairRef, seqs map[int32][]int, ownTheta bool, err error) {
	nrefs := 0
	for a := range m.Factors {
		f := &m.Factors[a]
		switch {
		case f.Kind == model.Sequence:
			nrefs += len(f.Vars) - 1
			ownTheta = ownTheta || f.EmissionScores() != nil
		case len(f.Vars) == 2:
			nrefs++
		default:
			ownTheta = true
		}
	}
	refs = make([]pairRef, 0, nrefs)
	seqs = map[int32][]int{}
	add := func(x, y int, a, k int32) {
		refs = append(refs, pairRef{u: int32(x), v: int32(y), a: a, k: k})
	}
	for a := range m.Factors {
		f := &m.Factors[a]
		switch {
		case f.Kind == model.Sequence:
			shared, offs, err := model.SequenceTransitions(m, f)
			if err != nil {
				return nil, nil, false, fmt.Errorf("trws: factor %d (sequence): %w", a, err)
			}
			o := make([]int, len(f.Vars)-1)
			if !shared {
				copy(o, offs)
			}
			seqs[int32(a)] = o
			for k := 0; k+1 < len(f.Vars); k++ {
				add(f.Vars[k], f.Vars[k+1], int32(a), int32(k))
			}
		case len(f.Vars) == 2:
			add(f.Vars[0], f.Vars[1], int32(a), -1)
		}
	}
	return refs, seqs, ownTheta, nil
}

// node returns the graph node of model variable v.
func (g *graph) node(v int32) int32 {
	if g.pos == nil {
		return v
	}
	return g.pos[v]
}

// addLowOrder adds the factors of m over fewer than two variables, and the
// emission scores of Sequence factors, to theta (a copy made by
// nodeArrays) and the constant.
func (g *graph) addLowOrder(m *model.Model) {
	for a := range m.Factors {
		f := &m.Factors[a]
		switch {
		case f.Kind == model.Sequence:
			emission := f.EmissionScores()
			if emission == nil {
				continue
			}
			eoff := 0
			for _, v := range f.Vars {
				s := g.node(int32(v))
				u := g.theta[g.uoff[s]:g.uoff[s+1]]
				for i := range u {
					u[i] += emission[eoff+i]
				}
				eoff += len(u)
			}
		case len(f.Vars) == 0:
			g.constant += m.DenseTable(a)[0]
		case len(f.Vars) == 1:
			s := g.node(int32(f.Vars[0]))
			u := g.theta[g.uoff[s]:g.uoff[s+1]]
			for i, t := range m.DenseTable(a) {
				u[i] += t
			}
		}
	}
}

// sortTerms renumbers the terms' ends as graph nodes and sorts them
// (stably) by (earlier, later) end, so that the terms of an edge are
// consecutive and the edges come in layout order.
func (g *graph) sortTerms(refs []pairRef) {
	for i := range refs {
		r := &refs[i]
		r.u, r.v = g.node(r.u), g.node(r.v)
	}
	sortPairRefs(refs, g.n)
}

// comparePairs orders terms by their smaller end, then their larger one.
func comparePairs(x, y pairRef) int {
	if c := cmp.Compare(min(x.u, x.v), min(y.u, y.v)); c != 0 {
		return c
	}
	return cmp.Compare(max(x.u, x.v), max(y.u, y.v))
}

// shortRun is the longest run of terms with one smaller end that
// sortPairRefs sorts by insertion.
const shortRun = 32

// sortPairRefs sorts refs (ends below n) by comparePairs, stably: the
// order slices.SortStableFunc gives (so the tables of several terms over
// one pair are summed in the same order), in O(len(refs) + n) time when
// nodes have few later neighbours, where the merge sort took
// O(len log^2 len) (a quarter of a part's set-up on a grid): a counting
// sort by the smaller end into a permutation, each run of equal smaller
// ends then sorted by the larger end, and the permutation applied in place
// by its cycles. Already sorted terms (a grid read row by row, most
// files) are only checked.
func sortPairRefs(refs []pairRef, n int) {
	if slices.IsSortedFunc(refs, comparePairs) {
		return
	}
	if len(refs) >= math.MaxInt32 || n >= math.MaxInt32 {
		slices.SortStableFunc(refs, comparePairs)
		return
	}
	// end[v]: after the counting, one past the last slot of the terms
	// whose smaller end is v (the first is end[v-1], or 0).
	end := make([]int32, n)
	for _, r := range refs {
		end[min(r.u, r.v)]++
	}
	sum := int32(0)
	for v, c := range end {
		end[v] = sum
		sum += c
	}
	perm := make([]int32, len(refs)) // perm[slot] is the term that goes there
	for i, r := range refs {
		lo := min(r.u, r.v)
		perm[end[lo]] = int32(i)
		end[lo]++
	}
	sortRuns(perm, end, func(p int32) int32 { return max(refs[p].u, refs[p].v) })
	for i := range perm { // refs[slot] = old refs[perm[slot]], cycle by cycle
		if perm[i] < 0 || int(perm[i]) == i {
			continue
		}
		first := refs[i]
		j := i
		for {
			k := int(perm[j])
			perm[j] = -1
			if k == i {
				refs[j] = first
				break
			}
			refs[j] = refs[k]
			j = k
		}
	}
}

// sortRuns sorts each run s[end[v-1]:end[v]] (the first from 0) stably by
// larger: by insertion when it is short, by a merge sort otherwise.
func sortRuns[T any](s []T, end []int32, larger func(T) int32) {
	from := int32(0)
	for _, to := range end {
		run := s[from:to]
		from = to
		if len(run) <= shortRun {
			for i := 1; i < len(run); i++ { // insertion: stable
				p := run[i]
				j := i
				for ; j > 0 && larger(run[j-1]) > larger(p); j-- {
					run[j] = run[j-1]
				}
				run[j] = p
			}
			continue
		}
		slices.SortStableFunc(run, func(a, b T) int { return cmp.Compare(larger(a), larger(b)) })
	}
}

// pottsOrder returns the terms (i[a], j[a]) of newPottsGraph (nodes are
// variables) in the order sortPairRefs gives their pairRefs: order[k] is
// the k-th term, nil when they come in that order already (checked). The
// same counting sort by the smaller end and stable sort of each run by the
// larger end, on term numbers (4 bytes a term) rather than on pairRefs
// listed first unsorted (16 bytes a term, and 4 of permutation: 20 MB on
// half a 1000x1000 grid, whose rows list their horizontal edges before
// their vertical ones) and then moved by the permutation's cycles.
func pottsOrder(i, j []int32) []int32 {
	hi, sorted := int32(-1), true
	for a := range i {
		lo, up := min(i[a], j[a]), max(i[a], j[a])
		if a > 0 && sorted {
			plo, pup := min(i[a-1], j[a-1]), max(i[a-1], j[a-1])
			sorted = plo < lo || plo == lo && pup <= up
		}
		hi = max(hi, lo)
	}
	if sorted {
		return nil
	}
	// end[v]: after the counting, one past the last slot of the terms
	// whose smaller end is v (the first is end[v-1], or 0).
	end := make([]int32, hi+1)
	for a := range i {
		end[min(i[a], j[a])]++
	}
	sum := int32(0)
	for v, c := range end {
		end[v] = sum
		sum += c
	}
	order := make([]int32, len(i))
	for a := range i {
		lo := min(i[a], j[a])
		order[end[lo]] = int32(a)
		end[lo]++
	}
	sortRuns(order, end, func(a int32) int32 { return max(i[a], j[a]) })
	return order
}

// pottsEdges lays out the edges of newPottsGraph as edgeBuilder does from
// the same terms as pairRefs (allocEdges, fillEdges): one edge per run of
// terms over one pair of nodes in the order of pottsOrder (nil: the
// terms' own), its weight pw the sum of theirs in that order, the edge
// arrays sized alike; read from i, j and w, with no pairRef per term.
func (g *graph) pottsEdges(i, j []int32, w []float64, order []int32) {
	term := func(k int) int32 {
		if order == nil {
			return int32(k)
		}
		return order[k]
	}
	// One pass, into arrays of an edge a term (the most there can be);
	// repeated pairs (fewer edges) are copied to their length after.
	nt := len(w)
	g.eu, g.ev = make([]int32, nt), make([]int32, nt)
	g.moff, g.toff = make([]int, nt), make([]int, nt)
	pw := make([]float64, nt)
	e, off := -1, 0
	for k := range w {
		a := term(k)
		if lo, up := min(i[a], j[a]), max(i[a], j[a]); e < 0 || lo != g.eu[e] || up != g.ev[e] {
			e++
			g.eu[e], g.ev[e] = lo, up
			g.moff[e], g.toff[e] = off, -1
			off += max(g.card[lo], g.card[up])
		}
		pw[e] += w[a]
	}
	ne := e + 1
	if ne < nt {
		g.eu, g.ev = slices.Clone(g.eu[:ne]), slices.Clone(g.ev[:ne])
		g.moff, g.toff, pw = slices.Clone(g.moff[:ne]), slices.Clone(g.toff[:ne]), slices.Clone(pw[:ne])
	}
	g.tab = make([]*float64, ne)
	if ne > 0 { // pw is read at Potts edges only (nil when there are none, as allocEdges leaves it)
		g.pw = pw
	}
	g.data = make([]float64, off)
	g.own = make([]float64, 0)
}

// edgeBuilder makes the edges of g from the sorted pairwise terms of m
// (sortTerms): one edge per run of terms over the same pair of nodes.
type edgeBuilder struct {
	g    *graph
	m    *model.Model
	seqs map[int32][]int // see pairTerms
	refs []pairRef
}

// group returns the end j of the run of terms refs[i:j] over the pair of
// nodes u < v of refs[i], and whether all of them are Potts factors.
func (b *edgeBuilder) group(i int) (j int, u, v int32, potts bool) {
	refs := b.refs
	u, v = min(refs[i].u, refs[i].v), max(refs[i].u, refs[i].v)
	j, potts = i, true
	for ; j < len(refs) && min(refs[j].u, refs[j].v) == u && max(refs[j].u, refs[j].v) == v; j++ {
		potts = potts && refs[j].k < 0 && b.m.Factors[refs[j].a].Kind == model.Potts
	}
	return j, u, v, potts
}

// truncated reports whether a pair has a single truncated factor, which
// keeps its structure (an O(L) message, see internal/pairterm).
func (b *edgeBuilder) truncated(group []pairRef) bool {
	return len(group) == 1 && group[0].k < 0 && b.m.Factors[group[0].a].Kind.IsTruncated()
}

// table returns the dense table of term r, over (r.u, r.v), row r.u: a
// Sequence link's slice of its factor's Table, or the factor's DenseTable.
func (b *edgeBuilder) table(r pairRef) []float64 {
	if r.k >= 0 {
		f := &b.m.Factors[r.a]
		c0, c1 := b.m.Cards[f.Vars[r.k]], b.m.Cards[f.Vars[r.k+1]]
		o := b.seqs[r.a][r.k]
		return f.Table[o : o+c0*c1]
	}
	return b.m.DenseTable(int(r.a))
}

// inPlace returns the table of a dense edge made by the single term r over
// (u, v) as it lies in the model (or as DenseTable made it), nil when the
// edge needs a table of its own: several terms, or a scope in the other
// order.
func (b *edgeBuilder) inPlace(group []pairRef, u int32) []float64 {
	if len(group) != 1 || group[0].u != u {
		return nil
	}
	return b.table(group[0])
}

// allocEdges counts the edges and their storage (messages in data, the
// tables TRW-S makes in own) and allocates the edge arrays of g.
func (b *edgeBuilder) allocEdges() {
	g, refs := b.g, b.refs
	ne, size, ownSize, npotts := 0, 0, 0, 0
	for i := 0; i < len(refs); {
		j, u, v, potts := b.group(i)
		ku, kv := g.card[u], g.card[v]
		size += max(ku, kv)
		switch {
		case potts:
			npotts++
		case b.truncated(refs[i:j]):
		case j-i == 1 && refs[i].u == u: // in place, or DenseTable's
		default:
			ownSize += ku * kv
		}
		ne++
		i = j
	}
	g.eu, g.ev = make([]int32, ne), make([]int32, ne)
	g.moff, g.toff = make([]int, ne), make([]int, ne)
	g.tab = make([]*float64, ne)
	if npotts > 0 { // pw is read at Potts edges only
		g.pw = make([]float64, ne)
	}
	g.data = make([]float64, size)
	g.own = make([]float64, ownSize)
}

// fillEdges sets every edge's ends, message offset and potential: a Potts
// weight (the sum of the pair's Potts factors), a truncated term, a table
// read in place, or a table of its own in own (sumTerms).
func (b *edgeBuilder) fillEdges() {
	g, refs := b.g, b.refs
	e, off, ownOff := 0, 0, 0
	for i := 0; i < len(refs); e++ {
		j, u, v, potts := b.group(i)
		group := refs[i:j]
		i = j
		ku, kv := g.card[u], g.card[v]
		g.eu[e], g.ev[e] = u, v
		g.moff[e] = off
		off += max(ku, kv)
		g.toff[e] = -1
		switch {
		case potts:
			for _, r := range group {
				g.pw[e] += b.m.Factors[r.a].Weight
			}
		case b.truncated(group):
			f := &b.m.Factors[group[0].a]
			kind := pairterm.TruncLinear
			if f.Kind == model.TruncQuad {
				kind = pairterm.TruncQuad
			}
			g.toff[e] = -2 - len(g.terms)
			g.terms = append(g.terms, pairterm.Term{Kind: kind, W: f.Weight, T: f.Trunc})
		default:
			g.toff[e] = 0
			g.tabLen += ku * kv
			if t := b.inPlace(group, u); t != nil {
				g.tab[e] = &t[0]
				break
			}
			t := g.own[ownOff : ownOff+ku*kv]
			ownOff += ku * kv
			g.tab[e] = &t[0]
			g.copied++
			b.sumTerms(t, group, u, ku, kv)
		}
	}
}

// sumTerms adds the tables of the terms in group, over nodes u < v with
// ku and kv states, to t (row x_u, column x_v), transposing those whose
// scope is (v, u).
func (b *edgeBuilder) sumTerms(t []float64, group []pairRef, u int32, ku, kv int) {
	for _, r := range group {
		if r.k < 0 && b.m.Factors[r.a].Kind == model.Potts {
			w := b.m.Factors[r.a].Weight
			for x := range min(ku, kv) {
				t[x*kv+x] += w
			}
			continue
		}
		tab := b.table(r)
		// tab is over (r.u, r.v), row r.u.
		if r.u == u {
			for x := range t {
				t[x] += tab[x]
			}
		} else {
			for y := range kv {
				for x := range ku {
					t[x*kv+y] += tab[y*ku+x]
				}
			}
		}
	}
}

// nodeArrays fills the node arrays (cardinalities, unary offsets and
// unaries) in node order, theta a copy that factors may add to.
func (g *graph) nodeArrays(m *model.Model) {
	n := g.n
	g.card, g.uoff = make([]int, n), make([]int, n+1)
	for s := range n {
		v := s
		if g.order != nil {
			v = int(g.order[s])
		}
		g.card[s] = m.Cards[v]
		g.uoff[s+1] = g.uoff[s] + g.card[s]
		g.maxCard = max(g.maxCard, g.card[s])
	}
	g.maxCard = max(g.maxCard, 1)
	g.theta = make([]float64, g.uoff[n])
	for s := range n {
		v := s
		if g.order != nil {
			v = int(g.order[s])
		}
		copy(g.theta[g.uoff[s]:g.uoff[s+1]], m.Unary[m.UnaryOff[v]:m.UnaryOff[v+1]])
	}
}

// layout fills the adjacency and the chain weights from eu, ev (sorted).
func (g *graph) layout() {
	n, ne := g.n, len(g.eu)
	g.outOff, g.inOff = make([]int, n+1), make([]int, n+1)
	for e := range ne {
		g.outOff[g.eu[e]+1]++
		g.inOff[g.ev[e]+1]++
	}
	for s := range n {
		g.outOff[s+1] += g.outOff[s]
		g.inOff[s+1] += g.inOff[s]
	}
	// inOff[v] is the next slot of v's in-edges while they are placed
	// (it ends at inOff[v+1]'s value), then shifted back: no cursor array
	// beside it (8 bytes a node).
	g.inE = make([]int32, ne)
	for e := range ne {
		v := g.ev[e]
		g.inE[g.inOff[v]] = int32(e)
		g.inOff[v]++
	}
	copy(g.inOff[1:], g.inOff[:n])
	g.inOff[0] = 0
	maxNs := 1
	for s := range n {
		maxNs = max(maxNs, g.inOff[s+1]-g.inOff[s], g.outOff[s+1]-g.outOff[s])
	}
	g.recip = make([]float64, maxNs+1)
	for ns := 1; ns <= maxNs; ns++ {
		g.recip[ns] = 1 / float64(ns)
	}
}

// weights returns node s's n_s, gamma_s and the weights endF and endB of
// the chains that end and start at s (see recip).
func (g *graph) weights(s int) (ns int, gamma, endF, endB float64) {
	nIn, nOut := g.inOff[s+1]-g.inOff[s], g.outOff[s+1]-g.outOff[s]
	ns = max(nIn, nOut, 1)
	return ns, g.recip[ns], float64(ns-nOut) / float64(ns), float64(ns-nIn) / float64(ns)
}

// table returns dense edge e's table (toff[e] >= 0), ku*kv entries, row
// x_u: the model's, own's or (TRW-S(LP-C)) data's memory, which only
// TRW-S(LP-C)'s cycle steps write (cycles.go), and then only in data.
func (g *graph) table(e int) []float64 {
	return unsafe.Slice(g.tab[e], g.card[g.eu[e]]*g.card[g.ev[e]])
}

// score returns the exact score of x (in node numbering) under the graph's
// potentials (the reduced model's score, up to the order of the additions):
// with TRW-S(LP-C), on the tables before it changed them (orig).
func (g *graph) score(x []int) float64 {
	s := g.constant
	theta := g.theta
	if g.origTheta != nil {
		theta = g.origTheta
	}
	for i := 0; i < g.n; i++ {
		s += theta[g.uoff[i]+x[i]]
	}
	for e := range g.eu {
		xu, xv := x[g.eu[e]], x[g.ev[e]]
		if t := g.toff[e]; t >= 0 && g.orig != nil {
			s += g.orig[t+xu*g.card[g.ev[e]]+xv]
		} else {
			s += g.pairScore(e, xu, xv)
		}
	}
	return s
}

// pairScore returns edge e's score at (xu, xv), on its current table.
func (g *graph) pairScore(e, xu, xv int) float64 {
	switch t := g.toff[e]; {
	case t >= 0:
		return g.table(e)[xu*g.card[g.ev[e]]+xv]
	case t == -1:
		if xu == xv {
			return g.pw[e]
		}
		return 0
	default:
		return g.terms[-2-t].Theta(xu, xv)
	}
}

// densify gives every edge a dense table beside its message in data
// (TRW-S(LP-C) changes edge tables entry by entry; the model's must stay
// as they are): it lays data out afresh, messages included, points tab
// into it and drops own.
func (g *graph) densify() {
	size := 0
	for e := range g.eu {
		ku, kv := g.card[g.eu[e]], g.card[g.ev[e]]
		size += max(ku, kv) + ku*kv
	}
	data := make([]float64, size)
	off := 0
	for e := range g.eu {
		ku, kv := g.card[g.eu[e]], g.card[g.ev[e]]
		k := max(ku, kv)
		copy(data[off:off+k], g.data[g.moff[e]:g.moff[e]+k])
		t := data[off+k : off+k+ku*kv]
		switch {
		case g.toff[e] == -1:
			for i := range min(ku, kv) {
				t[i*kv+i] = g.pw[e]
			}
		case g.toff[e] < -1:
			g.terms[-2-g.toff[e]].Fill(t, ku)
		default:
			copy(t, g.table(e))
		}
		g.moff[e], g.toff[e] = off, off+k
		g.tab[e] = &t[0]
		off += k + ku*kv
	}
	g.data = data
	g.own, g.copied, g.tabLen = nil, 0, 0
}

// enableLPC prepares the graph for TRW-S(LP-C): dense tables, a copy of
// them for the scores, and the copies of the forward messages.
func (g *graph) enableLPC() {
	g.densify()
	g.orig = append([]float64(nil), g.data...)
	g.fwd = make([]float64, len(g.data))
	g.setKernels() // the general code, which copies the forward messages
}

// assignment maps x (node numbering) to the model's variables.
func (g *graph) assignment(x []int) []int {
	out := make([]int, g.n)
	for s, v := range x {
		if g.order != nil {
			out[g.order[s]] = v
		} else {
			out[s] = v
		}
	}
	return out
}
