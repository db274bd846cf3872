package primal

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ddrun/ddrun/internal/localsearch"
	"github.com/ddrun/ddrun/model"
)

// Defaults of Options.
const (
	defaultMaxNodes  = 100000
	defaultLNSSize   = 12
	defaultLNSNodes  = 2000
	firstRestartSpan = 64
	icmSweeps        = 100
)

// Options bound a search. The zero value is a sensible default.
type Options struct {
	// Evidence restricts the model (nil: none); the assignment returned
	// respects it.
	Evidence model.Evidence
	// MaxNodes bounds the assignments the construction tries, over all its
	// restarts (0: 100000; negative: no construction, only Start).
	MaxNodes int
	// TimeLimit bounds the whole search (0: none).
	TimeLimit time.Duration
	// Neighbourhoods is how many neighbourhoods the large neighbourhood
	// search solves after the construction (0: 2 per variable, at most
	// 2000; negative: none).
	Neighbourhoods int
	// NeighbourhoodSize is the number of variables freed per neighbourhood
	// (0: 12); NeighbourhoodNodes the branch and bound nodes each may take
	// (0: 2000).
	NeighbourhoodSize, NeighbourhoodNodes int
	// LNSNodes bounds the nodes of all neighbourhoods together (0: none
	// but Neighbourhoods*NeighbourhoodNodes).
	LNSNodes int
	// Complete, when positive, ends the search with a depth-first branch
	// and bound over all variables of at most that many nodes; if it
	// finishes within them, the result is optimal (Result.Optimal).
	Complete int
	// Start, when it is a feasible assignment (respecting the evidence),
	// is improved instead of constructing one (and the construction runs
	// only if Start is not feasible).
	Start []int
	// Seed seeds the choices that are random (neighbourhoods, ties after a
	// restart). The search is deterministic given its inputs and Seed.
	Seed uint64
}

// Result is what a search found.
type Result struct {
	// X is the best assignment found (nil when none), Score its exact
	// model.Score.
	X     []int
	Score float64
	// OK reports a feasible assignment (Score > -Inf).
	OK bool
	// Optimal reports that Complete's branch and bound finished: X is a
	// best assignment under the evidence.
	Optimal bool
	// Infeasible reports that propagation or an exhaustive construction
	// proved that no feasible assignment exists.
	Infeasible bool
	// Nodes counts the search's nodes (construction and branch and
	// bound).
	Nodes int
}

// Search looks for a feasible assignment of m (valid) and improves it:
// propagation, a backtracking construction guided by hint (per-state
// preferences laid out like m.Unary, e.g. decoded marginals; nil: m's
// unaries), ICM and large neighbourhood search. ok is false when nothing
// feasible was found within the budget (or the model is infeasible).
func Search(ctx context.Context, m *model.Model, hint []float64, opts Options) (x []int, score float64, ok bool) {
	r := NewSearcher(m).Run(ctx, hint, opts)
	return r.X, r.Score, r.OK
}

// Searcher holds what repeated searches on one model share: the
// propagator and the local search's index. Not safe for concurrent use.
type Searcher struct {
	m     *model.Model
	p     *Propagator
	local *localsearch.Local
	hard  []int32   // variables in hard constraints
	fmax  []float64 // per factor: largest finite score (static bound)
	wdeg  []float64 // per variable: conflicts of its constraints
	order []int32   // per state, like m.Unary: the states of its variable in the order to try
	x     []int
	buf   []float64
	rng   *rand.Rand
	// scratch is bnb's, built on first use.
	scratch *sub
	// ordered: order holds a value order; seen, gen and free are Move's
	// neighbourhood scratch, built on first use.
	ordered bool
	seen    []uint32
	gen     uint32
	free    []int32

	// The search in progress.
	ctx      context.Context
	deadline time.Time
	nodes    int
	limit    int  // node limit of the current run
	stopped  bool // the budget, the deadline or the context ran out
	hint     []float64
}

// NewSearcher prepares searches on m (valid).
func NewSearcher(m *model.Model) *Searcher {
	s := &Searcher{m: m, p: NewPropagator(m), local: localsearch.New(m)}
	for i := range m.Cards {
		if s.p.hardVar[i] {
			s.hard = append(s.hard, int32(i))
		}
	}
	s.fmax = make([]float64, len(m.Factors))
	for a := range m.Factors {
		s.fmax[a] = staticMax(m, a)
	}
	s.wdeg = make([]float64, m.NumVars())
	s.order = make([]int32, len(m.Unary))
	s.x = make([]int, m.NumVars())
	maxCard := 1
	for _, c := range m.Cards {
		maxCard = max(maxCard, c)
	}
	s.buf = make([]float64, maxCard)
	return s
}

// Propagator returns the searcher's propagator, for a caller's own
// propagation between searches (each search resets it).
func (s *Searcher) Propagator() *Propagator { return s.p }

