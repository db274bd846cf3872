package trws

import (
	"fmt"

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
	g.theta = append([]float64(nil), g.theta...)
	p := &Part{g: g, sc: g.newScratch(), x: make([]int, g.n), watched: make([]bool, g.n)}
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
