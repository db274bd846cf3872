package exact

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// SubtreeOptions bound the search of one subtree (SolveSubtree).
type SubtreeOptions struct {
	// Options bound the search: MaxNodes and TimeLimit are the subtree's
	// budget (what a distributed search calls a slice), Tol and Threads
	// as in SolveWarm.
	Options
	// Bound is a valid upper bound on the subtree's best score, its
	// parent's (+Inf when none is known). It bounds the root's children
	// and is the bound of the root when the root is handed back unsolved.
	Bound float64
	// Incumbent is the best score known outside the subtree (-Inf when
	// none): nodes whose bound is within Tol of it are pruned, and only a
	// strictly better assignment is returned.
	Incumbent float64
	// Root says the subtree is the whole search: its first node gets the
	// larger budget of the incumbent search (as SolveWarm's root does).
	Root bool
}

// Open is a node of a subtree that its search did not finish: the
// evidence that defines it (the subtree's plus the branching decisions
// below it) and a valid upper bound on its best score (its parent's).
type Open struct {
	Evidence model.Evidence
	Bound    float64
}

// SolveSubtree runs SolveWarm's best-first branch and bound on the subtree
// of m that evidence ev defines, within opts' budget, and hands back what
// it did not finish instead of only its largest bound: the open nodes,
// whose union with the nodes it solved and pruned covers the subtree. A
// distributed search (package dsearch) keeps the open nodes of the whole
// tree and gives subtrees out; this is the search of one.
//
// The result's Assignment, when not nil, scores Primal (exactly, on m)
// and beats opts.Incumbent; otherwise Primal is -Inf. Its Dual is the
// largest bound of the open nodes and of the assignment found (-Inf when
// the subtree is closed without one), Status Optimal when nothing is left
// open. Warm starts do not survive the hand-back: an open node returned
// starts cold wherever it is solved next.
func SolveSubtree(ctx context.Context, m *model.Model, ev model.Evidence, solve WarmSolver, opts SubtreeOptions) (solver.Result, Stats, []Open, error) {
	if err := opts.Validate(); err != nil {
		return solver.Result{}, Stats{}, nil, err
	}
	if math.IsNaN(opts.Bound) {
		opts.Bound = math.Inf(1)
	}
	if math.IsNaN(opts.Incumbent) {
		opts.Incumbent = math.Inf(-1)
	}
	s := &search{m: m, solve: solve, opts: opts.Options, start: time.Now(),
		q:   queue{{ev: ev, bound: opts.Bound}},
		res: solver.Result{Status: solver.IterationLimit, Primal: opts.Incumbent, Dual: math.Inf(1)}}
	s.wake = sync.NewCond(&s.mu)
	s.inc = newIncumbents(m)
	// The incumbent search gives the root node (s.st.Nodes == 1 once it
	// is filed) its larger budget; a subtree's first node is no root
	// unless opts.Root, so the count starts one ahead and is set back
	// below.
	offset := 0
	if !opts.Root {
		offset = 1
		s.st.Nodes = 1
	}
	s.run(ctx)
	s.st.Nodes -= offset
	if s.err != nil {
		return s.res, s.st, nil, s.err
	}
	res := s.res
	if res.Assignment == nil {
		res.Primal = math.Inf(-1)
	}
	// Nodes closed by the incumbent are pruned, not open: the caller
	// holds that incumbent (or a better one).
	var open []Open
	for _, n := range s.q {
		if math.IsInf(n.bound, -1) || s.closed(n.bound) {
			s.st.Pruned++
			continue
		}
		open = append(open, Open{Evidence: n.ev, Bound: n.bound})
	}
	s.st.Open = len(open)
	res.Dual = res.Primal
	for _, o := range open {
		res.Dual = math.Max(res.Dual, o.Bound)
	}
	switch {
	case len(open) == 0:
		res.Status = solver.Optimal
	case s.stop != "":
		res.Status = s.stop
	}
	res.Gap = res.Dual - res.Primal
	res.Relaxed = math.NaN()
	res.Elapsed = time.Since(s.start)
	return res, s.st, open, nil
}
