package primal

import (
	"math"

	"github.com/ddrun/ddrun/model"
)

// maxTuples bounds the finite entries a table constraint keeps for
// propagation; a larger hard table is only checked on complete assignments
// (its variables still count as constrained).
const maxTuples = 1 << 20

// Constraint kinds.
const (
	consTable uint8 = iota
	consLogic
)

// constraint is one hard constraint: a table (its finite tuples) or a
// logic factor.
type constraint struct {
	kind   uint8
	vars   []int32 // scope
	tuples []int32 // table: the finite entries' states, len(vars) per tuple
	fac    int     // logic: the factor; table: the factor it comes from
	// neg is a logic factor's negations (nil: none).
	neg []bool
	f   *model.Factor
}

// Propagator maintains per-variable domains under the hard constraints of
// a model: a state is removed when no assignment of a constraint's scope
// that is feasible for that constraint and within the other variables'
// domains uses it (generalized arc consistency). Removals go on a trail;
// Undo restores the domains of an earlier Mark.
//
// A Propagator is not safe for concurrent use.
type Propagator struct {
	m       *model.Model
	cons    []constraint
	varCons [][]int32 // constraints touching each variable
	// unchecked are the hard constraints too large to propagate: checked
	// only by the caller's scoring of complete assignments.
	unchecked []int
	// hardVar marks variables in at least one hard constraint.
	hardVar []bool
	// rootRemoved are the states that unary -Inf entries forbid.
	rootRemoved []int32

	dom   []bool  // per state, like m.Unary: still allowed
	size  []int32 // per variable: allowed states
	varOf []int32 // per state: its variable
	trail []int32 // removed states (flat indices), in order

	queue   []int32
	inQueue []bool
	stamp   []uint32 // per state: the revision that found it supported
	gen     uint32
	// failed is the constraint whose revision last wiped a domain out
	// (-1: none, or a removal outside a revision).
	failed int
}

// NewPropagator collects the hard constraints of m (valid) and starts with
// full domains less the states whose unary is -Inf; call Propagate (or
// Reset) before reading the domains.
func NewPropagator(m *model.Model) *Propagator {
	n := m.NumVars()
	p := &Propagator{m: m, varCons: make([][]int32, n), hardVar: make([]bool, n),
		dom: make([]bool, len(m.Unary)), size: make([]int32, n), varOf: make([]int32, len(m.Unary)),
		inQueue: nil, stamp: make([]uint32, len(m.Unary)), failed: -1}
	for i := range n {
		for s := m.UnaryOff[i]; s < m.UnaryOff[i+1]; s++ {
			p.varOf[s] = int32(i)
			if math.IsInf(m.Unary[s], -1) {
				p.rootRemoved = append(p.rootRemoved, int32(s))
			}
		}
	}
	for a := range m.Factors {
		p.addFactor(a)
	}
	p.inQueue = make([]bool, len(p.cons))
	for c := range p.cons {
		for _, v := range p.cons[c].vars {
			p.varCons[v] = append(p.varCons[v], int32(c))
			p.hardVar[v] = true
		}
	}
	for _, a := range p.unchecked {
		for _, v := range m.Factors[a].Vars {
			p.hardVar[v] = true
		}
	}
	p.Reset()
	return p
}

// addFactor adds factor a's hard constraints, if it has any.
func (p *Propagator) addFactor(a int) {
	m := p.m
	f := &m.Factors[a]
	switch {
	case f.Kind == model.Dense:
		p.addTable(a, f.Vars, f.Table, 0)
	case f.Kind == model.Sequence:
		shared, offs, _ := model.SequenceTransitions(m, f)
		if f.EmissionScores() != nil {
			eoff := 0
			for _, v := range f.Vars {
				p.addTable(a, []int{v}, f.EmissionScores()[eoff:eoff+m.Cards[v]], 0)
				eoff += m.Cards[v]
			}
		}
		for k := 0; k+1 < len(f.Vars); k++ {
			t := 0
			if !shared {
				t = offs[k]
			}
			p.addTable(a, f.Vars[k:k+2], f.Table, t)
		}
	case f.Kind.IsLogic():
		c := constraint{kind: consLogic, fac: a, neg: f.NegatedInputs(), f: f}
		for _, v := range f.Vars {
			c.vars = append(c.vars, int32(v))
		}
		p.cons = append(p.cons, c)
	}
	// Pair and Potts have finite weights: no hard constraint.
}

