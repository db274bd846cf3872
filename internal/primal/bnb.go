package primal

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ddrun/ddrun/model"
)

// maxBoundEnum bounds the allowed combinations a factor's bound enumerates;
// beyond it the bound is the factor's largest entry.
const maxBoundEnum = 64

// sub is the subproblem of one branch and bound: the free variables, the
// factors that touch them, and the incumbent's score over those (its
// local score; the rest of the score does not change).
type sub struct {
	free     []int32
	inFree   []bool    // per variable
	facs     []int32   // factors touching a free variable
	facMark  []uint32  // per factor: stamp of the subproblem that holds it
	stamp    uint32    //
	best     []int     // the incumbent (whole assignment)
	bestFull float64   // its model.Score
	bestLoc  float64   // its local score
	states   [][]int32 // scratch: allowed states per scope position
	pos      []int
}

// bnb is depth-first branch and bound over the variables free (the others
// keep their states in best), under propagation, from the propagator's
// mark root (the evidence applied). It improves best in place and returns
// its score, and done when the search space was exhausted within the node
// limit (then best is optimal over the free variables).
func (s *Searcher) bnb(best []int, bestScore float64, free []int32, root int) (float64, bool) {
	m, p := s.m, s.p
	b := s.sub()
	b.free, b.best, b.bestFull = free, best, bestScore
	b.stamp++
	b.facs = b.facs[:0]
	for _, v := range free {
		b.inFree[v] = true
	}
	for _, v := range free {
		for _, a := range s.local.Factors(int(v)) {
			if b.facMark[a] != b.stamp {
				b.facMark[a] = b.stamp
				b.facs = append(b.facs, int32(a))
			}
		}
	}
	defer func() {
		for _, v := range free {
			b.inFree[v] = false
		}
		p.Undo(root)
	}()
	x := s.x
	copy(x, best)
	b.bestLoc = s.localScore(b, x)
	// Fix the boundary: the other variables of the factors that touch a
	// free one. The incumbent satisfies every constraint, so this cannot
	// fail.
	for _, a := range b.facs {
		for _, v := range m.Factors[a].Vars {
			if !b.inFree[v] && p.size[v] > 1 && !p.Assign(v, best[v]) {
				return bestScore, false
			}
		}
	}
	r := s.branch(b)
	return b.bestFull, r != dfsStopped
}

// sub returns the reusable subproblem scratch.
func (s *Searcher) sub() *sub {
	if s.scratch == nil {
		m := s.m
		maxArity := 0
		for a := range m.Factors {
			maxArity = max(maxArity, len(m.Factors[a].Vars))
		}
		s.scratch = &sub{inFree: make([]bool, m.NumVars()), facMark: make([]uint32, len(m.Factors)),
			states: make([][]int32, maxArity), pos: make([]int, maxArity)}
	}
	return s.scratch
}

// localScore is the free variables' unaries plus the scores of the
// factors that touch them, at x.
func (s *Searcher) localScore(b *sub, x []int) float64 {
	m := s.m
	sc := 0.0
	for _, v := range b.free {
		sc += m.Unary[m.UnaryOff[v]+x[v]]
	}
	for _, a := range b.facs {
		sc += m.FactorScore(int(a), x)
	}
	return sc
}

// branch is one node of bnb.
func (s *Searcher) branch(b *sub) int {
	if s.out() {
		return dfsStopped
	}
	if s.bound(b) <= b.bestLoc {
		return dfsExhausted
	}
	m, p := s.m, s.p
	v, vs := -1, int32(math.MaxInt32)
	for _, u := range b.free {
		if sz := p.size[u]; sz > 1 && sz < vs {
			v, vs = int(u), sz
		}
	}
	if v < 0 {
		s.leaf(b)
		return dfsExhausted
	}
	off := m.UnaryOff[v]
	for _, st := range s.order[off:m.UnaryOff[v+1]] {
		if !p.dom[off+int(st)] {
			continue
		}
		s.nodes++
		mark := p.Mark()
		if p.Assign(v, int(st)) {
			if s.branch(b) == dfsStopped {
				p.Undo(mark)
				return dfsStopped
			}
		}
		p.Undo(mark)
		if s.out() {
			return dfsStopped
		}
	}
	return dfsExhausted
}

