package consensus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// A sharded run is one whose coordinator never holds the model: each worker
// builds its own part (package shard reads it from an indexed file), and
// the coordinator holds only the boundary variables (their cardinalities,
// unaries, marginals, replicas and states). Decoding, scoring and local
// search of the interior run on the workers (Worker.Evaluate), around the
// boundary states the coordinator settles; the coordinator adds the
// workers' shares of the score and keeps the best.
//
// The iterates (multipliers, marginals, eta, the dual bound and the
// residuals) are those of an unsharded run with the same slaves in the
// same order, up to the order of floating-point sums: the per-slave and
// per-variable code is the same. The primal differs: each part's search
// (ICM, and on hard constraints internal/primal's construction and large
// neighbourhood search) runs with its boundary fixed as evidence, where
// an unsharded run's search also moves the boundary. After the final
// polish the coordinator moves the boundary itself (moveBoundary: block
// coordinate ascent, the parts re-solving the neighbourhood of each
// boundary variable moved, or on parts without hard constraints pricing
// it by their local scores, which makes it ICM over the whole model).
// On parts of hard constraints, boundary block moves follow (block.go):
// several boundary variables near each other move at once, each joint
// state priced by the parts with their interiors re-solved around it.
// With one worker (no boundary) it is the same search as in one process.

// PartSummary is what a sharded run's coordinator knows of a part it never
// saw: sizes its worker reports once it has built the part.
type PartSummary struct {
	ReplicaEntries int // entries of the part's replica arrays
	UnaryEntries   int // entries of the part's unaries (PartState.Mu)
	Interior       int // variables of the part that are not on the boundary
}

// Summary returns the worker's PartSummary.
func (w *Worker) Summary() PartSummary {
	return PartSummary{ReplicaEntries: w.p.NumReplicaEntries(), UnaryEntries: len(w.p.Model.Unary), Interior: len(w.interior)}
}

// NewShardBoundary builds the coordinator's boundary of a sharded split
// whose boundary variables are numbered 0..len(cards)-1 (in increasing
// order of the model's numbering) with cardinalities cards. Worker w holds
// the boundary variables of[w] (increasing), with deg[w][k] slaves over
// of[w][k]; every slave of worker w comes before those of worker w+1 in the
// plan's order (workers hold consecutive ranges of slaves). A variable
// must be on two workers at least.
func NewShardBoundary(cards []int, of, deg [][]int) (*Boundary, error) {
	nb := len(cards)
	if len(of) != len(deg) {
		return nil, fmt.Errorf("boundary of %d workers with degrees of %d", len(of), len(deg))
	}
	b := &Boundary{vars: make([]int, nb), repOff: make([]int, nb+1),
		scatter: make([][]int, len(of)), varsOf: make([][]int, len(of))}
	reps := make([]int, nb)
	workers := make([]int, nb)
	for w := range of {
		if len(of[w]) != len(deg[w]) {
			return nil, fmt.Errorf("worker %d: %d boundary variables, %d degrees", w, len(of[w]), len(deg[w]))
		}
		prev := -1
		for k, j := range of[w] {
			switch {
			case j <= prev || j >= nb:
				return nil, fmt.Errorf("worker %d: boundary variable %d out of order or out of range [0,%d)", w, j, nb)
			case deg[w][k] < 1:
				return nil, fmt.Errorf("worker %d: boundary variable %d in %d slaves", w, j, deg[w][k])
			}
			prev = j
			reps[j] += deg[w][k]
			workers[j]++
		}
	}
	for j := range nb {
		if workers[j] < 2 {
			return nil, fmt.Errorf("boundary variable %d is on %d workers", j, workers[j])
		}
		if cards[j] < 1 {
			return nil, fmt.Errorf("boundary variable %d: cardinality %d", j, cards[j])
		}
		b.vars[j] = j
		b.repOff[j+1] = b.repOff[j] + reps[j]
	}
	b.entry = make([]int, b.repOff[nb])
	for j := range nb {
		for r := b.repOff[j]; r < b.repOff[j+1]; r++ {
			b.entry[r] = b.size
			b.size += cards[j]
		}
	}
	// Replicas in slave order: by worker, then in the worker's order.
	next := append([]int(nil), b.repOff[:nb]...)
	for w := range of {
		b.varsOf[w] = append([]int(nil), of[w]...)
		for k, j := range of[w] {
			for range deg[w][k] {
				b.scatter[w] = append(b.scatter[w], b.entry[next[j]])
				next[j]++
			}
		}
	}
	return b, nil
}

// EvalOp says what Worker.Evaluate does.
type EvalOp uint8

// The operations of Evaluate.
const (
	// EvalDecoded scores the decoded assignment of the interior with the
	// boundary states given, then improves the interior by ICM (after the
	// repair, when asked) and scores it again.
	EvalDecoded EvalOp = iota + 1
	// EvalPolish does the same from the kept best interior, with the final
	// ICM budget.
	EvalPolish
	// EvalKeepBefore and EvalKeepAfter keep the last evaluation's
	// assignment before or after its improvement as the part's best.
	EvalKeepBefore
	EvalKeepAfter
	// EvalSettle runs the hard-constraint repair on the decoded assignment
	// of the whole part, boundary included but for the boundary variables
	// marked Fixed, and answers the boundary states it chose (EvalOut.X).
	// The coordinator settles the boundary this way one worker after the
	// other while no feasible assignment is known.
	EvalSettle
	// EvalSave saves the part's state after iteration EvalIn.Iter
	// (Worker.ShardState) where the worker's link keeps such states, and
	// answers a reference to it (EvalOut.Ref). A Worker cannot save by
	// itself: its link does it (package cluster).
	EvalSave
	// EvalMoves answers, for every boundary variable and state of it, the
	// change of the part's share of the score when the kept best
	// assignment (its boundary in the states given) moves that variable
	// to that state and re-solves the neighbourhood around it
	// (primal.Searcher.Move), the other boundary variables fixed
	// (EvalOut.Gains). A part without hard constraints (or that never
	// needed internal/primal's repair) prices a move by the change of its
	// factors alone, the interior kept (localGains).
	EvalMoves
	// EvalApply moves the kept best assignment's boundary variables that
	// differ from the states given, one after the other as EvalMoves
	// does, then improves the interior by ICM; scored and kept as
	// EvalDecoded.
	EvalApply
	// EvalPropagate restricts the part's boundary variables to the states
	// EvalIn.Allowed allows (those marked Fixed to their state in X),
	// propagates the part's hard constraints (generalized arc
	// consistency, package internal/primal) and answers the boundary
	// states still allowed (EvalOut.Allowed; Settled false on a wipe-out).
	// The coordinator builds a boundary this way, one variable after the
	// other, that every part's constraints allow.
	EvalPropagate
	// EvalStash sets the kept best assignment aside, and EvalRestore
	// makes the one set aside the kept best again: the final polish runs
	// from two starts and keeps the better end.
	EvalStash
	EvalRestore
	// EvalNear answers the pairs of the part's boundary variables near
	// each other in the part (EvalOut.Pairs, indices in its boundary
	// order), on parts whose moves re-solve hard constraints: the
	// coordinator's blocks of boundary block moves (block.go).
	EvalNear
	// EvalBlock answers, for every joint state of the part's boundary
	// variables EvalIn.Block (row major, the first variable's state
	// major), the change of its share of the score when the kept best
	// assignment (its boundary in the states given) moves them to that
	// state and re-solves a neighbourhood of the interior around them
	// (EvalOut.Gains; -Inf where no completion was found, empty when the
	// part prices no block moves).
	EvalBlock
	// EvalBlockApply makes EvalBlock's move to the block's states in X
	// on the kept best assignment, then improves the interior by ICM;
	// scored and kept as EvalDecoded.
	EvalBlockApply
	// EvalBlockFeasible answers, per joint state of the block (laid out
	// as EvalBlock's), whether the part's hard constraints leave it a
	// completion by propagation (EvalOut.Allowed; empty when the part
	// prices no block moves); EvalBlock then prices only the joint
	// states EvalIn.Allowed allows (empty: all).
	EvalBlockFeasible
)

