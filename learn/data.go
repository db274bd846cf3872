package learn

import "fmt"

// Rows is a sparse matrix by rows: row r has the features Idx[Off[r]:Off[r+1]]
// (0-based feature indices) with values Val[...]. Off has one entry more
// than there are rows.
type Rows struct {
	Off []int
	Idx []int32
	Val []float64
}

// Len returns the number of rows.
func (r *Rows) Len() int { return len(r.Off) - 1 }

// Row returns row i's indices and values.
func (r *Rows) Row(i int) ([]int32, []float64) {
	return r.Idx[r.Off[i]:r.Off[i+1]], r.Val[r.Off[i]:r.Off[i+1]]
}

func (r *Rows) init() {
	if len(r.Off) == 0 {
		r.Off = []int{0}
	}
}

// add appends one row, its features sorted and repeated features summed
// (so that a row's squared norm is the sum of its squared values).
func (r *Rows) add(idx []int32, val []float64) {
	r.init()
	start := len(r.Idx)
	r.Idx = append(r.Idx, idx...)
	r.Val = append(r.Val, val...)
	ri, rv := r.Idx[start:], r.Val[start:]
	for i := 1; i < len(ri); i++ { // rows are short: insertion sort
		for j := i; j > 0 && ri[j] < ri[j-1]; j-- {
			ri[j], ri[j-1] = ri[j-1], ri[j]
			rv[j], rv[j-1] = rv[j-1], rv[j]
		}
	}
	n := 0
	for i := range ri {
		if n > 0 && ri[i] == ri[n-1] {
			rv[n-1] += rv[i]
			continue
		}
		ri[n], rv[n] = ri[i], rv[i]
		n++
	}
	r.Idx, r.Val = r.Idx[:start+n], r.Val[:start+n]
	r.Off = append(r.Off, len(r.Idx))
}

// SeqData is a sequence-labelling data set: tokens with sparse features and
// one label each, grouped into sentences.
type SeqData struct {
	Labels, Features int
	X                Rows    // one row per token
	Y                []int32 // the token's label, in [0, Labels)
	// Start has one entry per sentence and one more: sentence s covers
	// tokens Start[s]:Start[s+1] (never empty).
	Start []int
}

// Sentences returns the number of sentences.
func (d *SeqData) Sentences() int { return len(d.Start) - 1 }

// MLData is a multilabel data set: examples with sparse features and a set
// of positive labels each.
type MLData struct {
	Labels, Features int
	X                Rows // one row per example
	// YOff has one entry per example and one more: example i's positive
	// labels are Y[YOff[i]:YOff[i+1]], ascending, no duplicates.
	YOff []int
	Y    []int32
}

// Examples returns the number of examples.
func (d *MLData) Examples() int { return len(d.YOff) - 1 }

// Positive returns example i's positive labels.
func (d *MLData) Positive(i int) []int32 { return d.Y[d.YOff[i]:d.YOff[i+1]] }

// Kind is what a data set or weights file describes.
type Kind uint8

const (
	// KindSequence is sequence labelling: emissions and an L x L transition table.
	KindSequence Kind = iota + 1
	// KindMultilabel is multilabel classification: per-label unigram weights
	// and pairwise label interactions (score Pair[a*L+b] when labels a < b
	// are both on).
	KindMultilabel
)

func (k Kind) String() string {
	switch k {
	case KindSequence:
		return "sequence"
	case KindMultilabel:
		return "multilabel"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Weights are a model's parameters, flat. Emit is feature-major: the
// weight of feature f for label y is Emit[f*Labels+y] (a token's or an
// example's scores for all labels read contiguous rows). Trans (sequences)
// is L x L, Trans[a*L+b] scoring label a followed by label b. Pair
// (multilabel) is L x L with only a < b used: Pair[a*L+b] is added when
// labels a and b are both on.
type Weights struct {
	Kind             Kind
	Labels, Features int
	Emit             []float64
	Trans            []float64
	Pair             []float64
	// Dict, when not nil, is the feature dictionary of weights trained
	// on a tagged corpus (a CorpusSpec): saved with them, it maps unseen
	// text to these features and labels.
	Dict *FeatureDict
}

// NewWeights returns zero weights of the given shape.
func NewWeights(kind Kind, labels, features int) *Weights {
	w := &Weights{Kind: kind, Labels: labels, Features: features, Emit: make([]float64, labels*features)}
	switch kind {
	case KindSequence:
		w.Trans = make([]float64, labels*labels)
	case KindMultilabel:
		w.Pair = make([]float64, labels*labels)
	}
	return w
}

// Clone returns a deep copy.
func (w *Weights) Clone() *Weights {
	c := *w
	c.Emit = append([]float64(nil), w.Emit...)
	c.Trans = append([]float64(nil), w.Trans...)
	c.Pair = append([]float64(nil), w.Pair...)
	if w.Trans == nil {
		c.Trans = nil
	}
	if w.Pair == nil {
		c.Pair = nil
	}
	return &c
}

// SqNorm returns ||w||^2.
func (w *Weights) SqNorm() float64 {
	s := 0.0
	for _, v := range w.Emit {
		s += v * v
	}
	for _, v := range w.Trans {
		s += v * v
	}
	for a := 0; a < w.Labels && w.Pair != nil; a++ {
		for _, v := range w.Pair[a*w.Labels+a+1 : (a+1)*w.Labels] {
			s += v * v
		}
	}
	return s
}

// scores writes into out (len Labels) the emission scores <W_y, x> of a
// sparse row for every label y; features beyond the weights' are ignored.
func (w *Weights) scores(idx []int32, val []float64, out []float64) {
	L := w.Labels
	for y := range out[:L] {
		out[y] = 0
	}
	for k, f := range idx {
		if int(f) >= w.Features {
			continue
		}
		v := val[k]
		row := w.Emit[int(f)*L : int(f)*L+L]
		for y, e := range row {
			out[y] += v * e
		}
	}
}

// copyInto copies w into dst (allocating it when nil or of another shape)
// and returns it: the trainers keep their best weights without a new
// allocation per improvement.
func (w *Weights) copyInto(dst *Weights) *Weights {
	if dst == nil || dst.Kind != w.Kind || dst.Labels != w.Labels || dst.Features != w.Features {
		return w.Clone()
	}
	copy(dst.Emit, w.Emit)
	copy(dst.Trans, w.Trans)
	copy(dst.Pair, w.Pair)
	return dst
}

// reset returns w zeroed, or new zero weights when w is nil or of another
// shape.
func (w *Weights) reset(kind Kind, labels, features int) *Weights {
	if w == nil || w.Kind != kind || w.Labels != labels || w.Features != features {
		return NewWeights(kind, labels, features)
	}
	clear(w.Emit)
	clear(w.Trans)
	clear(w.Pair)
	return w
}
