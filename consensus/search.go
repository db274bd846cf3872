package consensus

import (
	"context"
	"math"
	"slices"
	"sync/atomic"

	"github.com/ddrun/ddrun/internal/localsearch"
	"github.com/ddrun/ddrun/internal/primal"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/slaves"
)

// icmEvery is how often (in iterations) the coordinator gathers the decoded
// assignment, scores it and improves it by local search.
const icmEvery = 10

// Sweep budgets of ICM: during the run (a sweep costs about a third of an
// iteration's work), and for the final polish of the best assignment.
const (
	icmRunSweeps   = 3
	icmFinalSweeps = 100
)

// Sizes of the coordinator's parallel loops, fixed (not derived from the
// thread count): variables per ICM block, and variables and factors per
// chunk of the score.
const (
	icmBlock   = 512
	scoreChunk = 4096
)

// localSearch improves assignments of a model: iterated conditional modes,
// and a repair for assignments that violate hard constraints. It uses the
// model's own factor scores, so it gives the same result wherever it runs.
//
// The coordinator checks the primal every icmEvery iterations (when the
// decoded assignment changed). Run serially, the scores and the ICM of a
// check cost about one iteration of 300x300 Potts on two threads, 7-8% of
// the run, on one core while the other waited. Both run on the worker
// pool and give the same result for every thread count: the score is
// summed over fixed chunks in chunk order, and the ICM runs on fixed blocks
// of variables, in parallel only on blocks that share no factor (see icm).
type localSearch struct {
	m     *model.Model
	pool  *pool
	local *localsearch.Local // the local scores of ICM; nil with pairs
	// pairs, when not nil, are the factors instead of m's (a worker's
	// Part.Pairs), and p indexes them by variable (its slave a is pair a):
	// the same scores and visits as over the same factors in m.
	pairs *Pairs
	p     *Problem
	rep   *repair // built on first use
	// prim is internal/primal's search, the repair on the whole model,
	// built on first use (then hint is its scratch and decoded the last
	// assignment improve was given); primInfeasible records that it
	// proved the model infeasible.
	prim           *primal.Searcher
	primInfeasible bool
	hint           []float64
	decoded        []int
	// frozen marks variables that neither ICM nor the repair may change
	// and whose unaries partial leaves out: a sharded worker's boundary,
	// whose states the coordinator settles. nil: none.
	frozen []bool

	// ICM blocks: variables [b*icmBlock, (b+1)*icmBlock). Blocks with a
	// factor in common have different colours; colour c's blocks are
	// colBlocks[colOff[c]:colOff[c+1]], in increasing order.
	colOff    []int
	colBlocks []int
	queued    []bool // per variable: in its block's worklist
	// near, in an icmNear (lazy), marks the variables a neighbour of
	// which moved since their last visit: the others' visits are
	// skipped, as they cannot move (made on first use).
	near []bool
	lazy bool
	// Per block: its FIFO worklist, a ring over ring[b*icmBlock:] with
	// head and count (a variable is queued at most once, so it holds
	// them all), the visits it made in this ICM, and the variables of
	// other blocks next to ones it changed (to queue after the phase).
	ring   []int32
	head   []int
	count  []int
	visits []int
	outbox [][]int32
	// The phase in progress: the blocks to run, the visit budget per
	// variable, the assignment.
	run    []int
	sweeps int
	x      []int

	loc       [][]float64 // per goroutine of the pool
	partScore []float64   // per chunk of the score
	icmBody   func(worker, chunk int)
	scoreBody func(worker, chunk int)
}

func newLocalSearch(m *model.Model, pl *pool) *localSearch {
	ls := &localSearch{m: m, pool: pl, local: localsearch.New(m)}
	ls.init()
	return ls
}

// newPairSearch is newLocalSearch over a part's pairs, indexed by the
// worker's Problem p (decomposePairs).
func newPairSearch(m *model.Model, q *Pairs, p *Problem, pl *pool) *localSearch {
	ls := &localSearch{m: m, pool: pl, pairs: q, p: p}
	ls.init()
	return ls
}

