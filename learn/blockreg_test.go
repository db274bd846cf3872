package learn

import (
	"context"
	"fmt"
	"testing"

	"github.com/ddrun/ddrun/slaves"
)

// BenchmarkColgenBlockReg measures the claim of Belanger et al. (2012,
// Sect. 4 and 6.2): weights trained with a strongly regularised
// transition block make column-generation Viterbi (slaves.Chain's MAP)
// faster. Planted sequences (45 and 200 labels) are trained by BCFW (20
// passes) with RegTrans 1, 10 and 100 (RegEmit 1); each sub-benchmark
// decodes the test set with plain Viterbi or with column generation and
// reports the test accuracy. Compare ns/op of colgen against viterbi at
// the same labels and RegTrans.
func BenchmarkColgenBlockReg(b *testing.B) {
	for _, L := range []int{45, 200} {
		tr, te, _ := gen(b, GenSequence, SeqGenOptions{Labels: L, Train: 200, Test: 100, Seed: 1})
		for _, rt := range []float64{1, 10, 100} {
			w, _, err := BCFW(context.Background(), &Data{Seq: tr}, Options{MaxIter: 20, EvalEvery: 20, RegTrans: rt})
			if err != nil {
				b.Fatal(err)
			}
			acc, err := Predict(context.Background(), w, &Data{Seq: te}, 1)
			if err != nil {
				b.Fatal(err)
			}
			// Emissions precomputed: the decoders alone are timed.
			var sc SeqScratch
			thetas := make([][]float64, te.Sentences())
			for s := range thetas {
				thetas[s] = append([]float64(nil), SeqEmissions(w, te, s, false, &sc)...)
			}
			chains := map[int]*slaves.Chain{}
			for s := range thetas {
				n := te.Start[s+1] - te.Start[s]
				if chains[n] == nil {
					cards := make([]int, n)
					trans := make([][]float64, n-1)
					for i := range cards {
						cards[i] = L
					}
					for i := range trans {
						trans[i] = w.Trans
					}
					chains[n] = slaves.NewChain(cards, nil, trans)
				}
			}
			y32 := make([]int32, 64)
			y := make([]int, 64)
			b.Run(fmt.Sprintf("L=%d/regtrans=%g/viterbi", L, rt), func(b *testing.B) {
				for b.Loop() {
					for s, th := range thetas {
						n := te.Start[s+1] - te.Start[s]
						Viterbi(th, w.Trans, n, L, y32[:n], &sc)
					}
				}
				b.ReportMetric(acc.Accuracy, "accuracy")
			})
			b.Run(fmt.Sprintf("L=%d/regtrans=%g/colgen", L, rt), func(b *testing.B) {
				for b.Loop() {
					for s, th := range thetas {
						n := te.Start[s+1] - te.Start[s]
						chains[n].MAP(th, y[:n])
					}
				}
				b.ReportMetric(acc.Accuracy, "accuracy")
			})
		}
	}
}
