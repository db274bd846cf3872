package tighten

import (
	"container/heap"
	"fmt"
	"math"
	"slices"

	"github.com/ddrun/ddrun/model"
)

// Signal is what a relaxation's solution tells cycle pursuit.
type Signal struct {
	// Mu, when not nil, holds node marginals laid out like the model's
	// Unary (solver.Result.Mu of DD-ADMM, DD-subgradient, TRW-S or cmp).
	// A cycle through a variable whose marginal is integral (largest entry
	// at least 1 - PursueOptions.Integral) cannot violate a cycle
	// inequality: the pairwise marginals of a path through a fixed state
	// are consistent. Such variables are left out of the search, unless
	// every variable is integral (a solver that reports decoded indicators
	// only), and each variable's projection is its largest entry.
	Mu []float64
}

// PursueOptions bounds one round of cycle pursuit.
type PursueOptions struct {
	// MaxTable bounds the entries of one cycle factor, the product of its
	// variables' cardinalities (default 4096: binary cycles of up to 12
	// variables, ternary of up to 7).
	MaxTable int
	// MaxAdd is the most cycles added per round (default 20).
	MaxAdd int
	// MaxLen is the longest cycle searched for (default 12).
	MaxLen int
	// Integral is the tolerance under which a marginal counts as integral
	// (default 1e-3).
	Integral float64
}

func (o *PursueOptions) defaults() error {
	switch {
	case o.MaxTable < 0:
		return fmt.Errorf("tighten: MaxTable %d is negative", o.MaxTable)
	case o.MaxAdd < 0:
		return fmt.Errorf("tighten: MaxAdd %d is negative", o.MaxAdd)
	case o.MaxLen < 0:
		return fmt.Errorf("tighten: MaxLen %d is negative", o.MaxLen)
	case o.Integral < 0 || o.Integral >= 1 || math.IsNaN(o.Integral):
		return fmt.Errorf("tighten: Integral %v is not in [0, 1)", o.Integral)
	}
	if o.MaxTable == 0 {
		o.MaxTable = 4096
	}
	if o.MaxAdd == 0 {
		o.MaxAdd = 20
	}
	if o.MaxLen == 0 {
		o.MaxLen = 12
	}
	if o.Integral == 0 {
		o.Integral = 1e-3
	}
	return nil
}

// Pursuit is incremental cycle pursuit on a model's pairwise edges, in the
// spirit of Sontag et al. (UAI 2008, "Tightening LP relaxations for MAP
// using message passing", Sect. 4: add the cycles the current solution
// violates most, re-solve, repeat) with the cycle search of Sontag, Choe
// & Li (UAI 2012, "Efficiently searching for frustrated cycles in MAP
// inference", Sect. 3-4).
//
// Each round projects every variable to a binary one (its preferred state
// against the others, Sect. 3's single-state projection), gives every edge
// i-j the sign and weight of its projected belief
//
//	b_ij(a, b) = theta_ij(a, b) + theta_i(a)/deg_i + theta_j(b)/deg_j
//	w_ij = max_{[a=s_i] = [b=s_j]} b_ij - max_{[a=s_i] != [b=s_j]} b_ij
//
// (attractive when w > 0, repulsive when w < 0), and looks for frustrated
// cycles: cycles with an odd number of repulsive edges, which no assignment
// satisfies edge by edge. Their bound decrease is estimated by the weakest
// edge, min |w| (Sect. 3). For every variable i the search finds, in the
// doubled graph whose attractive edges join copies of the same side and
// repulsive edges cross sides (Sect. 4), the path from (i, 0) to (i, 1)
// whose weakest edge is strongest (fewest edges among those): a frustrated
// cycle through i. The round adds the MaxAdd best new cycles.
//
// Each added cycle becomes one factor over all its variables, made of its
// edges' tables (regroup, as Cycles does). A triangulation into triplets
// would not tighten this LP: ddrun's relaxations (and internal/oracle's)
// make factors agree on single-variable marginals only, so triplets sharing
// a chord would not agree on the chord's pairwise marginal, and the LP of
// the triangulated cycle is the LP of the cycle. The table bound
// (MaxTable) therefore limits the cycles to short or small-domain ones.
type Pursuit struct {
	base   *model.Model
	opts   PursueOptions
	tables map[edge][]float64
	adj    [][]int
	cycles [][]int
	have   map[string]bool
}

// NewPursuit starts cycle pursuit on m (its pairwise Dense, Pair and Potts
// factors over two variables make the edges).
func NewPursuit(m *model.Model, opts PursueOptions) (*Pursuit, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("tighten: %w", err)
	}
	tables, _ := edgeTables(m)
	adj := make([][]int, m.NumVars())
	for e := range tables {
		adj[e.u] = append(adj[e.u], e.v)
		adj[e.v] = append(adj[e.v], e.u)
	}
	for i := range adj {
		slices.Sort(adj[i])
	}
	return &Pursuit{base: m, opts: opts, tables: tables, adj: adj, have: map[string]bool{}}, nil
}