func (ls *localSearch) init() {
	m := ls.m
	n := m.NumVars()
	maxCard := 1
	for _, c := range m.Cards {
		maxCard = max(maxCard, c)
	}
	nb := (n + icmBlock - 1) / icmBlock
	ls.colourBlocks(nb)
	ls.queued = make([]bool, n)
	ls.ring = make([]int32, n)
	ls.head = make([]int, nb)
	ls.count = make([]int, nb)
	ls.visits = make([]int, nb)
	ls.outbox = make([][]int32, nb)
	ls.run = make([]int, 0, nb)
	ls.loc = make([][]float64, ls.pool.threads)
	for t := range ls.loc {
		ls.loc[t] = padded(maxCard)
	}
	ls.partScore = make([]float64, (max(n, ls.numFactors())+scoreChunk-1)/scoreChunk)
	ls.icmBody = ls.icmBlockRun
	ls.scoreBody = ls.scoreChunk
}

func (ls *localSearch) numFactors() int {
	if ls.pairs != nil {
		return ls.pairs.Len()
	}
	return len(ls.m.Factors)
}

// factorVars returns factor a's scope, in buf's array for pairs.
func (ls *localSearch) factorVars(a int, buf *[2]int) []int {
	if q := ls.pairs; q != nil {
		buf[0], buf[1] = int(q.I[a]), int(q.J[a])
		return buf[:]
	}
	return ls.m.Factors[a].Vars
}

// factorScore is m.FactorScore(a, x) over the search's factors.
func (ls *localSearch) factorScore(a int, x []int) float64 {
	if ls.pairs != nil {
		return ls.pairs.score(a, x)
	}
	return ls.m.FactorScore(a, x)
}

// pairScores is localsearch.Local.Scores over pairs: the same sums in the
// same order (a Potts pair adds its weight to the state of its other
// variable; a Pair adds its score of every state, as Scores does for
// kinds other than Potts and Dense).
func (ls *localSearch) pairScores(i int, x []int, loc []float64) {
	m, q, p := ls.m, ls.pairs, ls.p
	copy(loc, m.Unaries(i))
	for j := p.VarRepOff[i]; j < p.VarRepOff[i+1]; j++ {
		a := p.RepSlave[j]
		o := int(q.I[a])
		if o == i {
			o = int(q.J[a])
		}
		if q.Kind == model.Potts {
			if s := x[o]; !math.IsInf(loc[s], -1) {
				loc[s] += q.W[a]
			}
			continue
		}
		for s := range loc {
			if !math.IsInf(loc[s], -1) {
				v := 0.0
				if s == 1 && x[o] == 1 {
					v = q.W[a]
				}
				loc[s] += v
			}
		}
	}
}

// scores is ICM's local scores of variable i at x (its unary plus the
// search's factors that touch it, per state): localsearch.Local.Scores,
// or pairScores over pairs.
func (ls *localSearch) scores(i int, x []int, loc []float64) {
	if ls.pairs != nil {
		ls.pairScores(i, x, loc)
	} else {
		ls.local.Scores(i, x, loc)
	}
}

