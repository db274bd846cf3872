package consensus

import (
	"fmt"
	"slices"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
)

// Part is what one worker holds: the slaves placed on it, over its own
// numbering of the variables they touch. It is self-contained: a worker
// process builds its solver state from a Part alone.
type Part struct {
	// Vars maps local variable k to the variable Vars[k] of the (reduced)
	// model; sorted.
	Vars []int
	// Model holds the part's variables (cardinalities and unaries, in local
	// numbering) and the factors of its slaves (scopes in local numbering).
	Model *model.Model
	// Plan lists the part's slaves over Model, in the global slave order.
	Plan partition.Plan
	// Pairs, when not nil, holds the part's factors instead of Model and
	// Plan (which then have none): one slave per pair, in order. Only
	// parts built for a worker (package shard) have Pairs.
	Pairs *Pairs
	// Degree is each local variable's number of slaves in the whole
	// decomposition (the d_i of AD3 eq. 5).
	Degree []int
	// Boundary lists the local variables that also have slaves on other
	// workers, in increasing order.
	Boundary []int
}

// Boundary is the coordinator's view of the boundary of a split: for every
// boundary variable, its replicas in global slave order, and where each
// worker's boundary replica vectors go.
type Boundary struct {
	vars []int // boundary variables of the model, increasing
	// Replicas of vars[j]: repOff[j]:repOff[j+1] index the flat boundary
	// replica arrays, whose entry r starts at entry[r] (vectors of
	// Cards[vars[j]] floats, back to back).
	repOff []int
	entry  []int
	// For worker w: its exported boundary replica vectors, in its own
	// order, go to the flat arrays at scatter[w][k] (entry offsets).
	scatter [][]int
	// For worker w: its boundary variables' indices j into vars.
	varsOf [][]int
	size   int // total floats in the flat boundary replica arrays
}

// Split cuts a decomposition into W parts given each slave's worker, and
// returns the coordinator's boundary bookkeeping.
func Split(m *model.Model, plan partition.Plan, worker []int32, w int) ([]*Part, *Boundary, error) {
	if len(worker) != len(plan.Slaves) {
		return nil, nil, fmt.Errorf("placement has %d entries for %d slaves", len(worker), len(plan.Slaves))
	}
	if w == 1 {
		return []*Part{Whole(m, plan)}, &Boundary{scatter: make([][]int, 1), varsOf: make([][]int, 1), repOff: []int{0}}, nil
	}
	n := m.NumVars()
	degree := make([]int, n)
	owner := make([]int32, n) // worker of the variable's slaves; -1 none; -2 several
	for i := range owner {
		owner[i] = -1
	}
	for s, sl := range plan.Slaves {
		wk := worker[s]
		if wk < 0 || int(wk) >= w {
			return nil, nil, fmt.Errorf("slave %d placed on worker %d of %d", s, wk, w)
		}
		for _, v := range sl.Vars {
			degree[v]++
			switch owner[v] {
			case -1:
				owner[v] = wk
			case wk, -2:
			default:
				owner[v] = -2
			}
		}
	}
	parts := make([]*Part, w)
	local := make([]map[int]int, w) // global var -> local var, per worker
	for k := range parts {
		parts[k] = &Part{}
		local[k] = map[int]int{}
	}
	// Variables of each part, in increasing global order.
	for s, sl := range plan.Slaves {
		p := parts[worker[s]]
		for _, v := range sl.Vars {
			if _, ok := local[worker[s]][v]; !ok {
				local[worker[s]][v] = -1
				p.Vars = append(p.Vars, v)
			}
		}
	}
	for k, p := range parts {
		slices.Sort(p.Vars)
		cards := make([]int, len(p.Vars))
		for j, v := range p.Vars {
			local[k][v] = j
			cards[j] = m.Cards[v]
		}
		p.Model = model.New(cards)
		p.Degree = make([]int, len(p.Vars))
		for j, v := range p.Vars {
			copy(p.Model.Unaries(j), m.Unaries(v))
			p.Degree[j] = degree[v]
			if owner[v] == -2 {
				p.Boundary = append(p.Boundary, j)
			}
		}
	}
	// Slaves and their factors, in global slave order.
	for s, sl := range plan.Slaves {
		k := worker[s]
		p := parts[k]
		ls := partition.Slave{Shape: sl.Shape, Parent: sl.Parent, Vars: make([]int, len(sl.Vars))}
		for j, v := range sl.Vars {
			ls.Vars[j] = local[k][v]
		}
		for _, a := range sl.Factors {
			f := m.Factors[a]
			vars := make([]int, len(f.Vars))
			for j, v := range f.Vars {
				vars[j] = local[k][v]
			}
			f.Vars = vars
			ls.Factors = append(ls.Factors, len(p.Model.Factors))
			p.Model.Factors = append(p.Model.Factors, f)
		}
		p.Plan.Slaves = append(p.Plan.Slaves, ls)
	}
	return parts, newBoundaryMap(m, plan, worker, parts, owner), nil
}

