package trws

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/internal/localsearch"
	"github.com/ddrun/ddrun/model"
)

// Part is TRW-S on one model whose unaries the caller may change between
// iterations, keeping the messages: the warm-started slave of a dual
// decomposition over parts (package dtrws, which adds Lagrange
// multipliers to the unaries of the variables several parts share).
//
// Changing a unary between iterations keeps every iterate exact: the
// bound a pass returns is the exact chain dual at the messages and the
// unaries of that pass (pass.go), whatever the unaries were before; the
// messages are just a warm start. A Part runs on one thread, in the
// model's variable order, and keeps a copy of the forward messages into
// the watched variables (as TRW-S(LP-C) does for all) so that their
// reparameterised unaries hat_s are known after a backward pass: the
// nodes that send those messages take the general code (which makes the
// copies), every other node its unrolled kernel (the same iterates bit
// for bit, kernels.go).
type Part struct {
	g       *graph
	sc      *scratch
	x       []int
	watched []bool
	// theta0 are the unaries as NewPart found them: the part's own scores
	// (Scores, Sweeps, Score) are on them. NewPart's AddUnary changes a
	// copy (theta0 is never written); NewPartPotts's changes theta0 itself
	// (the passes' theta, m's own array): changed then marks the variables
	// it changed, whose unaries as found are saved (unary0).
	theta0  []float64
	changed []bool
	saved   map[int][]float64
	loc     []float64 // Sweeps' scores of one variable
	dirty   []bool    // Sweeps' marks: the variables to visit
}

// NewPart prepares TRW-S on m (pairwise, valid, no evidence), watching
// the variables in watch (Belief is valid for them only). The Part copies
// the unaries; m is never written.
func NewPart(m *model.Model, watch []int) (*Part, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("trws part: %w", err)
	}
	if err := checkPairwise(m); err != nil {
		return nil, err
	}
	g, err := newGraph(m, 1)
	if err != nil {
		return nil, err
	}
	if g.order != nil {
		return nil, fmt.Errorf("trws part: unexpected node order on one thread")
	}
	return newPart(g, watch, false)
}

// NewPartPotts is NewPart on a model whose factors are all Potts, given
// flat: term a scores w[a] when variables i[a] and j[a] agree, the scope
// (i[a], j[a]); m holds the unaries (and no factors). The part is the one
// NewPart makes of m with those factors in that order, bit for bit,
// without a model.Factor per term (96 bytes and a scope each, where a
// term here takes 16): a part read flat (shard.LoadPiece) never holds them.
// Nor does it copy the unaries as NewPart does: the Part takes m.Unary as
// its own, which AddUnary writes (keeping the unaries as found of the
// variables it changes, for the part's scores), so the caller must leave
// m.Unary alone after (the copy is 16 MB on half a 1000x1000 4-label grid,
// and a part changes the unaries of its boundary only).
func NewPartPotts(m *model.Model, i, j []int32, w []float64, watch []int) (*Part, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("trws part: %w", err)
	}
	if len(m.Factors) != 0 || len(i) != len(w) || len(j) != len(w) || len(w) >= math.MaxInt32 {
		return nil, fmt.Errorf("trws part: %d factors beside %d, %d and %d flat Potts entries", len(m.Factors), len(i), len(j), len(w))
	}
	n := m.NumVars()
	for a, wa := range w {
		u, v := int(i[a]), int(j[a])
		switch {
		case u < 0 || u >= n || v < 0 || v >= n || u == v:
			return nil, fmt.Errorf("trws part: Potts term %d over variables (%d, %d) of %d", a, u, v, n)
		case m.Cards[u] != m.Cards[v]:
			return nil, fmt.Errorf("trws part: Potts term %d: cardinalities differ (%d, %d)", a, m.Cards[u], m.Cards[v])
		}
		if wa-wa != 0 { // NaN or infinite, the only bad Potts weights: CheckPairTerm says which (a call a term otherwise)
			return nil, fmt.Errorf("trws part: Potts term %d: %w", a, model.CheckPairTerm(model.Potts, wa, 0))
		}
	}
	return newPart(newPottsGraph(m, i, j, w), watch, true)
}

