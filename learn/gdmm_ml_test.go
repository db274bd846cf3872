package learn

import (
	"context"
	"math"
	"testing"
)

// lpSSVMOptimum solves the LP-relaxed structural SVM (Yen et al. eq. 5) of
// a tiny multilabel data set independently of GDMM: block-coordinate
// Frank-Wolfe on its dual over the scaled local polytopes, the linear
// oracle by enumeration of the half-integral node marginals {0,1/2,1}^L
// (pair marginals at their best given the nodes), until the certified gap
// (enumerated LP primal minus dual) is below tol. It returns [dual, primal].
func lpSSVMOptimum(t *testing.T, d *MLData, C, tol float64) (lo, hi float64) {
	L, D := d.Labels, d.Features
	dim := L*D + L*L
	n := d.Examples()
	truth := make([][]float64, n)
	for i := range truth {
		truth[i] = make([]float64, L)
		for _, y := range d.Positive(i) {
			truth[i][y] = 1
		}
	}
	// phi of node marginals mu and pair marginals q (q[a*L+b], a < b).
	phi := func(i int, mu, q []float64) []float64 {
		v := make([]float64, dim)
		idx, val := d.X.Row(i)
		for l := 0; l < L; l++ {
			for j, f := range idx {
				v[int(f)*L+l] += mu[l] * val[j]
			}
		}
		for a := 0; a < L; a++ {
			for b := a + 1; b < L; b++ {
				v[L*D+a*L+b] += q[a*L+b]
			}
		}
		return v
	}
	qTruth := func(i int) []float64 {
		q := make([]float64, L*L)
		for a := 0; a < L; a++ {
			for b := a + 1; b < L; b++ {
				q[a*L+b] = truth[i][a] * truth[i][b]
			}
		}
		return q
	}
	phiTruth := make([][]float64, n)
	for i := range phiTruth {
		phiTruth[i] = phi(i, truth[i], qTruth(i))
	}
	// oracle: max over the local polytope of loss(mu) - <w, phi(truth) - phi(mu)>.
	oracle := func(w []float64, i int) (float64, []float64, float64) {
		best := math.Inf(-1)
		var bpsi []float64
		var bloss float64
		idx := make([]int, L)
		mu := make([]float64, L)
		q := make([]float64, L*L)
		for {
			loss := 0.0
			for l := range mu {
				mu[l] = float64(idx[l]) / 2
				loss += math.Abs(mu[l] - truth[i][l])
			}
			for a := 0; a < L; a++ {
				for b := a + 1; b < L; b++ {
					if w[L*D+a*L+b] > 0 {
						q[a*L+b] = min(mu[a], mu[b])
					} else {
						q[a*L+b] = max(0, mu[a]+mu[b]-1)
					}
				}
			}
			p := phi(i, mu, q)
			for j := range p {
				p[j] = phiTruth[i][j] - p[j]
			}
			if v := loss - dot(w, p); v > best {
				best, bpsi, bloss = v, p, loss
			}
			if !nextTuple(idx, 3) {
				break
			}
		}
		return best, bpsi, bloss
	}
	return referenceBCFW(t, n, dim, C, tol, 100000, oracle)
}

func TestGDMMMultilabelReachesTheOptimum(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		tr, _, _ := gen(t, GenMultilabel, MLGenOptions{Labels: 3, Features: 5, Train: 5, Test: 1, LabelFeatures: 2, ExampleFeatures: 2, MeanLabels: 2, Emission: 1, Interaction: 1, Noise: 0.3, Seed: seed})
		const C = 1.0
		lo, hi := lpSSVMOptimum(t, tr, C, 1e-3)
		for _, sub := range []bool{false, true} {
			var primals []float64
			o := Options{C: C, MaxIter: 3000, Tol: 1e-8, EvalEvery: 10, Sublinear: sub, SampleParts: 2, Progress: bracketed(t, seed, lo, hi, &primals)}
			_, res, err := GDMM(context.Background(), &Data{ML: tr}, o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Objective != ObjectiveLP {
				t.Errorf("objective %q", res.Objective)
			}
			t.Logf("seed %d sublinear %v: optimum [%v, %v], primal %v dual %v after %d passes", seed, sub, lo, hi, res.Primal, res.Dual, res.Iterations)
			if res.Primal > hi+1e-3*max(1, hi) {
				t.Errorf("seed %d sublinear %v: primal %v after %d passes, optimum %v", seed, sub, res.Primal, res.Iterations, hi)
			}
			if res.Gap > 1e-2*max(1, hi) {
				t.Errorf("seed %d sublinear %v: gap %v after %d passes (optimum %v, dual %v)", seed, sub, res.Gap, res.Iterations, hi, res.Dual)
			}
		}
	}
}

func mlBenchData(b *testing.B, L, n int) *MLData {
	tr, _, _ := gen(b, GenMultilabel, MLGenOptions{Labels: L, Train: n, Test: 1, Seed: 1})
	return tr
}

// BenchmarkGDMMMultilabelPass times one pass after 10 warm-up passes, and
// one LP-relaxed primal evaluation at that iterate.
func BenchmarkGDMMMultilabelPass(b *testing.B) {
	for _, L := range []int{200} {
		d := mlBenchData(b, L, 500)
		for _, sub := range []bool{false, true} {
			o := Options{C: 1, MaxIter: 1, Sublinear: sub}
			o.Validate()
			g := newGDMMML(d, o)
			for range 10 {
				g.pass()
			}
			name := "exact/L=" + itoa(L)
			if sub {
				name = "sublinear/L=" + itoa(L)
			}
			b.Run("pass/"+name, func(b *testing.B) {
				for b.Loop() {
					g.pass()
				}
			})
			b.Run("primalLP/"+name, func(b *testing.B) {
				for b.Loop() {
					PrimalLP(context.Background(), g.w, d, 1, 1, nil, 0)
				}
			})
		}
	}
}
