// Package exact turns a dual solver into an exact one: best-first branch
// and bound over variable assignments, bounding every node by the dual
// value the solver reports for the model restricted to that node (a valid
// upper bound on the node's best score), and certifying optimality only
// when no open node's bound exceeds the incumbent.
//
// It knows nothing of how the dual is computed: any solver with the Solver
// signature fits (DD-ADMM, DD-subgradient, TRW-S).
package exact

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
)

// Solver solves m restricted by evidence ev and returns a valid upper bound
// (Dual), an assignment with its exact score, and, when it can, the final
// marginals (Mu, laid out like m.Unary) that guide branching.
type Solver func(ctx context.Context, m *model.Model, ev model.Evidence) (consensus.Result, error)

// Options bounds the search.
type Options struct {
	Tol       float64       // optimal when bound - incumbent <= Tol*max(1,|incumbent|)
	TimeLimit time.Duration // 0: none
	MaxNodes  int           // 0: none
}

// Stats describes a search.
type Stats struct {
	Nodes, Pruned, Open int
}

type node struct {
	ev    model.Evidence
	bound float64 // the parent's bound until the node is solved
	depth int
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
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, solve Solver, opts Options, progress func(consensus.Progress)) (consensus.Result, Stats, error) {
	start := time.Now()
	res := consensus.Result{Status: consensus.IterationLimit, Primal: math.Inf(-1), Dual: math.Inf(1)}
	var st Stats
	closed := func(bound float64) bool {
		return !math.IsInf(res.Primal, -1) && bound-res.Primal <= opts.Tol*math.Max(1, math.Abs(res.Primal))
	}
	q := &queue{{ev: ev, bound: math.Inf(1)}}
	lastReport := time.Duration(0)
	for !q.empty() {
		if closed(q.top()) {
			break
		}
		elapsed := time.Since(start)
		if opts.TimeLimit > 0 && elapsed >= opts.TimeLimit {
			res.Status = consensus.TimeLimit
			break
		}
		if ctx.Err() != nil {
			res.Status = consensus.Interrupted
			break
		}
		if opts.MaxNodes > 0 && st.Nodes >= opts.MaxNodes {
			res.Status = consensus.IterationLimit
			break
		}
		n := heap.Pop(q).(*node)
		r, err := solve(ctx, m, n.ev)
		if err != nil {
			return res, st, fmt.Errorf("node %d: %w", st.Nodes, err)
		}
		st.Nodes++
		res.Iterations += r.Iterations
		if r.Assignment != nil && r.Primal > res.Primal {
			res.Primal, res.Assignment = r.Primal, r.Assignment
		}
		// A child's bound cannot exceed its parent's.
		bound := math.Min(r.Dual, n.bound)
		if math.IsInf(bound, -1) || closed(bound) {
			st.Pruned++
			continue
		}
		v := branchVariable(m, n.ev, r)
		if v < 0 {
			// Every variable is fixed: the node is a single assignment,
			// already scored above.
			st.Pruned++
			continue
		}
		for s := 0; s < m.Cards[v]; s++ {
			child := make(model.Evidence, len(n.ev)+1)
			for k, x := range n.ev {
				child[k] = x
			}
			child[v] = s
			heap.Push(q, &node{ev: child, bound: bound, depth: n.depth + 1})
		}
		if progress != nil && elapsed-lastReport >= 250*time.Millisecond {
			lastReport = elapsed
			progress(consensus.Progress{Iteration: st.Nodes, Dual: globalBound(q, res.Primal), Primal: res.Primal,
				Gap: globalBound(q, res.Primal) - res.Primal, Elapsed: elapsed})
		}
	}
	st.Open = q.Len()
	res.Dual = globalBound(q, res.Primal)
	if q.empty() || closed(q.top()) {
		if math.IsInf(res.Primal, -1) {
			res.Status = consensus.Infeasible
		} else {
			res.Status = consensus.Optimal
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
func branchVariable(m *model.Model, ev model.Evidence, r consensus.Result) int {
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
