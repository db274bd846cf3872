package learn

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// bruteSeqHinge enumerates every labelling of sentence s.
func bruteSeqHinge(w *Weights, d *SeqData, s int) float64 {
	L := w.Labels
	t0, t1 := d.Start[s], d.Start[s+1]
	n := t1 - t0
	sc := make([]float64, L)
	score := func(y []int, aug bool) float64 {
		v := 0.0
		for t := 0; t < n; t++ {
			idx, val := d.X.Row(t0 + t)
			w.scores(idx, val, sc)
			v += sc[y[t]]
			if aug && y[t] != int(d.Y[t0+t]) {
				v++
			}
			if t+1 < n {
				v += w.Trans[y[t]*L+y[t+1]]
			}
		}
		return v
	}
	y := make([]int, n)
	truth := make([]int, n)
	for t := range truth {
		truth[t] = int(d.Y[t0+t])
	}
	best := math.Inf(-1)
	for {
		best = max(best, score(y, true))
		if !nextTuple(y, L) {
			break
		}
	}
	return best - score(truth, false)
}

func randomWeights(rng *rand.Rand, kind Kind, L, D int) *Weights {
	w := NewWeights(kind, L, D)
	for i := range w.Emit {
		w.Emit[i] = rng.NormFloat64()
	}
	for i := range w.Trans {
		w.Trans[i] = rng.NormFloat64()
	}
	for a := 0; a < L && w.Pair != nil; a++ {
		for b := a + 1; b < L; b++ {
			w.Pair[a*L+b] = rng.NormFloat64()
		}
	}
	return w
}

func TestSeqHingeMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d, _, _ := gen(t, GenSequence, SeqGenOptions{Labels: 3, Features: 6, Train: 20, Test: 1, MinLen: 1, MaxLen: 5, Seed: 4})
	var sc SeqScratch
	for it := 0; it < 5; it++ {
		w := randomWeights(rng, KindSequence, 3, 6)
		for s := 0; s < d.Sentences(); s++ {
			got, want := SeqHinge(w, d, s, &sc), bruteSeqHinge(w, d, s)
			if math.Abs(got-want) > 1e-9 {
				t.Fatalf("sentence %d: hinge %v, brute force %v", s, got, want)
			}
		}
	}
}

func TestMLHingeMatchesEngine(t *testing.T) {
	// Brute force (L <= MaxBruteLabels) against the branch and bound path
	// of the inference engine on the same problems, and both against a
	// plain enumeration of labelings.
	rng := rand.New(rand.NewPCG(5, 6))
	d, _, _ := gen(t, GenMultilabel, MLGenOptions{Labels: 7, Train: 15, Test: 1, Seed: 8})
	var sc MLScratch
	for it := 0; it < 3; it++ {
		w := randomWeights(rng, KindMultilabel, 7, d.Features)
		for i := 0; i < d.Examples(); i++ {
			h, ok, err := MLHinge(context.Background(), w, d, i, &sc)
			if err != nil || !ok {
				t.Fatal(err, ok)
			}
			// Plain enumeration.
			L := 7
			pos := d.Positive(i)
			s := make([]float64, L)
			idx, val := d.X.Row(i)
			w.scores(idx, val, s)
			truthOn := make([]bool, L)
			for _, y := range pos {
				truthOn[y] = true
			}
			score := func(on []bool, aug bool) float64 {
				v := 0.0
				for a := 0; a < L; a++ {
					if on[a] {
						v += s[a]
						for b := a + 1; b < L; b++ {
							if on[b] {
								v += w.Pair[a*L+b]
							}
						}
					}
					if aug && on[a] != truthOn[a] {
						v++
					}
				}
				return v
			}
			best := math.Inf(-1)
			on := make([]bool, L)
			for m := 0; m < 1<<L; m++ {
				for a := range on {
					on[a] = m>>a&1 == 1
				}
				best = max(best, score(on, true))
			}
			want := best - score(truthOn, false)
			if math.Abs(h-want) > 1e-9 {
				t.Fatalf("example %d: hinge %v, enumeration %v", i, h, want)
			}
			// The engine path on the same unaries.
			mlUnary(w, d, i, true, &sc)
			bb, _ := mlBruteCopy(w, &sc)
			eng, ok2, err := mlEngine(context.Background(), w, &sc)
			if err != nil || !ok2 || math.Abs(eng-bb) > 1e-6 {
				t.Fatalf("example %d: engine %v (proved %v, %v), brute force %v", i, eng, ok2, err, bb)
			}
		}
	}
}

func mlBruteCopy(w *Weights, sc *MLScratch) (float64, []bool) {
	v := mlBrute(w, sc)
	return v, append([]bool(nil), sc.y...)
}

