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
	"slices"
	"sync"
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
	// Depth is the number of variables the search fixed on the way to
	// the node (0 at the root).
	Depth int
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
// BenchmarkWarmSameNodes measure both effects). Below the root the run
// leaves out its final polish (consensus.Options.NoPolish): the root's
// polish gives the search its incumbent, and every node's checks during
// the run still offer their primals.
func ADMM(opts consensus.Options) WarmSolver {
	return func(ctx context.Context, m *model.Model, sp Subproblem) (solver.Result, *consensus.Warm, error) {
		o := opts
		o.NoPolish = o.NoPolish || sp.Depth > 0
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
	TimeLimit time.Duration // 0: none; a node being solved when it passes is cut short
	MaxNodes  int           // 0: none; at most this many nodes are solved
	// Threads is the number of nodes solved at once (0 or 1: one, in a
	// deterministic order). Each of the Threads goroutines takes the open
	// node of largest bound, so the solver must be safe for concurrent use
	// on the same model (every solver of ddrun is: none writes its model).
	Threads int
}

// Validate returns a *solver.OptionError naming the first bad option.
func (o *Options) Validate() error {
	return solver.FirstBad(
		solver.WantNonNegative("Tol", o.Tol),
		solver.WantNotNegative("TimeLimit", o.TimeLimit),
		solver.WantNotNegative("MaxNodes", o.MaxNodes),
		solver.WantNotNegative("Threads", o.Threads),
	)
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
	// pref is the parent's marginal of the state this node fixes: among
	// siblings of equal bound, the one the parent's solution prefers is
	// taken first (a dive along the relaxation's choice).
	pref float64
	warm *consensus.Warm // the parent's final state, shared by siblings
}

// Rank orders the node in the queue.
func (n *node) Rank() Rank { return Rank{Bound: n.bound, Depth: n.depth, Pref: n.pref} }

type queue = Queue[*node]

// Solve runs best-first branch and bound on m under evidence ev. The result
// is Optimal only when the gap is closed; otherwise its Dual is the largest
// bound of the open nodes (still a valid upper bound) and its status says
// why the search stopped.
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, solve Solver, opts Options, progress func(solver.Progress)) (solver.Result, Stats, error) {
	return SolveWarm(ctx, m, ev, Cold(solve), opts, progress)
}

// search is the state the workers of one SolveWarm share, guarded by mu.
type search struct {
	m        *model.Model
	solve    WarmSolver
	opts     Options
	progress func(solver.Progress)
	start    time.Time
	fmax     []float64 // factorMax(m), once a node has no marginals

	mu       sync.Mutex
	wake     *sync.Cond // signalled when nodes are pushed or the search ends
	q        queue
	inc      *incumbents // the incumbent search (primal.go), used under mu
	inflight []float64   // the bounds of the nodes being solved (+Inf: none)
	busy     int         // nodes being solved
	started  int         // nodes taken from the queue
	res      solver.Result
	st       Stats
	stop     solver.Status // why the search ends early ("" while it goes on)
	err      error
}

// SolveWarm is Solve with a solver that starts every child node from its
// parent's final state (the root starts cold) and may stop each node's run
// once the node is sure to be pruned.
//
// With opts.Threads > 1 that many nodes are solved at once, each worker
// taking the open node of largest bound and sharing the incumbent (and so
// the cutoff). The bound reported at any time is the largest of the open
// nodes', the nodes being solved and the incumbent, so it stays valid while
// nodes are in flight; the optimum certified is the same as with one
// thread (up to Tol and ties between optimal assignments).
//
// progress, when not nil, is called after every node, never by two
// goroutines at once (the caller throttles what it prints): Iteration is
// the solver's iterations over all nodes so far (what the result's
// Iterations counts), Nodes the nodes solved, Open the nodes left (queued

// run searches on Threads workers until the queue is empty, a limit is
// reached or ctx ends. Node runs end at the time limit too: a node cut
// short still reports a valid bound, and the search stops right after.
func (s *search) run(ctx context.Context) {
	threads := max(s.opts.Threads, 1)
	s.inflight = make([]float64, threads)
	for i := range s.inflight {
		s.inflight[i] = math.Inf(-1)
	}
	nctx := ctx
	if s.opts.TimeLimit > 0 {
		var cancel context.CancelFunc
		nctx, cancel = context.WithDeadline(ctx, s.start.Add(s.opts.TimeLimit))
		defer cancel()
	}
	if threads == 1 {
		s.work(nctx, ctx, 0)
		return
	}
	var wg sync.WaitGroup
	for w := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.work(nctx, ctx, w)
		}()
	}
	wg.Wait()
}

