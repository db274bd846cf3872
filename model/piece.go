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