// leaf scores the assignment the domains fix and keeps it if better.
func (s *Searcher) leaf(b *sub) {
	m, p, x := s.m, s.p, s.x
	for _, v := range b.free {
		off := m.UnaryOff[v]
		for t := off; t < m.UnaryOff[v+1]; t++ {
			if p.dom[t] {
				x[v] = t - off
				break
			}
		}
	}
	loc := s.localScore(b, x)
	if loc <= b.bestLoc {
		return
	}
	b.bestLoc = loc
	if full := m.Score(x); full > b.bestFull {
		b.bestFull = full
		for _, v := range b.free {
			b.best[v] = x[v]
		}
	}
}

// bound is an upper bound on the local score of any assignment within the
// domains: each free variable's best allowed unary, plus each factor's
// best entry among the allowed combinations (its largest entry when they
// are too many to enumerate).
func (s *Searcher) bound(b *sub) float64 {
	m, p := s.m, s.p
	ub := 0.0
	for _, v := range b.free {
		best := math.Inf(-1)
		for t := m.UnaryOff[v]; t < m.UnaryOff[v+1]; t++ {
			if p.dom[t] && m.Unary[t] > best {
				best = m.Unary[t]
			}
		}
		ub += best
	}
	for _, a := range b.facs {
		ub += s.factorBound(b, int(a))
		if math.IsInf(ub, -1) {
			return ub
		}
	}
	return ub
}

// factorBound is factor a's largest score within the domains, or its
// static bound.
func (s *Searcher) factorBound(b *sub, a int) float64 {
	m, p := s.m, s.p
	f := &m.Factors[a]
	combos := 1
	for _, v := range f.Vars {
		combos *= int(p.size[v])
		if combos > maxBoundEnum {
			return s.fmax[a]
		}
	}
	if f.Kind != model.Dense && combos > 1 {
		return s.fmax[a]
	}
	// Enumerate the allowed combinations (an odometer over allowed states).
	k := len(f.Vars)
	for j, v := range f.Vars {
		st := b.states[j][:0]
		off := m.UnaryOff[v]
		for t := off; t < m.UnaryOff[v+1]; t++ {
			if p.dom[t] {
				st = append(st, int32(t-off))
			}
		}
		b.states[j] = st
		b.pos[j] = 0
	}
	if f.Kind != model.Dense { // one combination
		x := s.x
		for j, v := range f.Vars {
			x[v] = int(b.states[j][0])
		}
		return m.FactorScore(a, x)
	}
	best := math.Inf(-1)
	for {
		idx := 0
		for j, v := range f.Vars {
			idx = idx*m.Cards[v] + int(b.states[j][b.pos[j]])
		}
		if e := f.Table[idx]; e > best {
			best = e
		}
		j := k - 1
		for ; j >= 0; j-- {
			if b.pos[j]++; b.pos[j] < len(b.states[j]) {
				break
			}
			b.pos[j] = 0
		}
		if j < 0 {
			return best
		}
	}
}

// lns is large neighbourhood search from best: count times, a connected
// set of about size variables is freed and solved by bnb within nodes
// nodes (and all of them within total nodes); the size grows when a neighbourhood is exhausted without
// improvement and shrinks when it runs out of nodes.
func (s *Searcher) lns(best []int, bestScore float64, count, size, nodes, total, root int) float64 {
	m := s.m
	var cand []int32
	for i, c := range m.Cards {
		if c > 1 && s.p.size[i] > 1 {
			cand = append(cand, int32(i))
		}
	}
	if len(cand) == 0 {
		return bestScore
	}
	minSize, maxSize := max(2, size/3), 3*size
	seen := make([]uint32, m.NumVars())
	var gen uint32
	var free []int32
	end := s.nodes + total
	for it := 0; it < count && s.nodes < end && !s.hardOut(); it++ {
		gen++
		free = s.neighbourhood(free[:0], cand[s.rng.IntN(len(cand))], size, seen, gen)
		s.stopped = false
		s.limit = min(end, s.nodes+nodes)
		before := bestScore
		sc, done := s.bnb(best, bestScore, free, root)
		bestScore = sc
		switch {
		case done && sc <= before:
			size = min(maxSize, size+1)
		case !done:
			size = max(minSize, size-1)
		}
	}
	s.limit = 0
	s.stopped = false
	return bestScore
}

