package learn

import (
	"context"
	"fmt"
	"time"

	"github.com/ddrun/ddrun/slaves"
)

// Accuracy is the outcome of Predict.
type Accuracy struct {
	// Accuracy is per token for sequences (tokens labelled right / tokens)
	// and Hamming accuracy for multilabel (label decisions right /
	// (examples x labels)); a true label the weights do not know counts as
	// one wrong decision.
	Accuracy float64 `json:"accuracy"`
	Examples int     `json:"examples"` // sentences or examples
	Seconds  float64 `json:"seconds"`
	Exact    bool    `json:"-"` // every decoding was proved optimal
}

// Predict decodes every example of d with w through the inference engine
// (sequences: the chain MAP of package slaves, column-generation Viterbi,
// with one chain per sentence length and thread over the shared transition
// table; multilabel: enumeration for few labels, else a model.Model solved
// by package exact) and compares with the true labels.
func Predict(ctx context.Context, w *Weights, d *Data, threads int) (Accuracy, error) {
	start := time.Now()
	if d.Kind() != w.Kind {
		return Accuracy{}, fmt.Errorf("weights are for %s, data are %s", w.Kind, d.Kind())
	}
	var n, total int
	if d.Seq != nil {
		n, total = d.Seq.Sentences(), len(d.Seq.Y)
	} else {
		n, total = d.ML.Examples(), d.ML.Examples()*w.Labels
	}
	if n == 0 {
		return Accuracy{}, fmt.Errorf("no examples")
	}
	if threads <= 0 {
		threads = 1
	}
	right := make([]int, max(1, min(threads, n)))
	inexact := make([]bool, len(right))
	err := parallel(n, threads, func(k, lo, hi int) error {
		if d.Seq != nil {
			right[k] = predictSeq(w, d.Seq, lo, hi)
			return nil
		}
		var sc MLScratch
		L := w.Labels
		for i := lo; i < hi; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			mlUnary(w, d.ML, i, false, &sc)
			_, ok, err := mlDecode(ctx, w, &sc)
			if err != nil {
				return err
			}
			inexact[k] = inexact[k] || !ok
			pos := d.ML.Positive(i)
			p, wrong := 0, 0
			for l := 0; l < L; l++ {
				truth := p < len(pos) && int(pos[p]) == l
				if truth {
					p++
				}
				if truth != sc.y[l] {
					wrong++
				}
			}
			wrong += len(pos) - p // labels the weights do not know
			right[k] += L - wrong
		}
		return nil
	})
	if err != nil {
		return Accuracy{}, err
	}
	acc := Accuracy{Examples: n, Exact: true}
	r := 0
	for k, v := range right {
		r += v
		acc.Exact = acc.Exact && !inexact[k]
	}
	acc.Accuracy = float64(r) / float64(total)
	acc.Seconds = time.Since(start).Seconds()
	return acc, nil
}

// predictSeq decodes sentences lo..hi with slaves.Chain and counts the
// tokens labelled right.
func predictSeq(w *Weights, d *SeqData, lo, hi int) int {
	chains := map[int]*slaves.Chain{}
	var sc SeqScratch
	var y []int
	right := 0
	for s := lo; s < hi; s++ {
		n := d.Start[s+1] - d.Start[s]
		c := chains[n]
		if c == nil {
			c = labelChain(n, w)
			chains[n] = c
		}
		theta := SeqEmissions(w, d, s, false, &sc)
		if cap(y) < n {
			y = make([]int, n)
		}
		y = y[:n]
		c.MAP(theta, y)
		for t := 0; t < n; t++ {
			if y[t] == int(d.Y[d.Start[s]+t]) {
				right++
			}
		}
	}
	return right
}
