package model

import "fmt"

// Evidence maps observed variables to their observed states.
type Evidence map[int]int

// Check reports the first observation that does not fit m.
func (e Evidence) Check(m *Model) error {
	for v, s := range e {
		if v < 0 || v >= len(m.Cards) {
			return fmt.Errorf("evidence: variable %d out of range [0,%d)", v, len(m.Cards))
		}
		if s < 0 || s >= m.Cards[v] {
			return fmt.Errorf("evidence: variable %d state %d out of range [0,%d)", v, s, m.Cards[v])
		}
	}
	return nil
}
