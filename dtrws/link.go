package dtrws

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/trws"
)

// StepIn is one order to a part, in flat slices. A part does, in this
// order: Keep, the evaluation of States, the multiplier changes Delta, and
// Iters TRW-S iterations.
type StepIn struct {
	// Delta holds the changes of the multipliers of the part's boundary
	// copies (in the part's boundary order, each copy's states in turn),
	// added to their unaries before the passes; nil: none.
	Delta []float64
	// Iters is the number of TRW-S iterations to run (0: none, an
	// evaluation only).
	Iters int
	// Keep: the candidate the part evaluated last is the best assignment
	// so far (the coordinator learnt so from the scores): the part keeps
	// its labels (Labels returns them).
	Keep bool
	// States, when not nil, is a candidate's boundary: one state per
	// boundary copy. The part completes it with its interior (its last
	// forward pass's labels, or with Polish its kept best), moves the
	// interior by Sweeps sweeps of ICM with the boundary fixed, and
	// reports the candidate's score on its share of the model (Score) and
	// the local scores of its boundary copies (Local).
	States []int32
	Polish bool
	Sweeps int
}

// StepOut is a part's answer to a step.
type StepOut struct {
	// Bound is an upper bound on the part's maximum at its current
	// unaries: the lowest bound of the step's passes (+Inf: no pass).
	Bound float64
	// Beliefs are the reparameterised unaries hat_v of the boundary
	// copies after the last pass, flat like StepIn.Delta; Chains their
	// chain counts n_v. Empty when the step ran no pass.
	Beliefs []float64
	Chains  []int32
	// Score is the part's score (its factors, its unaries and unary
	// shares, no multiplier) of the evaluated candidate; Local, flat like
	// Beliefs, the score of each state of every boundary copy in the part
	// with the rest of the candidate fixed. Set when StepIn.States is.
	Score float64
	Local []float64
}

// Link is a part as the coordinator sees it. LocalLink runs it in
// process; a cluster transport may carry the same slices to a worker.
type Link interface {
	// Step runs one order.
	Step(ctx context.Context, in *StepIn, out *StepOut) error
	// Labels returns the part's kept best assignment (local order).
	Labels(ctx context.Context) ([]int32, error)
}

// LocalLink is a part run in process: trws.Part for the passes and for
// the candidates' ICM and scores (on the part's model, read from the
// Part's flat edges).
type LocalLink struct {
	m        *model.Model
	part     *trws.Part
	boundary []int32 // local indices of the boundary copies
	isB      []bool
	width    int
	cand     []int
	best     []int32
	hasCand  bool
	hasBest  bool
	// candOpt, bestOpt: the candidate, the kept best, is a local optimum
	// of ICM with the boundary fixed (its sweeps ended before their
	// budget), so that a polish from the best with some boundary states
	// changed visits their neighbourhoods first, not the part
	// (trws.Part.SweepsNear).
	candOpt, bestOpt bool
	changed          []int
}

// NewLocalLink prepares TRW-S on a part's model with the given boundary
// copies (local indices, distinct).
func NewLocalLink(m *model.Model, boundary []int32) (*LocalLink, error) {
	return newLocalLink(m, boundary, func(watch []int) (*trws.Part, error) { return trws.NewPart(m, watch) })
}

// NewLocalLinkPotts is NewLocalLink on a part whose factors are all Potts,
// given flat (trws.NewPartPotts: term a scores w[a] when variables i[a]
// and j[a] agree; m holds the unaries and no factors): the same link. It
// takes m.Unary as its own (the multipliers are added to it, not to a
// copy): the caller leaves it alone after.
func NewLocalLinkPotts(m *model.Model, i, j []int32, w []float64, boundary []int32) (*LocalLink, error) {
	return newLocalLink(m, boundary, func(watch []int) (*trws.Part, error) { return trws.NewPartPotts(m, i, j, w, watch) })
}

// newLocalLink is a link on the part that newPart makes watching the
// boundary copies.
func newLocalLink(m *model.Model, boundary []int32, newPart func(watch []int) (*trws.Part, error)) (*LocalLink, error) {
	watch := make([]int, len(boundary))
	isB := make([]bool, m.NumVars())
	width := 0
	for i, v := range boundary {
		if v < 0 || int(v) >= m.NumVars() || isB[v] {
			return nil, fmt.Errorf("dtrws: part: boundary copy %d out of range or repeated", v)
		}
		isB[v] = true
		watch[i] = int(v)
		width += m.Cards[v]
	}
	p, err := newPart(watch)
	if err != nil {
		return nil, fmt.Errorf("dtrws: part: %w", err)
	}
	return &LocalLink{m: m, part: p, boundary: boundary, isB: isB, width: width,
		cand: make([]int, m.NumVars()), best: make([]int32, m.NumVars())}, nil
}

