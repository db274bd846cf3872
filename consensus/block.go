package consensus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// Boundary block moves: the sharded counterpart of the whole model's
// large neighbourhood search across the cut. An unsharded run's final
// polish (localSearch.polish) frees connected sets of a dozen variables
// and solves them by branch and bound (internal/primal's large
// neighbourhood search, after Shaw 1998), so a neighbourhood may move
// several boundary variables and the interiors around them on both sides
// of a cut at once. The parts' own searches keep the boundary fixed, and
// moveBoundary moves one boundary variable, or a pair sharing a factor,
// at a time. On linkage_16 (2 parts, 37 boundary variables) solve's
// primal differs from the sharded one in 7 boundary variables at
// distance up to 4 from each other, and every subset of the three groups
// they form lowers the score when moved alone: only the joint move
// (with the interiors re-solved) reaches solve's primal.
//
// A block is a set S of boundary variables that are near each other
// (EvalNear: within nearDist factors in some part) with at most
// maxBlockStates joint states, grown breadth first from a boundary
// variable where the relaxation's marginals split (a tie, tieSeeds). Each part prices every joint state of its
// variables of S (EvalBlock): its share of the score when they take it
// and a neighbourhood of its interior around them is re-solved by branch
// and bound (primal.Searcher.Move, the large neighbourhood search's
// neighbourhoods), the other boundary variables fixed. The coordinator
// adds the parts' shares and the boundary unaries per joint state of S
// and applies the best (EvalBlockApply, which re-runs the same
// deterministic moves, so its exact score is the price), kept only when
// the exact score improves: a block move never lowers the primal. The
// coordinator holds the boundary's adjacency and one block's totals:
// boundary-sized.
//
// When the blocks are done, the tie kick (tieKick) prices one block over
// all the ties and their phase swaps, each restricted to two states, and
// runs the final polish's searches again from its best state, kept only
// when the end beats the best: on linkage_16's 2 parts it reaches
// solve's primal, where the blocks alone end 0.22% below it.

// Bounds of the block moves.
const (
	// maxBlockStates bounds a block's joint states.
	maxBlockStates = 1 << 13
	// nearDist is the distance (in factors) within a part at which two
	// boundary variables are near; nearBall bounds the variables one
	// search from a boundary variable visits.
	nearDist = 3
	nearBall = 512
	// blockRounds bounds the passes over all blocks.
	blockRounds = 4
	// blockWork bounds one part's work for one block, in joint states
	// times the part's variables (each state's move resets the
	// propagation): a part over it answers no prices and the block is
	// skipped.
	blockWork = 1 << 28
	// blockNodes bounds the branch and bound nodes of one joint state's
	// re-solve.
	blockNodes = 300
	// blockBudget bounds the joint states priced over a run's block
	// moves (each costs every part holding the block one re-solve, about
	// 1 ms on linkage_16's parts of 200 variables), and blockTotalWork
	// the same states and the blocks tried (each try's feasibility
	// enumeration propagates every part afresh) times the largest part's
	// states.
	blockBudget    = 1 << 12
	blockTotalWork = 1 << 31
)

// near is EvalNear: the pairs of the part's boundary variables (indices
// in its boundary order, increasing in each pair, pairs sorted) within
// nearDist factors of each other in the part, when its search re-solves
// moves (hard constraints); none otherwise.
func (w *Worker) near(out *EvalOut) error {
	e := w.evalState()
	out.Pairs = out.Pairs[:0]
	ls := e.search
	if ls.prim == nil || !ls.prim.Hard() || ls.pairs != nil {
		return nil
	}
	m := w.p.Model
	idx := make(map[int]int32, len(w.boundary))
	for k, v := range w.boundary {
		idx[v] = int32(k)
	}
	dist := make([]int32, m.NumVars())
	for i := range dist {
		dist[i] = -1
	}
	var queue []int
	var ks []int32
	for k1, src := range w.boundary {
		queue = append(queue[:0], src)
		dist[src] = 0
		for q := 0; q < len(queue) && len(queue) < nearBall; q++ {
			u := queue[q]
			if dist[u] >= nearDist {
				continue
			}
			for _, a := range ls.local.Factors(u) {
				for _, v := range m.Factors[a].Vars {
					if dist[v] < 0 {
						dist[v] = dist[u] + 1
						queue = append(queue, v)
					}
				}
			}
		}
		ks = ks[:0]
		for _, v := range queue {
			if k2, ok := idx[v]; ok && int(k2) > k1 {
				ks = append(ks, k2)
			}
			dist[v] = -1
		}
		slices.Sort(ks)
		if len(out.Pairs)+2*len(ks) > 2*maxNearPairs {
			// More than the coordinator takes: this part offers no
			// block moves rather than failing the run.
			out.Pairs = out.Pairs[:0]
			return nil
		}
		for _, k2 := range ks {
			out.Pairs = append(out.Pairs, int32(k1), k2)
		}
	}
	return nil
}