// Cycles returns the cycles added so far (do not modify them).
func (p *Pursuit) Cycles() [][]int { return p.cycles }

// Pursue runs one round of cycle pursuit on m (NewPursuit, then Round).
func Pursue(m *model.Model, sig Signal, opts PursueOptions) (*model.Model, int, error) {
	p, err := NewPursuit(m, opts)
	if err != nil {
		return nil, 0, err
	}
	return p.Round(sig)
}

// Round finds up to MaxAdd frustrated cycles not added before, under the
// signal of the current relaxation's solution, and returns the base model
// regrouped over all cycles added so far (same variables, same score for
// every assignment) and how many this round added; 0 means the search
// found nothing new (the model returned is then the previous round's).
func (p *Pursuit) Round(sig Signal) (*model.Model, int, error) {
	m := p.base
	if sig.Mu != nil && len(sig.Mu) != len(m.Unary) {
		return nil, 0, fmt.Errorf("tighten: signal has %d marginals, the model %d unary entries", len(sig.Mu), len(m.Unary))
	}
	for k, v := range sig.Mu {
		if math.IsNaN(v) {
			return nil, 0, fmt.Errorf("tighten: signal marginal %d is NaN", k)
		}
	}
	label, active := p.project(sig)
	w := p.weights(label)
	// The weights beside the adjacency lists, for the search's inner loop.
	wadj := make([][]float64, len(p.adj))
	for u, vs := range p.adj {
		wadj[u] = make([]float64, len(vs))
		for k, v := range vs {
			wadj[u][k] = w[edge{min(u, v), max(u, v)}]
		}
	}
	var cand []scored
	seen := map[string]bool{}
	s := newWidest(m.NumVars())
	for i := range m.NumVars() {
		if !active[i] || len(p.adj[i]) < 2 {
			continue
		}
		c, b := s.cycle(i, p.adj, wadj, active, w, p.opts.MaxLen)
		if c == nil || !p.fits(c) {
			continue
		}
		key := cycleKey(c)
		if seen[key] || p.have[key] {
			continue
		}
		seen[key] = true
		cand = append(cand, scored{c, b})
	}
	slices.SortStableFunc(cand, func(x, y scored) int {
		if x.bottleneck != y.bottleneck {
			if x.bottleneck > y.bottleneck {
				return -1
			}
			return 1
		}
		return len(x.c) - len(y.c)
	})
	added := 0
	for _, c := range cand {
		if added == p.opts.MaxAdd {
			break
		}
		p.cycles = append(p.cycles, c.c)
		p.have[cycleKey(c.c)] = true
		added++
	}
	out, _, err := regroup(m, p.cycles)
	if err != nil {
		return nil, 0, err
	}
	return out, added, nil
}

type scored struct {
	c          []int
	bottleneck float64
}

// fits reports whether the factor of cycle c stays within MaxTable.
func (p *Pursuit) fits(c []int) bool {
	n := 1
	for _, v := range c {
		n *= p.base.Cards[v]
		if n > p.opts.MaxTable {
			return false
		}
	}
	return true
}

// project picks each variable's preferred state (the largest marginal, or
// the largest unary without marginals) and the variables the search may
// use (those with fractional marginals, or all).
func (p *Pursuit) project(sig Signal) (label []int, active []bool) {
	m := p.base
	label = make([]int, m.NumVars())
	active = make([]bool, m.NumVars())
	any := false
	for i := range m.NumVars() {
		src := m.Unary[m.UnaryOff[i]:m.UnaryOff[i+1]]
		if sig.Mu != nil {
			src = sig.Mu[m.UnaryOff[i]:m.UnaryOff[i+1]]
		}
		best := 0
		for s, v := range src {
			if v > src[best] {
				best = s
			}
		}
		label[i] = best
		active[i] = sig.Mu == nil || src[best] < 1-p.opts.Integral
		any = any || active[i]
	}
	if !any {
		for i := range active {
			active[i] = true
		}
	}
	return label, active
}

// weights returns the signed weight w_ij of every edge under the projection
// label (see Pursuit); infinite differences (hard constraints) count as
// large finite ones, and an edge indifferent to agreement gets 0.
func (p *Pursuit) weights(label []int) map[edge]float64 {
	m := p.base
	deg := make([]float64, m.NumVars())
	for i, a := range p.adj {
		deg[i] = float64(len(a))
	}
	w := make(map[edge]float64, len(p.tables))
	for e, t := range p.tables {
		cu, cv := m.Cards[e.u], m.Cards[e.v]
		uu := m.Unary[m.UnaryOff[e.u]:m.UnaryOff[e.u+1]]
		uv := m.Unary[m.UnaryOff[e.v]:m.UnaryOff[e.v+1]]
		agree, disagree := math.Inf(-1), math.Inf(-1)
		for a := range cu {
			for b := range cv {
				x := t[a*cv+b] + uu[a]/deg[e.u] + uv[b]/deg[e.v]
				if (a == label[e.u]) == (b == label[e.v]) {
					agree = math.Max(agree, x)
				} else {
					disagree = math.Max(disagree, x)
				}
			}
		}
		const big = 1e9
		var d float64
		switch {
		case math.IsInf(agree, -1) && math.IsInf(disagree, -1):
			d = 0
		case math.IsInf(disagree, -1):
			d = big
		case math.IsInf(agree, -1):
			d = -big
		default:
			d = math.Max(-big, math.Min(big, agree-disagree))
		}
		w[e] = d
	}
	return w
}