// Width is the length of the part's flat boundary slices (its copies'
// states).
func (l *LocalLink) Width() int { return l.width }

// Step implements Link.
func (l *LocalLink) Step(ctx context.Context, in *StepIn, out *StepOut) error {
	if in.Iters < 0 || in.Sweeps < 0 {
		return fmt.Errorf("dtrws: step of %d iterations and %d sweeps", in.Iters, in.Sweeps)
	}
	if in.Delta != nil && len(in.Delta) != l.width {
		return fmt.Errorf("dtrws: %d multiplier entries for %d boundary states", len(in.Delta), l.width)
	}
	if in.Keep {
		if !l.hasCand {
			return errors.New("dtrws: keep without an evaluated candidate")
		}
		for i, s := range l.cand {
			l.best[i] = int32(s)
		}
		l.hasBest, l.bestOpt = true, l.candOpt
	}
	out.Score, out.Local = math.Inf(-1), out.Local[:0]
	if in.States != nil {
		if err := l.evaluate(in, out); err != nil {
			return err
		}
	}
	if in.Delta != nil {
		off := 0
		for _, v := range l.boundary {
			k := l.m.Cards[v]
			l.part.AddUnary(int(v), in.Delta[off:off+k])
			off += k
		}
	}
	out.Bound = posInf
	out.Beliefs, out.Chains = out.Beliefs[:0], out.Chains[:0]
	if in.Iters == 0 {
		return nil
	}
	for it := 0; it < in.Iters; it++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		fb, bb, _ := l.part.Iterate()
		out.Bound = min(out.Bound, fb, bb)
	}
	out.Beliefs = resize(out.Beliefs, l.width)
	off := 0
	for _, v := range l.boundary {
		k := l.m.Cards[v]
		l.part.Belief(int(v), out.Beliefs[off:off+k])
		out.Chains = append(out.Chains, int32(l.part.Chains(int(v))))
		off += k
	}
	return nil
}

// evaluate completes the candidate's boundary with the part's interior,
// moves the interior by ICM with the boundary fixed (never a lower score
// of the part) and scores it.
func (l *LocalLink) evaluate(in *StepIn, out *StepOut) error {
	if len(in.States) != len(l.boundary) {
		return fmt.Errorf("dtrws: %d boundary states for %d copies", len(in.States), len(l.boundary))
	}
	if in.Polish && !l.hasBest {
		return errors.New("dtrws: polish without a kept assignment")
	}
	// Checked before the candidate is touched.
	for k, v := range l.boundary {
		if s := in.States[k]; s < 0 || int(s) >= l.m.Cards[v] {
			return fmt.Errorf("dtrws: boundary state %d of copy %d out of range [0,%d)", s, k, l.m.Cards[v])
		}
	}
	if in.Polish {
		for i, s := range l.best {
			l.cand[i] = int(s)
		}
	} else {
		copy(l.cand, l.part.Labels())
	}
	l.changed = l.changed[:0]
	for k, v := range l.boundary {
		s := in.States[k]
		if l.cand[v] != int(s) {
			l.changed = append(l.changed, int(v))
		}
		l.cand[v] = int(s)
	}
	// The boundary stays the coordinator's.
	if in.Polish && l.bestOpt {
		l.candOpt = l.part.SweepsNear(l.cand, in.Sweeps, l.isB, l.changed)
	} else {
		l.candOpt = l.part.Sweeps(l.cand, in.Sweeps, l.isB)
	}
	l.hasCand = true
	out.Score = l.part.Score(l.cand)
	out.Local = resize(out.Local, l.width)
	off := 0
	for _, v := range l.boundary {
		k := l.m.Cards[v]
		l.part.Scores(int(v), l.cand, out.Local[off:off+k])
		off += k
	}
	return nil
}

// Labels implements Link.
func (l *LocalLink) Labels(context.Context) ([]int32, error) {
	if !l.hasBest {
		return nil, errors.New("dtrws: no kept assignment")
	}
	return l.best, nil
}

func resize(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}
