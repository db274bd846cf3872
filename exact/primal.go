package exact

import (
	"context"
	"time"

	"github.com/ddrun/ddrun/internal/primal"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// Budgets of the incumbent search (internal/primal), in nodes: at the
// root, before any bound, and after each node, guided by its marginals.
const (
	rootNeighbourhoods = 200
	rootLNSNodes       = 50000
	nodeNeighbourhoods = 30
	nodeLNSNodes       = 30000
	// Time caps (models with large tables make nodes slow): per node, and
	// at the root when there is no time limit (else a twentieth of it).
	nodeTime        = 20 * time.Millisecond
	rootTime        = 200 * time.Millisecond
	constructPerVar = 50
	constructBase   = 20000
)

// incumbents looks for feasible assignments with internal/primal's
// search (propagation of the hard constraints, a backtracking
// construction, large neighbourhood search) to give the search an
// incumbent before the root's bound and to improve it at every node:
// the dual solvers' decoded assignments are often infeasible on models
// with many hard constraints (pedigrees), where no incumbent means no
// pruning.
type incumbents struct {
	s *primal.Searcher
	m *model.Model
}

func newIncumbents(m *model.Model) *incumbents {
	return &incumbents{s: primal.NewSearcher(m), m: m}
}

// improve searches under the node's evidence ev, with values tried in the
// order of hint (a node's marginals, laid out like m.Unary; nil: the
// unaries), and from the incumbent when it fits the node, and takes
// what it finds as the incumbent when it is better: its primal is the
// exact score of its assignment. It runs on nodes that are not pruned.
// root selects the larger budget.
func (in *incumbents) improve(ctx context.Context, ev model.Evidence, hint []float64, root bool, limit time.Duration, res *solver.Result) {
	n := in.m.NumVars()
	o := primal.Options{Evidence: ev, MaxNodes: constructBase + constructPerVar*n,
		Neighbourhoods: min(nodeNeighbourhoods, n), LNSNodes: nodeLNSNodes, TimeLimit: nodeTime}
	if root {
		o.Neighbourhoods, o.LNSNodes, o.TimeLimit = min(rootNeighbourhoods, 2*n), rootLNSNodes, rootTime
		if limit > 0 {
			o.TimeLimit = min(rootTime, limit/20)
		}
	}
	r := in.s.Run(ctx, hint, o)
	if r.OK && r.Score > res.Primal {
		res.Primal, res.Assignment = r.Score, r.X
	}
	if res.Assignment != nil && !root && fits(res.Assignment, ev) {
		// The incumbent's neighbourhoods within this node, when it fits.
		o.Start = res.Assignment
		if r := in.s.Run(ctx, nil, o); r.OK && r.Score > res.Primal {
			res.Primal, res.Assignment = r.Score, r.X
		}
	}
}

// fits reports whether x agrees with the evidence.
func fits(x []int, ev model.Evidence) bool {
	for v, s := range ev {
		if x[v] != s {
			return false
		}
	}
	return true
}
