package model

import (
	"fmt"
	"math"
)

// Kind is the kind of a factor.
type Kind uint8

// The factor kinds. Logic kinds (XOR .. Budget) are over binary variables
// (cardinality 2; state 1 means true) and may negate any input.
const (
	// Dense is a full table of log-potentials over the scope, the last
	// variable changing fastest; -Inf entries are hard constraints.
	Dense Kind = iota
	// Pair is a pair of binary variables with one coupling:
	// score = Weight if both are 1, else 0.
	Pair
	// Potts is a pair of variables with equal cardinality:
	// score = Weight if they take the same state, else 0.
	Potts
	// XOR: exactly one (possibly negated) input is true.
	XOR
	// AtMostOne: at most one input is true.
	AtMostOne
	// OR: at least one input is true.
	OR
	// OROut: the last variable (the output) equals the OR of the others.
	OROut
	// ANDOut: the last variable (the output) equals the AND of the others.
	ANDOut
	// Budget: at most Budget inputs are true.
	Budget
	// Sequence is a linear chain over Vars, as linear-chain CRF taggers
	// produce: score = sum_k Emission[k](x_k) + sum_k T_k(x_k, x_{k+1}).
	// Emission is flat (position k at the prefix sum of the cardinalities;
	// nil means zeros). Table holds the transitions: one shared L x L table
	// when all cardinalities are L (len L*L), or the per-position tables
	// back to back (T_k is card_k x card_{k+1}, row = x_k).
	Sequence
	// TruncLinear is a pair of variables with equal cardinality:
	// score = -Weight * min(|x-y|, Trunc) (a truncated linear smoothness
	// term for Weight >= 0; Weight < 0 favours distant states).
	TruncLinear
	// TruncQuad is a pair of variables with equal cardinality:
	// score = -Weight * min((x-y)^2, Trunc).
	TruncQuad
	numKinds
)

// The kind numbers are stored by the file formats: new kinds go at the end.
var kindNames = [...]string{"dense", "pair", "potts", "xor", "atmostone", "or", "orout", "andout", "budget", "sequence", "trunclinear", "truncquad"}

// String returns the kind's name as used in the native format.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// ParseKind maps a native-format name to a Kind.
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown factor kind %q", s)
}

// IsLogic reports whether k is a logic kind over binary variables.
func (k Kind) IsLogic() bool { return k >= XOR && k <= Budget }

// IsTruncated reports whether k is a truncated pairwise kind (TruncLinear,
// TruncQuad), with a Weight and a Trunc.
func (k Kind) IsTruncated() bool { return k == TruncLinear || k == TruncQuad }

// IsStructuredPair reports whether k is a pairwise kind over two variables
// of equal cardinality given by a weight (and a truncation): Potts,
// TruncLinear, TruncQuad.
func (k Kind) IsStructuredPair() bool { return k == Potts || k.IsTruncated() }

// Factor is one factor of the graph. Only the fields of its kind are used.
//
// The layout keeps Factor at 80 bytes (TestFactorSize), down from 128:
// a 300x300 grid has 179,400 pairwise factors, whose headers would
// otherwise weigh as much as their 4x4 tables. What every pairwise kind
// reads sits inline: Kind, Vars, Table (Dense), Weight and Trunc (Pair,
// Potts, and the truncated kinds that stereo grids use). The fields of the
// rare kinds (a logic factor's negations and bound, a Sequence's emissions)
// live behind one pointer that only those factors allocate, read with
// NegatedInputs, EmissionScores and BudgetBound and set with the With and
// Set methods. The pointed-to struct is never modified once a Factor holds
// it (the setters make a new one), so copying a Factor by value behaves as
// it did when these were plain fields: the copies share the slices' backing
// arrays, and setting a field on one copy leaves the others alone. The
// pointer is nil exactly when all three fields are zero, so two Factors with
// equal fields are reflect.DeepEqual.
type Factor struct {
	Kind Kind
	// Vars is the scope, indices into Model.Cards; no duplicates.
	Vars []int
	// Table holds a Dense factor's log-potentials, last variable fastest,
	// or a Sequence's transitions.
	Table []float64
	// Weight is the coupling of Pair, Potts, TruncLinear and TruncQuad
	// factors.
	Weight float64
	// Trunc is the truncation of TruncLinear and TruncQuad factors
	// (finite, > 0, and Weight*Trunc finite).
	Trunc float64
	// rare holds the fields of the rare kinds; nil when they are all zero.
	rare *rareFields
}