func newBoundaryMap(m *model.Model, plan partition.Plan, worker []int32, parts []*Part, owner []int32) *Boundary {
	b := &Boundary{scatter: make([][]int, len(parts)), varsOf: make([][]int, len(parts))}
	index := map[int]int{}
	for v := range m.Cards {
		if owner[v] == -2 {
			index[v] = len(b.vars)
			b.vars = append(b.vars, v)
		}
	}
	// Replicas of each boundary variable in global slave order.
	type rep struct{ worker, slave int }
	reps := make([][]rep, len(b.vars))
	for s, sl := range plan.Slaves {
		for _, v := range sl.Vars {
			if j, ok := index[v]; ok {
				reps[j] = append(reps[j], rep{int(worker[s]), s})
			}
		}
	}
	b.repOff = make([]int, len(b.vars)+1)
	entries := make([]map[rep]int, len(b.vars))
	for j, rs := range reps {
		b.repOff[j+1] = b.repOff[j] + len(rs)
		entries[j] = map[rep]int{}
		for _, r := range rs {
			entries[j][r] = b.size
			b.entry = append(b.entry, b.size)
			b.size += m.Cards[b.vars[j]]
		}
	}
	// Each worker exports, for each of its boundary variables in order, its
	// replicas in its slave order (which is global slave order).
	for k, p := range parts {
		slavesOf := map[int][]int{} // local boundary var -> global slaves of this part touching it
		gs := 0
		for s := range plan.Slaves {
			if int(worker[s]) != k {
				continue
			}
			for _, lv := range p.Plan.Slaves[gs].Vars {
				slavesOf[lv] = append(slavesOf[lv], s)
			}
			gs++
		}
		for _, lv := range p.Boundary {
			j := index[p.Vars[lv]]
			b.varsOf[k] = append(b.varsOf[k], j)
			for _, s := range slavesOf[lv] {
				b.scatter[k] = append(b.scatter[k], entries[j][rep{k, s}])
			}
		}
	}
	return b
}

// Whole is the part that holds every slave: the single-process mode. It
// shares the model instead of copying it.
func Whole(m *model.Model, plan partition.Plan) *Part {
	p := &Part{Vars: make([]int, m.NumVars()), Model: m, Plan: plan, Degree: make([]int, m.NumVars())}
	for i := range p.Vars {
		p.Vars[i] = i
	}
	for _, sl := range plan.Slaves {
		for _, v := range sl.Vars {
			p.Degree[v]++
		}
	}
	return p
}

// Vars returns the boundary variables, in increasing order.
func (b *Boundary) Vars() []int { return b.vars }

// NumSlaves returns the number of the part's slaves.
func (p *Part) NumSlaves() int {
	if p.Pairs != nil {
		return p.Pairs.Len()
	}
	return len(p.Plan.Slaves)
}

// replicaEntries returns the number of replica entries of a part's plan.
func (p *Part) replicaEntries() int {
	n := 0
	if q := p.Pairs; q != nil {
		for a := range q.W {
			n += p.Model.Cards[q.I[a]] + p.Model.Cards[q.J[a]]
		}
	}
	for _, sl := range p.Plan.Slaves {
		for _, v := range sl.Vars {
			n += p.Model.Cards[v]
		}
	}
	return n
}
