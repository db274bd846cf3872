package consensus

import (
	"fmt"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/slaves"
)

// SlaveBuilder builds the solver of one slave of a plan.
type SlaveBuilder func(m *model.Model, s partition.Slave) (slaves.Slave, error)

// Problem is a model decomposed into slaves, with the flat index arrays the
// master needs. Replica vectors (multipliers, targets, slave marginals) are
// stored back to back in one flat array of length NumReplicaEntries: slave s
// occupies [RepOff[s], RepOff[s+1]), its scope variables in order.
type Problem struct {
	Model  *model.Model
	Slaves []slaves.Slave

	// SlaveVars[SlaveVarOff[s]:SlaveVarOff[s+1]] is slave s's scope.
	SlaveVarOff []int
	SlaveVars   []int
	RepOff      []int

	// Replicas of variable i: VarReps[VarRepOff[i]:VarRepOff[i+1]] hold the
	// start of each replica in the replica arrays (fixed order: by slave), and
	// RepSlave/RepPos the owning slave and the position in its scope.
	VarRepOff []int
	VarReps   []int
	RepSlave  []int
	RepPos    []int
}

// Decompose lays out the replica arrays for a plan (AD3 eq. 5 generalised to
// slaves of any granularity) and builds each slave with build. The model
// should come from model.Reduce (all unaries finite).
func Decompose(m *model.Model, plan partition.Plan, build SlaveBuilder) (*Problem, error) {
	p := &Problem{Model: m}
	ns := len(plan.Slaves)
	p.Slaves = make([]slaves.Slave, ns)
	p.SlaveVarOff = make([]int, ns+1)
	p.RepOff = make([]int, ns+1)
	deg := make([]int, len(m.Cards)+1)
	nv := 0
	for _, ps := range plan.Slaves {
		nv += len(ps.Vars)
	}
	p.SlaveVars = make([]int, 0, nv) // one allocation: a grid has ~2 per edge
	for a, ps := range plan.Slaves {
		s, err := build(m, ps)
		if err != nil {
			return nil, fmt.Errorf("slave %d (%s over factor %d): %w", a, ps.Shape, ps.Factors[0], err)
		}
		p.Slaves[a] = s
		p.SlaveVarOff[a+1] = p.SlaveVarOff[a] + len(ps.Vars)
		p.SlaveVars = append(p.SlaveVars, ps.Vars...)
		n := 0
		for _, v := range ps.Vars {
			n += m.Cards[v]
			deg[v+1]++
		}
		p.RepOff[a+1] = p.RepOff[a] + n
	}
	for i := 1; i < len(deg); i++ {
		deg[i] += deg[i-1]
	}
	p.VarRepOff = deg
	nr := deg[len(deg)-1]
	p.VarReps = make([]int, nr)
	p.RepSlave = make([]int, nr)
	p.RepPos = make([]int, nr)
	fill := append([]int(nil), deg[:len(deg)-1]...)
	for s := range p.Slaves {
		off := p.RepOff[s]
		for k, v := range p.SlaveVars[p.SlaveVarOff[s]:p.SlaveVarOff[s+1]] {
			j := fill[v]
			fill[v]++
			p.VarReps[j] = off
			p.RepSlave[j] = s
			p.RepPos[j] = k
			off += m.Cards[v]
		}
	}
	return p, nil
}

// NumReplicaEntries is the length of the flat replica arrays.
func (p *Problem) NumReplicaEntries() int { return p.RepOff[len(p.RepOff)-1] }

// Degree returns the number of slaves that share variable i.
func (p *Problem) Degree(i int) int { return p.VarRepOff[i+1] - p.VarRepOff[i] }

// Scope returns slave s's variables.
func (p *Problem) Scope(s int) []int { return p.SlaveVars[p.SlaveVarOff[s]:p.SlaveVarOff[s+1]] }

func (p *Problem) maxScope() int {
	n := 0
	for s := range p.Slaves {
		if l := p.SlaveVarOff[s+1] - p.SlaveVarOff[s]; l > n {
			n = l
		}
	}
	return n
}
