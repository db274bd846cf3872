package slaves

import (
	"fmt"
	"math"
)

// ChainAlgorithm selects how Chain.MAP is solved. Both are exact; they may
// break ties differently.
type ChainAlgorithm uint8

const (
	// ChainColumnGeneration is exact MAP by column generation (Belanger,
	// Passos, Riedel, McCallum, "Speeding up MAP with Column Generation and
	// Block Regularization", ICML Inferning workshop 2012, Alg. 1 and 2):
	// Viterbi on small restricted domains, grown by the states whose
	// bidirectional reduced cost (eq. 11) is positive. It does O(n L |D|)
	// work per round instead of O(n L^2) when the local scores dominate the
	// transitions, and falls back to Viterbi when it would not pay (see
	// Chain.SetColGenBudget). The default.
	ChainColumnGeneration ChainAlgorithm = iota
	// ChainViterbi is the plain O(n L^2) Viterbi (max-product) recursion.
	ChainViterbi
)

func (a ChainAlgorithm) String() string {
	switch a {
	case ChainColumnGeneration:
		return "colgen"
	case ChainViterbi:
		return "viterbi"
	}
	return fmt.Sprintf("ChainAlgorithm(%d)", int(a))
}

// DefaultColGenBudget is the default work budget of column generation, as a
// multiple of the cost of one Viterbi pass: a call that has spent it (on
// messages and reduced-cost searches) finishes with plain Viterbi, so a call
// never costs much more than (1 + budget) Viterbi passes.
const DefaultColGenBudget = 0.5

// ChainStats counts the work of Chain.MAP by column generation since
// construction (or ResetColGenStats).
type ChainStats struct {
	Calls     int64   // MAP calls by column generation
	Rounds    int64   // restricted solves (rounds of Alg. 1)
	Fallbacks int64   // calls that ran out of budget and finished with Viterbi (or ran it at once: see SetColGenBudget)
	States    int64   // sum over the calls that did not fall back of sum_k |D_k| at the end
	Pairs     int64   // candidate pairs whose reduced cost was evaluated (Alg. 2, last line)
	Work      float64 // work units spent before finishing or falling back (see SetColGenBudget)
}

// Chain is a chain-structured slave over n variables y_0..y_{n-1} with
//
//	phi(y) = sum_k theta_k(y_k) + sum_{k<n-1} tau_k(y_k, y_{k+1}),
//
// theta the emissions (per-position log-potentials) and tau the transition
// tables (log-potentials, -Inf for forbidden transitions). MAP is exact, by
// Viterbi or by column generation (ChainAlgorithm); QUAD is the active-set
// method with the chain's MAP as oracle (AD3 JMLR 2015 Alg. 3; Martins et al.
// ICML 2011 Sect. 4.3: an inexact, warm-started solver for coarse slaves,
// which Prop. 2 allows). A Chain is not safe for concurrent use, and after
// construction MAP and QUAD do not allocate.
type Chain struct {
	cards  []int
	off    []int
	n      int
	dim    int
	maxL   int
	emis   []float64   // flattened emissions, zero where none were given
	trans  [][]float64 // trans[k]: cards[k] x cards[k+1], row-major
	tinf   []bool      // trans[k] has a -Inf entry
	anyInf bool        // some transition or emission is -Inf

	// Per-table row and column maxima (Alg. 2's U_tau), over the finite
	// entries, flattened by position: rowMax[off[k]+x] = max_x'
	// tau_k(x, x'), colMax[off[k+1]+x'] = max_x tau_k(x, x'). A row or
	// column that is all -Inf has maximum -M (order 1, value 0; see the
	// notes in chain_colgen.go).
	rowMax, colMax   []float64
	rowMaxO, colMaxO []int32
	vitCost          float64 // sum_k cards[k]*cards[k+1]: one Viterbi pass

	// Sparse supports of the tables with -Inf entries (nil otherwise):
	// the finite entries of each column (colSup) and row (rowSup) that
	// has few of them, for the repaired messages of hard constraints (see
	// chain_colgen.go, "Hard constraints").
	colSup, rowSup []*chainSparse

	alg    ChainAlgorithm
	budget float64
	inexactQUAD

	// MAP scratch, flattened by position like w.
	th       []float64 // theta + w
	thO      []int32   // 1 where theta + w is -Inf (then th is 0)
	av, bv   []float64 // forward / backward messages (values)
	ao, bo   []int32   // their orders (multiples of -M)
	arg      []int32   // forward argmax, for decoding
	inD      []bool    // state in its position's restricted domain
	dom      []int32   // domain of position k: dom[off[k] : off[k]+dsz[k]]
	dsz      []int32
	ordDirty bool    // ao/bo hold nonzero orders from a symbolic call
	work     float64 // work spent by the current column-generation call
	limit    float64 // its budget: c.budget * c.vitCost / wscale
	wscale   float64 // cost of a unit of work: 1, or cgWSym when symbolic
	greedy   int8    // greedy initial path: 0 in symbolic calls, 1 always, -1 never
	cgViable bool    // a first round of column generation fits in the budget

	// Per-edge scratch (maxL).
	nl, nr   []float64
	nlO, nrO []int32
	cl, cr   []int32
	mark     []bool // C' membership, for sparse rows
	gv       []float64
	gO       []int32
	topX     [cgRepairK]int32 // cgTop's result
	topO     [cgRepairK]int32
	topV     [cgRepairK]float64

	stats ChainStats
}