// and in flight), Dual the valid bound above and Primal the incumbent.
func SolveWarm(ctx context.Context, m *model.Model, ev model.Evidence, solve WarmSolver, opts Options, progress func(solver.Progress)) (solver.Result, Stats, error) {
	if err := opts.Validate(); err != nil {
		return solver.Result{}, Stats{}, err
	}
	s := &search{m: m, solve: solve, opts: opts, progress: progress, start: time.Now(),
		q:   queue{{ev: ev, bound: math.Inf(1)}},
		res: solver.Result{Status: solver.IterationLimit, Primal: math.Inf(-1), Dual: math.Inf(1)}}
	s.wake = sync.NewCond(&s.mu)
	s.inc = newIncumbents(m)
	s.run(ctx)
	if s.err != nil {
		return s.res, s.st, s.err
	}
	res, q := s.res, s.q
	s.st.Open = q.Len()
	res.Dual = s.bound()
	if q.empty() || s.closed(q.top()) {
		if math.IsInf(res.Primal, -1) {
			res.Status = solver.Infeasible
		} else {
			res.Status = solver.Optimal
		}
	} else if s.stop != "" {
		res.Status = s.stop
	}
	res.Gap = res.Dual - res.Primal
	res.Relaxed = math.NaN() // no single relaxation describes a search
	res.Elapsed = time.Since(s.start)
	return res, s.st, nil
}

func (s *search) closed(bound float64) bool {
	return solver.Closed(bound, s.res.Primal, s.opts.Tol)
}

// bound is the valid upper bound of the search (s.mu held): the largest
// bound of the open and in-flight nodes, or the incumbent when larger (or
// when nothing is left).
func (s *search) bound() float64 {
	b := s.res.Primal
	if !s.q.empty() {
		b = math.Max(b, s.q.top())
	}
	for _, f := range s.inflight {
		b = math.Max(b, f)
	}
	return b
}

func (s *search) report() {
	if s.progress != nil {
		b := s.bound()
		s.progress(solver.Progress{Iteration: s.res.Iterations, Dual: b, Primal: s.res.Primal, Gap: b - s.res.Primal,
			Elapsed: time.Since(s.start), Nodes: s.st.Nodes, Open: s.q.Len() + s.busy})
	}
}

// next waits for a node worth solving and takes it (s.mu held); nil when
// the search is over: the gap is closed or nothing is left, a limit is
// reached, or another worker failed.
func (s *search) next(ctx context.Context) *node {
	for {
		if s.stop != "" || s.err != nil {
			return nil
		}
		if s.q.empty() || s.closed(s.q.top()) {
			if s.busy == 0 {
				s.wake.Broadcast()
				return nil
			}
			s.wake.Wait() // a node in flight may open children
			continue
		}
		switch {
		case s.opts.TimeLimit > 0 && time.Since(s.start) >= s.opts.TimeLimit:
			s.stop = solver.TimeLimit
		case ctx.Err() != nil:
			s.stop = solver.Interrupted
		case s.opts.MaxNodes > 0 && s.started >= s.opts.MaxNodes:
			s.stop = solver.IterationLimit
		default:
			s.started++
			return heap.Pop(&s.q).(*node)
		}
		s.wake.Broadcast()
	}
}

// work is one worker: it takes the best open node, solves it without the
// lock (nctx ends at the time limit), and files the result.
func (s *search) work(nctx, ctx context.Context, w int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		n := s.next(ctx)
		if n == nil {
			return
		}
		cutoff := math.Inf(-1)
		if !math.IsInf(s.res.Primal, -1) {
			cutoff = s.res.Primal + s.opts.Tol*math.Max(1, math.Abs(s.res.Primal))
		}
		s.busy++
		s.inflight[w] = n.bound
		s.mu.Unlock()
		r, warm, err := s.solve(nctx, s.m, Subproblem{Evidence: n.ev, Warm: n.warm, Cutoff: cutoff, Depth: n.depth})
		s.mu.Lock()
		s.busy--
		s.inflight[w] = math.Inf(-1)
		if err != nil {
			if nctx.Err() != nil {
				// Cut short by the time limit or the caller: the node
				// stays open with its parent's bound.
				heap.Push(&s.q, n)
				s.started--
				continue
			}
			if s.err == nil {
				s.err = fmt.Errorf("node %d: %w", s.st.Nodes, err)
			}
			s.wake.Broadcast()
			return
		}
		n.warm = nil
		s.file(nctx, n, r, warm)
		s.report()
		s.wake.Broadcast()
	}
}

