package slaves

import (
	"fmt"
	"math"
)

// Tree is a tree-structured (or forest-structured) slave over n variables
// with
//
//	phi(y) = sum_v theta_v(y_v) + sum_{k=0}^{n-2} tau_k(y_{parent[k]}, y_{k+1}),
//
// in the convention of partition.Slave: variable 0 is a root and variable
// k+1 hangs below variable parent[k] <= k through the table tau_k = tables[k]
// (row = the parent's state). As an extension, parent[k] = -1 makes variable
// k+1 the root of another tree of a forest (tables[k] must then be nil).
// MAP is max-product dynamic programming (messages from the leaves up in
// decreasing index order, then decoding down in increasing order), O(sum_k
// cards[parent[k]] cards[k+1]); QUAD is the active-set method with that MAP
// as oracle (AD3 JMLR 2015 Alg. 3; Martins et al. ICML 2011 Sect. 4.3). A
// chain is the case parent[k] = k. A Tree is not safe for concurrent use,
// and after construction MAP and QUAD do not allocate.
type Tree struct {
	cards  []int
	off    []int
	n      int
	dim    int
	parent []int
	emis   []float64   // flattened emissions, zero where none were given
	tables [][]float64 // tables[k]: cards[parent[k]] x cards[k+1], row-major; nil for a root
	argOff []int       // argmax of edge k for each parent state: arg[argOff[k]+xp]
	inexactQUAD

	// MAP scratch.
	bel []float64 // theta + w + messages from the children, by variable
	arg []int32
}

// NewTree returns a tree slave over variables with the given cardinalities
// (each >= 1): parent has n-1 entries with -1 <= parent[k] <= k (see Tree),
// emissions may be nil and so may any emissions[v] (zero scores), and
// tables[k] has cards[parent[k]]*cards[k+1] entries (nil: all zeros; must be
// nil when parent[k] = -1). tables may be nil when every entry would be.
// Entries are finite or -Inf. The tables are kept, not copied. It panics on
// an invalid parent, a size mismatch or a NaN or +Inf entry.
func NewTree(cards []int, parent []int, emissions [][]float64, tables [][]float64) *Tree {
	n := len(cards)
	for _, c := range cards {
		if c < 1 {
			panic(fmt.Sprintf("slaves: NewTree: cardinality %d < 1", c))
		}
	}
	if len(parent) != max(n-1, 0) {
		panic(fmt.Sprintf("slaves: NewTree: %d parents for %d variables", len(parent), n))
	}
	if emissions != nil && len(emissions) != n {
		panic(fmt.Sprintf("slaves: NewTree: %d emission vectors for %d variables", len(emissions), n))
	}
	if tables != nil && len(tables) != len(parent) {
		panic(fmt.Sprintf("slaves: NewTree: %d tables for %d variables", len(tables), n))
	}
	off := Offsets(cards)
	t := &Tree{
		cards:  append([]int(nil), cards...),
		off:    off,
		n:      n,
		dim:    off[n],
		parent: append([]int(nil), parent...),
		emis:   make([]float64, off[n]),
		tables: make([][]float64, len(parent)),
		argOff: make([]int, len(parent)+1),
		bel:    make([]float64, off[n]),
	}
	copyEmissions("NewTree", t.emis, off, cards, emissions)
	zeros := map[[2]int][]float64{}
	for k, p := range parent {
		if p < -1 || p > k {
			panic(fmt.Sprintf("slaves: NewTree: parent[%d] = %d, want -1 <= parent[k] <= %d", k, p, k))
		}
		var tab []float64
		if tables != nil {
			tab = tables[k]
		}
		t.argOff[k+1] = t.argOff[k]
		if p < 0 {
			if tab != nil {
				panic(fmt.Sprintf("slaves: NewTree: variable %d is a root but tables[%d] is not nil", k+1, k))
			}
			continue
		}
		Lp, Lv := cards[p], cards[k+1]
		t.argOff[k+1] += Lp
		tab = edgeTable(zeros, tab, Lp, Lv, "NewTree", "tables", k)
		for i, s := range tab {
			if math.IsNaN(s) || math.IsInf(s, 1) {
				panic(fmt.Sprintf("slaves: NewTree: tables[%d][%d] = %v", k, i, s))
			}
		}
		t.tables[k] = tab
	}
	t.arg = make([]int32, t.argOff[len(parent)])
	t.as = NewActiveSet(t, 0)
	return t
}

// Cards returns the cardinalities of the tree's variables.
func (t *Tree) Cards() []int { return t.cards }

// Parent returns the parent array (not a copy).
func (t *Tree) Parent() []int { return t.parent }

// Score returns phi(y), -Inf when y uses a forbidden entry.
func (t *Tree) Score(y []int) float64 {
	s := 0.0
	for v := 0; v < t.n; v++ {
		s += t.emis[t.off[v]+y[v]]
	}
	for k, p := range t.parent {
		if p >= 0 {
			s += t.tables[k][y[p]*t.cards[k+1]+y[k+1]]
		}
	}
	return s
}

// MAP maximises phi(y) + sum_v w_v(y_v) by max-product dynamic programming:
// bel_v = theta_v + w_v + the messages of v's children; for v = n-1 down to
// 1 the message to the parent p is m(x_p) = max_x tau(x_p, x) + bel_v(x)
// (a contiguous table row per x_p), whose argmax is kept; each root takes
// the argmax of its belief and the others are decoded downwards. Ties go to
// the smallest state. It returns the maximum, or -Inf (y all zeros) when no
// configuration is feasible.
func (t *Tree) MAP(w []float64, y []int) float64 {
	n := t.n
	if n == 0 {
		return 0
	}
	bel, off, cards := t.bel, t.off, t.cards
	for i, e := range t.emis {
		bel[i] = e + w[i]
	}
	for v := n - 1; v >= 1; v-- {
		k := v - 1
		p := t.parent[k]
		if p < 0 {
			continue
		}
		Lp, Lv := cards[p], cards[v]
		tab := t.tables[k]
		bv := bel[off[v] : off[v]+Lv : off[v]+Lv]
		bp := bel[off[p] : off[p]+Lp : off[p]+Lp]
		arg := t.arg[t.argOff[k] : t.argOff[k]+Lp : t.argOff[k]+Lp]
		for xp := range bp {
			row := tab[xp*Lv : xp*Lv+Lv : xp*Lv+Lv]
			best, bx := math.Inf(-1), 0
			for x, s := range row {
				if m := s + bv[x]; m > best {
					best, bx = m, x
				}
			}
			arg[xp] = int32(bx)
			bp[xp] += best
		}
	}
	total := 0.0
	for v := 0; v < n; v++ {
		if v > 0 && t.parent[v-1] >= 0 {
			y[v] = int(t.arg[t.argOff[v-1]+y[t.parent[v-1]]])
			continue
		}
		// A root.
		best, bx := math.Inf(-1), 0
		for x, b := range bel[off[v]:off[v+1]] {
			if b > best {
				best, bx = b, x
			}
		}
		y[v] = bx
		total += best
	}
	if total < -math.MaxFloat64 {
		clear(y[:n])
		return math.Inf(-1)
	}
	return total
}

var (
	_ Slave   = (*Tree)(nil)
	_ Inexact = (*Tree)(nil)
)
