package learn

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
)

// SeqGenOptions shape a planted sequence-labelling data set.
type SeqGenOptions struct {
	Labels, Features int     // Features 0: max(100, 4*Labels)
	Train, Test      int     // sentences
	MinLen, MaxLen   int     // sentence length, uniform (defaults 5 and 20)
	LabelFeatures    int     // features owned by each label (default 4)
	TokenFeatures    int     // features drawn per token (default 3)
	Emission         float64 // emission strength: the planted weight of a label's own feature (default 2)
	Transition       float64 // transition strength: logits ~ Transition * N(0,1) (default 1)
	Noise            float64 // probability that a token's feature is drawn uniformly instead of from its label's own (default 0.1)
	Seed             int64
}

func (o *SeqGenOptions) defaults() error {
	o.Features = cmp.Or(o.Features, max(100, 4*o.Labels))
	o.MinLen = cmp.Or(o.MinLen, 5)
	o.MaxLen = cmp.Or(o.MaxLen, max(20, o.MinLen))
	o.LabelFeatures = cmp.Or(o.LabelFeatures, 4)
	o.TokenFeatures = cmp.Or(o.TokenFeatures, 3)
	switch {
	case o.Labels < 2 || o.Labels > 1<<14:
		return fmt.Errorf("labels %d: want 2..%d", o.Labels, 1<<14)
	case o.Features < 1 || o.Labels*o.Features > MaxWeights:
		return fmt.Errorf("features %d: want 1..%d for %d labels", o.Features, MaxWeights/o.Labels, o.Labels)
	case o.Train < 0 || o.Test < 0 || o.Train+o.Test == 0:
		return fmt.Errorf("train %d, test %d: want non-negative counts, not both zero", o.Train, o.Test)
	case o.MinLen < 1 || o.MaxLen < o.MinLen:
		return fmt.Errorf("length %d..%d: want 1 <= min <= max", o.MinLen, o.MaxLen)
	case o.LabelFeatures < 1 || o.LabelFeatures > o.Features || o.TokenFeatures < 1:
		return fmt.Errorf("label features %d, token features %d: want >= 1 (label features <= features)", o.LabelFeatures, o.TokenFeatures)
	case !(o.Noise >= 0 && o.Noise <= 1) || !(o.Emission >= 0) || !(o.Transition >= 0) || math.IsInf(o.Emission, 0) || math.IsInf(o.Transition, 0):
		return fmt.Errorf("noise %v, emission %v, transition %v: want noise in [0,1] and finite non-negative strengths", o.Noise, o.Emission, o.Transition)
	}
	return nil
}

// GenSequence returns planted training and test sentences and the planted
// weights. Each label owns LabelFeatures random features; the planted
// emission weight of an owned feature is Emission, the planted transitions
// are logits Transition * N(0,1). A sentence's labels are a Markov chain
// (first label uniform, next label ~ softmax of the current label's
// transition row); each token draws TokenFeatures features (value 1), each
// one of its label's own with probability 1-Noise, else uniform over all
// features. Equal options and seed give equal data.
func GenSequence(o SeqGenOptions) (train, test *SeqData, planted *Weights, err error) {
	if o.Emission == 0 && o.Transition == 0 && o.Noise == 0 {
		o.Emission, o.Transition, o.Noise = 2, 1, 0.1
	}
	if err := o.defaults(); err != nil {
		return nil, nil, nil, fmt.Errorf("gen sequence: %w", err)
	}
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x5e9))
	L, D := o.Labels, o.Features
	w := NewWeights(KindSequence, L, D)
	own := make([]int32, L*o.LabelFeatures)
	for y := 0; y < L; y++ {
		for k := 0; k < o.LabelFeatures; k++ {
			f := int32(rng.IntN(D))
			own[y*o.LabelFeatures+k] = f
			w.Emit[int(f)*L+y] = o.Emission
		}
	}
	cum := make([]float64, L*L) // cumulative transition probabilities per row
	for a := 0; a < L; a++ {
		row := w.Trans[a*L : a*L+L]
		mx := math.Inf(-1)
		for b := range row {
			row[b] = o.Transition * rng.NormFloat64()
			mx = max(mx, row[b])
		}
		s := 0.0
		for b, v := range row {
			s += math.Exp(v - mx)
			cum[a*L+b] = s
		}
		for b := range row {
			cum[a*L+b] /= s
		}
	}
	gen := func(n int) *SeqData {
		d := &SeqData{Labels: L, Features: D, Start: []int{0}}
		d.X.init()
		idx := make([]int32, o.TokenFeatures)
		val := make([]float64, o.TokenFeatures)
		for s := 0; s < n; s++ {
			n := o.MinLen + rng.IntN(o.MaxLen-o.MinLen+1)
			y := rng.IntN(L)
			for t := 0; t < n; t++ {
				if t > 0 {
					u := rng.Float64()
					row := cum[y*L : y*L+L]
					nb := 0
					for nb < L-1 && row[nb] < u {
						nb++
					}
					y = nb
				}
				for k := range idx {
					if rng.Float64() < o.Noise {
						idx[k] = int32(rng.IntN(D))
					} else {
						idx[k] = own[y*o.LabelFeatures+rng.IntN(o.LabelFeatures)]
					}
					val[k] = 1
				}
				d.X.add(idx, val)
				d.Y = append(d.Y, int32(y))
			}
			d.Start = append(d.Start, len(d.Y))
		}
		return d
	}
	return gen(o.Train), gen(o.Test), w, nil
}