// NewChain returns a chain slave over variables with the given
// cardinalities (each >= 1). emissions may be nil, and so may any
// emissions[k] (zero scores); otherwise emissions[k] has cards[k] entries.
// trans has n-1 tables (or is nil: no coupling), trans[k] of size
// cards[k]*cards[k+1], row = state of position k, column = state of position
// k+1; a nil trans[k] is all zeros. Entries are finite or -Inf. The tables
// are kept, not copied (the caller must not modify them afterwards), and may
// be shared between positions (their row and column maxima are then
// computed once). It panics on a size mismatch or a NaN or +Inf entry.
func NewChain(cards []int, emissions [][]float64, trans [][]float64) *Chain {
	n := len(cards)
	for _, c := range cards {
		if c < 1 {
			panic(fmt.Sprintf("slaves: NewChain: cardinality %d < 1", c))
		}
	}
	if emissions != nil && len(emissions) != n {
		panic(fmt.Sprintf("slaves: NewChain: %d emission vectors for %d variables", len(emissions), n))
	}
	if trans != nil && len(trans) != max(n-1, 0) {
		panic(fmt.Sprintf("slaves: NewChain: %d transition tables for %d variables", len(trans), n))
	}
	off := Offsets(cards)
	dim := off[n]
	maxL := 0
	for _, c := range cards {
		maxL = max(maxL, c)
	}
	c := &Chain{
		cards:  append([]int(nil), cards...),
		off:    off,
		n:      n,
		dim:    dim,
		maxL:   maxL,
		emis:   make([]float64, dim),
		trans:  make([][]float64, max(n-1, 0)),
		tinf:   make([]bool, max(n-1, 0)),
		budget: DefaultColGenBudget,
	}
	c.anyInf = copyEmissions("NewChain", c.emis, off, cards, emissions)
	c.rowMax = make([]float64, dim)
	c.colMax = make([]float64, dim)
	c.rowMaxO = make([]int32, dim)
	c.colMaxO = make([]int32, dim)
	c.colSup = make([]*chainSparse, max(n-1, 0))
	c.rowSup = make([]*chainSparse, max(n-1, 0))
	zeros := map[[2]int][]float64{}
	seen := map[*float64]int{} // first position using each table
	for k := 0; k+1 < n; k++ {
		L0, L1 := cards[k], cards[k+1]
		var t []float64
		if trans != nil {
			t = trans[k]
		}
		t = edgeTable(zeros, t, L0, L1, "NewChain", "trans", k)
		c.trans[k] = t
		c.vitCost += float64(L0 * L1)
		// A table shared with an earlier position has the same maxima and
		// supports.
		if j, ok := seen[&t[0]]; ok && len(c.trans[j]) == len(t) && cards[j] == L0 {
			c.tinf[k] = c.tinf[j]
			c.colSup[k], c.rowSup[k] = c.colSup[j], c.rowSup[j]
			copy(c.rowMax[off[k]:off[k]+L0], c.rowMax[off[j]:off[j]+L0])
			copy(c.rowMaxO[off[k]:off[k]+L0], c.rowMaxO[off[j]:off[j]+L0])
			copy(c.colMax[off[k+1]:off[k+1]+L1], c.colMax[off[j+1]:off[j+1]+L1])
			copy(c.colMaxO[off[k+1]:off[k+1]+L1], c.colMaxO[off[j+1]:off[j+1]+L1])
			continue
		}
		seen[&t[0]] = k
		c.tinf[k] = chainTableMaxima(t, L0, L1,
			c.rowMax[off[k]:off[k]+L0], c.rowMaxO[off[k]:off[k]+L0],
			c.colMax[off[k+1]:off[k+1]+L1], c.colMaxO[off[k+1]:off[k+1]+L1],
			fmt.Sprintf("trans[%d]", k))
		if c.tinf[k] {
			c.anyInf = true
			c.colSup[k] = chainSupports(t, L0, L1, false)
			c.rowSup[k] = chainSupports(t, L0, L1, true)
		}
	}
	c.th = make([]float64, dim)
	c.thO = make([]int32, dim)
	c.av = make([]float64, dim)
	c.bv = make([]float64, dim)
	c.ao = make([]int32, dim)
	c.bo = make([]int32, dim)
	c.arg = make([]int32, dim)
	c.inD = make([]bool, dim)
	c.dom = make([]int32, dim)
	c.dsz = make([]int32, n)
	c.nl = make([]float64, maxL)
	c.nr = make([]float64, maxL)
	c.nlO = make([]int32, maxL)
	c.nrO = make([]int32, maxL)
	c.mark = make([]bool, maxL)
	c.cl = make([]int32, 0, maxL)
	c.cr = make([]int32, 0, maxL)
	c.gv = make([]float64, maxL)
	c.gO = make([]int32, maxL)
	c.SetColGenBudget(DefaultColGenBudget)
	c.as = NewActiveSet(c, 0)
	return c
}

