package learn

import (
	"context"
	"math"
	"math/bits"
	"slices"
	"testing"
)

func tinySeq(t *testing.T, seed int64) *SeqData {
	t.Helper()
	tr, _, _ := gen(t, GenSequence, SeqGenOptions{Labels: 3, Features: 5, Train: 4, Test: 1, MinLen: 1, MaxLen: 3, LabelFeatures: 2, TokenFeatures: 2, Noise: 0.3, Emission: 1, Transition: 1, Seed: seed})
	return tr
}

// checkRun trains with tr and checks each evaluation against the
// independently computed bracket [lo, hi] of the optimum: the dual is a
// lower bound, the primal an upper one, the reported gap bounds the true
// gap; it returns the final result.
func checkRun(t *testing.T, name string, tr Trainer, d *Data, o Options, lo, hi float64) Result {
	t.Helper()
	var first Result
	n := 0
	o.Progress = func(r Result) {
		if n == 0 {
			first = r
		}
		n++
		if r.Dual > hi+1e-6 {
			t.Errorf("%s: dual %v above the optimum %v", name, r.Dual, hi)
		}
		if r.Primal < lo-1e-6 {
			t.Errorf("%s: primal %v below the optimum %v", name, r.Primal, lo)
		}
		if !math.IsInf(r.Dual, -1) && r.Gap < r.Primal-hi-1e-6 {
			t.Errorf("%s: gap %v below the true gap %v", name, r.Gap, r.Primal-hi)
		}
	}
	w, res, err := tr(context.Background(), d, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Primal > first.Primal {
		t.Errorf("%s: primal rose from %v to %v", name, first.Primal, res.Primal)
	}
	if p, _, _ := Primal(context.Background(), w, d, o.C, 1); math.Abs(p-res.Primal) > 1e-9*max(1, p) {
		t.Errorf("%s: reported primal %v, weights' primal %v", name, res.Primal, p)
	}
	return res
}

func TestBCFWAndSSGReachTheOptimumSeq(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		tr := tinySeq(t, seed)
		d := &Data{Seq: tr}
		const C = 1.0
		lo, hi := ssvmOptimum(t, tr, C, 1e-4)
		res := checkRun(t, "bcfw", BCFW, d, Options{C: C, MaxIter: 3000, EvalEvery: 10, Seed: seed}, lo, hi)
		if res.Gap > 2e-3*max(1, hi) || res.Primal > hi+1e-3*max(1, hi) {
			t.Errorf("seed %d bcfw: primal %v gap %v after %d passes, optimum %v", seed, res.Primal, res.Gap, res.Iterations, hi)
		}
		for _, avg := range []bool{false, true} {
			res := checkRun(t, "ssg", SSG, d, Options{C: C, MaxIter: 2000, EvalEvery: 100, Seed: seed, Average: avg}, lo, hi)
			if res.Primal > hi+2e-2*max(1, hi) || math.IsInf(res.Dual, -1) || res.Gap > 0.2*max(1, hi) {
				t.Errorf("seed %d ssg average %v: primal %v dual %v after %d passes, optimum %v", seed, avg, res.Primal, res.Dual, res.Iterations, hi)
			}
		}
	}
}

// mlOptimum is the bracket of the structural SVM optimum of a tiny
// multilabel data set, by the same enumerated-labelling dual solver as
// ssvmOptimum (dense joint features: x (x) y, then y_a y_b for a < b).
func mlOptimum(t *testing.T, d *MLData, C, tol float64) (lo, hi float64) {
	L, D := d.Labels, d.Features
	dim := L*D + L*L
	phi := func(i int, y uint) []float64 {
		v := make([]float64, dim)
		idx, val := d.X.Row(i)
		for a := 0; a < L; a++ {
			if y>>a&1 == 0 {
				continue
			}
			for j, f := range idx {
				v[int(f)*L+a] += val[j]
			}
			for b := a + 1; b < L; b++ {
				if y>>b&1 == 1 {
					v[L*D+a*L+b]++
				}
			}
		}
		return v
	}
	var all [][]labelling
	for i := 0; i < d.Examples(); i++ {
		truth := uint(0)
		for _, y := range d.Positive(i) {
			truth |= 1 << y
		}
		pt := phi(i, truth)
		var labs []labelling
		for y := uint(0); y < 1<<L; y++ {
			p := phi(i, y)
			for k := range p {
				p[k] = pt[k] - p[k]
			}
			labs = append(labs, labelling{p, float64(bits.OnesCount(y ^ truth))})
		}
		all = append(all, labs)
	}
	return referenceEnumerated(t, all, dim, C, tol, 100000)
}