// colourBlocks colours the nb ICM blocks greedily in increasing order, each
// with the smallest colour that no block it shares a factor with has yet:
// two colours on a grid whose rows are shorter than a block.
func (ls *localSearch) colourBlocks(nb int) {
	adj := make([][]int, nb)
	var bs []int
	var buf [2]int
	for a := range ls.numFactors() {
		bs = bs[:0]
		for _, v := range ls.factorVars(a, &buf) {
			if b := v / icmBlock; !slices.Contains(bs, b) {
				bs = append(bs, b)
			}
		}
		for _, b := range bs {
			for _, c := range bs {
				if b != c && !slices.Contains(adj[b], c) {
					adj[b] = append(adj[b], c)
				}
			}
		}
	}
	color := make([]int, nb)
	var size []int
	for b := range color {
		c := 0
		for ; ; c++ {
			taken := false
			for _, o := range adj[b] {
				taken = taken || (o < b && color[o] == c)
			}
			if !taken {
				break
			}
		}
		color[b] = c
		if c == len(size) {
			size = append(size, 0)
		}
		size[c]++
	}
	ls.colOff = make([]int, len(size)+1)
	for c, k := range size {
		ls.colOff[c+1] = ls.colOff[c] + k
	}
	ls.colBlocks = make([]int, nb)
	fill := append([]int(nil), ls.colOff[:len(size)]...)
	for b, c := range color {
		ls.colBlocks[fill[c]] = b
		fill[c]++
	}
}

// score is m.Score(x) summed over fixed chunks (each: its variables'
// unaries, then its factors) in chunk order, on the pool. It can differ
// from m.Score(x) in the last bits (another order of the same sum) but not
// with the thread count; Finish reports the exact score of the assignment.
func (ls *localSearch) score(x []int) float64 {
	ls.x = x
	ls.pool.run(len(ls.partScore), ls.scoreBody)
	ls.x = nil
	s := ls.m.Constant
	for _, p := range ls.partScore {
		s += p
	}
	return s
}

// partial is score without the constant and the frozen variables'
// unaries: a sharded worker's share of the score of an assignment.
func (ls *localSearch) partial(x []int) float64 {
	ls.x = x
	ls.pool.run(len(ls.partScore), ls.scoreBody)
	ls.x = nil
	s := 0.0
	for _, p := range ls.partScore {
		s += p
	}
	return s
}

func (ls *localSearch) scoreChunk(_, chunk int) {
	m, x := ls.m, ls.x
	lo := chunk * scoreChunk
	s := 0.0
	for i := lo; i < min(lo+scoreChunk, m.NumVars()); i++ {
		if ls.frozen != nil && ls.frozen[i] {
			continue
		}
		s += m.Unary[m.UnaryOff[i]+x[i]]
	}
	for a := lo; a < min(lo+scoreChunk, ls.numFactors()); a++ {
		s += ls.factorScore(a, x)
	}
	ls.partScore[chunk] = s
}

// improve runs the repair when asked (x violates hard constraints and no
// feasible assignment is known), then a few ICM sweeps, and reports
// whether ICM ended at a local optimum (icm). On the whole model
// (not a worker's pairs or boundary) the repair is internal/primal's
// search guided by x; elsewhere the forward-checking repair below.
func (ls *localSearch) improve(x []int, repair bool) bool {
	if ls.prim != nil {
		ls.decoded = append(ls.decoded[:0], x...)
	}
	if repair {
		if ls.pairs == nil {
			ls.primalRepair(x, ls.frozen)
		} else {
			if ls.rep == nil {
				ls.rep = ls.newRepair()
				if ls.rep != nil {
					ls.rep.frozen = ls.frozen
				}
			}
			ls.rep.run(x)
		}
	}
	return ls.icm(x, icmRunSweeps)
}

// Budgets of internal/primal's search, in nodes (not time, so that a run
// gives the same primals wherever it runs): the construction's per
// variable (plus a constant), and the large neighbourhood search's in the
// final polish (neighbourhoods, and nodes over all of them).
const (
	primalNodesPerVar = 50
	primalNodesBase   = 20000
	primalPolishLNS   = 300
	primalLNSNodes    = 100000
)