// chainTableMaxima computes the finite row and column maxima of an L0 x L1
// table (order 1, value 0 for a row or column with no finite entry),
// reporting whether the table has a -Inf entry. It panics on NaN or +Inf.
func chainTableMaxima(t []float64, L0, L1 int, rmax []float64, rmaxO []int32, cmax []float64, cmaxO []int32, name string) (hasInf bool) {
	for j := range cmax {
		cmax[j], cmaxO[j] = 0, 1
	}
	for x := 0; x < L0; x++ {
		rm, ro := 0.0, int32(1)
		for j, v := range t[x*L1 : x*L1+L1] {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				panic(fmt.Sprintf("slaves: %s[%d] = %v", name, x*L1+j, v))
			}
			if math.IsInf(v, -1) {
				hasInf = true
				continue
			}
			if ro == 1 || v > rm {
				rm, ro = v, 0
			}
			if cmaxO[j] == 1 || v > cmax[j] {
				cmax[j], cmaxO[j] = v, 0
			}
		}
		rmax[x], rmaxO[x] = rm, ro
	}
	return hasInf
}

// chainSparse lists the finite entries of the sparse lines (rows or columns)
// of a table: line i, if ok[i], has its finite entries at the indices
// idx[start[i]:start[i+1]].
type chainSparse struct {
	ok    []bool
	start []int32
	idx   []int32
}

// chainSupportMax is the longest support kept for a line of length L.
func chainSupportMax(L int) int { return max(4, L/8) }

// chainSupports returns the sparse supports of the rows (rows = true) or
// columns of an L0 x L1 table: the lines with a -Inf entry and at most
// chainSupportMax finite ones. It returns nil when there are none.
func chainSupports(t []float64, L0, L1 int, rows bool) *chainSparse {
	lines, length := L1, L0 // columns
	at := func(i, j int) float64 { return t[j*L1+i] }
	if rows {
		lines, length = L0, L1
		at = func(i, j int) float64 { return t[i*L1+j] }
	}
	sp := &chainSparse{ok: make([]bool, lines), start: make([]int32, lines+1)}
	any := false
	for i := 0; i < lines; i++ {
		cnt := 0
		for j := 0; j < length; j++ {
			if !math.IsInf(at(i, j), -1) {
				cnt++
			}
		}
		if cnt < length && cnt <= chainSupportMax(length) {
			sp.ok[i] = true
			any = true
			for j := 0; j < length; j++ {
				if !math.IsInf(at(i, j), -1) {
					sp.idx = append(sp.idx, int32(j))
				}
			}
		}
		sp.start[i+1] = int32(len(sp.idx))
	}
	if !any {
		return nil
	}
	return sp
}

// Cards returns the cardinalities of the chain's variables.
func (c *Chain) Cards() []int { return c.cards }

// Len returns the number of variables.
func (c *Chain) Len() int { return c.n }

// Transition returns the transition table between positions k and k+1 (not a
// copy; all zeros if none was given).
func (c *Chain) Transition(k int) []float64 { return c.trans[k] }

// Emission returns the emission scores of position k (a view of the chain's
// copy; zeros if none were given).
func (c *Chain) Emission(k int) []float64 {
	return c.emis[c.off[k]:c.off[k+1]:c.off[k+1]]
}

// SetAlgorithm chooses the MAP algorithm (default ChainColumnGeneration).
func (c *Chain) SetAlgorithm(a ChainAlgorithm) {
	if a != ChainColumnGeneration && a != ChainViterbi {
		panic(fmt.Sprintf("slaves: Chain.SetAlgorithm: %v", a))
	}
	c.alg = a
}

