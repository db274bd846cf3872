// Package tighten strengthens the LP relaxation of a pairwise model without
// changing its MAP problem: Cycles regroups the pairwise potentials into
// factors over short cycles (3- and 4-cycles; every 4-cycle of a grid), so
// that any dual solver (DD-ADMM with one slave per factor, TRW-S, ...)
// enforces the consistency of the pairwise marginals around each cycle, in
// the spirit of the cycle inequalities of Kumar & Torr (ICML 2008) and
// Sontag et al. (UAI 2008). Pursuit (Pursue) instead adds, round by round,
// the frustrated cycles of any length that a relaxation's current solution
// points at (Sontag et al., UAI 2008 and UAI 2012).
//
// It only transforms models; it must not know about solvers.
package tighten

import (
	"fmt"
	"slices"

	"github.com/ddrun/ddrun/model"
)

// Options bounds the transformation.
type Options struct {
	// MaxTable bounds the entries of one cycle factor (the product of its
	// variables' cardinalities); longer cycles or bigger domains are
	// skipped (default 4096).
	MaxTable int
	// MaxCycles bounds the number of cycles (default 1e6).
	MaxCycles int
}

// Stats describes a transformation.
type Stats struct {
	Triangles, Squares int // cycles turned into factors
	Edges, Covered     int // pairwise edges, and those in some cycle
}

type edge struct{ u, v int } // u < v

// Cycles returns a model with the same variables, unaries, constant and
// score as m, in which the pairwise factors that lie on short cycles are
// replaced by one dense factor per cycle: each edge's table (the sum of the
// pairwise factors on that pair) is split equally among the cycles that
// contain it, so the total score of every assignment is unchanged.
func Cycles(m *model.Model, opts Options) (*model.Model, Stats, error) {
	cycles, st, err := FindCycles(m, opts)
	if err != nil {
		return nil, st, err
	}
	out, covered, err := regroup(m, cycles)
	st.Covered = covered
	if err != nil {
		return nil, st, err
	}
	return out, st, nil
}

// edgeTables returns the sum of the pairwise factors on each pair of m
// (rows indexed by the smaller variable) and m's other factors.
func edgeTables(m *model.Model) (tables map[edge][]float64, keep []model.Factor) {
	tables = map[edge][]float64{}
	for a := range m.Factors {
		f := &m.Factors[a]
		if !pairwise(f) {
			keep = append(keep, *f)
			continue
		}
		u, v := f.Vars[0], f.Vars[1]
		t := m.DenseTable(a)
		e := edge{u, v}
		if u > v {
			e = edge{v, u}
			t = transpose(t, m.Cards[u], m.Cards[v])
		}
		if old, ok := tables[e]; ok {
			sum := make([]float64, len(t))
			for i := range t {
				sum[i] = old[i] + t[i]
			}
			t = sum
		}
		tables[e] = t
	}
	return tables, keep
}

// cycleEdges lists the edges of cycle c (consecutive variables, and the
// last with the first).
func cycleEdges(c []int) []edge {
	es := make([]edge, len(c))
	for k := range c {
		u, v := c[k], c[(k+1)%len(c)]
		if u > v {
			u, v = v, u
		}
		es[k] = edge{u, v}
	}
	return es
}

// regroup returns m with the pairwise factors on the edges of cycles
// replaced by one dense factor per cycle: each edge's table (the sum of the
// pairwise factors on that pair) is split equally among the cycles that
// contain it, so the total score of every assignment is unchanged. covered
// is the number of edges in some cycle. Every edge of every cycle must be
// an edge of m.
func regroup(m *model.Model, cycles [][]int) (out *model.Model, covered int, err error) {
	tables, keep := edgeTables(m)
	// How many cycles share each edge.
	share := map[edge]int{}
	for _, c := range cycles {
		for _, e := range cycleEdges(c) {
			if _, ok := tables[e]; !ok {
				return nil, 0, fmt.Errorf("tighten: cycle %v: no pairwise factor on %d-%d", c, e.u, e.v)
			}
			share[e]++
		}
	}
	out = &model.Model{Cards: m.Cards, UnaryOff: m.UnaryOff, Unary: m.Unary, Constant: m.Constant}
	out.Factors = append(out.Factors, keep...)
	for e, t := range tables {
		if share[e] == 0 {
			out.Factors = append(out.Factors, model.Factor{Kind: model.Dense, Vars: []int{e.u, e.v}, Table: t})
		}
	}
	for _, c := range cycles {
		out.Factors = append(out.Factors, cycleFactor(m, c, cycleEdges(c), tables, share))
	}
	// Deterministic factor order: map iteration above is random.
	slices.SortStableFunc(out.Factors[len(keep):], func(x, y model.Factor) int { return slices.Compare(x.Vars, y.Vars) })
	if err := out.Validate(); err != nil {
		return nil, len(share), fmt.Errorf("tighten: %w", err)
	}
	return out, len(share), nil
}

