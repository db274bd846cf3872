package multilevel

import (
	"errors"
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
)

// Placement says on which worker each slave of a plan runs.
type Placement struct {
	// Worker[s] is the worker of slave s, in [0, workers).
	Worker []int32
	// Boundary lists, in increasing order, the variables whose slaves are
	// on more than one worker.
	Boundary []int
	// Replicas counts the cross-worker copies of variables: the sum over
	// variables of (number of workers holding a slave of it) - 1. It is 0
	// exactly when Boundary is empty. (The runtime's traffic is per slave
	// replica of a boundary variable, which this bounds from below.)
	Replicas int
}

// Slave cost model: the estimated work of solving a slave once, in table
// entries. See SlaveCost.
const (
	// costPerLogicInput is the cost of one input of a logic factor, whose
	// projection sorts its inputs (O(a log a) for arity a).
	costPerLogicInput = 8
)

// SlaveCost estimates the work of one solve of slave sl, the vertex weight
// of the slave graph that Place partitions. It is the sum of
//
//   - for each of its factors: Dense, the table size (product of the
//     scope's cardinalities); Pair and Potts, the pairwise table size;
//     Sequence, the transition tables' sizes (card_k * card_k+1 per link)
//     plus the emission size; a logic factor, 8 per input (its solver sorts
//     the inputs);
//   - for Chain and Tree slaves, each link's factor counts as above, so a
//     chain costs the sum of its link tables (a dynamic programming pass);
//   - the sum of the cardinalities of its scope, for the messages it
//     exchanges with the consensus engine each iteration.
//
// Costs saturate at 2^62.
func SlaveCost(m *model.Model, sl *partition.Slave) int64 {
	var c int64
	for _, v := range sl.Vars {
		c = satAdd(c, int64(m.Cards[v]))
	}
	for _, a := range sl.Factors {
		c = satAdd(c, factorCost(m, &m.Factors[a]))
	}
	return c
}

const costCap = int64(1) << 62

