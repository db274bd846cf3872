package slaves

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/internal/pairterm"
	"github.com/ddrun/ddrun/model"
)

// Trunc is a truncated pairwise factor over two variables with L labels
// each: phi(x, y) = -W min(|x-y|, T) (model.TruncLinear) or
// -W min((x-y)^2, T) (model.TruncQuad), W of either sign. Its MAP is one
// max-product message by a distance transform (internal/pairterm, O(L) or
// O(L sqrt T), never the L^2 table) plus a scan for the row's maximiser,
// and its QUAD is the active-set method with that MAP as oracle (AD3 JMLR
// 2015 Alg. 3), so no table is materialised.
type Trunc struct {
	term  pairterm.Term
	cards [2]int
	msg   []float64 // the message to the second variable, then the scratch
	inexactQUAD
}

// NewTrunc returns the slave of a TruncLinear or TruncQuad factor over two
// variables of l >= 1 labels with weight w and truncation t (finite, t > 0,
// w*t finite). It panics on other kinds or bad parameters, which
// model.Validate rejects.
func NewTrunc(kind model.Kind, l int, w, t float64) *Trunc {
	if !kind.IsTruncated() || l < 1 {
		panic(fmt.Sprintf("slaves: NewTrunc: kind %v, %d labels", kind, l))
	}
	if err := model.CheckPairTerm(kind, w, t); err != nil {
		panic(fmt.Sprintf("slaves: NewTrunc: %v", err))
	}
	s := &Trunc{term: pairTerm(kind, w, t), cards: [2]int{l, l}}
	s.msg = make([]float64, l+pairterm.ScratchLen(l))
	s.as = NewActiveSet(s, 0)
	return s
}

// pairTerm maps a structured model kind to its pairterm.Term.
func pairTerm(kind model.Kind, w, t float64) pairterm.Term {
	switch kind {
	case model.Potts:
		return pairterm.Term{Kind: pairterm.Potts, W: w}
	case model.TruncLinear:
		return pairterm.Term{Kind: pairterm.TruncLinear, W: w, T: t}
	case model.TruncQuad:
		return pairterm.Term{Kind: pairterm.TruncQuad, W: w, T: t}
	}
	panic(fmt.Sprintf("slaves: no pairwise term for kind %v", kind))
}

// Cards returns [L, L].
func (s *Trunc) Cards() []int { return s.cards[:] }

// Term returns the factor's term.
func (s *Trunc) Term() pairterm.Term { return s.term }

// Score returns phi(y[0], y[1]).
func (s *Trunc) Score(y []int) float64 { return s.term.Theta(y[0], y[1]) }

// MAP maximises phi(x, y) + w_0(x) + w_1(y): the message
// m(y) = max_x w_0(x) + phi(x, y) (pairterm.Message), the best y of
// m(y) + w_1(y), then the best x for it by a scan of its column. The value
// returned is that pair's exact score, evaluated directly.
func (s *Trunc) MAP(w []float64, y []int) float64 {
	l := s.cards[0]
	a, b := w[:l], w[l:2*l]
	msg, sc := s.msg[:l], s.msg[l:]
	if s.term.Message(msg, a, sc) == math.Inf(-1) {
		y[0], y[1] = 0, 0
		return math.Inf(-1)
	}
	best, yb := math.Inf(-1), -1
	for j, v := range msg {
		if x := v + b[j]; x > best {
			best, yb = x, j
		}
	}
	if yb < 0 {
		y[0], y[1] = 0, 0
		return math.Inf(-1)
	}
	best, xb := math.Inf(-1), 0
	for i, v := range a {
		if x := v + s.term.Theta(i, yb); x > best {
			best, xb = x, i
		}
	}
	y[0], y[1] = xb, yb
	return s.term.Theta(xb, yb) + a[xb] + b[yb]
}

var (
	_ Slave       = (*Trunc)(nil)
	_ Inexact     = (*Trunc)(nil)
	_ ScratchUser = (*Trunc)(nil)
)