// checkBlock checks EvalIn.Block and Dom: boundary indices of the part,
// increasing, each restricted to two distinct states in range when Dom is
// not empty, with at most maxBlockStates joint states, which it returns.
func (w *Worker) checkBlock(block, dom []int32) (int, error) {
	m := w.p.Model
	if len(dom) != 0 && len(dom) != 2*len(block) {
		return 0, fmt.Errorf("evaluate: %d restricted states for a block of %d", len(dom), len(block))
	}
	states := 1
	for i, k := range block {
		if k < 0 || int(k) >= len(w.boundary) || i > 0 && k <= block[i-1] {
			return 0, fmt.Errorf("evaluate: block of %d boundary indices (%d boundary variables): want increasing indices in range", len(block), len(w.boundary))
		}
		c := m.Cards[w.boundary[k]]
		if len(dom) != 0 {
			a, b := dom[2*i], dom[2*i+1]
			if a < 0 || b < 0 || int(a) >= c || int(b) >= c || a == b {
				return 0, fmt.Errorf("evaluate: block variable %d restricted to states %d and %d of %d", i, a, b, c)
			}
			c = 2
		}
		states *= c
		if states > maxBlockStates {
			return 0, fmt.Errorf("evaluate: a block of more than %d joint states", maxBlockStates)
		}
	}
	return states, nil
}

// blockDom is a block's domains: per block variable its states, all of
// them (cards) or the two of a restricted block (dom, checked).
type blockDom struct {
	cards []int
	dom   []int32
}

// card is the number of states block variable i may take.
func (d blockDom) card(i int) int {
	if len(d.dom) != 0 {
		return 2
	}
	return d.cards[i]
}

// state is block variable i's state at index s of its domain.
func (d blockDom) state(i, s int) int {
	if len(d.dom) != 0 {
		return int(d.dom[2*i+s])
	}
	return s
}

// index is state s's index in block variable i's domain, -1 if outside.
func (d blockDom) index(i, s int) int {
	if len(d.dom) == 0 {
		return s
	}
	for k := range 2 {
		if int(d.dom[2*i+k]) == s {
			return k
		}
	}
	return -1
}

