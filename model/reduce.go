package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrInfeasible is returned when no assignment can have a finite score
// (a variable with no allowed state, or a factor with no feasible
// configuration left after evidence).
var ErrInfeasible = errors.New("model is infeasible")

// maxLogicExpand bounds the arity of a logic factor that Reduce expands into
// a dense table when evidence or forbidden states touch its variables.
const maxLogicExpand = 20

// Reduced is a model prepared for a solver, with a map back to the original.
//
// Reduce applies evidence, folds factors over fewer than two free variables
// into unaries and the constant, and removes forbidden states (states whose
// unary log-potential is -Inf) from the domains, so that every unary of the
// reduced model is finite.
type Reduced struct {
	*Model
	// States[i] lists the original states of original variable i that
	// survive, indexed by the state in the reduced model; nil when the
	// model needed no reduction (then Model is the original, not a copy).
	// States and the arrays Model shares with the original (its
	// cardinalities, unary layout and factors when no domain shrank) are
	// read-only.
	States [][]int
}

// Expand maps an assignment of the reduced model back to the original one.
func (r *Reduced) Expand(x []int) []int {
	if r.States == nil {
		return append([]int(nil), x...)
	}
	out := make([]int, len(r.States))
	for i, st := range r.States {
		out[i] = st[x[i]]
	}
	return out
}

