package dtrws

import (
	"context"
	"fmt"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/trws"
)

// StepIn is one outer iteration's order to a part, in flat slices.
type StepIn struct {
	// Delta holds the changes of the multipliers of the part's boundary
	// copies (in the order of BoundaryLocal, each copy's states in turn),
	// added to their unaries before the passes; nil: none.
	Delta []float64
	// Iters is the number of TRW-S iterations to run (>= 1).
	Iters int
}

// StepOut is a part's answer to a step.
type StepOut struct {
	// Bound is an upper bound on the part's maximum at its current
	// unaries: the lowest bound of the step's passes.
	Bound float64
	// Beliefs are the reparameterised unaries hat_v of the boundary
	// copies after the last pass, flat like StepIn.Delta; Chains their
	// chain counts n_v.
	Beliefs []float64
	Chains  []int32
	// Labels is the part's last forward-pass labelling, local order.
	Labels []int32
}

// Link is a part as the coordinator sees it: a step in, a bound, the
// boundary beliefs and the labels out. LocalLink runs it in process; a
// cluster transport may carry the same slices to a worker.
type Link interface {
	Step(ctx context.Context, in *StepIn, out *StepOut) error
}

// LocalLink is a part run in process by trws.Part.
type LocalLink struct {
	part     *trws.Part
	boundary []int32 // local indices of the boundary copies
	cards    []int
}

// NewLocalLink prepares TRW-S on a part's model with the given boundary
// copies (local indices).
func NewLocalLink(m *model.Model, boundary []int32) (*LocalLink, error) {
	watch := make([]int, len(boundary))
	for i, v := range boundary {
		watch[i] = int(v)
	}
	p, err := trws.NewPart(m, watch)
	if err != nil {
		return nil, fmt.Errorf("dtrws: part: %w", err)
	}
	return &LocalLink{part: p, boundary: boundary, cards: m.Cards}, nil
}

// Step implements Link.
func (l *LocalLink) Step(ctx context.Context, in *StepIn, out *StepOut) error {
	if in.Iters < 1 {
		return fmt.Errorf("dtrws: step of %d iterations", in.Iters)
	}
	width := 0
	for _, v := range l.boundary {
		width += l.cards[v]
	}
	if in.Delta != nil {
		if len(in.Delta) != width {
			return fmt.Errorf("dtrws: %d multiplier entries for %d boundary states", len(in.Delta), width)
		}
		off := 0
		for _, v := range l.boundary {
			k := l.cards[v]
			l.part.AddUnary(int(v), in.Delta[off:off+k])
			off += k
		}
	}
	out.Bound = posInf
	for it := 0; it < in.Iters; it++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		fb, bb, _ := l.part.Iterate()
		out.Bound = min(out.Bound, fb, bb)
	}
	out.Beliefs = resize(out.Beliefs, width)
	out.Chains = out.Chains[:0]
	off := 0
	for _, v := range l.boundary {
		k := l.cards[v]
		l.part.Belief(int(v), out.Beliefs[off:off+k])
		out.Chains = append(out.Chains, int32(l.part.Chains(int(v))))
		off += k
	}
	x := l.part.Labels()
	out.Labels = out.Labels[:0]
	for _, s := range x {
		out.Labels = append(out.Labels, int32(s))
	}
	return nil
}

func resize(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}