// block is EvalBlock and EvalBlockApply.
func (w *Worker) block(in *EvalIn, out *EvalOut) error {
	e := w.evalState()
	if err := w.checkBoundaryStates(in.X); err != nil {
		return err
	}
	states, err := w.checkBlock(in.Block, in.Dom)
	if err != nil {
		return err
	}
	if !e.hasBest {
		return errors.New("evaluate: no best assignment to move")
	}
	ls, m := e.search, w.p.Model
	// e.cand is rewritten below: only EvalBlockApply's scoreMoved leaves
	// something a keep may take.
	e.lastOp, e.candOpt = 0, false
	vars := make([]int, len(in.Block))
	cards := make([]int, len(in.Block))
	for i, k := range in.Block {
		vars[i] = w.boundary[k]
		cards[i] = m.Cards[vars[i]]
	}
	d := blockDom{cards: cards, dom: in.Dom}
	// The kept best with the boundary given, the block's variables in
	// their kept states (EvalBlockApply's X holds their new ones).
	for i, s := range e.best {
		e.cand[i] = int(s)
	}
	inBlock := func(k int) bool { _, ok := slices.BinarySearch(in.Block, int32(k)); return ok }
	for k, v := range w.boundary {
		if !inBlock(k) {
			e.cand[v] = int(in.X[k])
		}
	}
	resolve := ls.prim != nil && ls.prim.Hard()
	ev := fixedStates(ls.frozen, e.cand)
	// moveTo moves the block's variables of x to the joint state st (row
	// major, the first variable's state major) and re-solves around them.
	moveTo := func(x []int, st int) {
		for i := len(vars) - 1; i >= 0; i-- {
			c := d.card(i)
			ev[vars[i]] = d.state(i, st%c)
			st /= c
		}
		ls.prim.Move(context.Background(), x, ev, vars, moveSize+len(vars), blockNodes, uint64(vars[0]))
	}
	if in.Op == EvalBlockApply {
		if len(vars) > 0 {
			if !resolve {
				return errors.New("evaluate: this part prices no block moves")
			}
			st := 0
			for i, k := range in.Block {
				s := d.index(i, int(in.X[k]))
				if s < 0 {
					return fmt.Errorf("evaluate: block variable %d in state %d outside its restricted states", i, in.X[k])
				}
				st = st*d.card(i) + s
			}
			moveTo(e.cand, st)
		}
		w.scoreMoved(in.Op, out, false)
		return nil
	}
	if in.Op == EvalBlockFeasible {
		out.Allowed = out.Allowed[:0]
		if resolve && len(vars) > 0 {
			w.feasibleJoint(ev, in.Block, vars, d, states, out)
		}
		return nil
	}
	out.Gains = out.Gains[:0]
	if !resolve || len(vars) == 0 || states > blockWork/max(1, m.NumVars()) {
		return nil
	}
	if len(in.Allowed) != 0 && len(in.Allowed) != states {
		return fmt.Errorf("evaluate: %d allowed joint states of a block of %d", len(in.Allowed), states)
	}
	if e.moved == nil {
		e.moved = make([]int, len(e.cand))
	}
	base := ls.partial(e.cand)
	for st := range states {
		g := math.Inf(-1)
		if len(in.Allowed) == 0 || in.Allowed[st] {
			copy(e.moved, e.cand)
			moveTo(e.moved, st)
			if len(in.Dom) != 0 {
				// A restricted block (the tie kick) is priced by the
				// score EvalBlockApply keeps, after the interior's ICM.
				ls.icm(e.moved, icmRunSweeps)
			}
			if g = ls.partial(e.moved) - base; math.IsNaN(g) {
				g = math.Inf(-1)
			}
		}
		out.Gains = append(out.Gains, g)
	}
	return nil
}

// feasibleJoint answers EvalBlockFeasible: per joint state of the block's
// variables vars (row major), whether propagating the part's hard
// constraints with the other boundary variables in their states in ev
// and the block in that state leaves every domain non-empty (the states
// a move could complete). A depth-first enumeration over the block with
// propagation at each level prunes whole prefixes.
func (w *Worker) feasibleJoint(ev model.Evidence, block []int32, vars []int, d blockDom, states int, out *EvalOut) {
	p := w.eval.search.prim.Propagator()
	out.Allowed = append(out.Allowed, make([]bool, states)...)
	if !p.Reset() {
		return
	}
	for k, v := range w.boundary {
		if _, in := slices.BinarySearch(block, int32(k)); !in && !p.Assign(v, ev[v]) {
			return
		}
	}
	var dfs func(i, prefix int)
	dfs = func(i, prefix int) {
		if i == len(vars) {
			out.Allowed[prefix] = true
			return
		}
		v := vars[i]
		for k := range d.card(i) {
			st := d.state(i, k)
			if !p.Allowed(v, st) {
				continue
			}
			mark := p.Mark()
			if p.Assign(v, st) {
				dfs(i+1, prefix*d.card(i)+k)
			}
			p.Undo(mark)
		}
	}
	dfs(0, 0)
}

// scoreMoved scores the moved assignment in e.cand before and after
// its interior's ICM (EvalApply, EvalBlockApply), for op's keep; near:
// the ICM starts at the neighbourhoods of e.changed (localSearch.icmNear:
// the rest is the kept local optimum).
func (w *Worker) scoreMoved(op EvalOp, out *EvalOut, near bool) {
	e := w.eval
	ls := e.search
	out.Before = ls.partial(e.cand)
	for i, s := range e.cand {
		e.before[i] = int32(s)
	}
	if near {
		e.candOpt = ls.icmNear(e.cand, icmRunSweeps, e.changed)
	} else {
		e.candOpt = ls.icm(e.cand, icmRunSweeps)
	}
	out.After = ls.partial(e.cand)
	e.lastOp = op
}

