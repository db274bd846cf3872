package consensus

import (
	"fmt"
	"math"
	"slices"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/slaves"
)

// Pairs holds a part's factors flat when all of them are pairwise factors
// of one kind (model.Potts or model.Pair): scope (I[a], J[a]) in the
// part's numbering and weight W[a], 16 bytes a factor where a
// model.Factor takes 80 plus its scope. A part with Pairs has one slave
// per pair, in this order (what partition.PerFactor gives the same
// factors), and its Model holds the variables only. Pairs exist for
// memory: a sharded worker of a grid holds two factors per variable.
type Pairs struct {
	Kind model.Kind
	I, J []int32
	W    []float64
}

// Len returns the number of pairs.
func (q *Pairs) Len() int { return len(q.W) }

// Factor returns pair a as a model.Factor (a fresh scope).
func (q *Pairs) Factor(a int) model.Factor {
	return model.Factor{Kind: q.Kind, Vars: []int{int(q.I[a]), int(q.J[a])}, Weight: q.W[a]}
}

// AppendFactors appends every pair to fs as a model.Factor, in order.
func (q *Pairs) AppendFactors(fs []model.Factor) []model.Factor {
	fs = slices.Grow(fs, q.Len())
	for a := range q.Len() {
		fs = append(fs, q.Factor(a))
	}
	return fs
}

// Validate checks the pairs against the cardinalities of the part's
// variables as model.Model.Validate checks such factors.
func (q *Pairs) Validate(cards []int) error {
	if q.Kind != model.Potts && q.Kind != model.Pair {
		return fmt.Errorf("pairs of kind %s", q.Kind)
	}
	if len(q.I) != len(q.W) || len(q.J) != len(q.W) {
		return fmt.Errorf("pairs: %d, %d and %d entries", len(q.I), len(q.J), len(q.W))
	}
	n := len(cards)
	for a, w := range q.W {
		i, j := int(q.I[a]), int(q.J[a])
		switch {
		case i < 0 || i >= n || j < 0 || j >= n:
			return fmt.Errorf("factor %d (%s): variables (%d, %d) out of range [0,%d)", a, q.Kind, i, j, n)
		case i == j:
			return fmt.Errorf("factor %d (%s): variable %d appears twice in the scope", a, q.Kind, i)
		case q.Kind == model.Pair && (cards[i] != 2 || cards[j] != 2):
			return fmt.Errorf("factor %d (%s): variables must be binary", a, q.Kind)
		case q.Kind == model.Potts && cards[i] != cards[j]:
			return fmt.Errorf("factor %d (%s): cardinalities differ (%d, %d)", a, q.Kind, cards[i], cards[j])
		case math.IsNaN(w) || math.IsInf(w, 0):
			return fmt.Errorf("factor %d (%s): weight %v is not finite", a, q.Kind, w)
		}
	}
	return nil
}

// score is pair a's term of the score of x: model.Model.FactorScore of
// the same factor.
func (q *Pairs) score(a int, x []int) float64 {
	xi, xj := x[q.I[a]], x[q.J[a]]
	if q.Kind == model.Potts {
		if xi == xj {
			return q.W[a]
		}
		return 0
	}
	if xi == 1 && xj == 1 {
		return q.W[a]
	}
	return 0
}

// decomposePairs is Decompose of the per-factor plan of a part whose
// factors are pairs: the slaves slaves.ForFactor builds for the same
// factors, without a plan or a model.Factor each.
func decomposePairs(m *model.Model, q *Pairs) (*Problem, error) {
	n := q.Len()
	nr := 0
	for a := range n {
		nr += m.Cards[q.I[a]] + m.Cards[q.J[a]]
	}
	if 2*n >= math.MaxInt32 || nr >= math.MaxInt32 {
		return nil, fmt.Errorf("%d pairs of %d replica entries: a part must have fewer than 2^31", n, nr)
	}
	p := newProblem(m, n)
	p.SlaveVars = make([]int32, 0, 2*n)
	for a := range n {
		s, err := slaves.ForPairwise(q.Kind, m.Cards[q.I[a]], q.W[a])
		if err != nil {
			return nil, fmt.Errorf("slave %d (single over factor %d): %w", a, a, err)
		}
		p.Slaves[a] = s
		p.SlaveVars = append(p.SlaveVars, q.I[a], q.J[a])
		p.endSlave(a)
	}
	p.indexReplicas()
	return p, nil
}