// addTable adds the table over vars at table[off:] (last variable fastest)
// as a constraint if it has a -Inf entry.
func (p *Propagator) addTable(a int, vars []int, table []float64, off int) {
	size := 1
	for _, v := range vars {
		size *= p.m.Cards[v]
	}
	t := table[off : off+size]
	finite := 0
	for _, e := range t {
		if !math.IsInf(e, -1) {
			finite++
		}
	}
	if finite == size {
		return
	}
	if finite*len(vars) > maxTuples {
		p.unchecked = append(p.unchecked, a)
		return
	}
	c := constraint{kind: consTable, fac: a, vars: make([]int32, len(vars)), tuples: make([]int32, 0, finite*len(vars))}
	for k, v := range vars {
		c.vars[k] = int32(v)
	}
	st := make([]int32, len(vars))
	for e := range t {
		if !math.IsInf(t[e], -1) {
			c.tuples = append(c.tuples, st...)
		}
		for k := len(vars) - 1; k >= 0; k-- {
			if st[k]++; int(st[k]) < p.m.Cards[vars[k]] {
				break
			}
			st[k] = 0
		}
	}
	p.cons = append(p.cons, c)
}

// Model returns the model the propagator was built for.
func (p *Propagator) Model() *model.Model { return p.m }

// Reset restores the full domains less the states whose unary is -Inf,
// empties the trail, and propagates; it reports false when the model is
// infeasible by propagation alone.
func (p *Propagator) Reset() bool {
	m := p.m
	for i := range p.dom {
		p.dom[i] = true
	}
	for i, c := range m.Cards {
		p.size[i] = int32(c)
	}
	p.trail = p.trail[:0]
	ok := true
	for _, s := range p.rootRemoved {
		ok = p.remove(int(s)) && ok
	}
	if !ok {
		p.clearQueue()
		return false
	}
	for c := range p.cons {
		p.enqueue(int32(c))
	}
	return p.Propagate()
}

// Allowed reports whether variable i may still take state s.
func (p *Propagator) Allowed(i, s int) bool { return p.dom[p.m.UnaryOff[i]+s] }

// Size returns the number of states variable i may still take.
func (p *Propagator) Size(i int) int { return int(p.size[i]) }

// Domains returns the allowed states, laid out like the model's Unary (a
// view: valid until the next change).
func (p *Propagator) Domains() []bool { return p.dom }

// Hard reports whether variable i is in a hard constraint.
func (p *Propagator) Hard(i int) bool { return p.hardVar[i] }

// Mark returns the trail's position, for Undo.
func (p *Propagator) Mark() int { return len(p.trail) }

// Undo restores the domains as they were at mark.
func (p *Propagator) Undo(mark int) {
	for k := len(p.trail) - 1; k >= mark; k-- {
		s := p.trail[k]
		p.dom[s] = true
		p.size[p.varOf[s]]++
	}
	p.trail = p.trail[:mark]
}

// Assign restricts variable i to state s and propagates; it reports false
// on a wipe-out (the domains are then partly reduced: Undo to a mark).
func (p *Propagator) Assign(i, s int) bool {
	off := p.m.UnaryOff[i]
	if !p.dom[off+s] {
		p.failed = -1
		return false
	}
	for t := off; t < p.m.UnaryOff[i+1]; t++ {
		if t != off+s && p.dom[t] {
			p.remove(t)
		}
	}
	return p.Propagate()
}

// Remove forbids state s of variable i and propagates; false on a
// wipe-out.
func (p *Propagator) Remove(i, s int) bool {
	if !p.remove(p.m.UnaryOff[i] + s) {
		p.failed = -1
		p.clearQueue()
		return false
	}
	return p.Propagate()
}

// remove forbids the flat state s, queues the constraints of its
// variable, and reports whether the variable keeps a state.
func (p *Propagator) remove(s int) bool {
	if !p.dom[s] {
		return true
	}
	p.dom[s] = false
	v := p.varOf[s]
	p.size[v]--
	p.trail = append(p.trail, int32(s))
	for _, c := range p.varCons[v] {
		p.enqueue(c)
	}
	return p.size[v] > 0
}

func (p *Propagator) enqueue(c int32) {
	if !p.inQueue[c] {
		p.inQueue[c] = true
		p.queue = append(p.queue, c)
	}
}

func (p *Propagator) clearQueue() {
	for _, c := range p.queue {
		p.inQueue[c] = false
	}
	p.queue = p.queue[:0]
}

// Propagate revises queued constraints until none is queued (the domains
// are then generalized arc consistent) or a domain is wiped out (false).
func (p *Propagator) Propagate() bool {
	for k := 0; k < len(p.queue); k++ {
		c := p.queue[k]
		p.inQueue[c] = false
		if !p.revise(int(c)) {
			p.failed = int(c)
			// Drop what is left, keeping the flags consistent.
			for _, d := range p.queue[k+1:] {
				p.inQueue[d] = false
			}
			p.queue = p.queue[:0]
			return false
		}
		// Compact now and then so the queue does not grow without bound.
		if k >= 1024 && k*2 >= len(p.queue) {
			n := copy(p.queue, p.queue[k+1:])
			p.queue = p.queue[:n]
			k = -1
		}
	}
	p.queue = p.queue[:0]
	return true
}