// primalRepair overwrites x with the feasible assignment internal/primal's
// search builds, values tried in the order of x (then of the unaries),
// without its neighbourhood search (the final polish runs it), so that the
// first primal comes early. The variables marked in fixed (nil: none; a
// sharded worker's boundary) keep their states in x, as evidence. It
// leaves x as it is and reports false when the search finds nothing, and
// stops trying once propagation proves the model infeasible with nothing
// fixed.
func (ls *localSearch) primalRepair(x []int, fixed []bool) bool {
	if ls.primInfeasible {
		return false
	}
	if ls.prim == nil {
		ls.newPrim()
		ls.decoded = append(ls.decoded[:0], x...)
	}
	ev := fixedStates(fixed, x)
	r := ls.prim.Run(context.Background(), ls.oneHot(x), primal.Options{
		MaxNodes:       primalNodesBase + primalNodesPerVar*ls.m.NumVars(),
		Neighbourhoods: -1, Evidence: ev})
	if r.Infeasible && len(ev) == 0 {
		ls.primInfeasible = true
	}
	if r.OK {
		copy(x, r.X)
	}
	return r.OK
}

// newPrim builds internal/primal's search of the model.
func (ls *localSearch) newPrim() {
	ls.prim = primal.NewSearcher(ls.m)
	ls.hint = make([]float64, len(ls.m.Unary))
}

// fixedStates is the evidence that keeps the variables marked in fixed in
// their states in x (nil when none is marked).
func fixedStates(fixed []bool, x []int) model.Evidence {
	var ev model.Evidence
	for i, f := range fixed {
		if f {
			if ev == nil {
				ev = model.Evidence{}
			}
			ev[i] = x[i]
		}
	}
	return ev
}

// oneHot is the hint that prefers x's states: 1 at x_i, 0 elsewhere.
func (ls *localSearch) oneHot(x []int) []float64 {
	m, h := ls.m, ls.hint
	clear(h)
	for i, s := range x {
		h[m.UnaryOff[i]+s] = 1
	}
	return h
}

// polish runs ICM to a local optimum (or the final sweep budget). When the
// run needed internal/primal's repair (the model has hard constraints),
// it first tries that search's construction from the last decoded
// assignment and its large neighbourhood search from x, and keeps the
// best of them.
func (ls *localSearch) polish(x []int) bool {
	polishRuns.Add(1)
	if ls.prim != nil && !ls.primInfeasible {
		m := ls.m
		best := m.Score(x)
		opts := primal.Options{Neighbourhoods: min(primalPolishLNS, m.NumVars()),
			MaxNodes: primalNodesBase + primalNodesPerVar*m.NumVars(), LNSNodes: primalLNSNodes,
			Evidence: fixedStates(ls.frozen, x)}
		if r := ls.prim.Run(context.Background(), ls.oneHot(ls.decoded), opts); r.OK && r.Score > best {
			copy(x, r.X)
			best = r.Score
		}
		opts.Start = x
		if r := ls.prim.Run(context.Background(), nil, opts); r.OK && r.Score > best {
			copy(x, r.X)
		}
	}
	return ls.icm(x, icmFinalSweeps)
}

// polishRuns counts the polishes of the process, for tests (a branch
// and bound run polishes at its root only: Options.NoPolish).
var polishRuns atomic.Int64

// icm is iterated conditional modes: a variable takes the state that
// maximises its local score (unary plus the factors that touch it) with the
// others fixed (localsearch.Local.Scores and localsearch.Best, which cmp's
// sequential sweeps use too; this is the parallel schedule). It never
// lowers the score of a feasible assignment and often repairs an
// infeasible one.
//
// Within a block of icmBlock variables, every variable is visited once, in
// order; after that only the neighbours of variables that changed are
// revisited (a FIFO worklist), until nothing changes or the block has spent
// sweeps visits per variable. The blocks of one colour run in parallel:
// they share no factor, so each reads only states that no other running
// block writes. A change next to another block queues the neighbour there
// after the phase, in block order. Colours take turns until no worklist
// is left. Neither the order of the visits nor their number depends on the
// thread count, and a model of one block (up to icmBlock variables) gets
// exactly the sequential ICM. It reports whether every worklist emptied
// before its budget: x is then a local optimum (no variable but the
// frozen ones has a better state given the others).
func (ls *localSearch) icm(x []int, sweeps int) bool {
	ls.lazy = false
	return ls.runICM(x, sweeps)
}