// rareFields are the fields of a Factor that only logic and Sequence
// factors use. A value is immutable once a Factor points to it.
type rareFields struct {
	negated  []bool
	emission []float64
	budget   int
}

// NegatedInputs returns the flags that mark negated inputs of a logic
// factor (nil means none). The slice is the factor's own, not a copy.
func (f *Factor) NegatedInputs() []bool {
	if f.rare == nil {
		return nil
	}
	return f.rare.negated
}

// IsNegated reports whether input k of a logic factor is negated.
func (f *Factor) IsNegated(k int) bool {
	return f.rare != nil && f.rare.negated != nil && f.rare.negated[k]
}

// EmissionScores returns a Sequence factor's per-position scores, flat
// (position k at the prefix sum of the cardinalities; nil means zeros).
// The slice is the factor's own, not a copy.
func (f *Factor) EmissionScores() []float64 {
	if f.rare == nil {
		return nil
	}
	return f.rare.emission
}

// BudgetBound returns a Budget factor's bound: at most this many inputs are
// true.
func (f *Factor) BudgetBound() int {
	if f.rare == nil {
		return 0
	}
	return f.rare.budget
}

// WithNegated returns f with its negation flags set to neg (kept, not
// copied; nil means none).
func (f Factor) WithNegated(neg []bool) Factor {
	r := f.rareCopy()
	r.negated = neg
	f.setRare(r)
	return f
}

// WithEmission returns f with its emission scores set to e (kept, not
// copied; nil means zeros).
func (f Factor) WithEmission(e []float64) Factor {
	r := f.rareCopy()
	r.emission = e
	f.setRare(r)
	return f
}

// WithBudget returns f with its budget bound set to b.
func (f Factor) WithBudget(b int) Factor {
	r := f.rareCopy()
	r.budget = b
	f.setRare(r)
	return f
}

// SetNegated sets f's negation flags to neg (kept, not copied).
func (f *Factor) SetNegated(neg []bool) { *f = f.WithNegated(neg) }

// SetEmission sets f's emission scores to e (kept, not copied).
func (f *Factor) SetEmission(e []float64) { *f = f.WithEmission(e) }

// SetBudget sets f's budget bound to b.
func (f *Factor) SetBudget(b int) { *f = f.WithBudget(b) }

func (f *Factor) rareCopy() rareFields {
	if f.rare == nil {
		return rareFields{}
	}
	return *f.rare
}

// setRare points f to a new copy of r, or to nil when r is all zero.
func (f *Factor) setRare(r rareFields) {
	if r.negated == nil && r.emission == nil && r.budget == 0 {
		f.rare = nil
		return
	}
	f.rare = &r
}

// Model is a discrete factor graph.
type Model struct {
	// Cards holds each variable's cardinality (>= 1).
	Cards []int
	// UnaryOff has len(Cards)+1 entries; variable i's unary log-potentials
	// are Unary[UnaryOff[i]:UnaryOff[i+1]].
	UnaryOff []int
	Unary    []float64
	// Constant is added to every assignment's score.
	Constant float64
	Factors  []Factor
}

// MaxTableEntries bounds the size of one dense table (2^28 entries, 2 GiB of
// float64): larger tables are rejected as not fitting in memory.
const MaxTableEntries = 1 << 28