// newPart is a Part on g (one thread, nodes in the variables' order); with
// own, its theta is the Part's to write (NewPartPotts), else a copy is.
func newPart(g *graph, watch []int, own bool) (*Part, error) {
	theta0 := g.theta
	p := &Part{g: g, sc: g.newScratch(), x: make([]int, g.n), watched: make([]bool, g.n), theta0: theta0, loc: make([]float64, g.maxCard)}
	if own {
		p.changed, p.saved = make([]bool, g.n), map[int][]float64{}
	} else {
		g.theta = append([]float64(nil), g.theta...)
	}
	for _, v := range watch {
		if v < 0 || v >= g.n {
			return nil, fmt.Errorf("trws part: watched variable %d not in 0..%d", v, g.n-1)
		}
		p.watched[v] = true
	}
	if len(watch) > 0 {
		g.fwd = make([]float64, len(g.data))
		for _, v := range watch { // their earlier neighbours copy what they send
			for _, e := range g.inE[g.inOff[v]:g.inOff[v+1]] {
				g.kern[g.eu[e]] = 0
			}
		}
	}
	return p, nil
}

// Iterate runs one forward and one backward pass and returns the bound of
// each (upper bounds on the part's MAP score at the current unaries) and
// the score, at the current unaries, of the forward pass's labelling
// (Kolmogorov's sequential rule; Labels returns it).
func (p *Part) Iterate() (forward, backward, score float64) {
	g := p.g
	b, sc := g.forwardPart(0, g.n, p.x, p.sc)
	forward, score = g.constant+g.shift+b, g.constant+sc
	backward = g.backward(p.sc)
	return forward, backward, score
}

// Labels returns the labelling of the last forward pass (the Part's own
// slice: copy it to keep it).
func (p *Part) Labels() []int { return p.x }

// Belief writes, for a watched variable v, the reparameterised unary hat_v = theta_v + the messages
// into v, as they stand after the last backward pass, into dst (len
// card(v)). Right after the pass that processed v, every chain through v
// has max-marginal hat_v/n_v at v up to a constant (Kolmogorov 2006,
// Sect. 3), so hat_v is the part's max-marginal at v up to a constant
// when v has a single chain, and TRW-S's averaging statistic otherwise.
func (p *Part) Belief(v int, dst []float64) {
	if !p.watched[v] {
		panic(fmt.Sprintf("trws part: Belief of unwatched variable %d", v))
	}
	p.g.gatherAfterBackward(v, dst[:p.g.card[v]])
}

// AddUnary adds d to the unary of variable v (d may hold -Inf: the state
// becomes dead).
func (p *Part) AddUnary(v int, d []float64) {
	u := p.g.theta[p.g.uoff[v]:p.g.uoff[v+1]]
	if p.changed != nil && !p.changed[v] { // theta0 is theta: keep v's as found
		p.saved[v] = append([]float64(nil), u...)
		p.changed[v] = true
	}
	for i := range u {
		u[i] += d[i]
	}
}

// Chains returns n_v, the number of monotonic chains through v (its
// weight is 1/n_v).
func (p *Part) Chains(v int) int {
	ns, _, _, _ := p.g.weights(v)
	return ns
}

// The part's own scores: ICM and the exact score of a labelling on the
// part's model (its unaries as NewPart found them, whatever AddUnary did
// since, and its pairwise terms), read from the graph's flat edge arrays
// rather than from the model's factors: the same values up to the order of
// the additions (each edge holds the sum of the factors over its pair),
// at a fraction of the cost on a large grid (one pass over flat arrays
// instead of a factor record per term).

// Scores writes into loc (len card(v)) the score of each state of variable
// v with the other variables at their states in x: v's unary plus its
// edges' terms. A state at -Inf stays there.
func (p *Part) Scores(v int, x []int, loc []float64) {
	g := p.g
	k := g.card[v]
	loc = loc[:k]
	copy(loc, p.unary0(v))
	for e := g.outOff[v]; e < g.outOff[v+1]; e++ {
		xt := x[g.ev[e]]
		switch t := g.toff[e]; {
		case t == -1:
			loc[xt] += g.pw[e]
		case t >= 0:
			tab, kt := g.table(e), g.card[g.ev[e]]
			for j := range loc {
				loc[j] += tab[j*kt+xt]
			}
		default:
			term := g.terms[-2-t]
			for j := range loc {
				loc[j] += term.Theta(j, xt)
			}
		}
	}
	for _, e := range g.inE[g.inOff[v]:g.inOff[v+1]] {
		xu := x[g.eu[e]]
		switch t := g.toff[e]; {
		case t == -1:
			loc[xu] += g.pw[e]
		case t >= 0:
			addTo(loc, g.table(int(e))[xu*k:])
		default:
			term := g.terms[-2-t]
			for j := range loc {
				loc[j] += term.Theta(xu, j)
			}
		}
	}
}