func TestPlantedAccuracy(t *testing.T) {
	_, te, w := gen(t, GenSequence, SeqGenOptions{Labels: 45, Train: 1, Test: 60, Seed: 1})
	acc := plantedAccuracy(t, "sequence", w, &Data{Seq: te})
	// The chain MAP of slaves and the learn Viterbi agree: the planted
	// weights' decoding by Viterbi gives the same count.
	var sc SeqScratch
	right, total := 0, 0
	for s := 0; s < te.Sentences(); s++ {
		n := te.Start[s+1] - te.Start[s]
		th := SeqEmissions(w, te, s, false, &sc)
		y := make([]int32, n)
		Viterbi(th, w.Trans, n, 45, y, &sc)
		for k := range y {
			total++
			if y[k] == te.Y[te.Start[s]+k] {
				right++
			}
		}
	}
	if got := float64(right) / float64(total); math.Abs(got-acc) > 1e-12 {
		t.Errorf("Viterbi accuracy %v, slaves chain %v", got, acc)
	}
	_, mte, mw := gen(t, GenMultilabel, MLGenOptions{Labels: 12, Train: 1, Test: 80, Seed: 1})
	plantedAccuracy(t, "multilabel Hamming", mw, &Data{ML: mte})
}

// plantedAccuracy is the accuracy of the planted weights w on d (Predict),
// which must be above 0.9.
func plantedAccuracy(t *testing.T, what string, w *Weights, d *Data) float64 {
	t.Helper()
	acc, err := Predict(context.Background(), w, d, 2)
	if err != nil {
		t.Fatal(err)
	}
	if acc.Accuracy < 0.9 {
		t.Errorf("%s accuracy of the planted weights %.3f, want > 0.9", what, acc.Accuracy)
	}
	return acc.Accuracy
}

func TestPrimalNonNegativeHinge(t *testing.T) {
	tr, _, w, _ := GenSequence(SeqGenOptions{Labels: 4, Train: 10, Test: 1, Seed: 9})
	p, ok, err := Primal(context.Background(), w, &Data{Seq: tr}, 1, 2)
	if err != nil || !ok {
		t.Fatal(err)
	}
	if p < 0.5*w.SqNorm() {
		t.Fatalf("primal %v below the regulariser %v", p, 0.5*w.SqNorm())
	}
	z := NewWeights(KindSequence, 4, tr.Features)
	p0, _, _ := Primal(context.Background(), z, &Data{Seq: tr}, 1, 1)
	// w = 0: every hinge is the largest Hamming loss, the sentence length.
	if p0 != float64(len(tr.Y)) {
		t.Fatalf("primal at zero %v, want %d tokens", p0, len(tr.Y))
	}
}

// TestSeqHingeColGenMatchesViterbi checks the primal's column-generation
// path (large label counts) against the plain Viterbi hinge.
func TestSeqHingeColGenMatchesViterbi(t *testing.T) {
	L := ColGenLabels + 6
	d, _, w := gen(t, GenSequence, SeqGenOptions{Labels: L, Train: 30, Test: 1, MinLen: 1, MaxLen: 12, Seed: 7})
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range w.Emit {
		w.Emit[i] += 0.3 * rng.NormFloat64()
	}
	var sc SeqScratch
	var hc seqChains
	for s := 0; s < d.Sentences(); s++ {
		got, want := hc.hinge(w, d, s), SeqHinge(w, d, s, &sc)
		if math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
			t.Fatalf("sentence %d: column generation hinge %v, Viterbi %v", s, got, want)
		}
	}
}

// TestSparseViterbiMatchesViterbi checks the sparse recursion against the
// plain one on sparse tables with entries of both signs (ties included).
func TestSparseViterbiMatchesViterbi(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var sc SeqScratch
	for it := 0; it < 300; it++ {
		L := 1 + rng.IntN(30)
		n := 1 + rng.IntN(8)
		w := NewWeights(KindSequence, L, 1)
		for k := rng.IntN(L*L/16 + 1); k > 0; k-- {
			w.Trans[rng.IntN(L*L)] = float64(rng.IntN(7) - 3)
		}
		theta := make([]float64, n*L)
		for i := range theta {
			theta[i] = float64(rng.IntN(5)) * 0.5
		}
		var sv sparseViterbi
		if !sv.build(w) {
			continue
		}
		y := make([]int32, n)
		got := sv.viterbi(theta, n, y)
		yv := make([]int32, n)
		want := Viterbi(theta, w.Trans, n, L, yv, &sc)
		if got != want {
			t.Fatalf("it %d L %d n %d: sparse %v, plain %v", it, L, n, got, want)
		}
		score := theta[y[0]]
		for k := 1; k < n; k++ {
			score += theta[k*L+int(y[k])] + w.Trans[int(y[k-1])*L+int(y[k])]
		}
		if score != got {
			t.Fatalf("it %d: the decoded labels score %v, reported %v", it, score, got)
		}
	}
}