// New returns a model with the given cardinalities and zero unaries.
func New(cards []int) *Model {
	m := &Model{Cards: append([]int(nil), cards...), UnaryOff: make([]int, len(cards)+1)}
	for i, c := range cards {
		m.UnaryOff[i+1] = m.UnaryOff[i] + c
	}
	m.Unary = make([]float64, m.UnaryOff[len(cards)])
	return m
}

// NumVars returns the number of variables.
func (m *Model) NumVars() int { return len(m.Cards) }

// Unaries returns variable i's unary log-potentials (a view, not a copy).
func (m *Model) Unaries(i int) []float64 { return m.Unary[m.UnaryOff[i]:m.UnaryOff[i+1]] }

// TableSize returns the number of entries of a dense table over vars, or an
// error when it exceeds MaxTableEntries.
func (m *Model) TableSize(vars []int) (int, error) {
	n := 1
	for _, v := range vars {
		c := m.Cards[v]
		if c > 0 && n > MaxTableEntries/c {
			return 0, fmt.Errorf("table over %d variables has more than %d entries", len(vars), MaxTableEntries)
		}
		n *= c
	}
	return n, nil
}

// Validate checks the model's internal consistency: cardinalities, unary
// layout, scopes, table sizes and values, and kind-specific constraints.
// Errors name the variable or factor at fault.
func (m *Model) Validate() error {
	n := len(m.Cards)
	if len(m.UnaryOff) != n+1 || m.UnaryOff[0] != 0 {
		return fmt.Errorf("unary offsets: want %d entries starting at 0, have %d", n+1, len(m.UnaryOff))
	}
	for i, c := range m.Cards {
		if c < 1 {
			return fmt.Errorf("variable %d: cardinality %d < 1", i, c)
		}
		if m.UnaryOff[i+1]-m.UnaryOff[i] != c {
			return fmt.Errorf("variable %d: %d unary entries for cardinality %d", i, m.UnaryOff[i+1]-m.UnaryOff[i], c)
		}
	}
	if len(m.Unary) != m.UnaryOff[n] {
		return fmt.Errorf("unaries: %d entries, offsets say %d", len(m.Unary), m.UnaryOff[n])
	}
	for i := 0; i < n; i++ {
		for s, v := range m.Unaries(i) {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				return fmt.Errorf("variable %d state %d: unary log-potential %v", i, s, v)
			}
		}
	}
	if math.IsNaN(m.Constant) || math.IsInf(m.Constant, 0) {
		return fmt.Errorf("constant %v is not finite", m.Constant)
	}
	if len(m.Factors) == 0 { // a part's unaries with its factors kept flat: no scope to mark
		return nil
	}
	seen := make([]int, n) // seen[v] == a+1: v is in factor a's scope
	for a := range m.Factors {
		if err := m.validateFactor(a, seen); err != nil {
			return fmt.Errorf("factor %d (%s): %w", a, m.Factors[a].Kind, err)
		}
	}
	return nil
}