// icmNear is icm from an x that was a local optimum (an icm that reported
// so left it) before the frozen variables in changed took other states:
// a visit to a variable none of whose neighbours moved since x was that
// optimum, or since the variable's last visit, cannot move it (Best keeps
// the current state on ties), so it is skipped. The visits, their budget
// and the moves are icm's; what they cost is the neighbourhoods of the
// moves, not the part (a boundary move of the final polish).
func (ls *localSearch) icmNear(x []int, sweeps int, changed []int) bool {
	if ls.near == nil {
		ls.near = make([]bool, ls.m.NumVars())
	} else {
		clear(ls.near)
	}
	var buf [2]int
	for _, i := range changed {
		ls.eachNeighbour(i, &buf, func(v int) { ls.near[v] = true })
	}
	ls.lazy = true
	done := ls.runICM(x, sweeps)
	ls.lazy = false
	return done
}

// eachNeighbour calls fn on every variable that shares a factor of the
// search with i (i apart; once per factor they share).
func (ls *localSearch) eachNeighbour(i int, buf *[2]int, fn func(v int)) {
	facs, facs32 := ls.factorsOf(i)
	for k := range len(facs) + len(facs32) {
		for _, v := range ls.factorVars(factorAt(facs, facs32, k), buf) {
			if v != i {
				fn(v)
			}
		}
	}
}

// factorsOf returns the factors of the search that touch variable i, in
// increasing order: the model's (facs), or over pairs the Problem's
// slaves (facs32); factorAt reads the k-th of either.
func (ls *localSearch) factorsOf(i int) (facs []int, facs32 []int32) {
	if p := ls.p; ls.pairs != nil {
		return nil, p.RepSlave[p.VarRepOff[i]:p.VarRepOff[i+1]]
	}
	return ls.local.Factors(i), nil
}

func factorAt(facs []int, facs32 []int32, k int) int {
	if facs32 != nil {
		return int(facs32[k])
	}
	return facs[k]
}

// runICM is icm's schedule (lazy: icmNear's).
func (ls *localSearch) runICM(x []int, sweeps int) bool {
	m := ls.m
	n := m.NumVars()
	for i := 0; i < n; i++ {
		ls.ring[i] = int32(i)
		ls.queued[i] = true
	}
	for b := range ls.head {
		ls.head[b] = 0
		ls.count[b] = min(icmBlock, n-b*icmBlock)
		ls.visits[b] = 0
	}
	ls.x, ls.sweeps = x, sweeps
	for ran := true; ran; {
		ran = false
		for c := 0; c+1 < len(ls.colOff); c++ {
			ls.run = ls.run[:0]
			for _, b := range ls.colBlocks[ls.colOff[c]:ls.colOff[c+1]] {
				if ls.count[b] > 0 && ls.visits[b] < sweeps*ls.blockLen(b) {
					ls.run = append(ls.run, b)
				}
			}
			if len(ls.run) == 0 {
				continue
			}
			ran = true
			ls.pool.run(len(ls.run), ls.icmBody)
			for _, b := range ls.run {
				for _, v := range ls.outbox[b] {
					if ls.lazy {
						ls.near[v] = true
					}
					if !ls.queued[v] {
						ls.queued[v] = true
						ls.push(v)
					}
				}
				ls.outbox[b] = ls.outbox[b][:0]
			}
		}
	}
	// Worklists left by spent budgets.
	done := true
	for b := range ls.head {
		done = done && ls.count[b] == 0
		for ; ls.count[b] > 0; ls.count[b]-- {
			ls.queued[ls.ring[b*icmBlock+ls.head[b]]] = false
			ls.head[b] = (ls.head[b] + 1) % ls.blockLen(b)
		}
	}
	ls.x = nil
	return done
}