// EvalIn asks a worker to evaluate assignments of its part.
type EvalIn struct {
	Seq int // numbers the requests of a run, from 1
	Op  EvalOp
	// X holds the states of the part's boundary variables (in its
	// boundary order) for EvalDecoded and EvalPolish.
	X []int32
	// Repair runs the hard-constraint repair before ICM (EvalDecoded) when
	// the part's share of the score is -Inf.
	Repair bool
	// Fixed marks the boundary variables whose states EvalSettle keeps.
	Fixed []bool
	// Iter is the iteration whose state EvalSave saves.
	Iter int
	// Allowed holds, for EvalPropagate, per boundary variable (in the
	// part's boundary order) whether each of its states is allowed.
	Allowed []bool
	// Block lists, for EvalBlock and EvalBlockApply, the boundary
	// variables moved (indices in the part's boundary order, increasing).
	Block []int32
	// Dom, when not empty, restricts each of Block's variables to two
	// states (two per variable, distinct): the block's joint states are
	// then those of the restricted domains, row major as over full ones
	// (the tie kick of block.go).
	Dom []int32
}

// EvalOut is a worker's answer to an EvalIn: its share of the score (its
// slaves' factors and its interior variables' unaries) before and after
// the improvement.
type EvalOut struct {
	Seq           int
	Before, After float64
	X             []int32 // EvalSettle: the boundary states chosen
	Settled       bool    // EvalSettle: the repair completed
	// Ref, for EvalSave, references the state saved, opaque here; empty
	// when the worker could not save it (the state is then not taken).
	Ref []byte
	// Gains, for EvalMoves, holds per boundary variable (in the part's
	// boundary order) one change per state, 0 at the state given; empty
	// when the part has none to offer. Pairs lists pairs of boundary
	// variables (indices in the part's boundary order, two per pair)
	// moved jointly, and PairGains their changes, per pair its joint
	// states row by row (the first variable's state major).
	Gains     []float64
	Pairs     []int32
	PairGains []float64
	// Allowed answers EvalPropagate, laid out as EvalIn.Allowed.
	Allowed []bool
}

// A PrimalLink reaches a sharded run's worker for the primal search.
type PrimalLink interface {
	Evaluate(ctx context.Context, in *EvalIn, out *EvalOut) error
}

// Evaluate implements PrimalLink.
func (l LocalLink) Evaluate(_ context.Context, in *EvalIn, out *EvalOut) error {
	return l.W.Evaluate(in, out)
}

// shardEval is a worker's primal search state in a sharded run.
type shardEval struct {
	search       *localSearch
	cand         []int   // the assignment being evaluated (local numbering)
	before, best []int32 // the last one before its improvement; the best kept
	stash        []int32 // EvalStash's best set aside
	hasBest      bool
	// candOpt, bestOpt, stashOpt: the candidate, the kept best, the one
	// set aside is a local optimum of ICM with the boundary fixed (its
	// ICM emptied its worklists), so that a boundary move from the best
	// (EvalApply) visits the moved variables' neighbourhoods first, not
	// the part (localSearch.icmNear).
	candOpt, bestOpt, stashOpt bool
	changed                    []int
	lastOp                     EvalOp
	settle                     []bool     // EvalSettle's frozen variables
	moved                      []int      // EvalMoves' scratch
	pairs                      [][2]int32 // the boundary pairs EvalMoves prices jointly
	loc, loc2                  []float64  // localGains' local scores
	gainOffs                   []int      // per boundary variable: its offset into EvalOut.Gains
}

// Evaluate runs one primal request of a sharded run on the part (see
// EvalOp). Boundary variables keep the states given; the rest of the
// assignment is the worker's.
func (w *Worker) Evaluate(in *EvalIn, out *EvalOut) error {
	e := w.evalState()
	out.Seq = in.Seq
	if in.Op == EvalSave {
		return errors.New("evaluate: this worker's link does not save states")
	}
	switch in.Op {
	case EvalSettle:
		return w.settle(in, out)
	case EvalMoves, EvalApply:
		return w.move(in, out)
	case EvalPropagate:
		return w.propagate(in, out)
	case EvalNear:
		return w.near(out)
	case EvalBlock, EvalBlockApply, EvalBlockFeasible:
		return w.block(in, out)
	}
	switch in.Op {
	case EvalDecoded, EvalPolish:
		if err := w.checkBoundaryStates(in.X); err != nil {
			return err
		}
		if in.Op == EvalPolish && !e.hasBest {
			return errors.New("evaluate: no best assignment to polish")
		}
		for i := range e.cand {
			if in.Op == EvalDecoded {
				e.cand[i] = w.x[i]
			} else {
				e.cand[i] = int(e.best[i])
			}
		}
		for k, v := range w.boundary {
			e.cand[v] = int(in.X[k])
		}
		out.Before = e.search.partial(e.cand)
		for i, s := range e.cand {
			e.before[i] = int32(s)
		}
		if in.Op == EvalDecoded {
			// The repair only where this part violates a hard constraint.
			e.candOpt = e.search.improve(e.cand, in.Repair && math.IsInf(out.Before, -1))
		} else {
			w.lnsPolish()
			e.candOpt = e.search.polish(e.cand)
		}
		out.After = e.search.partial(e.cand)
		e.lastOp = in.Op
	case EvalStash, EvalRestore:
		if in.Op == EvalStash {
			if !e.hasBest {
				return errors.New("evaluate: no best assignment to set aside")
			}
			e.stash, e.stashOpt = append(e.stash[:0], e.best...), e.bestOpt
		} else {
			if e.stash == nil {
				return errors.New("evaluate: no assignment set aside")
			}
			copy(e.best, e.stash)
			e.bestOpt = e.stashOpt
		}
	case EvalKeepBefore, EvalKeepAfter:
		if e.lastOp == 0 {
			return errors.New("evaluate: nothing evaluated to keep")
		}
		if in.Op == EvalKeepBefore {
			// The ICM moved nothing (the usual reason for keeping before):
			// the before is the candidate, and as much an optimum.
			same := true
			for i, s := range e.before {
				same = same && int(s) == e.cand[i]
			}
			copy(e.best, e.before)
			e.bestOpt = e.candOpt && same
		} else {
			for i, s := range e.cand {
				e.best[i] = int32(s)
			}
			e.bestOpt = e.candOpt
		}
		e.hasBest = true
	default:
		return fmt.Errorf("evaluate: unknown operation %d", in.Op)
	}
	return nil
}

// evalState returns the worker's primal search state, built on first use.
func (w *Worker) evalState() *shardEval {
	if w.eval == nil {
		m := w.p.Model
		var ls *localSearch
		if w.pairs != nil {
			ls = newPairSearch(m, w.pairs, w.p, w.pool)
		} else {
			ls = newLocalSearch(m, w.pool)
		}
		if len(w.boundary) > 0 {
			ls.frozen = make([]bool, m.NumVars())
			for _, v := range w.boundary {
				ls.frozen[v] = true
			}
		}
		n := m.NumVars()
		w.eval = &shardEval{search: ls, cand: make([]int, n), before: make([]int32, n), best: make([]int32, n)}
	}
	return w.eval
}