func (m *Model) validateFactor(a int, seen []int) error {
	f := &m.Factors[a]
	if f.Kind >= numKinds {
		return fmt.Errorf("unknown kind %d", f.Kind)
	}
	for k, v := range f.Vars {
		if v < 0 || v >= len(m.Cards) {
			return fmt.Errorf("scope entry %d: variable %d out of range [0,%d)", k, v, len(m.Cards))
		}
		if seen[v] == a+1 {
			return fmt.Errorf("variable %d appears twice in the scope", v)
		}
		seen[v] = a + 1
	}
	switch f.Kind {
	case Dense:
		size, err := m.TableSize(f.Vars)
		if err != nil {
			return err
		}
		if len(f.Table) != size {
			return fmt.Errorf("table has %d entries, scope needs %d", len(f.Table), size)
		}
		for k, v := range f.Table {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				return fmt.Errorf("table entry %d is %v", k, v)
			}
		}
	case Sequence:
		if len(f.Vars) < 2 {
			return fmt.Errorf("needs at least 2 variables, has %d", len(f.Vars))
		}
		sum := 0
		for _, v := range f.Vars {
			sum += m.Cards[v]
		}
		emission := f.EmissionScores()
		if emission != nil && len(emission) != sum {
			return fmt.Errorf("emission has %d entries, scope needs %d", len(emission), sum)
		}
		if _, _, err := SequenceTransitions(m, f); err != nil {
			return err
		}
		for k, v := range emission {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				return fmt.Errorf("emission entry %d is %v", k, v)
			}
		}
		for k, v := range f.Table {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				return fmt.Errorf("transition entry %d is %v", k, v)
			}
		}
	case Pair, Potts, TruncLinear, TruncQuad:
		if len(f.Vars) != 2 {
			return fmt.Errorf("needs 2 variables, has %d", len(f.Vars))
		}
		if f.Kind == Pair && (m.Cards[f.Vars[0]] != 2 || m.Cards[f.Vars[1]] != 2) {
			return fmt.Errorf("variables must be binary")
		}
		if f.Kind != Pair && m.Cards[f.Vars[0]] != m.Cards[f.Vars[1]] {
			return fmt.Errorf("cardinalities differ (%d, %d)", m.Cards[f.Vars[0]], m.Cards[f.Vars[1]])
		}
		if err := CheckPairTerm(f.Kind, f.Weight, f.Trunc); err != nil {
			return err
		}
	default: // logic
		min := 1
		if f.Kind == OROut || f.Kind == ANDOut {
			min = 2
		}
		if len(f.Vars) < min {
			return fmt.Errorf("needs at least %d variables, has %d", min, len(f.Vars))
		}
		for _, v := range f.Vars {
			if m.Cards[v] != 2 {
				return fmt.Errorf("variable %d has cardinality %d, logic factors need binary variables", v, m.Cards[v])
			}
		}
		if neg := f.NegatedInputs(); neg != nil && len(neg) != len(f.Vars) {
			return fmt.Errorf("negated has %d entries for %d variables", len(neg), len(f.Vars))
		}
		if b := f.BudgetBound(); f.Kind == Budget && (b < 0 || b > len(f.Vars)) {
			return fmt.Errorf("budget %d outside [0,%d]", b, len(f.Vars))
		}
	}
	return nil
}

// Score returns the score of a full assignment x (one state per variable):
// the constant plus all unary and factor log-potentials, -Inf when a hard
// constraint is violated. It panics if x is not a valid assignment.
func (m *Model) Score(x []int) float64 {
	s := m.Constant
	for i := range m.Cards {
		s += m.Unary[m.UnaryOff[i]+x[i]]
	}
	for a := range m.Factors {
		s += m.FactorScore(a, x)
	}
	return s
}

// FactorScore returns factor a's log-potential at the full assignment x.
func (m *Model) FactorScore(a int, x []int) float64 {
	f := &m.Factors[a]
	switch f.Kind {
	case Dense:
		idx := 0
		for _, v := range f.Vars {
			idx = idx*m.Cards[v] + x[v]
		}
		return f.Table[idx]
	case Pair:
		if x[f.Vars[0]] == 1 && x[f.Vars[1]] == 1 {
			return f.Weight
		}
		return 0
	case Potts:
		if x[f.Vars[0]] == x[f.Vars[1]] {
			return f.Weight
		}
		return 0
	case TruncLinear, TruncQuad:
		return TruncScore(f.Kind, f.Weight, f.Trunc, x[f.Vars[0]], x[f.Vars[1]])
	case Sequence:
		shared, offs, _ := SequenceTransitions(m, f)
		s, eoff, emission := 0.0, 0, f.EmissionScores()
		for k, v := range f.Vars {
			if emission != nil {
				s += emission[eoff+x[v]]
			}
			eoff += m.Cards[v]
			if k+1 < len(f.Vars) {
				next := f.Vars[k+1]
				t := 0
				if !shared {
					t = offs[k]
				}
				s += f.Table[t+x[v]*m.Cards[next]+x[next]]
			}
		}
		return s
	}
	if LogicSatisfied(f, func(k int) bool { return x[f.Vars[k]] == 1 }) {
		return 0
	}
	return math.Inf(-1)
}

