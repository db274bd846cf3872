package convexmp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// stall runs convex max-product sweeps from lam = 0 until the dual stops
// decreasing.
func stall(t *testing.T, m *model.Model) (*problem, []float64, float64) {
	t.Helper()
	red, err := model.Reduce(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := buildProblem(red.Model, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	lam := make([]float64, p.lamSize)
	sc := newCMPScratch(p)
	q := p.dual(lam, sc.buf)
	for range 100000 {
		p.sweep(lam, sc)
		qn := p.dual(lam, sc.buf)
		if qn >= q-1e-13*(1+math.Abs(q)) {
			return p, lam, qn
		}
		q = qn
	}
	return p, lam, q
}

// TestEpsSubdifferentialQP checks the eps-descent machinery against the
// paper's claims at stall points of convex max-product: a direction the QP
// certifies lowers the dual by more than eps along the exact line search
// (Claim 2), and the line search beats a fine scan of the step; when 0 is
// in the set, q is within (|V|+|E|)*eps of the LP optimum and the beliefs
// are consistent with an LP value within (|V|+|E|)*eps of q (Corollary 2).
func TestEpsSubdifferentialQP(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	models := []*model.Model{frustratedTriangle()}
	for range 30 {
		models = append(models, integerModel(rng))
	}
	certified, zeros := 0, 0
	for k, m := range models {
		lpv := oracle.LP(t, m)
		p, lam, q := stall(t, m)
		qp := newQP(p)
		regions := float64(qp.numRegions())
		buf := make([]float64, p.maxTable+p.maxCard)
		for _, eps := range []float64{1, 0.1, 0.01, 1e-3} {
			qp.reset(lam, eps)
			res := qp.solve(5000, nil)
			switch {
			case res.cert:
				certified++
				tt := qp.lineSearch(res.norm2)
				along := func(s float64) float64 {
					l := make([]float64, len(lam))
					for j := range l {
						l[j] = lam[j] - s*qp.d[j]
					}
					return p.dual(l, buf)
				}
				qt := along(tt)
				if !(q-qt > eps) {
					t.Errorf("model %d eps %v: certified direction gains %v <= eps", k, eps, q-qt)
				}
				for s := 1; s <= 400; s++ {
					if v := along(tt * float64(s) / 200); v < qt-1e-9 {
						t.Errorf("model %d eps %v: step %v gives %v, line search %v gives %v", k, eps, tt*float64(s)/200, v, tt, qt)
						break
					}
				}
			case res.zero:
				zeros++
				if q-lpv > regions*eps+1e-9 {
					t.Errorf("model %d eps %v: 0 in the eps-subdifferential at q %v, LP %v", k, eps, q, lpv)
				}
				v := qp.beliefValue()
				if qp.residual() > 1e-6 || v > lpv+1e-6 || v < q-regions*eps-1e-6 {
					t.Errorf("model %d eps %v: beliefs residual %v value %v, q %v, LP %v", k, eps, qp.residual(), v, q, lpv)
				}
			}
		}
	}
	t.Logf("%d certified directions, %d zero sets", certified, zeros)
	if certified == 0 || zeros == 0 {
		t.Error("the stall points exercise neither case")
	}
}