// revise removes the states of constraint c's variables that no allowed
// tuple supports; false on a wipe-out.
func (p *Propagator) revise(c int) bool {
	if p.cons[c].kind == consLogic {
		return p.reviseLogic(c)
	}
	con := &p.cons[c]
	m := p.m
	p.gen++
	if p.gen == 0 { // wrapped: clear the stamps
		clear(p.stamp)
		p.gen = 1
	}
	gen := p.gen
	k := len(con.vars)
	var offs [8]int
	var offv []int
	if k <= len(offs) {
		offv = offs[:k]
	} else {
		offv = make([]int, k)
	}
	for j, v := range con.vars {
		offv[j] = m.UnaryOff[v]
	}
	tu := con.tuples
	for t := 0; t+k <= len(tu); t += k {
		ok := true
		for j := range k {
			if !p.dom[offv[j]+int(tu[t+j])] {
				ok = false
				break
			}
		}
		if ok {
			for j := range k {
				p.stamp[offv[j]+int(tu[t+j])] = gen
			}
		}
	}
	for j, v := range con.vars {
		for s := offv[j]; s < m.UnaryOff[v+1]; s++ {
			if p.dom[s] && p.stamp[s] != gen {
				if !p.remove(s) {
					return false
				}
			}
		}
	}
	return true
}

// literal k of a logic constraint: 1 known true, 0 known false, -1 unknown.
func (p *Propagator) literal(con *constraint, k int) int {
	off := p.m.UnaryOff[con.vars[k]]
	t, f := p.dom[off+1], p.dom[off]
	neg := con.neg != nil && con.neg[k]
	switch {
	case t && f:
		return -1
	case t != neg: // only state 1, not negated; or only state 0, negated
		return 1
	default:
		return 0
	}
}

// force makes literal k of a logic constraint take value b.
func (p *Propagator) force(con *constraint, k int, b bool) bool {
	neg := con.neg != nil && con.neg[k]
	state := 0
	if b != neg {
		state = 1
	}
	return p.remove(p.m.UnaryOff[con.vars[k]] + 1 - state)
}

// reviseLogic applies the counting rules of a logic factor, which give
// GAC for each kind.
func (p *Propagator) reviseLogic(c int) bool {
	con := &p.cons[c]
	n := len(con.vars)
	in := n
	kind := con.f.Kind
	if kind == model.OROut || kind == model.ANDOut {
		in = n - 1
	}
	nt, nf, nu, lastU := 0, 0, 0, -1
	for k := range in {
		switch p.literal(con, k) {
		case 1:
			nt++
		case 0:
			nf++
		default:
			nu++
			lastU = k
		}
	}
	// forceUnknown sets every unknown input to b.
	forceUnknown := func(b bool) bool {
		for k := range in {
			if p.literal(con, k) == -1 && !p.force(con, k, b) {
				return false
			}
		}
		return true
	}
	switch kind {
	case model.XOR, model.AtMostOne, model.Budget:
		limit := 1
		if kind == model.Budget {
			limit = con.f.BudgetBound()
		}
		if nt > limit {
			return false
		}
		if nt == limit {
			return forceUnknown(false)
		}
		if kind == model.XOR && nt == 0 {
			if nu == 0 {
				return false
			}
			if nu == 1 {
				return p.force(con, lastU, true)
			}
		}
	case model.OR:
		if nt == 0 {
			if nu == 0 {
				return false
			}
			if nu == 1 {
				return p.force(con, lastU, true)
			}
		}
	case model.OROut:
		out := p.literal(con, n-1)
		switch {
		case nt > 0:
			return p.force(con, n-1, true)
		case nu == 0:
			return p.force(con, n-1, false)
		case out == 0:
			return forceUnknown(false)
		case out == 1 && nu == 1:
			return p.force(con, lastU, true)
		}
	case model.ANDOut:
		out := p.literal(con, n-1)
		switch {
		case nf > 0:
			return p.force(con, n-1, false)
		case nu == 0:
			return p.force(con, n-1, true)
		case out == 1:
			return forceUnknown(true)
		case out == 0 && nu == 1:
			return p.force(con, lastU, false)
		}
	}
	return true
}

// Domains propagates the hard constraints of m (valid) under evidence ev
// (nil for none) and returns the states that survive, laid out like
// m.Unary: every state that some feasible assignment uses survives (and
// usually few others). ok is false when propagation proves m infeasible
// under ev.
func Domains(m *model.Model, ev model.Evidence) (allowed []bool, ok bool) {
	p := NewPropagator(m)
	if !p.Reset() || !p.applyEvidence(ev) {
		return nil, false
	}
	return append([]bool(nil), p.dom...), true
}

// applyEvidence assigns the observed variables, in increasing order.
func (p *Propagator) applyEvidence(ev model.Evidence) bool {
	if len(ev) == 0 {
		return true
	}
	for i := range p.m.Cards {
		if s, ok := ev[i]; ok && !p.Assign(i, s) {
			return false
		}
	}
	return true
}