func (w *Worker) checkBoundaryStates(x []int32) error {
	m := w.p.Model
	if len(x) != len(w.boundary) {
		return fmt.Errorf("evaluate: %d boundary states for %d boundary variables", len(x), len(w.boundary))
	}
	for k, v := range w.boundary {
		if x[k] < 0 || int(x[k]) >= m.Cards[v] {
			return fmt.Errorf("evaluate: boundary variable %d in state %d of %d", w.vars[v], x[k], m.Cards[v])
		}
	}
	return nil
}

// Budget of a boundary move (EvalMoves, EvalApply): the variables freed
// around the boundary variable moved, and the branch and bound nodes that
// re-solve them (those of the large neighbourhood search).
const (
	moveSize  = 40
	moveNodes = 20000
)

// moveWork bounds the work of one EvalMoves, in moves times the part's
// variables (each move resets the propagation and scores the part): a
// part whose moves would cost more answers no gains, and its boundary
// stays where the polish left it.
const moveWork = 1 << 30

// move is EvalMoves and EvalApply.
func (w *Worker) move(in *EvalIn, out *EvalOut) error {
	e := w.evalState()
	if err := w.checkBoundaryStates(in.X); err != nil {
		return err
	}
	if !e.hasBest {
		return errors.New("evaluate: no best assignment to move")
	}
	ls := e.search
	out.Gains, out.Pairs, out.PairGains = out.Gains[:0], out.Pairs[:0], out.PairGains[:0]
	for i, s := range e.best {
		e.cand[i] = int(s)
	}
	e.candOpt = false
	// Moves re-solve their neighbourhood only on hard constraints, which a
	// move of one variable alone would violate.
	resolve := ls.prim != nil && ls.prim.Hard()
	if in.Op == EvalApply {
		near := !resolve && e.bestOpt
		if resolve {
			w.applyMoves(in.X)
		} else {
			// Nothing to re-solve: the interior around the new boundary
			// as ICM leaves it.
			e.changed = e.changed[:0]
			for k, v := range w.boundary {
				if e.cand[v] != int(in.X[k]) {
					e.changed = append(e.changed, v)
				}
				e.cand[v] = int(in.X[k])
			}
		}
		w.scoreMoved(in.Op, out, near)
		return nil
	}
	e.lastOp = 0 // EvalMoves rewrites e.cand: nothing for a keep to take
	if e.moved == nil {
		e.moved = make([]int, len(e.cand))
		e.pairs = w.boundaryPairs()
	}
	m := w.p.Model
	if !resolve {
		for k, v := range w.boundary {
			e.cand[v] = int(in.X[k])
		}
		w.localGains(out)
		return nil
	}
	moves := len(e.pairs) * maxPairStates
	for _, v := range w.boundary {
		moves += m.Cards[v]
	}
	if moves > moveWork/max(1, m.NumVars()) {
		return nil // each move costs O(part): too many for the part's size
	}
	for k, v := range w.boundary {
		e.cand[v] = int(in.X[k])
	}
	base := ls.partial(e.cand)
	ev := fixedStates(ls.frozen, e.cand)
	gain := func(vars ...int) float64 {
		copy(e.moved, e.cand)
		ls.prim.Move(context.Background(), e.moved, ev, vars, moveSize, moveNodes, uint64(vars[0]))
		return ls.partial(e.moved) - base
	}
	for _, v := range w.boundary {
		cur := e.cand[v]
		for st := range m.Cards[v] {
			g := 0.0
			if st != cur {
				ev[v] = st
				g = gain(v)
			}
			out.Gains = append(out.Gains, g)
		}
		ev[v] = cur
	}
	for _, pr := range e.pairs {
		v1, v2 := w.boundary[pr[0]], w.boundary[pr[1]]
		c1, c2 := e.cand[v1], e.cand[v2]
		out.Pairs = append(out.Pairs, pr[0], pr[1])
		for s1 := range m.Cards[v1] {
			for s2 := range m.Cards[v2] {
				g := 0.0
				if s1 != c1 || s2 != c2 {
					ev[v1], ev[v2] = s1, s2
					g = gain(v1, v2)
				}
				out.PairGains = append(out.PairGains, g)
			}
		}
		ev[v1], ev[v2] = c1, c2
	}
	return nil
}

// lnsStates bounds the states of a part whose final polish runs
// internal/primal's large neighbourhood search without hard constraints
// (its search holds about 130 bytes per variable beside the part).
const lnsStates = 1 << 20

// lnsPolish prepares the final polish of a part with a boundary and no
// hard-constraint repair so far to run internal/primal's large
// neighbourhood search too (localSearch.polish), from the kept best (in
// e.cand): an unsharded run's ICM also moves the boundary variables,
// which the part's search keeps fixed, and the neighbourhoods (exact
// over a dozen variables) make up for it. Parts over lnsStates states
// keep ICM alone, and so do parts of pairwise factors of one kind
// (pairsOfOneKind).
func (w *Worker) lnsPolish() {
	e, m := w.eval, w.p.Model
	ls := e.search
	if len(w.boundary) == 0 || ls.pairs != nil || ls.prim != nil || len(m.Unary) > lnsStates || pairsOfOneKind(m) {
		return
	}
	ls.newPrim()
	ls.decoded = append(ls.decoded[:0], e.cand...)
}

// pairsOfOneKind reports whether m's factors are all pairwise Potts or
// all pairwise Pair factors: a part a worker may hold flat (Pairs, with
// no model.Factors for internal/primal to search), which lnsPolish then
// leaves alone whichever way it was loaded, so that both give the same
// result.
func pairsOfOneKind(m *model.Model) bool {
	for a := range m.Factors {
		f := &m.Factors[a]
		if len(f.Vars) != 2 || f.Kind != model.Potts && f.Kind != model.Pair || f.Kind != m.Factors[0].Kind {
			return false
		}
	}
	return true
}

// localGains answers EvalMoves on a part without hard constraints in its
// search (or that never needed internal/primal's repair): each move is
// priced by the change of the part's factors alone, the interior kept
// (ICM's local scores, less the boundary variable's unary, which the
// coordinator adds), so that the coordinator's block coordinate ascent
// over the boundary, with the parts' ICM after each EvalApply, is ICM
// over the whole model. A pair is priced exactly: the first variable's
// move, then the second's local scores with the first moved. The kept
// best is in e.cand, its boundary in the states given.
func (w *Worker) localGains(out *EvalOut) {
	e, m := w.eval, w.p.Model
	ls, x := e.search, e.cand
	if e.loc == nil {
		maxCard := 1
		for _, c := range m.Cards {
			maxCard = max(maxCard, c)
		}
		e.loc, e.loc2 = make([]float64, maxCard), make([]float64, maxCard)
	}
	// delta is the change of v's factors from state cur to st, given the
	// local scores loc of v.
	delta := func(v, cur, st int, loc []float64) float64 {
		u := m.Unaries(v)
		if math.IsInf(u[st], -1) {
			return math.Inf(-1) // a forbidden state: never a gain (and no -Inf - -Inf)
		}
		return (loc[st] - u[st]) - (loc[cur] - u[cur])
	}
	off := len(out.Gains)
	for _, v := range w.boundary {
		loc := e.loc[:m.Cards[v]]
		ls.scores(v, x, loc)
		for st := range loc {
			g := 0.0
			if st != x[v] {
				g = delta(v, x[v], st, loc)
			}
			out.Gains = append(out.Gains, g)
		}
	}
	for _, pr := range e.pairs {
		v1, v2 := w.boundary[pr[0]], w.boundary[pr[1]]
		c1, c2 := x[v1], x[v2]
		g1 := out.Gains[off+w.gainOff(int(pr[0])):]
		out.Pairs = append(out.Pairs, pr[0], pr[1])
		for s1 := range m.Cards[v1] {
			x[v1] = s1
			loc := e.loc2[:m.Cards[v2]]
			ls.scores(v2, x, loc)
			for s2 := range loc {
				g := 0.0
				if s1 != c1 || s2 != c2 {
					g = g1[s1]
					if s2 != c2 {
						g += delta(v2, c2, s2, loc)
					}
				}
				out.PairGains = append(out.PairGains, g)
			}
		}
		x[v1] = c1
	}
}