// blockMoves runs the boundary block moves after the final polish (see
// the top of this file): passes over the blocks grown from each tie
// (tieSeeds) in turn, until a pass improves nothing or blockRounds.
func (sp *shardPrimal) blockMoves(ctx context.Context, s *master, res *solver.Result) error {
	m := s.m
	nb := len(sp.best)
	if nb == 0 || len(sp.links) < 2 || math.IsInf(res.Primal, -1) {
		return nil
	}
	adj, err := sp.nearGraph(ctx, s)
	if err != nil || adj == nil {
		return err
	}
	seen := map[string]bool{}
	var blocks [][]int
	for _, j := range tieSeeds(s) {
		b := growBlock(adj, m.Cards, j)
		if len(b) < 2 {
			continue
		}
		if key := fmt.Sprint(b); !seen[key] {
			seen[key] = true
			blocks = append(blocks, b)
		}
	}
	defer func() {
		for _, in := range sp.ins {
			in.Block, in.Dom = in.Block[:0], in.Dom[:0]
		}
	}()
	if err := sp.blockRounds(ctx, s, res, blocks); err != nil {
		return err
	}
	return sp.tieKick(ctx, s, res, adj, blocks)
}

// blockRounds makes passes over blocks (tryBlock) until a pass improves
// nothing or blockRounds.
func (sp *shardPrimal) blockRounds(ctx context.Context, s *master, res *solver.Result, blocks [][]int) error {
	for range blockRounds {
		improved := false
		for _, b := range blocks {
			if sp.stopBlocks(ctx) {
				return nil
			}
			ok, err := sp.tryBlock(ctx, s, res, b)
			if err != nil {
				return err
			}
			improved = improved || ok
		}
		if !improved {
			break
		}
	}
	return nil
}

// stopBlocks: the run is interrupted, the block budget spent, or the
// polish's time is up (solver.PolishDeadline).
func (sp *shardPrimal) stopBlocks(ctx context.Context) bool {
	return ctx.Err() != nil || sp.blockPriced+2 > blockBudget || solver.PastDeadline(sp.deadline, time.Now())
}

// kickStates bounds the joint states the tie kick prices, beyond
// blockBudget (on linkage_16's 2 parts it prices 640).
const kickStates = 1 << 10

// tieKick is a perturbation of the boundary (iterated local search,
// Lourenco, Martin and Stutzle 2003) where the block moves cannot reach:
// one block of the kick's variables (kickVars), each restricted to two
// states, is priced (EvalBlock over restricted domains, EvalIn.Dom, each
// joint state scored after the interior's ICM) and its best joint state
// that moves one is applied even when it prices as a loss. The final
// polish's local searches (the parts' polish, the boundary moves, the
// block moves) then run from it, and the result is kept only when its
// exact score beats the best before the kick; the workers take their
// stashed best back otherwise (EvalStash, EvalRestore). On linkage_16's
// 2 parts solve's primal differs from the sharded one in 7 ties lying
// in two groups and in a pair of variables the relaxation decides: no
// block grown from one tie holds them all, and each group's move alone
// loses; the kick's block holds all 9, and its best state is solve's
// boundary. The coordinator holds the kick's variables, their two states
// and the block's totals: boundary-sized.
func (sp *shardPrimal) tieKick(ctx context.Context, s *master, res *solver.Result, adj [][]int, blocks [][]int) error {
	if ctx.Err() != nil || solver.PastDeadline(sp.deadline, time.Now()) {
		return nil
	}
	b, dom := kickVars(s, sp.best, adj)
	if len(b) < 2 {
		return nil
	}
	cand, err := sp.priceBlock(ctx, s, res, b, dom, true)
	if err != nil || cand == nil {
		return err
	}
	// The parts' blocks and domains stay as priced: the same moves, re-run.
	return sp.restart(ctx, s, res, cand, EvalBlockApply, false, func() error { return sp.blockRounds(ctx, s, res, blocks) })
}

