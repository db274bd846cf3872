package native

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
)

// lastKind is the last kind of package model; kindByName knows them all.
const lastKind = model.TruncQuad

// kindByName maps a kind name to its Kind without allocating.
func kindByName(s string) (model.Kind, bool) {
	for k := model.Dense; k <= lastKind; k++ {
		if s == k.String() {
			return k, true
		}
	}
	return 0, false
}

// checkValue reports why v may not appear in a unary, a table or an emission
// (nil: it may).
func checkValue(v float64) error {
	switch {
	case isBadNumber(v):
		return fmt.Errorf(`not a number (want a number, "-inf" or "-Infinity")`)
	case math.IsNaN(v):
		return fmt.Errorf("NaN is not allowed")
	case math.IsInf(v, 1):
		return fmt.Errorf(`+Inf is not allowed (only "-inf")`)
	}
	return nil
}

// describeNonFinite names a non-finite value for a message.
func describeNonFinite(v float64) string {
	if isBadNumber(v) {
		return "not-a-number value"
	}
	return fmt.Sprint(v)
}

// build checks the document and turns it into a model. Errors are *Error
// without a file name.
//
// limit bounds the total states and, on its own, the total table entries;
// both are checked before the model is allocated.
func (r *rawModel) build(limit int) (*model.Model, error) {
	if err := r.checkHead(); err != nil {
		return nil, err
	}
	total := 0
	for i, c := range r.cards {
		if c < 1 {
			return nil, placeErr(fmt.Sprintf("cards[%d]", i), "cardinality %d < 1", c)
		}
		if c > limit-total {
			return nil, placeErr(fmt.Sprintf("cards[%d]", i), "cardinality %d brings the states (unary entries) over the limit of %d", c, limit)
		}
		total += c
	}
	if err := r.checkFreeStates(); err != nil {
		return nil, err
	}
	if err := r.checkEntries(limit); err != nil {
		return nil, err
	}
	m := model.New(r.cards)
	if err := r.buildUnaries(m); err != nil {
		return nil, err
	}
	if math.IsNaN(r.constant) || math.IsInf(r.constant, 0) {
		return nil, placeErr("constant", "%s is not finite", describeNonFinite(r.constant)).atOffset(r.constPos)
	}
	m.Constant = r.constant
	if err := r.buildFactors(m); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, &Error{Msg: "invalid model: " + err.Error(), Err: err}
	}
	return m, nil
}

// checkHead checks the document's format, version and that it has cards.
func (r *rawModel) checkHead() *Error {
	switch {
	case !r.hasFormat:
		return placeErr("", "missing field %q (want %q)", "format", formatName)
	case r.format != formatName:
		return placeErr("format", "%s, want %q", quote(r.format), formatName)
	case !r.hasVersion:
		return placeErr("", "missing field %q", "version")
	case r.version != formatVersion:
		return placeErr("version", "%d is not supported (this reader knows version %d)", r.version, formatVersion)
	case !r.hasCards:
		return placeErr("", "missing field %q", "cards")
	}
	return nil
}

// checkFreeStates bounds the states of the variables that nothing in the
// file vouches for (model.FreeStatesOK): in no factor's scope and without
// explicit unaries.
func (r *rawModel) checkFreeStates() error {
	vouched := make([]bool, len(r.cards))
	for i, u := range r.unaries {
		if i < len(vouched) && u.ok {
			vouched[i] = true
		}
	}
	for a := range r.factors {
		if sp := r.factors[a].vars; sp.ok {
			for _, v := range r.vars[sp.off : sp.off+sp.n] {
				if v >= 0 && v < len(vouched) {
					vouched[v] = true
				}
			}
		}
	}
	free, states, widest := 0, 0, -1
	for v, c := range r.cards {
		if vouched[v] {
			continue
		}
		free++
		states += c
		if widest < 0 || c > r.cards[widest] {
			widest = v
		}
	}
	if model.FreeStatesOK(free, states) {
		return nil
	}
	return placeErr(fmt.Sprintf("cards[%d]", widest), "cardinality %d, but variable %d is in no factor and has no unaries; the %d such variables have %d states, more than %d", r.cards[widest], widest, free, states, model.MaxFreeStates)
}

// checkEntries bounds the total number of table entries (dense tables,
// sequence transitions and emissions) by limit.
func (r *rawModel) checkEntries(limit int) error {
	total := 0
	for a := range r.factors {
		rf := &r.factors[a]
		for _, sp := range []span{rf.table, rf.emission} {
			if !sp.ok {
				continue
			}
			if sp.n > limit-total {
				return placeErr(fmt.Sprintf("factors[%d]", a), "%d entries bring the total number of table entries over the limit of %d", sp.n, limit).atOffset(rf.pos)
			}
			total += sp.n
		}
	}
	return nil
}