// cycleKey is a cycle's canonical name: its variables sorted (a cycle
// through a set of variables is not unique in general, but the regrouped
// factor over them holds any of them).
func cycleKey(c []int) string {
	s := slices.Clone(c)
	slices.Sort(s)
	return fmt.Sprint(s)
}

// widest is the search of the doubled graph: node 2v+side.
type widest struct {
	width []float64 // the best bottleneck reaching each node (-1: none)
	hops  []int
	prev  []int
	h     widestHeap
	seen  []int // nodes touched by the current search, to reset
}

func newWidest(n int) *widest {
	s := &widest{width: make([]float64, 2*n), hops: make([]int, 2*n), prev: make([]int, 2*n)}
	for i := range s.width {
		s.width[i] = -1
	}
	return s
}

// cycle finds the path from (i,0) to (i,1) in the doubled graph over the
// active variables, of at most maxLen edges, whose weakest edge is the
// strongest (then the fewest edges), and returns it as a simple frustrated
// cycle with its weakest weight; nil when there is none.
func (s *widest) cycle(i int, adj [][]int, wadj [][]float64, active []bool, w map[edge]float64, maxLen int) ([]int, float64) {
	for _, x := range s.seen {
		s.width[x] = -1
	}
	s.seen = s.seen[:0]
	s.h = s.h[:0]
	src, dst := 2*i, 2*i+1
	s.width[src], s.hops[src], s.prev[src] = math.Inf(1), 0, -1
	s.seen = append(s.seen, src)
	heap.Push(&s.h, item{src, math.Inf(1), 0})
	for s.h.Len() > 0 {
		it := heap.Pop(&s.h).(item)
		if it.width < s.width[it.node] || (it.width == s.width[it.node] && it.hops > s.hops[it.node]) {
			continue // stale
		}
		if it.node == dst {
			break
		}
		if it.hops == maxLen {
			continue
		}
		u, side := it.node/2, it.node%2
		for k, v := range adj[u] {
			if !active[v] {
				continue
			}
			wt := wadj[u][k]
			if wt == 0 {
				continue
			}
			to := 2*v + side
			if wt < 0 {
				to = 2*v + 1 - side
			}
			if v == i && to != dst {
				continue // back to the source's own side
			}
			bw := math.Min(it.width, math.Abs(wt))
			if bw > s.width[to] || (bw == s.width[to] && it.hops+1 < s.hops[to]) {
				if s.width[to] < 0 {
					s.seen = append(s.seen, to)
				}
				s.width[to], s.hops[to], s.prev[to] = bw, it.hops+1, it.node
				heap.Push(&s.h, item{to, bw, it.hops + 1})
			}
		}
	}
	if s.width[dst] < 0 {
		return nil, 0
	}
	// The walk's variables, from i back to i.
	var walk []int
	for x := dst; x != src; x = s.prev[x] {
		walk = append(walk, x/2)
	}
	walk = append(walk, i) // walk[0] = walk[len-1] = i
	// A walk through some variable twice (once per side) holds an odd
	// closed walk between the two visits: cut to it until the walk is a
	// simple cycle. Visiting the same copy twice cannot happen (the
	// predecessors form a tree).
	for {
		first := map[int]int{}
		cut := false
		for k, v := range walk[:len(walk)-1] {
			if j, ok := first[v]; ok {
				walk = walk[j : k+1]
				cut = true
				break
			}
			first[v] = k
		}
		if !cut {
			break
		}
	}
	c := walk[:len(walk)-1]
	if len(c) < 3 {
		return nil, 0
	}
	b := math.Inf(1)
	for _, e := range cycleEdges(c) {
		b = math.Min(b, math.Abs(w[e]))
	}
	return slices.Clone(c), b
}

type item struct {
	node  int
	width float64
	hops  int
}

type widestHeap []item

func (h widestHeap) Len() int { return len(h) }
func (h widestHeap) Less(i, j int) bool {
	if h[i].width != h[j].width {
		return h[i].width > h[j].width
	}
	return h[i].hops < h[j].hops
}
func (h widestHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *widestHeap) Push(x any)   { *h = append(*h, x.(item)) }
func (h *widestHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