// kickVars chooses the tie kick's variables (boundary numbering,
// increasing) and their two states each (current first), from the
// boundary variables near another (adj) in the best assignment best:
//   - the two-way ties: the relaxed marginal's largest entry under
//     1-tieMargin and its two largest over 1-tieMargin together, with
//     their current state and their runner-up;
//   - the swaps: a variable of more than two states that is no tie but
//     is near one, with its current state and that of a near variable of
//     the same states that is no tie either, in another state. In a
//     pedigree these are the two ordered genotypes of a person (the
//     phase): when the ties' phase flips, theirs flips too, which the
//     relaxation, deciding them, does not propose.
//
// The most even ties first (the largest marginal entry smallest), each
// swap with its most even tie, while the joint states stay within
// maxBlockStates.
func kickVars(s *master, best []int, adj [][]int) (b, dom []int) {
	mu, isTie := s.boundaryMarginal, s.isTie
	type kick struct {
		j, alt int
		key    float64 // the most even near tie's largest marginal entry
	}
	var ks []kick
	for j := range best {
		cur, alt, key := best[j], -1, 1.0
		switch {
		case len(mu(j)) < 2 || len(adj[j]) == 0:
		case isTie(j):
			top := slices.Clone(mu(j))
			slices.Sort(top)
			if top[len(top)-1]+top[len(top)-2] < 1-tieMargin {
				continue // a split over more than two states
			}
			for k, p := range mu(j) {
				if k != cur && (alt < 0 || p > mu(j)[alt]) {
					alt = k
				}
			}
			key = top[len(top)-1]
		case len(mu(j)) > 2:
			for _, k := range adj[j] {
				if isTie(k) {
					key = min(key, slices.Max(mu(k)))
				} else if alt < 0 && len(mu(k)) == len(mu(j)) && best[k] != cur {
					alt = best[k]
				}
			}
			if key == 1 {
				alt = -1 // near no tie
			}
		}
		if alt >= 0 {
			ks = append(ks, kick{j, alt, key})
		}
	}
	slices.SortStableFunc(ks, func(a, b kick) int { return cmp.Compare(a.key, b.key) })
	// Two states each: at most log2(maxBlockStates) of them (a shift by
	// len(ks) itself wraps to 0 from 64 on).
	if most := bits.Len(uint(maxBlockStates)) - 1; len(ks) > most {
		ks = ks[:most]
	}
	slices.SortFunc(ks, func(a, b kick) int { return cmp.Compare(a.j, b.j) })
	for _, k := range ks {
		b, dom = append(b, k.j), append(dom, best[k.j], k.alt)
	}
	return b, dom
}

// tieMargin: a boundary variable whose relaxed marginal's largest entry
// is below 1-tieMargin is a tie.
const tieMargin = 0.01

// boundaryMarginal is boundary variable j's relaxed marginal.
func (s *master) boundaryMarginal(j int) []float64 { return s.bmu[s.bmuOff[j]:s.bmuOff[j+1]] }

// isTie reports whether boundary variable j is a tie (tieMargin).
func (s *master) isTie(j int) bool { return slices.Max(s.boundaryMarginal(j)) < 1-tieMargin }

// tieSeeds lists the boundary variables blocks grow from: the ties, where
// the relaxation's boundary marginals (master.bmu, DD-ADMM's consensus)
// split between states, or every boundary variable when none is (a
// boundary the relaxation decides, as before the ties). A
// rounded assignment is most likely wrong where the relaxation hesitates,
// and the blocks' pricing budget (blockBudget) is then spent there
// first: on linkage_16's 3 parts, 56 block tries from its ties end at 0.22%
// below solve's primal, where 106 tries from every boundary variable
// spend the budget before reaching them and end at 0.37%.
func tieSeeds(s *master) []int {
	nb := len(s.b.vars)
	var ties []int
	for j := range nb {
		if s.isTie(j) {
			ties = append(ties, j)
		}
	}
	if len(ties) == 0 {
		ties = make([]int, nb)
		for j := range ties {
			ties[j] = j
		}
	}
	return ties
}

// nearGraph asks the parts which boundary variables are near each other
// (EvalNear) and returns the union as adjacency lists (boundary
// numbering, increasing), nil when no part answered a pair.
func (sp *shardPrimal) nearGraph(ctx context.Context, s *master) ([][]int, error) {
	if err := sp.callAll(ctx, EvalNear); err != nil {
		return nil, err
	}
	nb := len(sp.best)
	adj := make([][]int, nb)
	any := false
	for w, out := range sp.outs {
		of := s.b.varsOf[w]
		if len(out.Pairs)%2 != 0 || len(out.Pairs) > 2*maxNearPairs {
			return nil, fmt.Errorf("worker %d: %d near pair indices", w, len(out.Pairs))
		}
		for p := 0; p < len(out.Pairs); p += 2 {
			k1, k2 := int(out.Pairs[p]), int(out.Pairs[p+1])
			if k1 < 0 || k2 <= k1 || k2 >= len(of) {
				return nil, fmt.Errorf("worker %d: near pair (%d, %d) of %d boundary variables", w, k1, k2, len(of))
			}
			// In increasing order, as near answers them: no pair twice.
			if p > 0 && (k1 < int(out.Pairs[p-2]) || k1 == int(out.Pairs[p-2]) && k2 <= int(out.Pairs[p-1])) {
				return nil, fmt.Errorf("worker %d: near pair (%d, %d) out of order", w, k1, k2)
			}
			j1, j2 := of[k1], of[k2]
			adj[j1] = append(adj[j1], j2)
			adj[j2] = append(adj[j2], j1)
			any = true
		}
	}
	if !any {
		return nil, nil
	}
	for j := range adj {
		slices.Sort(adj[j])
		adj[j] = slices.Compact(adj[j])
	}
	return adj, nil
}