func (r *rawModel) buildUnaries(m *model.Model) error {
	if !r.hasUnaries {
		return nil
	}
	if len(r.unaries) != len(r.cards) {
		return placeErr("unaries", "%d entries, model has %d variables", len(r.unaries), len(r.cards))
	}
	for i, u := range r.unaries {
		if !u.ok {
			continue // null: zeros
		}
		if u.n != r.cards[i] {
			return placeErr(fmt.Sprintf("unaries[%d]", i), "%d entries, variable %d has cardinality %d", u.n, i, r.cards[i]).atOffset(u.pos)
		}
		src := r.ufloats[u.off : u.off+u.n]
		for s, v := range src {
			if err := checkValue(v); err != nil {
				return placeErr(fmt.Sprintf("unaries[%d][%d]", i, s), "%v", err).atOffset(u.pos)
			}
		}
		copy(m.Unaries(i), src)
	}
	return nil
}

func (r *rawModel) buildFactors(m *model.Model) error {
	r.vars, r.negs, r.tables = trim(r.vars), trim(r.negs), trim(r.tables)
	m.Factors = make([]model.Factor, len(r.factors))
	// last[v] is 1 + the last factor whose scope holds v, to find repeats.
	last := make([]int, len(r.cards))
	sc := scopeCards{n: len(m.Cards), card: func(v int) int { return m.Cards[v] }, repeat: func(a, v int) bool {
		if last[v] == a+1 {
			return true
		}
		last[v] = a + 1
		return false
	}}
	for a := range r.factors {
		rf := &r.factors[a]
		f := &m.Factors[a]
		if err := r.buildFactor(&sc, a, rf, f); err != nil {
			return err.atOffset(rf.pos)
		}
	}
	return nil
}

// kindFields says which fields beyond kind and vars a kind takes.
type kindFields struct{ table, emission, weight, negated, budget, trunc bool }

// fieldsOf says which optional fields each kind takes.
func fieldsOf(k model.Kind) kindFields {
	switch k {
	case model.Dense:
		return kindFields{table: true}
	case model.Sequence:
		return kindFields{table: true, emission: true}
	case model.Pair, model.Potts:
		return kindFields{weight: true}
	case model.TruncLinear, model.TruncQuad:
		return kindFields{weight: true, trunc: true}
	case model.Budget:
		return kindFields{negated: true, budget: true}
	}
	return kindFields{negated: true}
}

// scopeCards is what building a factor needs of the variables: their
// number n, each one's cardinality, and whether v is a repeat in the scope
// of factor a (called once per scope entry, in order).
type scopeCards struct {
	n      int
	card   func(v int) int
	repeat func(a, v int) bool
	local  model.Model // a sequence's scope as a model of its own
	iota   []int
}

// tableSize is the number of entries of a table over vars
// (model.Model.TableSize).
func (sc *scopeCards) tableSize(vars []int) (int, error) {
	return sc.localOf(vars).TableSize(sc.iotaOf(len(vars)))
}

// localOf is the model of vars' cardinalities alone (variable k is
// vars[k]), valid until the next call.
func (sc *scopeCards) localOf(vars []int) *model.Model {
	sc.local.Cards = sc.local.Cards[:0]
	for _, v := range vars {
		sc.local.Cards = append(sc.local.Cards, sc.card(v))
	}
	return &sc.local
}

// iotaOf is 0..k-1.
func (sc *scopeCards) iotaOf(k int) []int {
	for len(sc.iota) < k {
		sc.iota = append(sc.iota, len(sc.iota))
	}
	return sc.iota[:k]
}

