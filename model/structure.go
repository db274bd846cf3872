package model

import "math"

// PairStructure reports whether an l x l table (row = first variable, last
// variable fastest), l >= 2, is exactly c + theta(x, y) for a structured
// pairwise kind: Potts (theta = w [x = y]), TruncLinear or TruncQuad (theta
// = -w min(|x-y|, t) or -w min((x-y)^2, t)). Exactly means bit for bit:
// for every entry, c + FactorScore of the structured factor, evaluated in
// float64 as Score does, equals the table entry. A table with -Inf (or
// any non-finite) entries is never structured. Potts is tried first, then
// TruncLinear, then TruncQuad; a constant table is Potts with w = 0.
func PairStructure(l int, table []float64) (k Kind, w, t, c float64, ok bool) {
	if l < 2 || len(table) != l*l {
		return 0, 0, 0, 0, false
	}
	for _, v := range table {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, 0, 0, 0, false
		}
	}
	c = table[1] // theta = 0 off the diagonal (Potts) or on it (truncated)
	if w, ok := pottsFit(l, table); ok {
		return Potts, w, 0, c, true
	}
	// The truncated kinds depend on |x - y| only, with theta(0) = 0.
	c = table[0]
	g := func(d int) float64 { return table[d] } // row 0: g(d) = table[0][d]
	for x := 0; x < l; x++ {
		for y := 0; y < l; y++ {
			d := x - y
			if d < 0 {
				d = -d
			}
			if math.Float64bits(table[x*l+y]) != math.Float64bits(g(d)) {
				return 0, 0, 0, 0, false
			}
		}
	}
	for _, kind := range [...]Kind{TruncLinear, TruncQuad} {
		if w, t, ok := truncFit(kind, l, c, g); ok && pairExact(kind, l, table, w, t, c) {
			return kind, w, t, c, true
		}
	}
	return 0, 0, 0, 0, false
}

// pottsFit finds w with table = c + w [x = y] exactly, c the off-diagonal
// value.
func pottsFit(l int, table []float64) (float64, bool) {
	diag, off := table[0], table[1]
	for x := 0; x < l; x++ {
		for y := 0; y < l; y++ {
			want := off
			if x == y {
				want = diag
			}
			if math.Float64bits(table[x*l+y]) != math.Float64bits(want) {
				return 0, false
			}
		}
	}
	return fitExact(diag-off, func(w float64) bool {
		return CheckPairTerm(Potts, w, 0) == nil && same(off+w, diag) && same(off+0, off)
	})
}

// truncFit finds w and t for a truncated kind from the table's values g(d)
// at distance d (c = g(0)): w from g(1), the truncation from the first
// distance p whose value leaves the untruncated curve (t in [p-1, p) for
// TruncLinear, [(p-1)^2, p^2) for TruncQuad), all farther values equal.
func truncFit(kind Kind, l int, c float64, g func(int) float64) (w, t float64, ok bool) {
	dist := func(d int) float64 {
		if kind == TruncQuad {
			return float64(d * d)
		}
		return float64(d)
	}
	w, ok = fitExact(c-g(1), func(w float64) bool { return w != 0 && same(c+(-w*1), g(1)) })
	if !ok {
		return 0, 0, false
	}
	p := 2
	for p < l && same(c+(-w*dist(p)), g(p)) {
		p++
	}
	if p == l { // untruncated over the whole range
		return w, dist(l - 1), true
	}
	f := g(p)
	for d := p + 1; d < l; d++ {
		if !same(g(d), f) {
			return 0, 0, false
		}
	}
	lo, hi := dist(p-1), dist(p)
	t, ok = fitExact((c-f)/w, func(t float64) bool { return t >= lo && t < hi && same(c+(-w*t), f) })
	return w, t, ok
}

// pairExact checks every entry of the table against c + the structured
// term, evaluated as FactorScore does, and the term's parameters.
func pairExact(kind Kind, l int, table []float64, w, t, c float64) bool {
	if CheckPairTerm(kind, w, t) != nil {
		return false
	}
	for x := 0; x < l; x++ {
		for y := 0; y < l; y++ {
			if !same(c+TruncScore(kind, w, t, x, y), table[x*l+y]) {
				return false
			}
		}
	}
	return true
}

// fitExact returns v0, or one of its nearest float64 neighbours (up to 4
// ulps either way), for which ok holds: rounding in the subtraction that
// gave v0 may put the exact fit one ulp off.
func fitExact(v0 float64, ok func(float64) bool) (float64, bool) {
	if math.IsNaN(v0) || math.IsInf(v0, 0) {
		return 0, false
	}
	if ok(v0) {
		return v0, true
	}
	up, down := v0, v0
	for range 4 {
		up, down = math.Nextafter(up, math.Inf(1)), math.Nextafter(down, math.Inf(-1))
		if ok(up) {
			return up, true
		}
		if ok(down) {
			return down, true
		}
	}
	return 0, false
}

func same(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// StructurePairs turns every Dense factor over two variables of equal
// cardinality L >= 2 whose table is exactly c + a structured term
// (PairStructure) into that kind, adding c to the constant, and returns how
// many it turned. Each factor's score c + theta reproduces its table entry
// bit for bit; the model's total score is the same sum taken in another
// order (the constants first), so it may differ in the last bits. A factor
// whose c would make the constant non-finite stays Dense.
func (m *Model) StructurePairs() int {
	n := 0
	for a := range m.Factors {
		if m.StructurePair(a) {
			n++
		}
	}
	return n
}

// StructurePair turns factor a as StructurePairs does and reports whether
// it did; readers call it as each table is read, so that the tables they
// turn are never kept.
func (m *Model) StructurePair(a int) bool {
	f := &m.Factors[a]
	if f.Kind != Dense || len(f.Vars) != 2 {
		return false
	}
	l := m.Cards[f.Vars[0]]
	if l < 2 || m.Cards[f.Vars[1]] != l {
		return false
	}
	k, w, t, c, ok := PairStructure(l, f.Table)
	if !ok {
		return false
	}
	sum := m.Constant + c
	if math.IsInf(sum, 0) || math.IsNaN(sum) {
		return false
	}
	m.Constant = sum
	*f = Factor{Kind: k, Vars: f.Vars, Weight: w, Trunc: t}
	return true
}