// maxNearPairs bounds the near pairs one part may answer.
const maxNearPairs = 1 << 22

// growBlock is the block grown breadth first from boundary variable j
// through adj while its joint states stay within maxBlockStates,
// increasing.
func growBlock(adj [][]int, cards []int, j int) []int {
	block := []int{j}
	states := cards[j]
	for q := 0; q < len(block); q++ {
		for _, k := range adj[block[q]] {
			// A variable of one state has no move to make.
			if cards[k] == 1 || slices.Contains(block, k) || states*cards[k] > maxBlockStates {
				continue
			}
			block = append(block, k)
			states *= cards[k]
		}
	}
	slices.Sort(block)
	return block
}

// tryBlock prices block b (boundary numbering, increasing) on the parts,
// applies its best joint state when the total gain is positive and keeps
// it when the exact score improves, which it reports.
func (sp *shardPrimal) tryBlock(ctx context.Context, s *master, res *solver.Result, b []int) (bool, error) {
	cand, err := sp.priceBlock(ctx, s, res, b, nil, false)
	if err != nil || cand == nil {
		return false, err
	}
	// The parts' blocks stay as priced: the same moves, re-run.
	before, after, err := sp.evaluate(ctx, s, cand, EvalBlockApply, false)
	if err != nil {
		return false, err
	}
	return sp.keep(ctx, s, res, cand, before, after)
}