// Reduce prepares m (which must be valid) for a solver under evidence ev
// (nil for none). It returns ErrInfeasible, wrapped with the variable or
// factor at fault, when the evidence and hard constraints leave nothing.
func Reduce(m *Model, ev Evidence) (*Reduced, error) {
	if err := ev.Check(m); err != nil {
		return nil, err
	}
	if len(ev) == 0 && alreadyReduced(m) {
		return &Reduced{Model: m}, nil
	}
	n := len(m.Cards)
	// Pass 1: fold factors over fewer than two variables into a copy of the
	// unaries and the constant, so that their hard constraints restrict
	// domains.
	unary := append([]float64(nil), m.Unary...)
	constant := m.Constant
	for a := range m.Factors {
		f := &m.Factors[a]
		switch len(f.Vars) {
		case 1:
			u := unary[m.UnaryOff[f.Vars[0]]:m.UnaryOff[f.Vars[0]+1]]
			for s, t := range m.DenseTable(a) {
				u[s] += t
			}
		case 0:
			constant += m.DenseTable(a)[0]
		}
	}
	// Allowed states. A variable that keeps all its states maps them by
	// a view of one shared identity (read-only, like all of States).
	states := make([][]int, n)
	cards := make([]int, n)
	var ident []int
	if len(m.Cards) > 0 {
		ident = make([]int, slices.Max(m.Cards))
		for s := range ident {
			ident[s] = s
		}
	}
	all := len(ev) == 0 // every variable keeps all its states
	for i := 0; i < n; i++ {
		u := unary[m.UnaryOff[i]:m.UnaryOff[i+1]]
		if s, ok := ev[i]; ok {
			if math.IsInf(u[s], -1) {
				return nil, fmt.Errorf("%w: evidence sets variable %d to state %d, which has potential 0", ErrInfeasible, i, s)
			}
			states[i] = []int{s}
		} else {
			allowed := 0
			for _, v := range u {
				if !math.IsInf(v, -1) {
					allowed++
				}
			}
			if allowed == 0 {
				return nil, fmt.Errorf("%w: variable %d has no allowed state", ErrInfeasible, i)
			}
			st := ident[:len(u):len(u)]
			if allowed < len(u) {
				st = make([]int, 0, allowed)
				for s, v := range u {
					if !math.IsInf(v, -1) {
						st = append(st, s)
					}
				}
			}
			states[i] = st
		}
		cards[i] = len(states[i])
		all = all && cards[i] == m.Cards[i]
	}
	if all {
		// Only one-variable factors were folded: the reduced model shares
		// the cardinalities, the unary layout and (see keptFactors) the
		// factors of m, all read-only, and has the folded unaries.
		shared, _ := keptFactors(m, cards)
		out := &Model{Cards: m.Cards, UnaryOff: m.UnaryOff, Unary: unary, Constant: constant, Factors: shared}
		return &Reduced{Model: out, States: states}, nil
	}
	out := New(cards)
	for i := 0; i < n; i++ {
		u := unary[m.UnaryOff[i]:]
		for k, s := range states[i] {
			out.Unary[out.UnaryOff[i]+k] = u[s]
		}
	}
	out.Constant = constant
	r := &Reduced{Model: out, States: states}
	full := func(v int) bool { return cards[v] == m.Cards[v] }
	out.Factors = make([]Factor, 0, multiVar(m))
	for a := range m.Factors {
		f := &m.Factors[a]
		if len(f.Vars) <= 1 {
			continue
		}
		untouched := true
		for _, v := range f.Vars {
			if !full(v) {
				untouched = false
				break
			}
		}
		if untouched {
			out.Factors = append(out.Factors, *f)
			continue
		}
		if f.Kind != Dense && f.Kind != Sequence {
			if _, err := m.TableSize(f.Vars); err != nil || (f.Kind.IsLogic() && len(f.Vars) > maxLogicExpand) {
				return nil, fmt.Errorf("factor %d (%s): evidence or forbidden states on a factor this large (%d variables) are not supported", a, f.Kind, len(f.Vars))
			}
		}
		if f.Kind == Sequence {
			r.addSlicedSequence(m, f)
			continue
		}
		table := f.Table
		if f.Kind != Dense {
			table = m.DenseTable(a)
		}
		if err := r.addSliced(m, a, table); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// addSliced restricts a dense table over factor a's scope to the allowed
// states and adds the result: as a factor over the variables that keep more
// than one state, or folded into a unary or the constant.
func (r *Reduced) addSliced(m *Model, a int, table []float64) error {
	f := &m.Factors[a]
	var free []int
	for _, v := range f.Vars {
		if r.Cards[v] > 1 {
			free = append(free, v)
		}
	}
	size := 1
	for _, v := range free {
		size *= r.Cards[v]
	}
	// Original strides.
	strides := make([]int, len(f.Vars))
	st := 1
	for k := len(f.Vars) - 1; k >= 0; k-- {
		strides[k] = st
		st *= m.Cards[f.Vars[k]]
	}
	sliced := make([]float64, size)
	idx := make([]int, len(f.Vars)) // reduced state per scope position
	feasible := false
	for e := 0; e < size; e++ {
		off := 0
		for k, v := range f.Vars {
			off += r.States[v][idx[k]] * strides[k]
		}
		sliced[e] = table[off]
		if !math.IsInf(sliced[e], -1) {
			feasible = true
		}
		for k := len(f.Vars) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < r.Cards[f.Vars[k]] {
				break
			}
			idx[k] = 0
		}
	}
	if !feasible {
		return fmt.Errorf("%w: factor %d (%s) has no feasible configuration under the evidence", ErrInfeasible, a, f.Kind)
	}
	switch len(free) {
	case 0:
		r.Constant += sliced[0]
	case 1:
		// Fold into the unary unless the table forbids a state the unary
		// allows: unaries of a reduced model stay finite, so such a table
		// stays a one-variable factor.
		for _, v := range sliced {
			if math.IsInf(v, -1) {
				r.Factors = append(r.Factors, Factor{Kind: Dense, Vars: free, Table: sliced})
				return nil
			}
		}
		u := r.Unaries(free[0])
		for s := range u {
			u[s] += sliced[s]
		}
	default:
		r.Factors = append(r.Factors, Factor{Kind: Dense, Vars: free, Table: sliced})
	}
	return nil
}

// DenseTable returns factor a's log-potentials as a full table over its
// scope, last variable fastest. The caller must know the table fits
// (TableSize).
func (m *Model) DenseTable(a int) []float64 {
	f := &m.Factors[a]
	if f.Kind == Dense {
		return f.Table
	}
	size, err := m.TableSize(f.Vars)
	if err != nil {
		panic(err)
	}
	// The factor is scored in a model of its own scope, so that the
	// assignment has len(f.Vars) entries, not one per variable of m (a
	// full-length one per call made tighten.Cycles quadratic: 40 s on a
	// 300x300 grid).
	local := Model{Cards: make([]int, len(f.Vars)), Factors: []Factor{*f}}
	lf := &local.Factors[0]
	lf.Vars = make([]int, len(f.Vars))
	for k, v := range f.Vars {
		local.Cards[k], lf.Vars[k] = m.Cards[v], k
	}
	table := make([]float64, size)
	x := make([]int, len(f.Vars))
	for e := 0; e < size; e++ {
		table[e] = local.FactorScore(0, x)
		for k := len(x) - 1; k >= 0; k-- {
			if x[k]++; x[k] < local.Cards[k] {
				break
			}
			x[k] = 0
		}
	}
	return table
}

// addSlicedSequence restricts a Sequence factor to the allowed states; it
// stays a Sequence over the same variables (with per-position tables).
func (r *Reduced) addSlicedSequence(m *Model, f *Factor) {
	shared, offs, _ := SequenceTransitions(m, f)
	var emission []float64
	if f.EmissionScores() != nil {
		eoff := 0
		for _, v := range f.Vars {
			for _, st := range r.States[v] {
				emission = append(emission, f.EmissionScores()[eoff+st])
			}
			eoff += m.Cards[v]
		}
	}
	var trans []float64
	for k := 0; k+1 < len(f.Vars); k++ {
		u, v := f.Vars[k], f.Vars[k+1]
		t := 0
		if !shared {
			t = offs[k]
		}
		for _, su := range r.States[u] {
			for _, sv := range r.States[v] {
				trans = append(trans, f.Table[t+su*m.Cards[v]+sv])
			}
		}
	}
	r.Factors = append(r.Factors, Factor{Kind: Sequence, Vars: f.Vars, Table: trans}.WithEmission(emission))
}

// keptFactors returns the factors of m over two or more variables, kept
// unchanged when no domain shrank (cards[v] == m.Cards[v] for all v, or it
// returns nil, false). When they lie in one run of m.Factors (one-variable
// factors before or after them, as readers and generators write them) it
// returns that run, capped so that appending copies, instead of a copy (on
// a 1000x1000 grid, 160 MB of Factor headers).
func keptFactors(m *Model, cards []int) ([]Factor, bool) {
	for v, c := range cards {
		if c != m.Cards[v] {
			return nil, false
		}
	}
	lo, hi := -1, -1
	contiguous := true
	for a := range m.Factors {
		if len(m.Factors[a].Vars) < 2 {
			continue
		}
		if lo < 0 {
			lo = a
		} else if hi != a {
			contiguous = false
		}
		hi = a + 1
	}
	if lo < 0 {
		return nil, true
	}
	if contiguous {
		return m.Factors[lo:hi:hi], true
	}
	out := make([]Factor, 0, multiVar(m))
	for a := range m.Factors {
		if len(m.Factors[a].Vars) >= 2 {
			out = append(out, m.Factors[a])
		}
	}
	return out, true
}

// multiVar returns the number of factors of m over two or more variables.
func multiVar(m *Model) int {
	n := 0
	for a := range m.Factors {
		if len(m.Factors[a].Vars) >= 2 {
			n++
		}
	}
	return n
}

// alreadyReduced reports whether m has nothing for Reduce to do: finite
// unaries and no factor over fewer than two variables.
func alreadyReduced(m *Model) bool {
	for _, u := range m.Unary {
		if math.IsInf(u, -1) {
			return false
		}
	}
	for a := range m.Factors {
		if len(m.Factors[a].Vars) < 2 {
			return false
		}
	}
	return true
}