// gainOff is the offset of boundary variable k's states in EvalOut.Gains.
func (w *Worker) gainOff(k int) int {
	if w.eval.gainOffs == nil {
		m := w.p.Model
		w.eval.gainOffs = make([]int, len(w.boundary)+1)
		for j, v := range w.boundary {
			w.eval.gainOffs[j+1] = w.eval.gainOffs[j] + m.Cards[v]
		}
	}
	return w.eval.gainOffs[k]
}

// maxPairStates bounds the joint states of a pair of boundary variables
// that EvalMoves prices together.
const maxPairStates = 36

// boundaryPairs lists the pairs of the part's boundary variables (boundary
// indices, increasing) that share a factor of the part's search (its
// model's, or its flat pairs), each once, when they have at most
// maxPairStates joint states.
func (w *Worker) boundaryPairs() [][2]int32 {
	m := w.p.Model
	idx := make(map[int]int32, len(w.boundary))
	for k, v := range w.boundary {
		idx[v] = int32(k)
	}
	seen := map[[2]int32]bool{}
	var pairs [][2]int32
	var ks []int32
	ls := w.eval.search
	var buf [2]int
	for a := range ls.numFactors() {
		ks = ks[:0]
		for _, v := range ls.factorVars(a, &buf) {
			if k, ok := idx[v]; ok {
				ks = append(ks, k)
			}
		}
		for i, k1 := range ks {
			for _, k2 := range ks[i+1:] {
				pr := [2]int32{min(k1, k2), max(k1, k2)}
				if pr[0] == pr[1] || seen[pr] || m.Cards[w.boundary[k1]]*m.Cards[w.boundary[k2]] > maxPairStates {
					continue
				}
				seen[pr] = true
				pairs = append(pairs, pr)
			}
		}
	}
	slices.SortFunc(pairs, func(a, b [2]int32) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	return pairs
}

// applyMoves moves the boundary variables of the kept best assignment
// (in e.cand) whose states x changes, a group at a time: variables that
// share a factor of the part move together (primal.Searcher.Move), groups
// in the order of their first variable, the variables of later groups
// keeping their old states meanwhile.
func (w *Worker) applyMoves(x []int32) {
	e, m := w.eval, w.p.Model
	ls := e.search
	var changed []int
	group := map[int]int{} // boundary variable changed -> its group's root
	for k, v := range w.boundary {
		if int(x[k]) != e.cand[v] {
			changed = append(changed, v)
			group[v] = v
		}
	}
	if len(changed) == 0 {
		return
	}
	root := func(v int) int {
		for group[v] != v {
			v = group[v]
		}
		return v
	}
	for a := range m.Factors {
		first := -1
		for _, v := range m.Factors[a].Vars {
			if _, ok := group[v]; !ok {
				continue
			}
			if first < 0 {
				first = root(v)
			} else if r := root(v); r != first {
				group[max(r, first)] = min(r, first)
				first = min(r, first)
			}
		}
	}
	ev := fixedStates(ls.frozen, e.cand)
	newState := make(map[int]int, len(changed))
	for k, v := range w.boundary {
		newState[v] = int(x[k])
	}
	done := map[int]bool{}
	var vars []int
	for _, v := range changed {
		r := root(v)
		if done[r] {
			continue
		}
		done[r] = true
		vars = vars[:0]
		for _, u := range changed {
			if root(u) == r {
				vars = append(vars, u)
				ev[u] = newState[u]
			}
		}
		ls.prim.Move(context.Background(), e.cand, ev, vars, moveSize, moveNodes, uint64(vars[0]))
	}
	for k, v := range w.boundary { // where a move found no completion
		e.cand[v] = int(x[k])
	}
}

// propagate is EvalPropagate.
func (w *Worker) propagate(in *EvalIn, out *EvalOut) error {
	e := w.evalState()
	if err := w.checkBoundaryStates(in.X); err != nil {
		return err
	}
	m := w.p.Model
	n := 0
	for _, v := range w.boundary {
		n += m.Cards[v]
	}
	if len(in.Fixed) != len(in.X) || len(in.Allowed) != n {
		return fmt.Errorf("evaluate: %d fixed flags and %d allowed states for %d boundary variables of %d states", len(in.Fixed), len(in.Allowed), len(in.X), n)
	}
	out.Allowed = append(out.Allowed[:0], in.Allowed...)
	ls := e.search
	if ls.pairs != nil { // no constraint to propagate here
		out.Settled = true
		return nil
	}
	if ls.prim == nil {
		ls.newPrim()
	}
	p := ls.prim.Propagator()
	ok := p.Reset()
	off := 0
	for k, v := range w.boundary {
		for st := range m.Cards[v] {
			if ok && (in.Fixed[k] && st != int(in.X[k]) || !in.Allowed[off+st]) && p.Allowed(v, st) {
				ok = p.Remove(v, st)
			}
		}
		off += m.Cards[v]
	}
	out.Settled = ok
	off = 0
	for _, v := range w.boundary {
		for st := range m.Cards[v] {
			out.Allowed[off+st] = ok && p.Allowed(v, st)
		}
		off += m.Cards[v]
	}
	return nil
}

// settle is EvalSettle.
func (w *Worker) settle(in *EvalIn, out *EvalOut) error {
	e := w.eval
	if err := w.checkBoundaryStates(in.X); err != nil {
		return err
	}
	if len(in.Fixed) != len(in.X) {
		return fmt.Errorf("evaluate: %d fixed flags for %d boundary variables", len(in.Fixed), len(in.X))
	}
	copy(e.cand, w.x)
	e.candOpt, e.lastOp = false, 0 // a keep takes an evaluation, not a settle
	if e.settle == nil {
		e.settle = make([]bool, len(e.cand))
	}
	for k, v := range w.boundary {
		e.cand[v] = int(in.X[k])
		e.settle[v] = in.Fixed[k]
	}
	ls := e.search
	if ls.rep == nil {
		ls.rep = ls.newRepair()
	}
	out.Settled = false
	if ls.rep != nil {
		for i, s := range e.cand { // the start, kept in before
			e.before[i] = int32(s)
		}
		ls.rep.frozen = e.settle
		out.Settled = ls.rep.run(e.cand)
		if !out.Settled {
			// What this part could complete with nothing fixed.
			for i, s := range e.before {
				e.cand[i] = int(s)
			}
			clear(e.settle)
			ls.rep.run(e.cand)
		}
		ls.rep.frozen = ls.frozen
	}
	out.X = out.X[:0]
	for _, v := range w.boundary {
		out.X = append(out.X, int32(e.cand[v]))
	}
	return nil
}

// BestPiece returns piece k of the kept best states of the part's interior
// variables (model numbering), pieces of size variables in the part's
// order, and whether it is the last piece.
func (w *Worker) BestPiece(k, size int) (vars []int, states []int32, last bool, err error) {
	if w.eval == nil || !w.eval.hasBest {
		return nil, nil, false, errors.New("no best assignment kept")
	}
	if size < 1 || k < 0 || k > len(w.interior)/size {
		return nil, nil, false, fmt.Errorf("piece %d of %d-variable pieces of %d variables", k, size, len(w.interior))
	}
	lo, hi := k*size, min((k+1)*size, len(w.interior))
	vars, states = make([]int, 0, hi-lo), make([]int32, 0, hi-lo)
	for _, i := range w.interior[lo:hi] {
		vars = append(vars, w.vars[i])
		states = append(states, w.eval.best[i])
	}
	return vars, states, hi == len(w.interior), nil
}

// shardPrimal is the coordinator's side of a sharded run's primal search:
// it sends the boundary states, adds the workers' shares and the boundary
// unaries, and keeps the best boundary states.
type shardPrimal struct {
	links []PrimalLink
	ins   []*EvalIn
	outs  []*EvalOut
	seq   int
	best  []int // the best assignment's boundary states
	// settle's boundary states and the variables they fixed
	settled    []int
	fixed      []bool
	start      []int // where the next sweep starts
	partStates int   // the largest part's states (PartSummary.UnaryEntries)
	// repaired: the parts' repairs around a decoded boundary failed once
	// (the model has hard constraints across the boundary).
	repaired bool
	// secondStart: constructDecoded's assignment (its boundary in
	// settled) is feasible and was not kept; polish starts from it too.
	secondStart bool
	// deadline: the final polish starts no boundary round expected to
	// end after it, and no second start once it has passed
	// (solver.PolishDeadline; zero: none, on parts of at most lnsStates
	// states).
	deadline time.Time
	// blockPriced counts the joint states the block moves priced
	// (blockBudget), blockTries the blocks tried (blockTotalWork).
	blockPriced, blockTries int
}

func newShardPrimal(links []WorkerLink, nb int) (*shardPrimal, error) {
	sp := &shardPrimal{best: make([]int, nb)}
	for w, l := range links {
		pl, ok := l.(PrimalLink)
		if !ok {
			return nil, fmt.Errorf("worker %d: its link does not evaluate assignments", w)
		}
		sp.links = append(sp.links, pl)
		sp.ins = append(sp.ins, &EvalIn{})
		sp.outs = append(sp.outs, &EvalOut{})
	}
	return sp, nil
}

// check evaluates the decoded assignment (or, with polish, polishes the
// best one) on the workers and keeps it when it beats res.Primal.
func (sp *shardPrimal) check(ctx context.Context, s *master, res *solver.Result, polish bool) error {
	src, op := s.x, EvalDecoded
	if polish {
		src, op = sp.best, EvalPolish
	}
	repair := math.IsInf(res.Primal, -1)
	before, after, err := sp.evaluate(ctx, s, src, op, repair)
	if err != nil {
		return err
	}
	if repair && math.IsInf(after, -1) && len(sp.links) > 1 {
		sp.repaired = true
		// The parts' repairs around the decoded boundary failed: a
		// boundary all parts' constraints allow (construct), else one
		// settled worker by worker, and the repair around it.
		if before, after, err = sp.reconstruct(ctx, s, src); err != nil {
			return err
		}
		src = sp.settled
	}
	_, err = sp.keep(ctx, s, res, src, before, after)
	return err
}

// reconstruct builds a boundary from the decoded states src that the
// parts' constraints allow (construct), else settles one worker by
// worker, has the workers repair their parts around it and returns the
// scores; the boundary is left in sp.settled.
func (sp *shardPrimal) reconstruct(ctx context.Context, s *master, src []int) (before, after float64, err error) {
	x, ok, err := sp.construct(ctx, s, src)
	if err != nil {
		return 0, 0, err
	}
	if ok {
		if before, after, err = sp.evaluate(ctx, s, x, EvalDecoded, true); err != nil || !math.IsInf(after, -1) {
			sp.settled = append(sp.settled[:0], x...)
			return before, after, err
		}
	}
	if x, err = sp.settle(ctx, s); err != nil {
		return 0, 0, err
	}
	before, after, err = sp.evaluate(ctx, s, x, EvalDecoded, true)
	return before, after, err
}

// constructDecoded is the sharded counterpart of the whole model's final
// construction from the last decoded assignment (localSearch.polish): on
// a model whose decoded assignments violated hard constraints, a boundary
// the parts' constraints allow is built from the last decoded one, the
// parts repaired around it, and the result kept when it beats the best;
// on other models the last decoded assignment is evaluated (the parts'
// ICM). When it is feasible and not kept, polish starts from it too.
func (sp *shardPrimal) constructDecoded(ctx context.Context, s *master, res *solver.Result) error {
	var before, after float64
	var err error
	if !sp.repaired {
		// No construction to run: the last decoded assignment itself, on
		// parts small enough for their polish's neighbourhood search
		// (lnsStates), is the second start.
		if len(sp.links) < 2 || sp.partStates > lnsStates {
			return nil
		}
		sp.settled = append(sp.settled[:0], s.x...)
		before, after, err = sp.evaluate(ctx, s, sp.settled, EvalDecoded, false)
	} else {
		before, after, err = sp.reconstruct(ctx, s, s.x)
	}
	if err != nil {
		return err
	}
	kept, err := sp.keep(ctx, s, res, sp.settled, before, after)
	sp.secondStart = !kept && !math.IsInf(max(before, after), -1)
	return err
}

// polish is a sharded run's final polish: the parts' polish around the
// best boundary (their search with the boundary fixed), then the
// boundary's moves (moveBoundary). When constructDecoded built a
// feasible assignment that did not beat the best, the same polish and
// moves run from it too (the whole model's polish also starts from the
// last decoded assignment), and the better end is kept: the workers
// stash the first (EvalStash) and take it back (EvalRestore) when the
// second is not better. On linkage_16 the second start ends better, by
// 0.1% on 2 workers and 0.3% on 3; on DBN_11 (21 of its 40 variables on
// the boundary) it ends at solve's primal instead of 13% below it. (A
// second round from the result repeats the first's searches, seeded
// alike: on linkage_16 it found nothing more.)
func (sp *shardPrimal) polish(ctx context.Context, s *master, res *solver.Result) error {
	if err := sp.check(ctx, s, res, true); err != nil {
		return err
	}
	if err := sp.moveBoundary(ctx, s, res); err != nil || !sp.secondStart {
		return err
	}
	sp.secondStart = false
	if solver.PastDeadline(sp.deadline, time.Now()) {
		return nil // no time left for the second start
	}
	return sp.restart(ctx, s, res, sp.settled, EvalDecoded, true, func() error { return nil })
}

// restart evaluates the boundary src with op (and repair), keeps it
// whatever its score, and runs the final polish's searches from it (the
// parts' polish, the boundary moves, then more): the end is kept when
// it beats the best before, else the workers take that back (EvalStash,
// EvalRestore).
func (sp *shardPrimal) restart(ctx context.Context, s *master, res *solver.Result, src []int, op EvalOp, repair bool, more func() error) error {
	first, firstPrimal := slices.Clone(sp.best), res.Primal
	if err := sp.callAll(ctx, EvalStash); err != nil {
		return err
	}
	before, after, err := sp.evaluate(ctx, s, src, op, repair)
	if err != nil {
		return err
	}
	res.Primal = math.Inf(-1) // kept whatever its score
	kept, err := sp.keep(ctx, s, res, src, before, after)
	if err != nil {
		return err
	}
	if kept {
		if err := sp.check(ctx, s, res, true); err != nil {
			return err
		}
		if err := sp.moveBoundary(ctx, s, res); err != nil {
			return err
		}
		if err := more(); err != nil {
			return err
		}
		if res.Primal > firstPrimal {
			return nil
		}
		if err := sp.callAll(ctx, EvalRestore); err != nil {
			return err
		}
	}
	copy(sp.best, first)
	res.Primal, s.bestPrimal = firstPrimal, firstPrimal
	return nil
}

// callAll sends op, which takes no states, to every worker.
func (sp *shardPrimal) callAll(ctx context.Context, op EvalOp) error {
	for _, in := range sp.ins {
		in.Op, in.X = op, in.X[:0]
	}
	return sp.call(ctx, op)
}

// keep has the workers keep the assignment just evaluated around the
// boundary states src, before or after their improvement, when one beats
// res.Primal, and reports whether it did.
func (sp *shardPrimal) keep(ctx context.Context, s *master, res *solver.Result, src []int, before, after float64) (bool, error) {
	var keep EvalOp
	best := res.Primal
	if before > best {
		keep, best = EvalKeepBefore, before
	}
	if after > best {
		keep, best = EvalKeepAfter, after
	}
	if keep == 0 {
		return false, nil
	}
	for _, in := range sp.ins {
		in.Op, in.X = keep, in.X[:0]
	}
	if err := sp.call(ctx, keep); err != nil {
		return false, err
	}
	copy(sp.best, src) // src may be sp.best (a polish)
	res.Primal, s.bestPrimal = best, best
	return true, nil
}

// boundaryRounds bounds the rounds of moveBoundary.
const boundaryRounds = 20

// A boundaryMove is a candidate move of moveBoundary: boundary variables
// j[0] (and j[1] when j[1] >= 0) to states st, with its estimated gain.
type boundaryMove struct {
	j, st [2]int
	g     float64
}

// moveBoundary improves the best assignment's boundary, which the workers'
// own searches keep fixed, after the final polish: block coordinate
// ascent over the boundary variables with the parts re-solved around
// them. Each round the workers price the states of every boundary
// variable, and the joint states of pairs of them that share a factor
// (EvalMoves: the change of their shares when the variables move and the
// neighbourhood around them is re-solved). The coordinator adds the
// shares and the boundary unaries and makes every move with a positive
// total gain that touches no variable a better move took (EvalApply),
// or, when the exact score of that does not improve, the best move only.
// The best exact score is kept; the rounds end when no move improves it.
// The coordinator holds what the workers price: boundary-sized.
func (sp *shardPrimal) moveBoundary(ctx context.Context, s *master, res *solver.Result) error {
	m := s.m
	if len(m.Cards) == 0 || len(sp.links) < 2 || math.IsInf(res.Primal, -1) {
		return nil
	}
	cand := make([]int, len(sp.best))
	taken := make([]bool, len(sp.best))
	var moves []boundaryMove
	var last time.Duration // the last round's time
	for range boundaryRounds {
		began := time.Now()
		if solver.PastDeadline(sp.deadline, began.Add(last)) {
			return nil
		}
		for w, in := range sp.ins {
			in.Op, in.X = EvalMoves, in.X[:0]
			for _, j := range s.b.varsOf[w] {
				in.X = append(in.X, int32(sp.best[j]))
			}
		}
		if err := sp.call(ctx, EvalMoves); err != nil {
			return err
		}
		var err error
		if moves, err = sp.price(s, moves[:0], res.Primal); err != nil || len(moves) == 0 {
			return err
		}
		slices.SortStableFunc(moves, func(a, b boundaryMove) int { return cmp.Compare(b.g, a.g) })
		improved := false
		for _, all := range []bool{true, false} {
			copy(cand, sp.best)
			clear(taken)
			for k, mv := range moves {
				if !all && k > 0 {
					break
				}
				if taken[mv.j[0]] || mv.j[1] >= 0 && taken[mv.j[1]] {
					continue
				}
				for i, j := range mv.j {
					if j >= 0 {
						cand[j], taken[j] = mv.st[i], true
					}
				}
			}
			before, after, err := sp.evaluate(ctx, s, cand, EvalApply, false)
			if err != nil {
				return err
			}
			if improved, err = sp.keep(ctx, s, res, cand, before, after); err != nil {
				return err
			}
			if improved || len(moves) == 1 {
				break
			}
		}
		last = time.Now().Sub(began)
		if !improved {
			return nil
		}
	}
	return nil
}

// price adds up the workers' answers to EvalMoves into the moves with a
// positive total gain (above a tolerance relative to primal), appended to
// moves. A worker's share of a pair it did not price is taken as the sum
// of its shares of the two single moves.
func (sp *shardPrimal) price(s *master, moves []boundaryMove, primal float64) ([]boundaryMove, error) {
	m := s.m
	gain := make([]float64, len(m.Unary)) // per boundary state: the total
	type pairKey [2]int
	reported := map[pairKey][]int{} // per pair: worker, offset into its PairGains
	var order []pairKey
	offs := make([][]int, len(sp.outs)) // per worker: its variables' offsets into its Gains
	priced := false
	for w, out := range sp.outs {
		if len(out.Gains) == 0 {
			continue
		}
		priced = true
		of := s.b.varsOf[w]
		offs[w] = make([]int, len(of)+1) // into out.Gains
		for k, j := range of {
			offs[w][k+1] = offs[w][k] + m.Cards[j]
		}
		if offs[w][len(of)] != len(out.Gains) || len(out.Pairs)%2 != 0 {
			return nil, fmt.Errorf("worker %d: %d gains and %d pair indices for its boundary", w, len(out.Gains), len(out.Pairs))
		}
		for _, g := range out.Gains {
			if math.IsNaN(g) || math.IsInf(g, 1) {
				return nil, fmt.Errorf("worker %d: gain %v", w, g)
			}
		}
		for k, j := range of {
			for st := range m.Cards[j] {
				gain[m.UnaryOff[j]+st] += out.Gains[offs[w][k]+st]
			}
		}
		pg := out.PairGains
		for p := 0; p < len(out.Pairs); p += 2 {
			k1, k2 := int(out.Pairs[p]), int(out.Pairs[p+1])
			if k1 < 0 || k2 <= k1 || k2 >= len(of) {
				return nil, fmt.Errorf("worker %d: pair (%d, %d) of %d boundary variables", w, k1, k2, len(of))
			}
			c1, c2 := m.Cards[of[k1]], m.Cards[of[k2]]
			if len(pg) < c1*c2 {
				return nil, fmt.Errorf("worker %d: %d pair gains left for a pair of %d states", w, len(pg), c1*c2)
			}
			key := pairKey{of[k1], of[k2]}
			if _, ok := reported[key]; !ok {
				order = append(order, key)
			}
			for _, g := range pg[:c1*c2] {
				if math.IsNaN(g) || math.IsInf(g, 1) {
					return nil, fmt.Errorf("worker %d: gain %v", w, g)
				}
			}
			reported[key] = append(reported[key], w, len(out.PairGains)-len(pg))
			pg = pg[c1*c2:]
		}
		if len(pg) != 0 {
			return nil, fmt.Errorf("worker %d: %d pair gains too many", w, len(pg))
		}
	}
	if !priced {
		return moves, nil
	}
	tol := 1e-9 * math.Max(1, math.Abs(primal))
	// single reports variable j's total gain at state st (its unary's
	// change included).
	single := func(j, st int) float64 {
		off := m.UnaryOff[j]
		return gain[off+st] + m.Unary[off+st] - m.Unary[off+sp.best[j]]
	}
	for j, cur := range sp.best {
		for st := range m.Cards[j] {
			if g := single(j, st); st != cur && g > tol {
				moves = append(moves, boundaryMove{j: [2]int{j, -1}, st: [2]int{st, 0}, g: g})
			}
		}
	}
	// A pair's total: the joint gains of the workers that priced it, the
	// single gains of the others, and the unaries' changes.
	share := func(w, j, st int) float64 {
		k, ok := slices.BinarySearch(s.b.varsOf[w], j)
		if !ok {
			return 0
		}
		return sp.outs[w].Gains[offs[w][k]+st]
	}
	for _, key := range order {
		j1, j2 := key[0], key[1]
		c2 := m.Cards[j2]
		rep := reported[key]
		for s1 := range m.Cards[j1] {
			for s2 := range c2 {
				if s1 == sp.best[j1] || s2 == sp.best[j2] {
					continue // a single move, priced above
				}
				g := m.Unary[m.UnaryOff[j1]+s1] - m.Unary[m.UnaryOff[j1]+sp.best[j1]] +
					m.Unary[m.UnaryOff[j2]+s2] - m.Unary[m.UnaryOff[j2]+sp.best[j2]]
				for w, out := range sp.outs {
					at := -1
					for r := 0; r < len(rep); r += 2 {
						if rep[r] == w {
							at = rep[r+1]
						}
					}
					if at >= 0 {
						g += out.PairGains[at+s1*c2+s2]
					} else if len(out.Gains) > 0 {
						g += share(w, j1, s1) + share(w, j2, s2)
					}
				}
				if g > tol {
					moves = append(moves, boundaryMove{j: key, st: [2]int{s1, s2}, g: g})
				}
			}
		}
	}
	return moves, nil
}

// evaluate has every worker evaluate its part around the boundary states
// src, and returns the scores of the whole assignment before and after the
// workers' improvement.
func (sp *shardPrimal) evaluate(ctx context.Context, s *master, src []int, op EvalOp, repair bool) (before, after float64, err error) {
	for w, in := range sp.ins {
		in.Op, in.Repair = op, repair
		in.X = in.X[:0]
		for _, j := range s.b.varsOf[w] {
			in.X = append(in.X, int32(src[s.b.vars[j]]))
		}
	}
	if err := sp.call(ctx, op); err != nil {
		return 0, 0, err
	}
	m := s.m
	before, after = m.Constant, m.Constant
	for _, out := range sp.outs {
		before += out.Before
		after += out.After
	}
	for v, k := range src {
		before += m.Unary[m.UnaryOff[v]+k]
		after += m.Unary[m.UnaryOff[v]+k]
	}
	return before, after, nil
}

// settle settles the boundary for the repair: worker after worker repairs
// its part around the states of the boundary variables that the workers
// before it chose, and chooses those of its others. When every worker's
// repair completes, each part can be completed around the boundary
// settled. A worker whose repair fails (a state chosen before it leaves
// its part no completion) answers the boundary states of a repair with
// nothing fixed, and the next sweep starts from them, so that the workers
// before it try them first; at most one sweep per worker, and the last
// sweep's boundary is used either way.
func (sp *shardPrimal) settle(ctx context.Context, s *master) ([]int, error) {
	// reconstruct may have made settled without the others (a
	// construction that succeeded): each is sized on its own.
	if len(sp.settled) != len(s.x) {
		sp.settled = make([]int, len(s.x))
	}
	if len(sp.start) != len(s.x) {
		sp.start = make([]int, len(s.x))
	}
	if len(sp.fixed) != len(s.x) {
		sp.fixed = make([]bool, len(s.x))
	}
	copy(sp.start, s.x)
	for range len(sp.links) {
		copy(sp.settled, sp.start)
		clear(sp.fixed)
		failed := false
		for w := range sp.links {
			ok, err := sp.settleOn(ctx, s, w)
			if err != nil {
				return nil, err
			}
			failed = failed || !ok
		}
		if !failed {
			break
		}
	}
	return sp.settled, nil
}

// constructWork bounds construct's work: propagation rounds times the
// largest part's states.
const constructWork = 1 << 31

// construct builds a boundary every part's hard constraints allow, by
// depth-first search over the boundary variables with the parts
// propagating (maintained arc consistency, Sabin and Freuder 1994, with
// the constraints held by the workers: EvalPropagate): the variable with
// the fewest states left first, its decoded state (src) first. It
// returns false when it found none within its budget of propagation
// rounds. The coordinator holds the boundary's states and a trail of
// the states removed: boundary-sized.
func (sp *shardPrimal) construct(ctx context.Context, s *master, src []int) ([]int, bool, error) {
	m := s.m
	nb := len(sp.best)
	allowed := make([]bool, len(m.Unary))
	for t, u := range m.Unary {
		allowed[t] = !math.IsInf(u, -1)
	}
	fixed := make([]bool, nb)
	x := append([]int(nil), src...)
	var trail []int
	// Rounds: 20 per boundary variable, and at most constructWork over the
	// largest part's states (each round propagates every part afresh); a
	// budget below one round per variable cannot finish.
	budget := min(20*nb+100, constructWork/max(1, sp.partStates))
	if budget < nb {
		return nil, false, nil
	}
	undo := func(mark int) {
		for _, t := range trail[mark:] {
			allowed[t] = true
		}
		trail = trail[:mark]
	}
	count := func(j int) int {
		c := 0
		for _, a := range allowed[m.UnaryOff[j]:m.UnaryOff[j+1]] {
			if a {
				c++
			}
		}
		return c
	}
	// propagate runs rounds of the workers' propagation to a fixpoint.
	propagate := func() (bool, error) {
		for {
			if budget--; budget < 0 {
				return false, nil
			}
			for w, in := range sp.ins {
				in.Op, in.X, in.Fixed, in.Allowed = EvalPropagate, in.X[:0], in.Fixed[:0], in.Allowed[:0]
				for _, j := range s.b.varsOf[w] {
					in.X = append(in.X, int32(x[j]))
					in.Fixed = append(in.Fixed, fixed[j])
					in.Allowed = append(in.Allowed, allowed[m.UnaryOff[j]:m.UnaryOff[j+1]]...)
				}
			}
			if err := sp.call(ctx, EvalPropagate); err != nil {
				return false, err
			}
			changed := false
			for w, out := range sp.outs {
				if !out.Settled {
					return false, nil
				}
				if len(out.Allowed) != len(sp.ins[w].Allowed) {
					return false, fmt.Errorf("worker %d: %d allowed states for %d", w, len(out.Allowed), len(sp.ins[w].Allowed))
				}
				k := 0
				for _, j := range s.b.varsOf[w] {
					for t := m.UnaryOff[j]; t < m.UnaryOff[j+1]; t++ {
						if allowed[t] && !out.Allowed[k] {
							allowed[t], changed = false, true
							trail = append(trail, t)
						}
						k++
					}
				}
			}
			for j := range nb {
				if count(j) == 0 {
					return false, nil
				}
			}
			if !changed {
				return true, nil
			}
		}
	}
	type frame struct{ j, next, mark int }
	var stack []frame
	ok, err := propagate()
	if err != nil || !ok {
		return nil, false, err
	}
	for {
		j, best := -1, math.MaxInt
		for i := range nb {
			if c := count(i); !fixed[i] && c > 1 && c < best {
				j, best = i, c
			}
		}
		if j < 0 { // every variable fixed or down to one state
			for i := range nb {
				if !fixed[i] {
					for st, a := range allowed[m.UnaryOff[i]:m.UnaryOff[i+1]] {
						if a {
							x[i] = st
						}
					}
				}
			}
			return x, true, nil
		}
		stack = append(stack, frame{j: j, mark: len(trail)})
		for {
			f := &stack[len(stack)-1]
			undo(f.mark)
			fixed[f.j] = false
			// The states in order: the decoded one, then the others.
			st, c := -1, m.Cards[f.j]
			for f.next < c && st < 0 {
				cand := f.next
				switch {
				case f.next == 0:
					cand = src[f.j]
				case f.next <= src[f.j]:
					cand = f.next - 1
				}
				f.next++
				if allowed[m.UnaryOff[f.j]+cand] {
					st = cand
				}
			}
			if st < 0 {
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return nil, false, nil
				}
				continue
			}
			fixed[f.j], x[f.j] = true, st
			ok, err := propagate()
			if err != nil {
				return nil, false, err
			}
			if ok {
				break
			}
			if budget < 0 {
				return nil, false, nil
			}
		}
	}
}