// priceBlock prices block b (boundary numbering, increasing) on the parts,
// each variable b[i] restricted to the states dom[2i] and dom[2i+1] when
// dom is not nil, and returns the best boundary with b in its best joint
// state: a state other than the current one, with a positive gain unless
// kick (tieKick's pricing, with its own budget); nil when there is none, the parts price no block moves or the
// budget is spent (with kick, also when the parts allow every joint
// state). The parts' ins keep the block and its domains for
// EvalBlockApply.
func (sp *shardPrimal) priceBlock(ctx context.Context, s *master, res *solver.Result, b []int, dom []int, kick bool) ([]int, error) {
	m := s.m
	// Each try's feasibility costs every part about one pass over its
	// states: counted with the states priced against blockTotalWork.
	if (sp.blockPriced+sp.blockTries+1)*max(1, sp.partStates) > blockTotalWork {
		return nil, nil
	}
	sp.blockTries++
	card := func(i int) int {
		if dom != nil {
			return 2
		}
		return m.Cards[b[i]]
	}
	state := func(i, k int) int {
		if dom != nil {
			return dom[2*i+k]
		}
		return k
	}
	// Each part's variables of the block: positions in b and its indices.
	pos := make([][]int, len(sp.links))
	for w, in := range sp.ins {
		in.Op, in.X, in.Block, in.Allowed, in.Dom = EvalBlockFeasible, in.X[:0], in.Block[:0], in.Allowed[:0], in.Dom[:0]
		for k, j := range s.b.varsOf[w] {
			in.X = append(in.X, int32(sp.best[j]))
			if i, ok := slices.BinarySearch(b, j); ok {
				in.Block = append(in.Block, int32(k))
				pos[w] = append(pos[w], i)
				if dom != nil {
					in.Dom = append(in.Dom, int32(dom[2*i]), int32(dom[2*i+1]))
				}
			}
		}
	}
	if err := sp.call(ctx, EvalBlockFeasible); err != nil {
		return nil, err
	}
	states := 1
	for i := range b {
		states *= card(i)
	}
	want := make([]int, len(sp.links)) // per part: its joint states
	for w, out := range sp.outs {
		want[w] = 1
		for _, i := range pos[w] {
			want[w] *= card(i)
		}
		if ok, err := blockAnswer(w, len(pos[w]), len(out.Allowed), want[w], "feasible flags"); !ok {
			return nil, err
		}
	}
	// The joint states every part allows, and each part's projections
	// of them: the states it prices.
	joint := make([]int, len(b))
	decode := func(st int) {
		for i := len(b) - 1; i >= 0; i-- {
			joint[i] = st % card(i)
			st /= card(i)
		}
	}
	local := func(w int) int {
		k := 0
		for _, i := range pos[w] {
			k = k*card(i) + joint[i]
		}
		return k
	}
	allowed, feasible := allowedJoint(sp.outs, pos, want, states, decode, local)
	budget := blockBudget
	if kick {
		// The kick's own budget; and a kick only where the parts' hard
		// constraints lock the block's variables together: where they
		// allow every joint state, the block moves and the boundary
		// moves already reach them (on Pedigree_11 all 8,192 are
		// allowed, and pricing them would cost 8 s for nothing).
		budget = sp.blockPriced + kickStates
		if feasible == states {
			return nil, nil
		}
	}
	if feasible < 2 || sp.blockPriced+feasible > budget || (sp.blockPriced+feasible+sp.blockTries)*max(1, sp.partStates) > blockTotalWork {
		return nil, nil // nothing to move to, or the budget is spent
	}
	sp.blockPriced += feasible
	for w, in := range sp.ins {
		in.Op, in.Allowed = EvalBlock, append(in.Allowed[:0], allowed[w]...)
	}
	err := sp.call(ctx, EvalBlock)
	for _, in := range sp.ins {
		in.Allowed = in.Allowed[:0]
	}
	if err != nil {
		return nil, err
	}
	for w, out := range sp.outs {
		if ok, err := blockAnswer(w, len(pos[w]), len(out.Gains), want[w], "block prices"); !ok {
			return nil, err
		}
		for _, g := range out.Gains {
			if math.IsNaN(g) || math.IsInf(g, 1) {
				return nil, fmt.Errorf("worker %d: block price %v", w, g)
			}
		}
	}
	bestGain, bestState := 1e-9*math.Max(1, math.Abs(res.Primal)), -1
	if kick {
		bestGain = math.Inf(-1)
	}
	for st := range states {
		decode(st)
		g, moved := 0.0, false
		for i, j := range b {
			cur, to := sp.best[j], state(i, joint[i])
			g += m.Unary[m.UnaryOff[j]+to] - m.Unary[m.UnaryOff[j]+cur]
			moved = moved || to != cur
		}
		for w, out := range sp.outs {
			if len(pos[w]) == 0 {
				continue
			}
			g += out.Gains[local(w)]
		}
		if moved && g > bestGain {
			bestGain, bestState = g, st
		}
	}
	if bestState < 0 {
		return nil, nil
	}
	cand := slices.Clone(sp.best)
	decode(bestState)
	for i, j := range b {
		cand[j] = state(i, joint[i])
	}
	return cand, nil
}

// allowedJoint counts the joint states of a block (states of them, each
// decoded by decode) that every part allows (its outs' Allowed flags over
// its projection, local; pos[w] empty: part w holds none), and returns
// per part the projections of those (want[w] flags): the states it
// prices.
func allowedJoint(outs []*EvalOut, pos [][]int, want []int, states int, decode func(int), local func(int) int) (allowed [][]bool, feasible int) {
	allowed = make([][]bool, len(outs))
	for w := range allowed {
		allowed[w] = make([]bool, want[w])
	}
	for st := range states {
		decode(st)
		ok := true
		for w, out := range outs {
			ok = ok && (len(pos[w]) == 0 || out.Allowed[local(w)])
		}
		if !ok {
			continue
		}
		feasible++
		for w := range allowed {
			if len(pos[w]) > 0 {
				allowed[w][local(w)] = true
			}
		}
	}
	return allowed, feasible
}

// blockAnswer checks the length n of part w's answer to a block op (want
// entries for a part holding held of the block's variables, none for a
// part holding none): ok false with a nil error means the part prices no
// block moves (the block is left), with an error a malformed answer.
func blockAnswer(w, held, n, want int, what string) (ok bool, err error) {
	switch {
	case held == 0 && n == 0:
	case n == 0:
		return false, nil
	case n != want:
		return false, fmt.Errorf("worker %d: %d %s for %d joint states", w, n, what, want)
	}
	return true, nil
}