// staticMax is an upper bound on factor a's score over all assignments.
func staticMax(m *model.Model, a int) float64 {
	f := &m.Factors[a]
	switch f.Kind {
	case model.Dense:
		return slices.Max(append([]float64{math.Inf(-1)}, f.Table...))
	case model.Pair, model.Potts:
		return math.Max(f.Weight, 0)
	case model.Sequence:
		// Each emission's and each link's largest entry.
		shared, offs, _ := model.SequenceTransitions(m, f)
		b, eoff := 0.0, 0
		for k, v := range f.Vars {
			c := m.Cards[v]
			if f.EmissionScores() != nil {
				b += slices.Max(f.EmissionScores()[eoff : eoff+c])
			}
			eoff += c
			if k+1 < len(f.Vars) {
				t := 0
				if !shared {
					t = offs[k]
				}
				b += slices.Max(f.Table[t : t+c*m.Cards[f.Vars[k+1]]])
			}
		}
		return b
	}
	return 0 // logic: 0 or -Inf
}

// Run searches as Search does and says more about what it found.
func (s *Searcher) Run(ctx context.Context, hint []float64, opts Options) Result {
	m := s.m
	res := Result{Score: math.Inf(-1)}
	s.ctx, s.nodes, s.stopped = ctx, 0, false
	s.deadline = time.Time{}
	if opts.TimeLimit > 0 {
		s.deadline = time.Now().Add(opts.TimeLimit)
	}
	s.rng = rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15))
	if hint == nil || len(hint) != len(m.Unary) {
		hint = m.Unary
	}
	s.hint = hint
	s.valueOrder(hint)
	if err := opts.Evidence.Check(m); err != nil {
		res.Infeasible = true
		return res
	}
	p := s.p
	if !p.Reset() || !p.applyEvidence(opts.Evidence) {
		res.Infeasible = true
		return res
	}
	root := p.Mark()
	x := s.x
	found := false
	if st := opts.Start; len(st) == m.NumVars() && s.fits(st) {
		copy(x, st)
		found = !math.IsInf(m.Score(x), -1)
	}
	if !found && opts.MaxNodes >= 0 {
		budget := opts.MaxNodes
		if budget == 0 {
			budget = defaultMaxNodes
		}
		var infeasible bool
		found, infeasible = s.construct(budget)
		res.Infeasible = infeasible
		p.Undo(root)
	}
	if !found {
		res.Nodes = s.nodes
		return res
	}
	s.icm(x)
	best := append([]int(nil), x...)
	bestScore := m.Score(best)
	if nb := opts.Neighbourhoods; nb >= 0 && !s.out() {
		if nb == 0 {
			nb = min(2*m.NumVars(), 2000)
		}
		size, nodes := opts.NeighbourhoodSize, opts.NeighbourhoodNodes
		if size <= 0 {
			size = defaultLNSSize
		}
		if nodes <= 0 {
			nodes = defaultLNSNodes
		}
		total := opts.LNSNodes
		if total <= 0 {
			total = math.MaxInt / 2
		}
		bestScore = s.lns(best, bestScore, nb, size, nodes, total, root)
		s.icm(best)
		bestScore = m.Score(best)
	}
	if opts.Complete > 0 && !s.out() {
		all := make([]int32, m.NumVars())
		for i := range all {
			all[i] = int32(i)
		}
		s.stopped = false
		s.limit = s.nodes + opts.Complete
		sc, done := s.bnb(best, bestScore, all, root)
		bestScore = sc
		res.Optimal = done
	}
	res.X, res.Score, res.OK, res.Nodes = best, m.Score(best), true, s.nodes
	if math.IsInf(res.Score, -1) { // cannot happen: every step keeps feasibility
		res.X, res.OK = nil, false
	}
	return res
}

// fits reports whether x is in the current domains.
func (s *Searcher) fits(x []int) bool {
	for i, c := range s.m.Cards {
		if x[i] < 0 || x[i] >= c || !s.p.Allowed(i, x[i]) {
			return false
		}
	}
	return true
}

// valueOrder sorts each variable's states by decreasing hint (NaN last),
// ties by decreasing unary, then by state.
func (s *Searcher) valueOrder(hint []float64) {
	m := s.m
	s.ordered = true
	key := func(v float64) float64 {
		if math.IsNaN(v) {
			return math.Inf(-1)
		}
		return v
	}
	for i := range m.Cards {
		off := m.UnaryOff[i]
		o := s.order[off:m.UnaryOff[i+1]]
		for k := range o {
			o[k] = int32(k)
		}
		slices.SortStableFunc(o, func(a, b int32) int {
			if c := cmp.Compare(key(hint[off+int(b)]), key(hint[off+int(a)])); c != 0 {
				return c
			}
			return cmp.Compare(key(m.Unary[off+int(b)]), key(m.Unary[off+int(a)]))
		})
	}
}

// out reports (and remembers) whether the node budget, the deadline or the
// context ran out; it looks at the clock every 256 nodes.
func (s *Searcher) out() bool {
	if s.stopped {
		return true
	}
	if s.limit > 0 && s.nodes >= s.limit {
		s.stopped = true
		return true
	}
	if s.nodes&255 == 0 {
		if s.ctx.Err() != nil || (!s.deadline.IsZero() && time.Now().After(s.deadline)) {
			s.stopped = true
		}
	}
	return s.stopped
}