// file takes the result of node n into the search (s.mu held): the
// incumbent, the counts, and n's children unless n is pruned.
func (s *search) file(ctx context.Context, n *node, r solver.Result, warm *consensus.Warm) {
	s.st.Nodes++
	s.res.Iterations += r.Iterations
	s.st.Iterations += r.Iterations
	if r.Assignment != nil && r.Primal > s.res.Primal {
		s.res.Primal, s.res.Assignment = r.Primal, r.Assignment
	}
	// A child's bound cannot exceed its parent's.
	bound := n.bound
	if !math.IsNaN(r.Dual) {
		bound = math.Min(r.Dual, n.bound)
	}
	if math.IsInf(bound, -1) || s.closed(bound) {
		s.st.Pruned++
		return
	}
	// The incumbent search (primal.go) runs under s.mu: its searcher is
	// shared, and its budget per node is small (nodeTime).
	s.inc.improve(ctx, n.ev, r.Mu, s.st.Nodes == 1, s.opts.TimeLimit, &s.res)
	if r.Mu == nil && s.fmax == nil {
		s.fmax = factorMax(s.m)
	}
	v := branchVariable(s.m, n.ev, r, s.fmax)
	if v < 0 {
		// Every variable is fixed: the node is a single assignment,
		// already scored above.
		s.st.Pruned++
		return
	}
	for st := 0; st < s.m.Cards[v]; st++ {
		child := make(model.Evidence, len(n.ev)+1)
		for k, x := range n.ev {
			child[k] = x
		}
		child[v] = st
		pref := 0.0
		if r.Mu != nil {
			pref = r.Mu[s.m.UnaryOff[v]+st]
		}
		heap.Push(&s.q, &node{ev: child, bound: bound, depth: n.depth + 1, pref: pref, warm: warm})
	}
}

// branchVariable picks the unfixed variable whose marginal is the most
// fractional (the smallest largest entry). Without marginals (TRW-S, or a
// Cold solver) it picks the unfixed variable that the solver's assignment
// serves worst: the largest total loss, over its unary and the factors
// around it, of the assignment's entry against the entry's best (fmax, the
// factors' largest entries: a conflict count weighted by scores); without
// an assignment, the first unfixed variable of largest cardinality. Ties go
// to the larger domain, then the smaller index.
func branchVariable(m *model.Model, ev model.Evidence, r solver.Result, fmax []float64) int {
	var loss []float64
	if r.Mu == nil && r.Assignment != nil && !math.IsInf(r.Primal, -1) && fmax != nil {
		loss = make([]float64, m.NumVars())
		for a := range m.Factors {
			if math.IsNaN(fmax[a]) {
				continue
			}
			l := fmax[a] - m.FactorScore(a, r.Assignment)
			for _, v := range m.Factors[a].Vars {
				loss[v] += l
			}
		}
		for i := range loss {
			u := m.Unaries(i)
			loss[i] += slices.Max(u) - u[r.Assignment[i]]
		}
	}
	best, bestScore, bestCard := -1, math.Inf(-1), 0
	for i, c := range m.Cards {
		if _, fixed := ev[i]; fixed || c < 2 {
			continue
		}
		score := 0.0
		switch {
		case r.Mu != nil:
			mx := 0.0
			for _, v := range r.Mu[m.UnaryOff[i]:m.UnaryOff[i+1]] {
				mx = math.Max(mx, v)
			}
			score = 1 - mx
		case loss != nil:
			score = loss[i]
		}
		if score > bestScore || (score == bestScore && c > bestCard) {
			best, bestScore, bestCard = i, score, c
		}
	}
	return best
}

// factorMax is the largest entry of every factor of m whose entries are
// cheap to scan (Dense, Pair, Potts), NaN for the others.
func factorMax(m *model.Model) []float64 {
	fmax := make([]float64, len(m.Factors))
	for a := range m.Factors {
		f := &m.Factors[a]
		switch f.Kind {
		case model.Dense:
			fmax[a] = slices.Max(f.Table)
		case model.Pair, model.Potts:
			fmax[a] = math.Max(f.Weight, 0)
		default:
			fmax[a] = math.NaN()
		}
		if math.IsInf(fmax[a], 0) {
			fmax[a] = math.NaN()
		}
	}
	return fmax
}