func (ls *localSearch) blockLen(b int) int { return min(icmBlock, ls.m.NumVars()-b*icmBlock) }

// push appends variable v to its block's worklist.
func (ls *localSearch) push(v int32) {
	b := int(v) / icmBlock
	ls.ring[b*icmBlock+(ls.head[b]+ls.count[b])%ls.blockLen(b)] = v
	ls.count[b]++
}

// icmBlockRun runs the worklist of block ls.run[k]: it writes the states,
// queued flags and worklist of its own variables only, and its outbox.
func (ls *localSearch) icmBlockRun(worker, k int) {
	m, x := ls.m, ls.x
	b := ls.run[k]
	lo, bl := b*icmBlock, ls.blockLen(b)
	ring := ls.ring[lo : lo+bl]
	head, count, visits := ls.head[b], ls.count[b], ls.visits[b]
	out := ls.outbox[b]
	var buf [2]int
	for ; count > 0 && visits < ls.sweeps*bl; visits++ {
		i := int(ring[head])
		head = (head + 1) % bl
		count--
		ls.queued[i] = false
		if ls.lazy {
			if !ls.near[i] {
				continue
			}
			ls.near[i] = false
		}
		if m.Cards[i] == 1 || ls.frozen != nil && ls.frozen[i] {
			continue
		}
		loc := ls.loc[worker][:m.Cards[i]]
		ls.scores(i, x, loc)
		best := localsearch.Best(loc, x[i])
		if best == x[i] {
			continue
		}
		x[i] = best
		// The factors of i, in increasing order: pairs' from the Problem.
		facs, facs32 := ls.factorsOf(i)
		for k := range len(facs) + len(facs32) {
			for _, v := range ls.factorVars(factorAt(facs, facs32, k), &buf) {
				switch {
				case v == i:
				case v >= lo && v < lo+bl:
					if ls.lazy {
						ls.near[v] = true
					}
					if !ls.queued[v] {
						ls.queued[v] = true
						ring[(head+count)%bl] = int32(v)
						count++
					}
				case ls.lazy || !ls.queued[v]:
					// Another block's, which is not running (it shares
					// a factor with this one): queued (and marked near)
					// after the phase.
					out = append(out, int32(v))
				}
			}
		}
	}
	ls.head[b], ls.count[b], ls.visits[b] = head, count, visits
	ls.outbox[b] = out
}

// forbidden is the score given to excluded states when asking a slave's MAP
// oracle whether a partial assignment can be completed; a MAP value below
// forbidden/2 means it cannot.
const forbidden = -1e30

// repair builds a feasible assignment when the decoded one violates hard
// constraints: a depth-first search fixes variables one at a time in a
// breadth-first order over the factor graph, trying first each variable's
// current state and then the others by decreasing unary, and keeps a state
// only if every factor touching the variable can still be completed
// (forward checking with the factors' MAP oracles); a dead end backtracks.
// The search has a budget of checks; when it runs out, x keeps the states
// of the variables not reached and its score stays -Inf.
type repair struct {
	p        *Problem
	order    []int
	assigned []bool
	states   []int // per variable: its states in the order to try
	tried    []int // per position in order: how many states were tried
	w        []float64
	y        []int
	frozen   []bool // variables that keep their state (localSearch.frozen)
}

// newRepair builds the repair of the search's factors, with slaves of its
// own (the worker's hold QUAD state).
func (ls *localSearch) newRepair() *repair {
	if ls.pairs == nil {
		return newRepair(ls.m)
	}
	p, err := decomposePairs(ls.m, ls.pairs)
	if err != nil {
		return nil // the worker built the same slaves: cannot happen
	}
	return newRepairOf(p)
}

func newRepair(m *model.Model) *repair {
	p, err := Decompose(m, partition.PerFactor(m), slaves.Build)
	if err != nil {
		return nil // the workers built the same slaves: cannot happen
	}
	return newRepairOf(p)
}