// MLGenOptions shape a planted multilabel data set.
type MLGenOptions struct {
	Labels, Features int     // Features 0: max(100, 4*Labels) (feature 1 is a bias, always 1)
	Train, Test      int     // examples
	LabelFeatures    int     // features owned by each label (default 4)
	ExampleFeatures  int     // features drawn per positive label (default 3)
	MeanLabels       float64 // mean number of positive labels (default 3)
	Emission         float64 // planted weight of an owned feature (default 2)
	Interaction      float64 // planted pair weight of a label and its partner (default 1)
	Noise            float64 // probability that a drawn feature is uniform (default 0.1)
	Seed             int64
}

// GenMultilabel returns planted training and test examples and the planted
// weights. Each label owns LabelFeatures features (planted weight
// Emission) and has a partner label (planted pair weight Interaction); the
// bias feature (feature 1 in the files) has weight -Emission*ExampleFeatures/2
// for every label. An example's positive set starts with a uniform label;
// while a coin with probability 1-1/MeanLabels comes up, one more label
// joins: the last one's partner with probability 1/2, else uniform. Each
// positive label draws ExampleFeatures features (value 1), each its own
// with probability 1-Noise, else uniform.
func GenMultilabel(o MLGenOptions) (train, test *MLData, planted *Weights, err error) {
	if o.Emission == 0 && o.Interaction == 0 && o.Noise == 0 {
		o.Emission, o.Interaction, o.Noise = 2, 1, 0.1
	}
	o.Features = cmp.Or(o.Features, max(100, 4*o.Labels))
	o.LabelFeatures = cmp.Or(o.LabelFeatures, 4)
	o.ExampleFeatures = cmp.Or(o.ExampleFeatures, 3)
	o.MeanLabels = cmp.Or(o.MeanLabels, 3)
	switch {
	case o.Labels < 2 || o.Labels > 1<<14:
		err = fmt.Errorf("labels %d: want 2..%d", o.Labels, 1<<14)
	case o.Features < 2 || o.Labels*o.Features > MaxWeights:
		err = fmt.Errorf("features %d: want 2..%d for %d labels", o.Features, MaxWeights/o.Labels, o.Labels)
	case o.Train < 0 || o.Test < 0 || o.Train+o.Test == 0:
		err = fmt.Errorf("train %d, test %d: want non-negative counts, not both zero", o.Train, o.Test)
	case o.LabelFeatures < 1 || o.LabelFeatures >= o.Features || o.ExampleFeatures < 1:
		err = fmt.Errorf("label features %d, example features %d: want >= 1 (label features < features)", o.LabelFeatures, o.ExampleFeatures)
	case !(o.MeanLabels >= 1) || math.IsInf(o.MeanLabels, 0):
		err = fmt.Errorf("mean labels %v: want >= 1", o.MeanLabels)
	case !(o.Noise >= 0 && o.Noise <= 1) || !(o.Emission >= 0) || !(o.Interaction >= 0) || math.IsInf(o.Emission, 0) || math.IsInf(o.Interaction, 0):
		err = fmt.Errorf("noise %v, emission %v, interaction %v: want noise in [0,1] and finite non-negative strengths", o.Noise, o.Emission, o.Interaction)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("gen multilabel: %w", err)
	}
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x3117))
	L, D := o.Labels, o.Features
	w := NewWeights(KindMultilabel, L, D)
	own := make([]int32, L*o.LabelFeatures)
	for y := 0; y < L; y++ {
		w.Emit[y] = -o.Emission * float64(o.ExampleFeatures) / 2 // bias, feature 0
		for k := 0; k < o.LabelFeatures; k++ {
			f := int32(1 + rng.IntN(D-1))
			own[y*o.LabelFeatures+k] = f
			w.Emit[int(f)*L+y] = o.Emission
		}
	}
	partner := rng.Perm(L)
	for a, b := range partner {
		if a != b && o.Interaction != 0 {
			w.Pair[min(a, b)*L+max(a, b)] = o.Interaction
		}
	}
	gen := func(n int) *MLData {
		d := &MLData{Labels: L, Features: D, YOff: []int{0}}
		d.X.init()
		var ys []int32
		idx := []int32{}
		val := []float64{}
		for i := 0; i < n; i++ {
			ys = ys[:0]
			y := rng.IntN(L)
			ys = append(ys, int32(y))
			for rng.Float64() < 1-1/o.MeanLabels && len(ys) < L {
				if rng.IntN(2) == 0 {
					y = partner[y]
				} else {
					y = rng.IntN(L)
				}
				dup := false
				for _, z := range ys {
					dup = dup || int(z) == y
				}
				if !dup {
					ys = append(ys, int32(y))
				}
			}
			sortInt32(ys)
			idx, val = append(idx[:0], 0), append(val[:0], 1)
			for _, y := range ys {
				for k := 0; k < o.ExampleFeatures; k++ {
					f := own[int(y)*o.LabelFeatures+rng.IntN(o.LabelFeatures)]
					if rng.Float64() < o.Noise {
						f = int32(1 + rng.IntN(D-1))
					}
					idx = append(idx, f)
					val = append(val, 1)
				}
			}
			d.X.add(idx, val)
			d.Y = append(d.Y, ys...)
			d.YOff = append(d.YOff, len(d.Y))
		}
		return d
	}
	return gen(o.Train), gen(o.Test), w, nil
}