func TestBCFWAndSSGReachTheOptimumML(t *testing.T) {
	for seed := int64(1); seed <= 2; seed++ {
		tr, _, _ := gen(t, GenMultilabel, MLGenOptions{Labels: 4, Features: 4, Train: 5, Test: 1, LabelFeatures: 1, ExampleFeatures: 1, MeanLabels: 1.5, Noise: 0.3, Emission: 1, Interaction: 1, Seed: seed})
		d := &Data{ML: tr}
		const C = 1.0
		lo, hi := mlOptimum(t, tr, C, 1e-4)
		res := checkRun(t, "bcfw ml", BCFW, d, Options{C: C, MaxIter: 3000, EvalEvery: 10, Seed: seed}, lo, hi)
		if res.Gap > 1e-3*max(1, hi) {
			t.Errorf("seed %d bcfw ml: primal %v gap %v, optimum %v", seed, res.Primal, res.Gap, hi)
		}
		res = checkRun(t, "ssg ml", SSG, d, Options{C: C, MaxIter: 2000, EvalEvery: 100, Seed: seed, Average: true}, lo, hi)
		if res.Primal > hi+2e-2*max(1, hi) {
			t.Errorf("seed %d ssg ml: primal %v, optimum %v", seed, res.Primal, hi)
		}
	}
}

func TestTrainersDeterministic(t *testing.T) {
	tr, _, _ := gen(t, GenSequence, SeqGenOptions{Labels: 5, Train: 20, Test: 1, Seed: 4})
	d := &Data{Seq: tr}
	for _, a := range []Trainer{BCFW, SSG} {
		o := Options{MaxIter: 3, Seed: 7, Average: true, RegTrans: 3}
		w1, r1, err1 := a(context.Background(), d, o)
		w2, r2, err2 := a(context.Background(), d, o)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		r1.Seconds, r2.Seconds = 0, 0
		r1.PassSeconds, r2.PassSeconds, r1.PassCPUSeconds, r2.PassCPUSeconds = 0, 0, 0, 0
		if r1 != r2 || !slices.Equal(w1.Emit, w2.Emit) || !slices.Equal(w1.Trans, w2.Trans) {
			t.Errorf("%s: two runs with seed 7 differ: %+v, %+v", r1.Algo, r1, r2)
		}
	}
}

// TestBlockRegularization checks the block-regularized objective on the
// weights returned (computed directly by BlockPrimal) and against the
// optimum of the rescaled problem solved by the reference solver.
func TestBlockRegularization(t *testing.T) {
	tr := tinySeq(t, 2)
	d := &Data{Seq: tr}
	const C, re, rt = 1.0, 0.5, 8.0
	k := math.Sqrt(rt / re)
	lo, hi := ssvmOptimum(t, scaleFeatures(d, k).Seq, C/rt, 1e-4/rt)
	lo, hi = lo*rt, hi*rt
	var plainT float64
	for _, rtrans := range []float64{1, rt} {
		o := Options{C: C, MaxIter: 400, RegEmit: re, RegTrans: rtrans}
		for _, a := range []Algorithm{Algorithms[0], Algorithms[1], Algorithms[2]} {
			oo := o
			if a.Name == "ssg" {
				oo.MaxIter, oo.EvalEvery, oo.Average = 2000, 100, true
			}
			w, res, err := a.Train(context.Background(), d, oo)
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := BlockPrimal(context.Background(), w, d, oo)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p-res.Primal) > 1e-9*max(1, p) {
				t.Errorf("%s reg %v/%v: reported primal %v, direct %v", a.Name, re, rtrans, res.Primal, p)
			}
			tt := 0.0
			for _, v := range w.Trans {
				tt += v * v
			}
			if rtrans == 1 {
				if a.Name == "bcfw" {
					plainT = tt
				}
				continue
			}
			if res.Dual > hi+1e-6 || p < lo-1e-6 {
				t.Errorf("%s: primal %v dual %v outside the optimum [%v, %v]", a.Name, p, res.Dual, lo, hi)
			}
			tol := 1e-3
			if a.Name == "ssg" {
				tol = 3e-2
			}
			if p > hi+tol*max(1, hi) {
				t.Errorf("%s: block primal %v, optimum %v", a.Name, p, hi)
			}
			if a.Name == "bcfw" && !(tt < plainT) {
				t.Errorf("transition norm %v with RegTrans %v, %v without", tt, rt, plainT)
			}
		}
	}
}