func (r *rawModel) buildFactor(sc *scopeCards, a int, rf *rawFactor, f *model.Factor) *Error {
	if !rf.hasKind {
		return placeErr(fmt.Sprintf("factors[%d]", a), "missing field %q", "kind")
	}
	if !rf.kindOK {
		return placeErr(fmt.Sprintf("factors[%d]", a), "unknown kind %s", quote(rf.kindName))
	}
	k := rf.kind
	place := func() string { return fmt.Sprintf("factors[%d] (%s)", a, k) }
	field := func(name string) string { return fmt.Sprintf("factors[%d].%s", a, name) }
	f.Kind = k

	// Fields that do not belong to the kind.
	fields := fieldsOf(k)
	for _, c := range [...]struct {
		present, allowed bool
		name             string
	}{
		{rf.table.ok, fields.table, "table"},
		{rf.emission.ok, fields.emission, "emission"},
		{rf.hasWeight, fields.weight, "weight"},
		{rf.negated.ok, fields.negated, "negated"},
		{rf.hasBudget, fields.budget, "budget"},
		{rf.hasTrunc, fields.trunc, "trunc"},
	} {
		if c.present && !c.allowed {
			return placeErr(place(), "field %q does not belong to kind %s", c.name, k)
		}
	}

	// Scope.
	if !rf.vars.ok {
		return placeErr(place(), "missing field %q", "vars")
	}
	vars := r.vars[rf.vars.off : rf.vars.off+rf.vars.n : rf.vars.off+rf.vars.n]
	n := sc.n
	for i, v := range vars {
		if v < 0 || v >= n {
			return placeErr(fmt.Sprintf("factors[%d].vars[%d]", a, i), "variable %d out of range [0,%d)", v, n)
		}
		if sc.repeat(a, v) {
			return placeErr(field("vars"), "variable %d appears twice", v)
		}
	}
	f.Vars = vars

	switch k {
	case model.Dense:
		if !rf.table.ok {
			return placeErr(place(), "missing field %q", "table")
		}
		size, err := sc.tableSize(vars)
		if err != nil {
			return placeErr(place(), "%v", err)
		}
		if rf.table.n != size {
			return placeErr(field("table"), "%d entries, scope needs %d", rf.table.n, size)
		}
		t := r.tables[rf.table.off : rf.table.off+size : rf.table.off+size]
		for i, v := range t {
			if err := checkValue(v); err != nil {
				return placeErr(fmt.Sprintf("factors[%d].table[%d]", a, i), "%v", err)
			}
		}
		f.Table = t
	case model.Sequence:
		return r.buildSequence(sc, a, rf, f)
	case model.Pair, model.Potts, model.TruncLinear, model.TruncQuad:
		if len(vars) != 2 {
			return placeErr(place(), "needs 2 variables, has %d", len(vars))
		}
		c0, c1 := sc.card(vars[0]), sc.card(vars[1])
		if k == model.Pair && (c0 != 2 || c1 != 2) {
			return placeErr(place(), "variables must be binary, cardinalities are (%d, %d)", c0, c1)
		}
		if k != model.Pair && c0 != c1 {
			return placeErr(place(), "cardinalities differ (%d, %d)", c0, c1)
		}
		if !rf.hasWeight {
			return placeErr(place(), "missing field %q", "weight")
		}
		if math.IsNaN(rf.weight) || math.IsInf(rf.weight, 0) {
			return placeErr(place(), "weight %s is not finite", describeNonFinite(rf.weight))
		}
		f.Weight = rf.weight
		if k.IsTruncated() {
			if !rf.hasTrunc {
				return placeErr(place(), "missing field %q", "trunc")
			}
			if err := model.CheckPairTerm(k, rf.weight, rf.trunc); err != nil {
				return placeErr(place(), "%v", err)
			}
			f.Trunc = rf.trunc
		}
	default: // logic
		min := 1
		if k == model.OROut || k == model.ANDOut {
			min = 2
		}
		if len(vars) < min {
			return placeErr(place(), "needs at least %d variables, has %d", min, len(vars))
		}
		for _, v := range vars {
			if c := sc.card(v); c != 2 {
				return placeErr(place(), "variable %d has cardinality %d, logic factors need binary variables", v, c)
			}
		}
		if rf.negated.ok {
			if rf.negated.n != len(vars) {
				return placeErr(field("negated"), "%d entries for %d variables", rf.negated.n, len(vars))
			}
			f.SetNegated(r.negs[rf.negated.off : rf.negated.off+rf.negated.n : rf.negated.off+rf.negated.n])
		}
		if k == model.Budget {
			if !rf.hasBudget {
				return placeErr(place(), "missing field %q", "budget")
			}
			if rf.budget < 0 || rf.budget > int64(len(vars)) {
				return placeErr(place(), "budget %d outside [0,%d]", rf.budget, len(vars))
			}
			f.SetBudget(int(rf.budget))
		}
	}
	return nil
}

// buildSequence checks a sequence factor's transitions and emission and sets
// them; f.Vars is set and checked.
func (r *rawModel) buildSequence(sc *scopeCards, a int, rf *rawFactor, f *model.Factor) *Error {
	place := fmt.Sprintf("factors[%d] (%s)", a, model.Sequence)
	if len(f.Vars) < 2 {
		return placeErr(place, "needs at least 2 variables, has %d", len(f.Vars))
	}
	if !rf.table.ok {
		return placeErr(place, "missing field %q", "table")
	}
	// The per-position layout's size is bounded by model.MaxTableEntries
	// (SequenceTransitions checks it); bound the shared one too.
	if rf.table.n > model.MaxTableEntries {
		return placeErr(place, "transitions have %d entries, more than %d", rf.table.n, model.MaxTableEntries)
	}
	f.Table = r.tables[rf.table.off : rf.table.off+rf.table.n : rf.table.off+rf.table.n]
	local := model.Factor{Kind: model.Sequence, Vars: sc.iotaOf(len(f.Vars)), Table: f.Table}
	if _, _, err := model.SequenceTransitions(sc.localOf(f.Vars), &local); err != nil {
		return placeErr(place, "%v", err)
	}
	for i, v := range f.Table {
		if err := checkValue(v); err != nil {
			return placeErr(fmt.Sprintf("factors[%d].table[%d]", a, i), "%v", err)
		}
	}
	if !rf.emission.ok {
		return nil // zeros
	}
	// The scope has no repeats, so this is at most the unary entries.
	size := 0
	for _, v := range f.Vars {
		size += sc.card(v)
	}
	if rf.emission.n != size {
		return placeErr(fmt.Sprintf("factors[%d].emission", a), "%d entries, scope needs %d", rf.emission.n, size)
	}
	e := r.tables[rf.emission.off : rf.emission.off+size : rf.emission.off+size]
	for i, v := range e {
		if err := checkValue(v); err != nil {
			return placeErr(fmt.Sprintf("factors[%d].emission[%d]", a, i), "%v", err)
		}
	}
	f.SetEmission(e)
	return nil
}
