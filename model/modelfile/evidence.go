package modelfile

import (
	"context"
	"fmt"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
)

// Evidence folded into an indexed output (ConvertOptions.Evidence): every
// factor over an observed variable is conditioned on its state, a Dense
// table over the free variables of its scope (a factor of another kind is
// made dense first), and an observed variable keeps one state, state 0,
// which stands for its observed one (its unary entry is the observed
// state's). Every assignment x' of the output scores what the assignment x
// of the input with the observed states scores: the sliced tables hold the
// same entries. Mapping an output assignment back is setting the observed
// states (ConvertOptions.Observed gets the evidence read).

// readEvidenceFor reads the evidence file at path against cards (its
// variables and states checked as for a whole model).
func readEvidenceFor(ctx context.Context, path string, cards []int) (model.Evidence, error) {
	return LoadEvidenceWith(ctx, path, &model.Model{Cards: cards}, nil)
}

// addObservedVar adds variable v of cardinality card with unary u (nil:
// zeros) to w: the variable as it is, or, observed, with the one state
// that stands for its observed one.
func addObservedVar(w *indexed.Writer, ev model.Evidence, v, card int, u []float64) error {
	s, ok := ev[v]
	if !ok {
		return w.AddVar(card, u)
	}
	if u == nil {
		return w.AddVar(1, nil)
	}
	return w.AddVar(1, u[s:s+1])
}

// conditioned returns f conditioned on the evidence: f itself when no
// variable of its scope is observed, else a Dense factor over the free
// variables of its scope whose table is f's table (made dense for other
// kinds) at the observed states. card gives every variable's cardinality.
func conditioned(f *model.Factor, ev model.Evidence, card func(int) int) (*model.Factor, error) {
	observed := false
	for _, v := range f.Vars {
		if _, ok := ev[v]; ok {
			observed = true
			break
		}
	}
	if !observed {
		return f, nil
	}
	k := len(f.Vars)
	cards := make([]int, k)
	size := 1
	for i, v := range f.Vars {
		cards[i] = card(v)
		size *= cards[i]
	}
	table := f.Table
	if f.Kind != model.Dense {
		if size > 1<<24 {
			return nil, fmt.Errorf("a %s factor over %d variables (%d entries) with an observed variable: too large to condition", f.Kind, k, size)
		}
		local := model.New(cards)
		g := *f
		g.Vars = make([]int, k)
		for i := range g.Vars {
			g.Vars[i] = i
		}
		local.Factors = []model.Factor{g}
		table = local.DenseTable(0)
	}
	// Strides of the scope, last variable fastest; the free variables'
	// odometer walks the sliced table in its own order.
	stride := make([]int, k)
	for i, s := k-1, 1; i >= 0; i-- {
		stride[i], s = s, s*cards[i]
	}
	base := 0
	var free, fcards, fstride []int
	for i, v := range f.Vars {
		if s, ok := ev[v]; ok {
			base += s * stride[i]
		} else {
			free, fcards, fstride = append(free, v), append(fcards, cards[i]), append(fstride, stride[i])
		}
	}
	n := 1
	for _, c := range fcards {
		n *= c
	}
	out := make([]float64, n)
	digit := make([]int, len(free))
	idx := base
	for e := range out {
		out[e] = table[idx]
		for i := len(digit) - 1; i >= 0; i-- {
			digit[i]++
			idx += fstride[i]
			if digit[i] < fcards[i] {
				break
			}
			idx -= digit[i] * fstride[i]
			digit[i] = 0
		}
	}
	if free == nil {
		free = []int{}
	}
	return &model.Factor{Kind: model.Dense, Vars: free, Table: out}, nil
}
