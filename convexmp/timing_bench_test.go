package convexmp

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// trajectory records (wall time since the solve was called, best dual)
// after every iteration of a run.
type trajectory struct {
	start time.Time
	t     []time.Duration
	dual  []float64
}

func (tr *trajectory) record(p solver.Progress) {
	tr.t = append(tr.t, time.Since(tr.start))
	tr.dual = append(tr.dual, p.Dual)
}

// reach returns the time and the 1-based index of the first record whose
// dual is within rel (relative) of opt; ok is false when none is.
func (tr *trajectory) reach(opt, rel float64) (time.Duration, int, bool) {
	for k, d := range tr.dual {
		if d-opt <= rel*math.Max(1, math.Abs(opt)) {
			return tr.t[k], k + 1, true
		}
	}
	return 0, 0, false
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// BenchmarkTimeToLPOptimum measures, on the paper's first experiment
// (Schwing et al. NIPS 2012, Sect. 6: 10x10 spin glasses, 3 states, N(0,1)
// unaries and couplings; 20 models from the seeds of TestSpinGlassExperiment)
// the wall time from calling the solver until its dual bound is within 1e-3
// (relative) of the LP optimum, for convex max-product with steepest
// eps-descent (this package, defaults) and for DD-ADMM (consensus.Solve,
// per-factor slaves, defaults but one thread, 50000 iterations at most,
// residual tolerance 1e-9). Both runs go on to convergence with a progress
// callback after every iteration; the LP optimum is the lower of their two
// final duals (each a valid upper bound on it), and eps-descent's Relaxed
// (the LP value of consistent beliefs, a lower bound) certifies it: the
// largest relative certificate gap is reported. Reported: the medians of
// both times, of their per-model ratio, and of the iterations to the
// threshold; models where a method never gets there are counted and left
// out of the ratio. For reference, plain convex max-product (no
// eps-descent, 10000 sweeps at most) is timed too: plain-missed counts the
// models where it stops above the threshold, plain-s is the median over
// the others.
func BenchmarkTimeToLPOptimum(b *testing.B) {
	const (
		n      = 20
		side   = 10
		seed   = 2012
		rel    = 1e-3
		budget = 30 * time.Second // per run
	)
	models := make([]*model.Model, n)
	for k := range models {
		models[k] = spinGlass(rand.New(rand.NewPCG(seed, uint64(k))), side, 3, false)
	}
	for b.Loop() {
		var tCMP, tADMM, ratio, itCMP, itADMM []float64
		var tPlain []float64
		missCMP, missADMM, missPlain := 0, 0, 0
		maxCert := 0.0
		for k, m := range models {
			oc := DefaultOptions()
			oc.EpsDescent = true
			oc.ProgressEvery = 0
			oc.TimeLimit = budget
			trc := &trajectory{start: time.Now()}
			rc, err := Solve(context.Background(), m, nil, oc, trc.record)
			if err != nil {
				b.Fatal(err)
			}
			oa := consensus.DefaultOptions()
			oa.MaxIter = 50000
			oa.ResidualTol = 1e-9
			oa.ProgressEvery = 0
			oa.TimeLimit = budget
			tra := &trajectory{start: time.Now()}
			ra, err := consensus.Solve(context.Background(), m, nil, oa, tra.record)
			if err != nil {
				b.Fatal(err)
			}
			opt := math.Min(rc.Dual, ra.Dual)
			cert := (opt - rc.Relaxed) / math.Max(1, math.Abs(opt))
			if !(cert <= maxCert) {
				maxCert = cert // NaN (no consistent beliefs) sticks
			}
			dc, ic, okc := trc.reach(opt, rel)
			da, ia, oka := tra.reach(opt, rel)
			if okc {
				tCMP = append(tCMP, dc.Seconds())
				itCMP = append(itCMP, float64(ic))
			} else {
				missCMP++
			}
			if oka {
				tADMM = append(tADMM, da.Seconds())
				itADMM = append(itADMM, float64(ia))
			} else {
				missADMM++
			}
			if okc && oka {
				ratio = append(ratio, da.Seconds()/dc.Seconds())
			}
			op := DefaultOptions()
			op.ProgressEvery = 0
			trp := &trajectory{start: time.Now()}
			rp, err := Solve(context.Background(), m, nil, op, trp.record)
			if err != nil {
				b.Fatal(err)
			}
			dp, ip, okp := trp.reach(opt, rel)
			if okp {
				tPlain = append(tPlain, dp.Seconds())
			} else {
				missPlain++
			}
			b.Logf("model %2d: LP %.6f (cmp %s dual %.6f relaxed %.6f, plain cmp stops %+.2e rel above, admm %s dual %.6f after %d it); to 1e-3: cmp %v (%d it), admm %v (%d it), plain cmp %v (%d it, reached %v)",
				k, opt, rc.Status, rc.Dual, rc.Relaxed, (rp.Dual-opt)/math.Abs(opt), ra.Status, ra.Dual, ra.Iterations,
				dc.Round(time.Microsecond), ic, da.Round(time.Microsecond), ia, dp.Round(time.Microsecond), ip, okp)
		}
		b.ReportMetric(medianOf(tCMP), "cmp-s")
		b.ReportMetric(medianOf(tADMM), "admm-s")
		b.ReportMetric(medianOf(ratio), "admm/cmp")
		b.ReportMetric(medianOf(itCMP), "cmp-iters")
		b.ReportMetric(medianOf(itADMM), "admm-iters")
		b.ReportMetric(float64(missCMP), "cmp-missed")
		b.ReportMetric(float64(missADMM), "admm-missed")
		b.ReportMetric(maxCert, "max-cert-gap")
		b.ReportMetric(medianOf(tPlain), "plain-s")
		b.ReportMetric(float64(missPlain), "plain-missed")
	}
}