// neighbourhood appends to free up to size variables reached breadth
// first from seed through the factors (neighbours in random order),
// skipping variables fixed at the root.
func (s *Searcher) neighbourhood(free []int32, seed int32, size int, seen []uint32, gen uint32) []int32 {
	seen[seed] = gen
	return s.grow(append(free, seed), size, seen, gen)
}

// grow appends to free, whose variables are marked gen in seen, up to
// size variables reached breadth first from them as neighbourhood does.
func (s *Searcher) grow(free []int32, size int, seen []uint32, gen uint32) []int32 {
	m := s.m
	for k := 0; k < len(free) && len(free) < size; k++ {
		facs := s.local.Factors(int(free[k]))
		start := 0
		if len(facs) > 0 {
			start = s.rng.IntN(len(facs))
		}
		for j := range facs {
			a := facs[(start+j)%len(facs)]
			for _, v := range m.Factors[a].Vars {
				if seen[v] != gen && s.p.size[v] > 1 && len(free) < size {
					seen[v] = gen
					free = append(free, int32(v))
				}
			}
		}
	}
	return free
}

// Move sets the variables vars of x to their states in ev and re-solves
// the neighbourhood of about size variables around them (reached breadth
// first through the factors, as the large neighbourhood search's) by
// branch and bound within nodes nodes, the variables observed in ev (which
// must hold every variable of vars) and those outside the neighbourhood
// keeping their states in x; x may violate hard constraints. Variables
// the evidence forces (by propagation) take their one state. It improves
// x in place (the neighbourhood's best completion found, else x with only
// vars and the forced variables moved) and returns model.Score(x), -Inf
// when ev contradicts the hard constraints or no completion was found.
// Deterministic given its inputs and seed.
func (s *Searcher) Move(ctx context.Context, x []int, ev model.Evidence, vars []int, size, nodes int, seed uint64) float64 {
	m, p := s.m, s.p
	if !s.ordered {
		s.valueOrder(m.Unary)
	}
	s.ctx, s.nodes, s.stopped, s.deadline = ctx, 0, false, time.Time{}
	s.rng = rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	if ev.Check(m) != nil {
		return math.Inf(-1)
	}
	for _, v := range vars {
		st, ok := ev[v]
		if !ok {
			return math.Inf(-1)
		}
		x[v] = st
	}
	if !p.Reset() || !p.applyEvidence(ev) {
		return math.Inf(-1)
	}
	root := p.Mark()
	for i := range m.Cards { // the states the evidence forces
		if p.size[i] == 1 {
			for t := m.UnaryOff[i]; t < m.UnaryOff[i+1]; t++ {
				if p.dom[t] {
					x[i] = t - m.UnaryOff[i]
				}
			}
		}
	}
	if s.seen == nil {
		s.seen = make([]uint32, m.NumVars())
	}
	s.gen++
	s.free = s.free[:0]
	for _, v := range vars {
		if s.seen[v] != s.gen {
			s.seen[v] = s.gen
			s.free = append(s.free, int32(v))
		}
	}
	s.free = s.grow(s.free, size+len(vars)-1, s.seen, s.gen)
	s.limit = nodes
	sc, _ := s.bnb(x, m.Score(x), s.free, root)
	s.limit, s.stopped = 0, false
	return sc
}