// settleOn runs EvalSettle on worker w and takes the states it chose for
// the boundary variables not yet fixed.
func (sp *shardPrimal) settleOn(ctx context.Context, s *master, w int) (bool, error) {
	in, out := sp.ins[w], sp.outs[w]
	sp.seq++
	in.Seq, in.Op, in.X, in.Fixed = sp.seq, EvalSettle, in.X[:0], in.Fixed[:0]
	for _, j := range s.b.varsOf[w] {
		in.X = append(in.X, int32(sp.settled[j]))
		in.Fixed = append(in.Fixed, sp.fixed[j])
	}
	if err := sp.links[w].Evaluate(ctx, in, out); err != nil {
		return false, fmt.Errorf("worker %d: %w", w, err)
	}
	if out.Seq != sp.seq || len(out.X) != len(in.X) {
		return false, fmt.Errorf("worker %d: answered evaluation %d with %d states for evaluation %d of %d", w, out.Seq, len(out.X), sp.seq, len(in.X))
	}
	for k, j := range s.b.varsOf[w] {
		if x := out.X[k]; x < 0 || int(x) >= s.m.Cards[j] {
			return false, fmt.Errorf("worker %d: boundary variable %d in state %d of %d", w, j, x, s.m.Cards[j])
		}
		switch {
		case !out.Settled:
			sp.start[j] = int(out.X[k]) // what this part could complete
		case !sp.fixed[j]:
			sp.settled[j] = int(out.X[k])
		}
		sp.fixed[j] = true
	}
	return out.Settled, nil
}