// TruncScore returns the score of a TruncLinear or TruncQuad term of weight
// w and truncation t at states x and y: -w * min(|x-y|, t) or
// -w * min((x-y)^2, t), evaluated exactly so (internal/pairterm's Theta
// gives the same bits).
func TruncScore(k Kind, w, t float64, x, y int) float64 {
	d := x - y
	if k == TruncQuad {
		d *= d
	} else if d < 0 {
		d = -d
	}
	return -w * min(float64(d), t)
}

// CheckPairTerm checks the parameters of a Pair, Potts, TruncLinear or
// TruncQuad factor: a finite weight, and for the truncated kinds a finite
// truncation > 0 whose product with the weight is finite.
func CheckPairTerm(k Kind, w, t float64) error {
	if math.IsNaN(w) || math.IsInf(w, 0) {
		return fmt.Errorf("weight %v is not finite", w)
	}
	if !k.IsTruncated() {
		return nil
	}
	if !(t > 0) || math.IsInf(t, 0) {
		return fmt.Errorf("truncation %v is not finite and > 0", t)
	}
	if math.IsInf(w*t, 0) {
		return fmt.Errorf("weight %v times truncation %v overflows", w, t)
	}
	return nil
}

// LogicSatisfied reports whether a logic factor accepts the inputs given by
// val(k), the raw (un-negated) truth value of its k-th variable.
func LogicSatisfied(f *Factor, val func(k int) bool) bool {
	n := len(f.Vars)
	lit := func(k int) bool {
		b := val(k)
		if f.IsNegated(k) {
			b = !b
		}
		return b
	}
	count := func(upto int) int {
		c := 0
		for k := 0; k < upto; k++ {
			if lit(k) {
				c++
			}
		}
		return c
	}
	switch f.Kind {
	case XOR:
		return count(n) == 1
	case AtMostOne:
		return count(n) <= 1
	case OR:
		return count(n) >= 1
	case OROut:
		return (count(n-1) >= 1) == lit(n-1)
	case ANDOut:
		return (count(n-1) == n-1) == lit(n-1)
	case Budget:
		return count(n) <= f.BudgetBound()
	}
	panic(fmt.Sprintf("model: LogicSatisfied on kind %s", f.Kind))
}

// SequenceTransitions interprets a Sequence factor's Table: shared reports a
// single table used at every link; otherwise offs[k] is where link k's
// table starts. It returns an error when the length fits neither layout.
func SequenceTransitions(m *Model, f *Factor) (shared bool, offs []int, err error) {
	n := len(f.Vars)
	c0 := m.Cards[f.Vars[0]]
	same := true
	for _, v := range f.Vars {
		same = same && m.Cards[v] == c0
	}
	if same && n > 2 && len(f.Table) == c0*c0 {
		return true, nil, nil
	}
	offs = make([]int, n-1)
	total := 0
	for k := 0; k+1 < n; k++ {
		offs[k] = total
		total += m.Cards[f.Vars[k]] * m.Cards[f.Vars[k+1]]
		if total > MaxTableEntries {
			return false, nil, fmt.Errorf("transition tables have more than %d entries", MaxTableEntries)
		}
	}
	if len(f.Table) != total {
		if same && n > 2 {
			return false, nil, fmt.Errorf("transitions have %d entries, want %d (shared) or %d (per position)", len(f.Table), c0*c0, total)
		}
		return false, nil, fmt.Errorf("transitions have %d entries, want %d (per position)", len(f.Table), total)
	}
	return false, offs, nil
}