// TestBCFWBatchedPass: with two threads a pass runs in mini-batches
// (oracles at one w, steps in order): every evaluation's dual is a lower
// bound (below the primal) and never decreases, each run's primal is
// above the other's dual (both bound one optimum), and both close the gap
// to within 1% in 400 passes.
func TestBCFWBatchedPass(t *testing.T) {
	tr, _, _ := gen(t, GenSequence, SeqGenOptions{Labels: 6, Features: 30, Train: 200, Test: 1, MinLen: 2, MaxLen: 6, LabelFeatures: 2, TokenFeatures: 2, Noise: 0.2, Emission: 1, Transition: 1, Seed: 3})
	d := &Data{Seq: tr}
	var res [2]Result
	for k, threads := range []int{1, 2} {
		lastDual := math.Inf(-1)
		o := Options{C: 1, MaxIter: 400, Tol: 1e-7, EvalEvery: 10, Threads: threads, Seed: 5}
		o.Progress = func(r Result) {
			if r.Dual > r.Primal+1e-9 || r.Dual < lastDual {
				t.Errorf("threads %d pass %d: dual %v (before %v), primal %v", threads, r.Iterations, r.Dual, lastDual, r.Primal)
			}
			lastDual = r.Dual
		}
		_, r, err := BCFW(context.Background(), d, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Gap > 1e-2*r.Primal {
			t.Errorf("threads %d: gap %v of primal %v after %d passes", threads, r.Gap, r.Primal, r.Iterations)
		}
		res[k] = r
	}
	if res[0].Primal < res[1].Dual-1e-9 || res[1].Primal < res[0].Dual-1e-9 {
		t.Errorf("sequential [%v, %v] and batched [%v, %v] bound no common optimum", res[0].Dual, res[0].Primal, res[1].Dual, res[1].Primal)
	}
}

// TestSSGBatchedPass: with two threads SSG's pass runs in mini-batches
// (the batch's oracles at one w, its subgradient steps in order): on the
// same data as TestBCFWBatchedPass its primal after 300 passes is within
// 2% of BCFW's certified optimum bracket, as the sequential pass's is,
// and the two primals differ by under 1%.
func TestSSGBatchedPass(t *testing.T) {
	tr, _, _ := gen(t, GenSequence, SeqGenOptions{Labels: 6, Features: 30, Train: 200, Test: 1, MinLen: 2, MaxLen: 6, LabelFeatures: 2, TokenFeatures: 2, Noise: 0.2, Emission: 1, Transition: 1, Seed: 3})
	d := &Data{Seq: tr}
	_, ref, err := BCFW(context.Background(), d, Options{C: 1, MaxIter: 2000, Tol: 1e-6, EvalEvery: 20, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	var p [2]float64
	for k, threads := range []int{1, 2} {
		_, r, err := SSG(context.Background(), d, Options{C: 1, MaxIter: 300, EvalEvery: 300, Threads: threads, Seed: 5, Average: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.Primal < ref.Dual-1e-9 || r.Primal > 1.02*ref.Primal {
			t.Errorf("threads %d: primal %v after %d passes, optimum in [%v, %v]", threads, r.Primal, r.Iterations, ref.Dual, ref.Primal)
		}
		p[k] = r.Primal
	}
	if math.Abs(p[0]-p[1]) > 1e-2*p[0] {
		t.Errorf("sequential primal %v, batched %v", p[0], p[1])
	}
}
