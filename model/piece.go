package model

import (
	"errors"
	"fmt"
	"math"
)

// PieceChecker validates a model given piece by piece (a variable's
// unaries, a factor), as Validate would the whole model, for writers of
// models too big to hold. It holds one factor at a time.
type PieceChecker struct {
	NumVars int
	Card    func(i int) int
	local   Model // the factor being checked, over variables 0..k-1
	vars    []int // its scope
}

// Unaries checks variable i's unaries u.
func (c *PieceChecker) Unaries(i int, u []float64) error {
	if card := c.Card(i); len(u) != card {
		return fmt.Errorf("variable %d: %d unary entries for cardinality %d", i, len(u), card)
	}
	for s, v := range u {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			return fmt.Errorf("variable %d state %d: unary log-potential %v", i, s, v)
		}
	}
	return nil
}

// Factor checks factor a and returns it as factor 0 of a model over its
// scope alone (variable k of the model is f.Vars[k]), valid until the next
// call.
func (c *PieceChecker) Factor(a int, f *Factor) (*Model, error) {
	m := &c.local
	m.Cards = m.Cards[:0]
	m.UnaryOff = append(m.UnaryOff[:0], 0)
	vars := c.vars[:0]
	for k, v := range f.Vars {
		if v < 0 || v >= c.NumVars {
			return nil, fmt.Errorf("factor %d (%s): scope entry %d: variable %d out of range [0,%d)", a, f.Kind, k, v, c.NumVars)
		}
		for _, u := range f.Vars[:k] {
			if u == v {
				return nil, fmt.Errorf("factor %d (%s): variable %d appears twice in the scope", a, f.Kind, v)
			}
		}
		card := c.Card(v)
		m.Cards = append(m.Cards, card)
		m.UnaryOff = append(m.UnaryOff, m.UnaryOff[k]+card)
		vars = append(vars, k)
	}
	n := m.UnaryOff[len(f.Vars)]
	if cap(m.Unary) < n {
		m.Unary = make([]float64, n)
	}
	m.Unary = m.Unary[:n]
	c.vars = vars
	g := *f
	g.Vars = vars
	m.Factors = append(m.Factors[:0], g)
	if err := m.Validate(); err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // drop the local model's "factor 0 (kind)"
		}
		return nil, fmt.Errorf("factor %d (%s): %w", a, f.Kind, err)
	}
	return m, nil
}

// Source is a model given piece by piece, for models too big to hold in
// memory (generate.GridStream is one; the streaming writers of model/uai
// and model/native take it). Each method may be called several times and
// must give the same pieces every time; the slices and factors passed to fn
// are only valid during the call.
type Source interface {
	NumVars() int
	Card(i int) int
	NumFactors() int
	Constant() float64
	// EachUnaries calls fn with each variable's unaries (Card(i) entries), in
	// order.
	EachUnaries(fn func(i int, u []float64))
	// EachFactor calls fn with each of the NumFactors factors, in order.
	EachFactor(fn func(a int, f *Factor))
}

// SourceOf returns m as a Source.
func SourceOf(m *Model) Source { return modelSource{m} }

type modelSource struct{ m *Model }

func (s modelSource) NumVars() int      { return len(s.m.Cards) }
func (s modelSource) Card(i int) int    { return s.m.Cards[i] }
func (s modelSource) NumFactors() int   { return len(s.m.Factors) }
func (s modelSource) Constant() float64 { return s.m.Constant }
func (s modelSource) EachUnaries(fn func(int, []float64)) {
	for i := range s.m.Cards {
		fn(i, s.m.Unaries(i))
	}
}
func (s modelSource) EachFactor(fn func(int, *Factor)) {
	for a := range s.m.Factors {
		fn(a, &s.m.Factors[a])
	}
}

// Progress is told how much of a streamed write is done, in pieces (a
// variable's unaries or a factor, once per pass over the source).
type Progress func(done, total int64)

// Step counts one piece of total done and tells p, when not nil, every
// 16384 pieces and at the end.
func (p Progress) Step(done *int64, total int64) {
	*done++
	if p != nil && (*done%(1<<14) == 0 || *done == total) {
		p(*done, total)
	}
}