// save has every worker save its part's state after iteration iter and
// returns their references (State.Refs), or nil when a worker could not
// save its state (the checkpoint is then not taken).
func (sp *shardPrimal) save(ctx context.Context, iter int) ([][]byte, error) {
	for _, in := range sp.ins {
		in.Op, in.X, in.Iter = EvalSave, in.X[:0], iter
	}
	if err := sp.call(ctx, EvalSave); err != nil {
		return nil, err
	}
	refs := make([][]byte, len(sp.outs))
	for w, out := range sp.outs {
		if len(out.Ref) == 0 {
			return nil, nil
		}
		refs[w] = slices.Clone(out.Ref)
	}
	return refs, nil
}

// call sends the current requests to every worker, concurrently, and
// checks the answers.
func (sp *shardPrimal) call(ctx context.Context, op EvalOp) error {
	sp.seq++
	errs := make([]error, len(sp.links))
	var wg sync.WaitGroup
	for w := range sp.links {
		sp.ins[w].Seq = sp.seq
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			errs[w] = sp.links[w].Evaluate(ctx, sp.ins[w], sp.outs[w])
		}(w)
	}
	wg.Wait()
	for w, err := range errs {
		out := sp.outs[w]
		switch {
		case err != nil:
			return fmt.Errorf("worker %d: %w", w, err)
		case out.Seq != sp.seq:
			return fmt.Errorf("worker %d: answered evaluation %d for %d", w, out.Seq, sp.seq)
		case (op <= EvalPolish || op == EvalApply || op == EvalBlockApply) && (badScore(out.Before) || badScore(out.After)):
			return fmt.Errorf("worker %d: scores %v and %v", w, out.Before, out.After)
		}
	}
	return nil
}