// Algorithm returns the MAP algorithm in use.
func (c *Chain) Algorithm() ChainAlgorithm { return c.alg }

// SetColGenBudget sets the work budget of column generation as a multiple of
// one Viterbi pass (see DefaultColGenBudget); f <= 0 restores the default and
// +Inf never falls back. Work is counted in steps of Viterbi's inner loop:
// message updates (|D_k| cards[k+1] per forward step, 1.5 |D_{k+1}| cards[k]
// per backward step), reduced-cost bounds (3 (cards[k] + cards[k+1]) per
// edge) and pair evaluations (3 each, charged before the search), all 2.5
// times dearer on chains with -Inf entries. With a finite budget a call also
// falls back as soon as one edge's candidate pairs would cost more than
// Viterbi's step over that edge (the bounds of Alg. 2 prune too little),
// and when even the cheapest possible round (singleton domains) exceeds the
// budget, as with few labels, MAP runs Viterbi at once.
func (c *Chain) SetColGenBudget(f float64) {
	if !(f > 0) {
		f = DefaultColGenBudget
	}
	c.budget = f
	c.cgViable = c.cgFirstRound() <= f*c.vitCost || c.vitCost == 0
}

// ColGenStats returns the column-generation work counters.
func (c *Chain) ColGenStats() ChainStats { return c.stats }

// copyEmissions copies the emissions of a chain's or a tree's variables
// (a nil entry: none) into emis, variable k's at off[k], and reports
// whether one is -Inf. An entry count other than the variable's
// cardinality or a NaN or +Inf entry is a panic naming the constructor,
// who.
func copyEmissions(who string, emis []float64, off, cards []int, emissions [][]float64) (anyInf bool) {
	for k, e := range emissions {
		if e == nil {
			continue
		}
		if len(e) != cards[k] {
			panic(fmt.Sprintf("slaves: %s: emissions[%d] has %d entries, want %d", who, k, len(e), cards[k]))
		}
		for x, v := range e {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				panic(fmt.Sprintf("slaves: %s: emissions[%d][%d] = %v", who, k, x, v))
			}
			if math.IsInf(v, -1) {
				anyInf = true
			}
		}
		copy(emis[off[k]:], e)
	}
	return anyInf
}

// edgeTable returns the table t of edge k of a chain or a tree (named
// what[k] in the constructor who's panics), between variables of L0 and
// L1 states: for a nil t, a table of zeros shared through zeros by the
// edges of the same shape. A table of another size is a panic.
func edgeTable(zeros map[[2]int][]float64, t []float64, L0, L1 int, who, what string, k int) []float64 {
	if t == nil {
		key := [2]int{L0, L1}
		if zeros[key] == nil {
			zeros[key] = make([]float64, L0*L1)
		}
		t = zeros[key]
	}
	if len(t) != L0*L1 {
		panic(fmt.Sprintf("slaves: %s: %s[%d] has %d entries, cards %d x %d need %d", who, what, k, len(t), L0, L1, L0*L1))
	}
	return t
}

// ResetColGenStats zeroes the column-generation work counters.
func (c *Chain) ResetColGenStats() { c.stats = ChainStats{} }

// Score returns phi(y) = sum_k theta_k(y_k) + sum_k tau_k(y_k, y_{k+1}),
// -Inf when y uses a forbidden transition or emission.
func (c *Chain) Score(y []int) float64 {
	s := 0.0
	for k := 0; k < c.n; k++ {
		s += c.emis[c.off[k]+y[k]]
	}
	for k := 0; k+1 < c.n; k++ {
		s += c.trans[k][y[k]*c.cards[k+1]+y[k+1]]
	}
	return s
}

// MAP maximises phi(y) + sum_k w_k(y_k) (w flattened like Cards: the master's
// scores add to the emissions) with the chosen algorithm, writes the
// maximiser into y and returns the maximum, or -Inf (y all zeros) when every
// configuration uses a -Inf entry.
func (c *Chain) MAP(w []float64, y []int) float64 {
	if c.n == 0 {
		return 0
	}
	w = w[:c.dim]
	y = y[:c.n]
	if c.alg == ChainViterbi {
		return c.viterbi(w, y)
	}
	if !c.cgViable {
		// Even one round of column generation would exceed the budget
		// (few labels): Viterbi at once.
		c.stats.Calls++
		c.stats.Fallbacks++
		return c.viterbi(w, y)
	}
	return c.colgen(w, y)
}

var (
	_ Slave   = (*Chain)(nil)
	_ Inexact = (*Chain)(nil)
)