// FindCycles returns the short cycles of the graph of m's pairwise factors
// (Dense, Pair and Potts factors over two variables), each once and in a
// deterministic order: the triangles a<b<c and the chordless squares
// a-b-c-d-a (a the smallest variable, b < d), by increasing a. A cycle whose
// table would exceed opts.MaxTable entries is left out, and more than
// opts.MaxCycles cycles is an error. Cycles turns these cycles into factors;
// solvers that add cycle constraints themselves (TRW-S(LP-C)) use the list.
func FindCycles(m *model.Model, opts Options) ([][]int, Stats, error) {
	if opts.MaxTable <= 0 {
		opts.MaxTable = 4096
	}
	if opts.MaxCycles <= 0 {
		opts.MaxCycles = 1_000_000
	}
	set := map[edge]bool{}
	adj := make([][]int, m.NumVars())
	for a := range m.Factors {
		f := &m.Factors[a]
		if !pairwise(f) {
			continue
		}
		e := edge{min(f.Vars[0], f.Vars[1]), max(f.Vars[0], f.Vars[1])}
		if !set[e] {
			set[e] = true
			adj[e.u] = append(adj[e.u], e.v)
			adj[e.v] = append(adj[e.v], e.u)
		}
	}
	has := func(a, b int) bool { return set[edge{min(a, b), max(a, b)}] }
	cycles, tri, sq, err := findCycles(m.Cards, adj, has, opts)
	return cycles, Stats{Triangles: tri, Squares: sq, Edges: len(set)}, err
}

// pairwise reports whether f is a pairwise potential that cycles are made
// of: a Dense, Pair, Potts, TruncLinear or TruncQuad factor over two
// variables (taken as its table).
func pairwise(f *model.Factor) bool {
	return len(f.Vars) == 2 && (f.Kind == model.Dense || f.Kind == model.Pair || f.Kind.IsStructuredPair())
}

// findCycles lists the triangles and chordless squares of the graph adj
// (has tells whether two variables are adjacent); see FindCycles.
func findCycles(cards []int, adj [][]int, has func(a, b int) bool, opts Options) (cycles [][]int, tri, sq int, err error) {
	for i := range adj {
		slices.Sort(adj[i])
	}
	size := func(vars ...int) int {
		n := 1
		for _, v := range vars {
			n *= cards[v]
			if n > opts.MaxTable {
				return n
			}
		}
		return n
	}
	for a := range adj {
		for _, b := range adj[a] {
			if b <= a {
				continue
			}
			for _, c := range adj[b] {
				if c <= b || !has(a, c) {
					continue
				}
				if size(a, b, c) <= opts.MaxTable {
					cycles = append(cycles, []int{a, b, c})
					tri++
				}
			}
		}
		for i, b := range adj[a] {
			if b <= a {
				continue
			}
			for _, d := range adj[a][i+1:] {
				if d <= a {
					continue
				}
				for _, c := range adj[b] {
					if c <= a || c == d || !has(c, d) || has(a, c) || has(b, d) {
						continue
					}
					if size(a, b, c, d) <= opts.MaxTable {
						cycles = append(cycles, []int{a, b, c, d})
						sq++
					}
				}
			}
		}
		if len(cycles) > opts.MaxCycles {
			return nil, tri, sq, fmt.Errorf("tighten: more than %d short cycles", opts.MaxCycles)
		}
	}
	return cycles, tri, sq, nil
}

// cycleFactor builds the dense factor of cycle c: the sum over its edges of
// each edge's table divided by the number of cycles sharing the edge.
func cycleFactor(m *model.Model, c []int, es []edge, tables map[edge][]float64, share map[edge]int) model.Factor {
	n := 1
	for _, v := range c {
		n *= m.Cards[v]
	}
	table := make([]float64, n)
	x := make([]int, len(c)) // states of c's variables, last fastest
	// Each edge's table, the positions of its ends in c and its share,
	// looked up once (not once per entry: maps dominated a 300x300 grid's
	// regrouping).
	type term struct {
		t        []float64
		pu, pv   int
		cv       int
		fraction float64
	}
	terms := make([]term, len(es))
	for j, e := range es {
		terms[j] = term{t: tables[e], pu: slices.Index(c, e.u), pv: slices.Index(c, e.v), cv: m.Cards[e.v], fraction: float64(share[e])}
	}
	for i := range table {
		s := 0.0
		for _, e := range terms {
			s += e.t[x[e.pu]*e.cv+x[e.pv]] / e.fraction
		}
		table[i] = s
		for k := len(c) - 1; k >= 0; k-- {
			if x[k]++; x[k] < m.Cards[c[k]] {
				break
			}
			x[k] = 0
		}
	}
	return model.Factor{Kind: model.Dense, Vars: append([]int(nil), c...), Table: table}
}

func transpose(t []float64, ru, cv int) []float64 {
	// t is indexed [x_u*cv + x_v] with u first; return [x_v*ru + x_u].
	out := make([]float64, len(t))
	for x := 0; x < ru; x++ {
		for y := 0; y < cv; y++ {
			out[y*ru+x] = t[x*cv+y]
		}
	}
	return out
}