// badScore: a share of a score is finite or -Inf (a violated hard
// constraint).
func badScore(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 1) }

// ShardResult is a sharded run's result: no assignment (the workers keep
// the best one's interior, Worker.BestPiece) but its boundary states.
type ShardResult struct {
	solver.Result
	// Boundary holds the best assignment's boundary states (boundary
	// numbering); nil when no assignment with a finite score was found.
	Boundary []int
}

// CoordinateShards runs the coordinator's loop of a sharded run. bm holds
// the boundary variables only (numbered like b: their cardinalities and
// unaries) and the model's constant; sums describe the parts and links
// reach their workers, which must also be PrimalLinks. cp, when not nil,
// takes states of the run and may resume one: a sharded state holds the
// coordinator's side only (its boundary, bounds and the best assignment's
// boundary states) and, in Refs, each worker's reference to the part state
// it saved itself (EvalSave); resuming needs the workers restored to those
// (Worker.RestoreShard).
func CoordinateShards(ctx context.Context, bm *model.Model, sums []PartSummary, b *Boundary, links []WorkerLink, opts Options, cp *Checkpointing, progress func(solver.Progress)) (ShardResult, error) {
	if err := opts.Validate(); err != nil {
		return ShardResult{}, err
	}
	if len(links) != len(sums) || len(b.varsOf) != len(sums) {
		return ShardResult{}, fmt.Errorf("%d links and a boundary of %d parts for %d parts", len(links), len(b.varsOf), len(sums))
	}
	if bm.NumVars() != len(b.vars) {
		return ShardResult{}, fmt.Errorf("boundary model of %d variables for %d boundary variables", bm.NumVars(), len(b.vars))
	}
	sp, err := newShardPrimal(links, len(b.vars))
	if err != nil {
		return ShardResult{}, err
	}
	for _, sm := range sums {
		sp.partStates = max(sp.partStates, sm.UnaryEntries)
	}
	infos := make([]partInfo, len(sums))
	entries := 0
	for w, sm := range sums {
		infos[w].lam, infos[w].mu = sm.ReplicaEntries, sm.UnaryEntries
		entries += sm.ReplicaEntries
	}
	pl := newPool(opts.Threads)
	defer pl.close()
	if cp != nil && cp.Resume != nil && len(cp.Resume.Refs) != len(sums) {
		return ShardResult{}, fmt.Errorf("resuming a state of %d part references on %d parts", len(cp.Resume.Refs), len(sums))
	}
	s := newMasterOf(bm, opts, infos, b, links, pl)
	s.shards = sp
	res, err := s.run(ctx, entries, cp, progress)
	out := ShardResult{Result: res}
	if !math.IsInf(res.Primal, -1) {
		out.Boundary = sp.best
	}
	out.Assignment = nil
	return out, err
}