// hardOut is out for reasons other than the node limit of one run.
func (s *Searcher) hardOut() bool {
	return s.ctx.Err() != nil || (!s.deadline.IsZero() && time.Now().After(s.deadline))
}

// construct runs the backtracking construction with restarts, at most
// budget nodes in all, and leaves a feasible assignment in s.x when it
// reports found. infeasible reports that a run finished without a
// solution (the search space is exhausted).
func (s *Searcher) construct(budget int) (found, infeasible bool) {
	p := s.p
	root := p.Mark()
	end := s.nodes + budget
	span := firstRestartSpan
	for restart := 0; ; restart++ {
		s.stopped = false
		s.limit = min(end, s.nodes+span)
		switch s.dfs(restart > 0) {
		case dfsFound:
			s.fill()
			return true, false
		case dfsExhausted:
			return false, true
		}
		p.Undo(root)
		if s.nodes >= end || s.hardOut() {
			return false, false
		}
		span = span * 3 / 2
	}
}

const (
	dfsExhausted = iota
	dfsFound
	dfsStopped
)

// dfs is one run of the construction: maintained arc consistency,
// dom/wdeg variable choice (ties at random when shuffle is set), values in
// hint order. It leaves the domains where it found a solution.
func (s *Searcher) dfs(shuffle bool) int {
	if s.out() {
		return dfsStopped
	}
	p := s.p
	v := s.pick(shuffle)
	if v < 0 {
		if s.checkUnchecked() {
			return dfsFound
		}
		return dfsExhausted
	}
	off := s.m.UnaryOff[v]
	for _, st := range s.order[off:s.m.UnaryOff[v+1]] {
		if !p.dom[off+int(st)] {
			continue
		}
		s.nodes++
		mark := p.Mark()
		if p.Assign(v, int(st)) {
			switch s.dfs(shuffle) {
			case dfsFound:
				return dfsFound
			case dfsStopped:
				p.Undo(mark)
				return dfsStopped
			}
		} else {
			s.conflict()
		}
		p.Undo(mark)
		if s.out() {
			return dfsStopped
		}
	}
	return dfsExhausted
}

// pick returns the unfixed variable of a hard constraint with the smallest
// domain size over weighted degree, or -1 when all are fixed.
func (s *Searcher) pick(shuffle bool) int {
	p := s.p
	best, bestKey, ties := -1, math.Inf(1), 0
	for _, v := range s.hard {
		sz := p.size[v]
		if sz <= 1 {
			continue
		}
		k := float64(sz) / (1 + s.wdeg[v])
		switch {
		case k < bestKey:
			best, bestKey, ties = int(v), k, 1
		case k == bestKey && shuffle:
			ties++
			if s.rng.IntN(ties) == 0 {
				best = int(v)
			}
		}
	}
	return best
}

// conflict weighs the constraint that failed (dom/wdeg).
func (s *Searcher) conflict() {
	c := s.p.failed
	if c < 0 {
		return
	}
	for _, v := range s.p.cons[c].vars {
		s.wdeg[v]++
	}
}

// checkUnchecked reports whether the hard tables too large to propagate
// accept the fixed states of their variables.
func (s *Searcher) checkUnchecked() bool {
	if len(s.p.unchecked) == 0 {
		return true
	}
	s.fill()
	for _, a := range s.p.unchecked {
		if math.IsInf(s.m.FactorScore(a, s.x), -1) {
			for _, v := range s.m.Factors[a].Vars {
				s.wdeg[v]++
			}
			return false
		}
	}
	return true
}

// fill writes into s.x each variable's first allowed state in value order
// (its only state for fixed variables).
func (s *Searcher) fill() {
	m, p := s.m, s.p
	for i := range m.Cards {
		off := m.UnaryOff[i]
		for _, st := range s.order[off:m.UnaryOff[i+1]] {
			if p.dom[off+int(st)] {
				s.x[i] = int(st)
				break
			}
		}
	}
}

// icm is localsearch's ICM by sweeps within the propagator's current
// domains (the root's: evidence and what propagation removed), so that it
// keeps the evidence; like localsearch.Best, ties keep the current state,
// so a feasible assignment stays feasible and its score never drops.
func (s *Searcher) icm(x []int) {
	m, p := s.m, s.p
	for range icmSweeps {
		moved := false
		for i, c := range m.Cards {
			if p.size[i] <= 1 {
				continue
			}
			loc := s.buf[:c]
			s.local.Scores(i, x, loc)
			off := m.UnaryOff[i]
			for t := range loc {
				if !p.dom[off+t] {
					loc[t] = math.Inf(-1)
				}
			}
			if best := localsearch.Best(loc, x[i]); best != x[i] {
				x[i] = best
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

// Hard reports whether the model has hard constraints (-Inf entries in
// its factors, or logic factors).
func (s *Searcher) Hard() bool { return len(s.hard) > 0 }