// unary0 is v's unary as NewPart found it.
func (p *Part) unary0(v int) []float64 {
	if p.changed != nil && p.changed[v] {
		return p.saved[v]
	}
	return p.theta0[p.g.uoff[v]:p.g.uoff[v+1]]
}

// Sweeps is ICM by sweeps: each variable in index order moves to its
// state of largest score given the others (Scores; it keeps its state
// unless another is strictly better, the first of those on ties), until a
// sweep moves none or after sweeps sweeps. The variables v with fixed[v]
// keep their states (fixed nil: none does). It never lowers Score(x), and
// reports whether x is a local optimum (a sweep moved none). A variable
// is visited only when a neighbour moved since its last visit: the others
// would keep their states, so the moves are those of visiting them all.
func (p *Part) Sweeps(x []int, sweeps int, fixed []bool) bool {
	d := p.marks()
	for i := range d {
		d[i] = true
	}
	return p.sweeps(x, sweeps, fixed)
}

// SweepsNear is Sweeps from an x that was a local optimum with the same
// fixed variables (a Sweeps that reported so left it) before the fixed
// variables in changed took other states: only their neighbours can move
// at first, so the first sweep costs their neighbourhoods, not the part,
// and the moves are those Sweeps would make from x.
func (p *Part) SweepsNear(x []int, sweeps int, fixed []bool, changed []int) bool {
	clear(p.marks())
	for _, v := range changed {
		p.markNeighbours(v)
	}
	return p.sweeps(x, sweeps, fixed)
}

// marks returns the per-variable marks of the visits to make.
func (p *Part) marks() []bool {
	if p.dirty == nil {
		p.dirty = make([]bool, p.g.n)
	}
	return p.dirty
}

// markNeighbours marks the variables that share an edge with v.
func (p *Part) markNeighbours(v int) {
	g := p.g
	for e := g.outOff[v]; e < g.outOff[v+1]; e++ {
		p.dirty[g.ev[e]] = true
	}
	for _, e := range g.inE[g.inOff[v]:g.inOff[v+1]] {
		p.dirty[g.eu[e]] = true
	}
}

// sweeps runs Sweeps' sweeps, visiting the marked variables only.
func (p *Part) sweeps(x []int, sweeps int, fixed []bool) bool {
	g, d := p.g, p.dirty
	for range sweeps {
		moved := false
		for v := range g.n {
			if !d[v] {
				continue
			}
			d[v] = false
			k := g.card[v]
			if k == 1 || fixed != nil && fixed[v] {
				continue
			}
			loc := p.loc[:k]
			p.Scores(v, x, loc)
			if best := localsearch.Best(loc, x[v]); best != x[v] {
				x[v], moved = best, true
				p.markNeighbours(v)
			}
		}
		if !moved {
			return true
		}
	}
	return false
}

// Score returns the exact score of x on the part's model (its constant,
// its unaries as NewPart found them and its pairwise terms), up to the
// order of the additions.
func (p *Part) Score(x []int) float64 {
	g := p.g
	s := g.constant
	ch := p.changed
	for v := range g.n {
		if ch != nil && ch[v] {
			s += p.saved[v][x[v]]
		} else {
			s += p.theta0[g.uoff[v]+x[v]]
		}
	}
	for e, t := range g.toff {
		xu, xv := x[g.eu[e]], x[g.ev[e]]
		if t != -1 {
			s += g.pairScore(e, xu, xv)
		} else if xu == xv { // a Potts edge scores 0 elsewhere (inlined here, not graph.score's pairScore: BenchmarkEvaluate 12% slower through it)
			s += g.pw[e]
		}
	}
	return s
}
