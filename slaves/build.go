package slaves

import (
	"fmt"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
)

// Build returns the solver for one slave of a decomposition plan: a factor
// slave (ForFactor), or a Chain or Tree over the plan's pairwise factors.
// Coarse slaves carry no unaries of their own: the master passes each
// variable's share of its unary in the slave's per-variable scores.
func Build(m *model.Model, s partition.Slave) (Slave, error) {
	cards := make([]int, len(s.Vars))
	for k, v := range s.Vars {
		cards[k] = m.Cards[v]
	}
	switch s.Shape {
	case partition.Single:
		if len(s.Factors) != 1 {
			return nil, fmt.Errorf("single slave with %d factors", len(s.Factors))
		}
		return ForFactor(m, s.Factors[0])
	case partition.Chain:
		tables := make([][]float64, len(s.Factors))
		for k, a := range s.Factors {
			tables[k] = orientedTable(m, a, s.Vars[k], s.Vars[k+1])
		}
		return NewChain(cards, nil, tables), nil
	case partition.Tree:
		tables := make([][]float64, len(s.Factors))
		for k, a := range s.Factors {
			tables[k] = orientedTable(m, a, s.Vars[s.Parent[k]], s.Vars[k+1])
		}
		return NewTree(cards, s.Parent, nil, tables), nil
	}
	return nil, fmt.Errorf("no solver for %s slaves", s.Shape)
}

// orientedTable returns pairwise factor a's table with u as the row
// variable and v as the column variable.
func orientedTable(m *model.Model, a, u, v int) []float64 {
	t := m.DenseTable(a)
	if m.Factors[a].Vars[0] == u {
		return t
	}
	cu, cv := m.Cards[u], m.Cards[v]
	out := make([]float64, len(t))
	for x := 0; x < cu; x++ {
		for y := 0; y < cv; y++ {
			out[x*cv+y] = t[y*cu+x]
		}
	}
	return out
}

// sequenceChain builds the Chain slave of a Sequence factor.
func sequenceChain(m *model.Model, f *model.Factor) (Slave, error) {
	shared, offs, err := model.SequenceTransitions(m, f)
	if err != nil {
		return nil, err
	}
	n := len(f.Vars)
	cards := make([]int, n)
	for k, v := range f.Vars {
		cards[k] = m.Cards[v]
	}
	var emissions [][]float64
	if f.EmissionScores() != nil {
		emissions = make([][]float64, n)
		off := 0
		for k, c := range cards {
			emissions[k] = f.EmissionScores()[off : off+c]
			off += c
		}
	}
	trans := make([][]float64, n-1)
	for k := range trans {
		if shared {
			trans[k] = f.Table
		} else {
			trans[k] = f.Table[offs[k] : offs[k]+cards[k]*cards[k+1]]
		}
	}
	return NewChain(cards, emissions, trans), nil
}
