package partition

import (
	"fmt"

	"github.com/ddrun/ddrun/model"
)

// Shape says what structure a slave has, and so which solver handles it.
type Shape uint8

// Slave shapes.
const (
	// Single: one factor of any kind; Vars is the factor's scope.
	Single Shape = iota
	// Chain: pairwise factors linking Vars[k] and Vars[k+1], in order;
	// Factors[k] is the factor on that link.
	Chain
	// Tree: pairwise factors forming a tree (forest) over Vars; Factors[k]
	// links Vars[Parent[k]] and Vars[k+1] (Vars[0] is the root).
	Tree
)

func (s Shape) String() string {
	switch s {
	case Single:
		return "single"
	case Chain:
		return "chain"
	case Tree:
		return "tree"
	}
	return fmt.Sprintf("shape(%d)", int(s))
}

// Slave is one subproblem: a set of factors and the variables they touch.
type Slave struct {
	Shape   Shape
	Vars    []int // the slave's scope, in the order its solver sees them
	Factors []int // indices into model.Factors
	// Parent is for Tree slaves: Parent[k] is the index in Vars of the
	// parent of Vars[k+1] (so len(Parent) == len(Vars)-1 == len(Factors)).
	Parent []int
}

// Plan is a decomposition: every factor of the model belongs to exactly one
// slave. The unaries are split among the slaves that share a variable, by
// the consensus engine (AD3 eq. 5), so any plan has the same LP relaxation
// when its slaves are solved exactly over their own marginal polytopes.
type Plan struct {
	Slaves []Slave
}

// PerFactor is the fine decomposition: one Single slave per factor.
func PerFactor(m *model.Model) Plan {
	p := Plan{Slaves: make([]Slave, len(m.Factors))}
	for a := range m.Factors {
		p.Slaves[a] = Slave{Shape: Single, Vars: m.Factors[a].Vars, Factors: []int{a}}
	}
	return p
}

// Validate checks that every factor is owned by exactly one slave and that
// each slave's scope and shape are consistent with its factors.
func (p Plan) Validate(m *model.Model) error {
	owner := make([]int, len(m.Factors))
	for a := range owner {
		owner[a] = -1
	}
	for s, sl := range p.Slaves {
		for _, a := range sl.Factors {
			if a < 0 || a >= len(m.Factors) {
				return fmt.Errorf("slave %d: factor %d out of range", s, a)
			}
			if owner[a] >= 0 {
				return fmt.Errorf("slave %d: factor %d already owned by slave %d", s, a, owner[a])
			}
			owner[a] = s
		}
		if err := sl.validate(m); err != nil {
			return fmt.Errorf("slave %d (%s): %w", s, sl.Shape, err)
		}
	}
	for a, s := range owner {
		if s < 0 {
			return fmt.Errorf("factor %d belongs to no slave", a)
		}
	}
	return nil
}

func (sl Slave) validate(m *model.Model) error {
	seen := make(map[int]bool, len(sl.Vars))
	for _, v := range sl.Vars {
		if v < 0 || v >= m.NumVars() {
			return fmt.Errorf("variable %d out of range", v)
		}
		if seen[v] {
			return fmt.Errorf("variable %d appears twice", v)
		}
		seen[v] = true
	}
	link := func(k, a, u, v int) error {
		f := &m.Factors[a]
		if len(f.Vars) != 2 || !((f.Vars[0] == u && f.Vars[1] == v) || (f.Vars[0] == v && f.Vars[1] == u)) {
			return fmt.Errorf("link %d: factor %d is not a pairwise factor on variables %d and %d", k, a, u, v)
		}
		return nil
	}
	switch sl.Shape {
	case Single:
		if len(sl.Factors) != 1 {
			return fmt.Errorf("has %d factors, want 1", len(sl.Factors))
		}
		f := &m.Factors[sl.Factors[0]]
		if len(f.Vars) != len(sl.Vars) {
			return fmt.Errorf("scope has %d variables, factor %d has %d", len(sl.Vars), sl.Factors[0], len(f.Vars))
		}
		for k, v := range f.Vars {
			if sl.Vars[k] != v {
				return fmt.Errorf("scope differs from factor %d's", sl.Factors[0])
			}
		}
	case Chain:
		if len(sl.Factors) != len(sl.Vars)-1 {
			return fmt.Errorf("%d variables need %d links, have %d", len(sl.Vars), len(sl.Vars)-1, len(sl.Factors))
		}
		for k, a := range sl.Factors {
			if err := link(k, a, sl.Vars[k], sl.Vars[k+1]); err != nil {
				return err
			}
		}
	case Tree:
		if len(sl.Factors) != len(sl.Vars)-1 || len(sl.Parent) != len(sl.Factors) {
			return fmt.Errorf("%d variables need %d links and parents, have %d and %d", len(sl.Vars), len(sl.Vars)-1, len(sl.Factors), len(sl.Parent))
		}
		for k, a := range sl.Factors {
			par := sl.Parent[k]
			if par < 0 || par > k {
				return fmt.Errorf("link %d: parent %d must come before variable %d in Vars", k, par, k+1)
			}
			if err := link(k, a, sl.Vars[par], sl.Vars[k+1]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown shape")
	}
	return nil
}