func newRepairOf(p *Problem) *repair {
	m := p.Model
	maxRep := 0
	for s := range p.Slaves {
		maxRep = max(maxRep, int(p.RepOff[s+1]-p.RepOff[s]))
	}
	n := m.NumVars()
	return &repair{p: p, order: make([]int, n), assigned: make([]bool, n),
		states: make([]int, len(m.Unary)), tried: make([]int, n),
		w: make([]float64, maxRep), y: make([]int, p.maxScope())}
}

// run overwrites x with a repaired assignment and reports whether the
// search completed.
func (r *repair) run(x []int) bool {
	if r == nil {
		return false
	}
	m := r.p.Model
	n := m.NumVars()
	r.bfsOrder()
	for i := 0; i < n; i++ {
		r.assigned[i] = false
		th := m.Unaries(i)
		st := r.states[m.UnaryOff[i]:m.UnaryOff[i+1]]
		for k := range st {
			st[k] = k
		}
		cur := x[i]
		slices.SortStableFunc(st, func(a, b int) int {
			switch {
			case a == cur:
				return -1
			case b == cur:
				return 1
			case th[a] > th[b]:
				return -1
			case th[a] < th[b]:
				return 1
			}
			return 0
		})
	}
	budget := 50*n + 10000
	pos := 0
	if n > 0 {
		r.tried[0] = 0
	}
	for pos < n {
		i := r.order[pos]
		st := r.states[m.UnaryOff[i]:m.UnaryOff[i+1]]
		if r.frozen != nil && r.frozen[i] {
			st = st[:1] // its current state, sorted first
		}
		found := false
		for r.tried[pos] < len(st) && budget > 0 {
			s := st[r.tried[pos]]
			r.tried[pos]++
			budget--
			if r.completable(i, s, x) {
				x[i] = s
				r.assigned[i] = true
				found = true
				break
			}
		}
		switch {
		case found:
			pos++
			if pos < n {
				r.tried[pos] = 0
			}
		case budget <= 0 || pos == 0:
			return false
		default: // dead end: undo the previous choice and try its next state
			pos--
			r.assigned[r.order[pos]] = false
		}
	}
	return true
}

// bfsOrder orders the variables breadth-first over the factor graph, so
// that neighbours come soon after each other and a conflict shows up, and
// is undone, close to its cause.
func (r *repair) bfsOrder() {
	p := r.p
	n := len(r.order)
	seen := make([]bool, n)
	k := 0
	queue := r.order[:0:n]
	for root := 0; root < n; root++ {
		if seen[root] {
			continue
		}
		seen[root] = true
		queue = append(queue, root)
		for k < len(queue) {
			i := queue[k]
			k++
			for j := p.VarRepOff[i]; j < p.VarRepOff[i+1]; j++ {
				for _, v := range p.Scope(int(p.RepSlave[j])) {
					if !seen[v] {
						seen[v] = true
						queue = append(queue, int(v))
					}
				}
			}
		}
	}
}

// completable reports whether every factor touching variable i can still
// be satisfied with x_i = s and the variables assigned so far.
func (r *repair) completable(i, s int, x []int) bool {
	p, m := r.p, r.p.Model
	for j := p.VarRepOff[i]; j < p.VarRepOff[i+1]; j++ {
		a := int(p.RepSlave[j])
		w := r.w[:p.RepOff[a+1]-p.RepOff[a]]
		off := 0
		for _, v := range p.Scope(a) {
			c := m.Cards[v]
			fixed := -1
			if int(v) == i {
				fixed = s
			} else if r.assigned[v] {
				fixed = x[v]
			}
			for k := 0; k < c; k++ {
				w[off+k] = 0
				if fixed >= 0 && k != fixed {
					w[off+k] = forbidden
				}
			}
			off += c
		}
		if p.Slaves[a].MAP(w, r.y) < forbidden/2 {
			return false
		}
	}
	return true
}
