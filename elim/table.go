package elim

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
)

// table is a function over a scope: values flat, the last scope variable
// fastest, -Inf for forbidden configurations.
type table struct {
	vars    []int32 // the scope (model variables), no duplicates
	strides []int   // strides[k]: step of vars[k] in vals
	vals    []float64
}

// newTable returns a table over vars (cards from the model) of zeros,
// or with vals when given.
func newTable(cards []int, vars []int32, vals []float64) table {
	t := table{vars: vars, strides: make([]int, len(vars))}
	st := 1
	for k := len(vars) - 1; k >= 0; k-- {
		t.strides[k] = st
		st *= cards[vars[k]]
	}
	if vals == nil {
		vals = make([]float64, st)
	}
	t.vals = vals
	return t
}

// at is the table's value under the full assignment x.
func (t *table) at(x []int) float64 {
	idx := 0
	for k, v := range t.vars {
		idx += x[v] * t.strides[k]
	}
	return t.vals[idx]
}

// log2Size is log2 of the number of entries of a table over vars.
func log2Size(cards []int, vars []int32) float64 {
	s := 0.0
	for _, v := range vars {
		s += math.Log2(float64(cards[v]))
	}
	return s
}

// size is the number of entries of a table over vars (the caller knows it
// fits an int).
func size(cards []int, vars []int32) int {
	n := 1
	for _, v := range vars {
		n *= cards[v]
	}
	return n
}

// scopes returns the scopes of the tables that factor a becomes (tables
// builds them): one per factor, except a Sequence, which becomes one table
// per link (a chain of pairwise terms, its emissions in the links).
func scopes(m *model.Model, a int) [][]int32 {
	f := &m.Factors[a]
	if f.Kind == model.Sequence {
		out := make([][]int32, len(f.Vars)-1)
		for k := range out {
			out[k] = []int32{int32(f.Vars[k]), int32(f.Vars[k+1])}
		}
		return out
	}
	s := make([]int32, len(f.Vars))
	for k, v := range f.Vars {
		s[k] = int32(v)
	}
	return [][]int32{s}
}

// expandedEntries is the number of table entries that factor a needs beyond
// what the model holds: dense tables are used in place, other kinds are
// expanded (Sequence links: one card x card table each). It returns +Inf
// when a table would exceed model.MaxTableEntries.
func expandedEntries(m *model.Model, a int) float64 {
	f := &m.Factors[a]
	if f.Kind == model.Dense {
		return 0
	}
	total := 0.0
	for _, s := range scopes(m, a) {
		if log2Size(m.Cards, s) > math.Log2(model.MaxTableEntries) {
			return math.Inf(1)
		}
		total += float64(size(m.Cards, s))
	}
	return total
}

// tables returns the tables of factor a (see scopes): a dense table's own
// values (not copied), the other kinds expanded through their scores.
func tables(m *model.Model, a int) ([]table, error) {
	f := &m.Factors[a]
	sc := scopes(m, a)
	switch f.Kind {
	case model.Dense:
		return []table{newTable(m.Cards, sc[0], f.Table)}, nil
	case model.Sequence:
		shared, offs, err := model.SequenceTransitions(m, f)
		if err != nil {
			return nil, err
		}
		out := make([]table, len(sc))
		eoff, emission := 0, f.EmissionScores()
		for k := range sc {
			u, w := f.Vars[k], f.Vars[k+1]
			t := newTable(m.Cards, sc[k], nil)
			base := 0
			if !shared {
				base = offs[k]
			}
			for su := 0; su < m.Cards[u]; su++ {
				for sw := 0; sw < m.Cards[w]; sw++ {
					v := f.Table[base+su*m.Cards[w]+sw]
					if emission != nil {
						v += emission[eoff+su]
						if k+1 == len(sc) { // the last variable's emission
							v += emission[eoff+m.Cards[u]+sw]
						}
					}
					t.vals[su*m.Cards[w]+sw] = v
				}
			}
			eoff += m.Cards[u]
			out[k] = t
		}
		return out, nil
	}
	if _, err := m.TableSize(f.Vars); err != nil {
		return nil, fmt.Errorf("factor %d (%s): %w", a, f.Kind, err)
	}
	return []table{newTable(m.Cards, sc[0], m.DenseTable(a))}, nil
}
