// Package exact turns a dual solver into an exact one: best-first branch
// and bound over variable assignments, bounding every node by the dual
// value the solver reports for the model restricted to that node (a valid
// upper bound on the node's best score), and certifying optimality only
// when no open node's bound exceeds the incumbent.
//
// It knows nothing of how the dual is computed: any solver with the Solver
// signature fits (DD-ADMM, DD-subgradient, TRW-S). A solver that can start
// from a state (WarmSolver, e.g. ADMM) starts every child from its parent's
// final multipliers, the usual warm start of branch and bound over
// Lagrangian bounds (Fisher, Management Science 27(1), 1981, Sect. 6).
package exact

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// Solver solves m restricted by evidence ev and returns a valid upper bound
// (Dual), an assignment with its exact score, and, when it can, the final
// marginals (Mu, laid out like m.Unary) that guide branching.
type Solver func(ctx context.Context, m *model.Model, ev model.Evidence) (solver.Result, error)

// Subproblem is what a WarmSolver is told about the node it bounds.
type Subproblem struct {
	// Evidence restricts the model to the node.
	Evidence model.Evidence
	// Warm is the final state of the parent node's run, on the same model
	// under less evidence (nil at the root, or when the parent's solver
	// returned none). The solver must not modify it.
	Warm *consensus.Warm
	// Cutoff is the bound at or below which the node is pruned (the
	// incumbent plus the search's tolerance; -Inf while there is no
	// incumbent): the solver may stop as soon as its dual reaches it,
	// since nothing it would do after changes the search.
	Cutoff float64
}

// WarmSolver is a Solver that can start from its parent's state and stop
// at the cutoff (Subproblem). It returns its own final state (nil when it
// has none) for the node's children.
type WarmSolver func(ctx context.Context, m *model.Model, sp Subproblem) (solver.Result, *consensus.Warm, error)

// Cold adapts a Solver, which has neither warm starts nor a cutoff, to a
// WarmSolver.
func Cold(solve Solver) WarmSolver {
	return func(ctx context.Context, m *model.Model, sp Subproblem) (solver.Result, *consensus.Warm, error) {
		r, err := solve(ctx, m, sp.Evidence)
		return r, nil, err
	}
}

// ADMM is the WarmSolver of consensus.SolveWarm with opts (which must use
// the per-factor decomposition): each child starts from its parent's final
// multipliers, marginals and penalty, and a run stops (status Interrupted)
// after the first iteration whose dual is at or below the cutoff. A
// child's first dual is at most its parent's last (see consensus.Warm), so
// a warm child gets near its own bound in fewer iterations than a cold one;
// a node that is not pruned still runs until opts stop it, which is where
// most of a search's iterations go (BenchmarkExactWarmVsCold and
// BenchmarkWarmSameNodes measure both effects).
func ADMM(opts consensus.Options) WarmSolver {
	return func(ctx context.Context, m *model.Model, sp Subproblem) (solver.Result, *consensus.Warm, error) {
		o := opts
		var progress func(solver.Progress)
		if c := sp.Cutoff; !math.IsInf(c, -1) && !math.IsNaN(c) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			o.ProgressEvery = 0 // every iteration
			progress = func(p solver.Progress) {
				if p.Dual <= c {
					cancel()
				}
			}
		}
		return consensus.SolveWarm(ctx, m, sp.Evidence, o, sp.Warm, progress)
	}
}

// Options bounds the search.
type Options struct {
	Tol       float64       // optimal when bound - incumbent <= Tol*max(1,|incumbent|)
	TimeLimit time.Duration // 0: none
	MaxNodes  int           // 0: none
}

// Stats describes a search.
type Stats struct {
	Nodes, Pruned, Open int
	// Iterations is the total of the solver's iterations over all nodes
	// (DD iterations for DD-ADMM).
	Iterations int
}

type node struct {
	ev    model.Evidence
	bound float64 // the parent's bound until the node is solved
	depth int
	warm  *consensus.Warm // the parent's final state, shared by siblings
}

type queue []*node

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].bound != q[j].bound {
		return q[i].bound > q[j].bound
	}
	return q[i].depth > q[j].depth
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*node)) }
func (q *queue) Pop() any     { old := *q; n := old[len(old)-1]; *q = old[:len(old)-1]; return n }
func (q queue) top() float64  { return q[0].bound }
func (q queue) empty() bool   { return len(q) == 0 }

// Solve runs best-first branch and bound on m under evidence ev. The result
// is Optimal only when the gap is closed; otherwise its Dual is the largest
// bound of the open nodes (still a valid upper bound) and its status says
// why the search stopped.
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, solve Solver, opts Options, progress func(solver.Progress)) (solver.Result, Stats, error) {
	return SolveWarm(ctx, m, ev, Cold(solve), opts, progress)
}