func satAdd(a, b int64) int64 {
	if a > costCap-b {
		return costCap
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > costCap/a {
		return costCap
	}
	return a * b
}

func factorCost(m *model.Model, f *model.Factor) int64 {
	switch {
	case f.Kind.IsLogic():
		return satMul(costPerLogicInput, int64(len(f.Vars)))
	case f.Kind == model.Sequence:
		var c int64
		for k, v := range f.Vars {
			c = satAdd(c, int64(m.Cards[v]))
			if k+1 < len(f.Vars) {
				c = satAdd(c, satMul(int64(m.Cards[v]), int64(m.Cards[f.Vars[k+1]])))
			}
		}
		return c
	default: // Dense, Pair, Potts: the table over the scope
		c := int64(1)
		for _, v := range f.Vars {
			c = satMul(c, int64(m.Cards[v]))
		}
		return c
	}
}

// Slave-graph edge weights: a variable of cardinality c shared by d slaves
// costs c per extra worker it reaches. With d <= cliqueMaxDegree its slaves
// form a clique whose edges weigh c/(d-1), so that cutting one slave off
// costs exactly c; larger groups form a star through their first slave
// with edges of weight c (cutting a leaf off costs c, the hub more). All
// weights are scaled by edgeScale, a multiple of 1..cliqueMaxDegree-1, to
// stay integers.
const (
	cliqueMaxDegree = 5
	edgeScale       = 12
)

// weightBudget bounds the total vertex weight and the total edge weight of
// the slave graph (the Graph limits are 2^31-1): larger costs are scaled
// down.
const weightBudget = 1 << 30

// SlaveGraph returns the graph that Place partitions: one vertex per slave
// of plan, weighted by SlaveCost (scaled down, keeping every weight >= 1,
// when the total would not fit in int32), and for every variable shared by
// several slaves, edges that make separating them cost the variable's
// cardinality per extra worker:
//
//   - a variable of cardinality c shared by d <= 5 slaves links them as a
//     clique with edges of weight 12c/(d-1) (placing one of them on another
//     worker costs exactly 12c);
//   - a variable shared by more slaves links them as a star through the
//     first of them (in plan order), with edges of weight 12c; a clique
//     would cost d(d-1)/2 edges.
//
// Edges between the same two slaves are merged, their weights summed.
// Variables listed twice by a slave count once.
func SlaveGraph(m *model.Model, plan partition.Plan) (*Graph, error) {
	ns := len(plan.Slaves)
	if err := checkPlanRanges(m, plan); err != nil {
		return nil, err
	}
	nv := m.NumVars()
	off, fill, list := varSlaves(m, plan)
	// Edges: a first pass sums the weights to choose the scale.
	var etotal, ecount int64
	forEachEdge := func(emit func(u, v int32, w int64)) {
		for v := range nv {
			sl := list[off[v]:fill[v]]
			d := int64(len(sl))
			if d < 2 {
				continue
			}
			c := int64(m.Cards[v]) * edgeScale
			if d <= cliqueMaxDegree {
				w := c / (d - 1)
				for i := range sl {
					for j := i + 1; j < len(sl); j++ {
						emit(sl[i], sl[j], w)
					}
				}
			} else {
				for _, t := range sl[1:] {
					emit(sl[0], t, c)
				}
			}
		}
	}
	forEachEdge(func(_, _ int32, w int64) {
		etotal = satAdd(etotal, w)
		ecount++
	})
	// Both directions count against the int32 limit.
	ediv := scaleDivisor(satMul(etotal, 2), 2*ecount)
	edges := make([]Edge, 0, ecount)
	forEachEdge(func(u, v int32, w int64) {
		edges = append(edges, Edge{U: u, V: v, W: int32(max(1, w/ediv))})
	})
	// Vertex weights.
	cost := make([]int64, ns)
	var vtotal int64
	for s := range plan.Slaves {
		cost[s] = max(1, SlaveCost(m, &plan.Slaves[s]))
		vtotal = satAdd(vtotal, cost[s])
	}
	vdiv := scaleDivisor(vtotal, int64(ns))
	vwgt := make([]int32, ns)
	for s, c := range cost {
		vwgt[s] = int32(max(1, c/vdiv))
	}
	return NewGraph(ns, edges, vwgt)
}

// checkPlanRanges checks that the slaves' variables and factors exist and
// that the plan is small enough for int32 indices.
func checkPlanRanges(m *model.Model, plan partition.Plan) error {
	if len(plan.Slaves) >= math.MaxInt32 {
		return fmt.Errorf("multilevel: %d slaves, too many", len(plan.Slaves))
	}
	nv := m.NumVars()
	var occ int64
	for s := range plan.Slaves {
		sl := &plan.Slaves[s]
		for _, v := range sl.Vars {
			if v < 0 || v >= nv {
				return fmt.Errorf("multilevel: slave %d: variable %d out of range [0,%d)", s, v, nv)
			}
		}
		for _, a := range sl.Factors {
			if a < 0 || a >= len(m.Factors) {
				return fmt.Errorf("multilevel: slave %d: factor %d out of range [0,%d)", s, a, len(m.Factors))
			}
		}
		occ += int64(len(sl.Vars))
	}
	if occ >= math.MaxInt32 {
		return errors.New("multilevel: too many variable occurrences in the plan's slaves")
	}
	return nil
}

// scaleDivisor returns the divisor that brings total under weightBudget
// when each of count weights is divided by it and rounded down, but kept at
// least 1 (so the result is at most total/div + count).
func scaleDivisor(total, count int64) int64 {
	if total <= weightBudget {
		return 1
	}
	room := int64(weightBudget) - count
	if room <= 0 {
		return costCap // every weight becomes 1
	}
	return total/room + 1
}

// Place places the slaves of plan on workers workers so that the workers
// get about the same estimated work (SlaveCost, balanced within
// opts.Imbalance as Partition balances vertex weights) and few variables
// are shared across workers. It partitions SlaveGraph(m, plan) with
// Partition, whose cut approximates the cross-worker copies of variables.
// With one worker, or no slaves, every slave goes to worker 0.
func Place(m *model.Model, plan partition.Plan, workers int, opts Options) (Placement, error) {
	if workers < 1 || workers > math.MaxInt32 {
		return Placement{}, fmt.Errorf("multilevel: Place: %d workers, want at least 1", workers)
	}
	if workers == 1 || len(plan.Slaves) == 0 {
		if err := checkPlanRanges(m, plan); err != nil {
			return Placement{}, err
		}
		return placementOf(m, plan, make([]int32, len(plan.Slaves)), workers), nil
	}
	g, err := SlaveGraph(m, plan)
	if err != nil {
		return Placement{}, err
	}
	worker, err := Partition(g, workers, opts)
	if err != nil {
		return Placement{}, fmt.Errorf("multilevel: Place: %w", err)
	}
	return placementOf(m, plan, worker, workers), nil
}

// placementOf computes the boundary and the replica count of a placement.
func placementOf(m *model.Model, plan partition.Plan, worker []int32, workers int) Placement {
	nv := m.NumVars()
	// For each variable: the number of distinct workers of its slaves,
	// counted with a per-worker stamp over the variable -> slaves lists.
	off, end, list := varSlaves(m, plan)
	stamp := make([]int32, workers)
	for i := range stamp {
		stamp[i] = -1
	}
	p := Placement{Worker: worker}
	for v := range nv {
		distinct := 0
		for _, sl := range list[off[v]:end[v]] {
			if w := worker[sl]; stamp[w] != int32(v) {
				stamp[w] = int32(v)
				distinct++
			}
		}
		if distinct > 1 {
			p.Boundary = append(p.Boundary, v)
			p.Replicas += distinct - 1
		}
	}
	return p
}

// varSlaves indexes the slaves of each variable, in slave order: variable
// v's slaves are list[off[v]:end[v]] (a slave listing v twice counts once).
func varSlaves(m *model.Model, plan partition.Plan) (off, end, list []int32) {
	nv := m.NumVars()
	off = make([]int32, nv+1)
	for s := range plan.Slaves {
		for _, v := range plan.Slaves[s].Vars {
			off[v+1]++
		}
	}
	for v := range nv {
		off[v+1] += off[v]
	}
	list = make([]int32, off[nv])
	end = append([]int32(nil), off[:nv]...)
	for s := range plan.Slaves {
		for _, v := range plan.Slaves[s].Vars {
			if end[v] > off[v] && list[end[v]-1] == int32(s) {
				continue
			}
			list[end[v]] = int32(s)
			end[v]++
		}
	}
	return off, end, list
}
