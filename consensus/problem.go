package consensus

import (
	"fmt"
	"math"

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

	// The index arrays are int32 (a part has fewer than 2^31 replica
	// entries, checked by Decompose): on a grid they are 4 replicas and 2
	// slaves per variable, and int would double their 100 bytes per
	// variable.

	// SlaveVars[SlaveVarOff[s]:SlaveVarOff[s+1]] is slave s's scope.
	SlaveVarOff []int32
	SlaveVars   []int32
	RepOff      []int32

	// Replicas of variable i: VarReps[VarRepOff[i]:VarRepOff[i+1]] hold the
	// start of each replica in the replica arrays (fixed order: by slave),
	// RepSlave the owning slave, and RepVec the replica vector's index
	// (its position in SlaveVars: SlaveVarOff of its slave plus its
	// position in the scope).
	VarRepOff []int32
	VarReps   []int32
	RepSlave  []int32
	RepVec    []int32
}

// Decompose lays out the replica arrays for a plan (AD3 eq. 5 generalised to
// slaves of any granularity) and builds each slave with build. The model
// should come from model.Reduce (all unaries finite).
func Decompose(m *model.Model, plan partition.Plan, build SlaveBuilder) (*Problem, error) {
	ns := len(plan.Slaves)
	p := newProblem(m, ns)
	nv, nr := 0, 0
	for _, ps := range plan.Slaves {
		nv += len(ps.Vars)
		for _, v := range ps.Vars {
			nr += m.Cards[v]
		}
	}
	if nv >= math.MaxInt32 || nr >= math.MaxInt32 {
		return nil, fmt.Errorf("%d replicas of %d entries: a part must have fewer than 2^31", nv, nr)
	}
	p.SlaveVars = make([]int32, 0, nv) // one allocation: a grid has ~2 per edge
	for a, ps := range plan.Slaves {
		s, err := build(m, ps)
		if err != nil {
			return nil, fmt.Errorf("slave %d (%s over factor %d): %w", a, ps.Shape, ps.Factors[0], err)
		}
		p.Slaves[a] = s
		for _, v := range ps.Vars {
			p.SlaveVars = append(p.SlaveVars, int32(v))
		}
		p.endSlave(a)
	}
	p.indexReplicas()
	return p, nil
}

// newProblem returns a Problem over m for ns slaves, whose scopes the
// caller appends to SlaveVars, calling endSlave after each.
func newProblem(m *model.Model, ns int) *Problem {
	return &Problem{Model: m, Slaves: make([]slaves.Slave, ns),
		SlaveVarOff: make([]int32, ns+1), RepOff: make([]int32, ns+1)}
}

// endSlave closes slave a's scope: the variables appended to SlaveVars
// since slave a-1's.
func (p *Problem) endSlave(a int) {
	m := p.Model
	p.SlaveVarOff[a+1] = int32(len(p.SlaveVars))
	n := int32(0)
	for _, v := range p.SlaveVars[p.SlaveVarOff[a]:] {
		n += int32(m.Cards[v])
	}
	p.RepOff[a+1] = p.RepOff[a] + n
}

// indexReplicas lays out the replicas of each variable, in slave order.
func (p *Problem) indexReplicas() {
	m := p.Model
	deg := make([]int32, len(m.Cards)+1)
	for _, v := range p.SlaveVars {
		deg[v+1]++
	}
	for i := 1; i < len(deg); i++ {
		deg[i] += deg[i-1]
	}
	p.VarRepOff = deg
	nr := deg[len(deg)-1]
	p.VarReps = make([]int32, nr)
	p.RepSlave = make([]int32, nr)
	p.RepVec = make([]int32, nr)
	fill := append([]int32(nil), deg[:len(deg)-1]...)
	for s := range p.Slaves {
		off := p.RepOff[s]
		for k := p.SlaveVarOff[s]; k < p.SlaveVarOff[s+1]; k++ {
			v := p.SlaveVars[k]
			j := fill[v]
			fill[v]++
			p.VarReps[j] = off
			p.RepSlave[j] = int32(s)
			p.RepVec[j] = k
			off += int32(m.Cards[v])
		}
	}
}

// NumReplicaEntries is the length of the flat replica arrays.
func (p *Problem) NumReplicaEntries() int { return int(p.RepOff[len(p.RepOff)-1]) }

// Degree returns the number of slaves that share variable i.
func (p *Problem) Degree(i int) int { return int(p.VarRepOff[i+1] - p.VarRepOff[i]) }

// Scope returns slave s's variables.
func (p *Problem) Scope(s int) []int32 { return p.SlaveVars[p.SlaveVarOff[s]:p.SlaveVarOff[s+1]] }

func (p *Problem) maxScope() int {
	n := 0
	for s := range p.Slaves {
		if l := int(p.SlaveVarOff[s+1] - p.SlaveVarOff[s]); l > n {
			n = l
		}
	}
	return n
}