// SolveWarm is Solve with a solver that starts every child node from its
// parent's final state (the root starts cold) and may stop each node's run
// once the node is sure to be pruned.
//
// progress, when not nil, is called after every node (the caller
// throttles what it prints): Iteration is the solver's iterations over all
// nodes so far (what the result's Iterations counts), Nodes the nodes
// solved, Open the nodes left, Dual the largest open bound and Primal the
// incumbent.
func SolveWarm(ctx context.Context, m *model.Model, ev model.Evidence, solve WarmSolver, opts Options, progress func(solver.Progress)) (solver.Result, Stats, error) {
	start := time.Now()
	res := solver.Result{Status: solver.IterationLimit, Primal: math.Inf(-1), Dual: math.Inf(1)}
	var st Stats
	closed := func(bound float64) bool {
		return solver.Closed(bound, res.Primal, opts.Tol)
	}
	q := &queue{{ev: ev, bound: math.Inf(1)}}
	inc := newIncumbents(m)
	report := func() {
		if progress != nil {
			b := globalBound(q, res.Primal)
			progress(solver.Progress{Iteration: res.Iterations, Dual: b, Primal: res.Primal, Gap: b - res.Primal,
				Elapsed: time.Since(start), Nodes: st.Nodes, Open: q.Len()})
		}
	}
	for !q.empty() {
		if closed(q.top()) {
			break
		}
		elapsed := time.Since(start)
		if opts.TimeLimit > 0 && elapsed >= opts.TimeLimit {
			res.Status = solver.TimeLimit
			break
		}
		if ctx.Err() != nil {
			res.Status = solver.Interrupted
			break
		}
		if opts.MaxNodes > 0 && st.Nodes >= opts.MaxNodes {
			res.Status = solver.IterationLimit
			break
		}
		n := heap.Pop(q).(*node)
		cutoff := math.Inf(-1)
		if !math.IsInf(res.Primal, -1) {
			cutoff = res.Primal + opts.Tol*math.Max(1, math.Abs(res.Primal))
		}
		r, warm, err := solve(ctx, m, Subproblem{Evidence: n.ev, Warm: n.warm, Cutoff: cutoff})
		n.warm = nil
		if err != nil {
			return res, st, fmt.Errorf("node %d: %w", st.Nodes, err)
		}
		st.Nodes++
		res.Iterations += r.Iterations
		st.Iterations += r.Iterations
		if r.Assignment != nil && r.Primal > res.Primal {
			res.Primal, res.Assignment = r.Primal, r.Assignment
		}
		// A child's bound cannot exceed its parent's.
		bound := math.Min(r.Dual, n.bound)
		if math.IsInf(bound, -1) || closed(bound) {
			st.Pruned++
			report()
			continue
		}
		inc.improve(ctx, n.ev, r.Mu, st.Nodes == 1, opts.TimeLimit, &res)
		v := branchVariable(m, n.ev, r)
		if v < 0 {
			// Every variable is fixed: the node is a single assignment,
			// already scored above.
			st.Pruned++
			report()
			continue
		}
		for s := 0; s < m.Cards[v]; s++ {
			child := make(model.Evidence, len(n.ev)+1)
			for k, x := range n.ev {
				child[k] = x
			}
			child[v] = s
			heap.Push(q, &node{ev: child, bound: bound, depth: n.depth + 1, warm: warm})
		}
		report()
	}
	st.Open = q.Len()
	res.Dual = globalBound(q, res.Primal)
	if q.empty() || closed(q.top()) {
		if math.IsInf(res.Primal, -1) {
			res.Status = solver.Infeasible
		} else {
			res.Status = solver.Optimal
		}
	}
	res.Gap = res.Dual - res.Primal
	res.Relaxed = math.NaN() // no single relaxation describes a search
	res.Elapsed = time.Since(start)
	return res, st, nil
}

// globalBound is the largest bound still open, or the incumbent when the
// search space is exhausted.
func globalBound(q *queue, incumbent float64) float64 {
	if q.empty() {
		return incumbent
	}
	return math.Max(q.top(), incumbent)
}

// branchVariable picks the unfixed variable whose marginal is the most
// fractional (the smallest largest entry); without marginals, the unfixed
// variable on which the solver's assignment is least supported by its
// unaries (the first unfixed variable of largest cardinality).
func branchVariable(m *model.Model, ev model.Evidence, r solver.Result) int {
	best, bestScore := -1, math.Inf(-1)
	for i, c := range m.Cards {
		if _, fixed := ev[i]; fixed || c < 2 {
			continue
		}
		score := float64(c) // fallback: larger domains first
		if r.Mu != nil {
			mx := 0.0
			for _, v := range r.Mu[m.UnaryOff[i]:m.UnaryOff[i+1]] {
				mx = math.Max(mx, v)
			}
			score = 1 - mx
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}
