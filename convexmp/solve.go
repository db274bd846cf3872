package convexmp

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// Solve runs convex max-product on m (and steepest eps-descent when
// opts.EpsDescent) and returns the result in m's variables: the best
// assignment found and its exact score (m.Score), the lowest dual value
// reached (an upper bound on the MAP score), and in Relaxed the LP objective
// of the best locally consistent beliefs found (those recovered from the dual
// by Corollaries 1 and 2, or the integral beliefs of the assignment; NaN
// when there are neither). Cancelling ctx stops the run with status
// Interrupted and the best result so far. progress, if not nil, is called from the solving
// goroutine at most every opts.ProgressEvery, and once at the end.
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, error) {
	res, _, err := SolveStats(ctx, m, ev, opts, progress)
	return res, err
}

// SolveStats is Solve also returning statistics of the run.
func SolveStats(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, Stats, error) {
	start := time.Now()
	stats := Stats{StallDual: math.NaN(), Residual: math.NaN()}
	red, err := solver.Prepare("cmp", &opts, m, ev)
	if err != nil {
		return solver.Result{}, stats, err
	}
	if red == nil {
		return solver.InfeasibleResult(time.Since(start)), stats, nil
	}
	p, err := buildProblem(red.Model, opts.MaxTable)
	if errors.Is(err, errInfeasible) {
		return solver.InfeasibleResult(time.Since(start)), stats, nil
	}
	if err != nil {
		return solver.Result{}, stats, err
	}
	r := &runner{
		m: m, red: red, p: p, opts: opts, progress: progress, start: start,
		lam: make([]float64, p.lamSize), sc: newCMPScratch(p),
		bestPrimal: math.Inf(-1), relaxed: math.NaN(), stats: stats,
		x: make([]int, p.numVars()),
	}
	r.stats.Vars, r.stats.Factors = p.numVars(), len(p.facs)
	for _, inc := range p.inc {
		if len(inc) > 0 {
			r.stats.Regions++
		}
	}
	r.stats.Regions += len(p.facs)
	r.run(ctx)
	res := solver.Result{
		Status:     r.status,
		Primal:     r.bestPrimal,
		Dual:       r.bestDual,
		Gap:        r.bestDual - r.bestPrimal,
		Relaxed:    r.relaxed,
		Iterations: r.iter,
		Elapsed:    time.Since(start),
		Assignment: r.bestX,
	}
	return res, r.stats, nil
}

// runner is one run's state.
type runner struct {
	m        *model.Model
	red      *model.Reduced
	p        *problem
	opts     Options
	progress func(solver.Progress)
	start    time.Time
	reported time.Time

	lam []float64
	sc  *cmpScratch
	qp  *qpState
	x   []int

	q, bestDual float64
	bestPrimal  float64
	bestX       []int // in m's variables
	iter        int
	eps         float64 // current eps (0 before eps-descent)
	dualRes     float64 // RMS of the last eps-descent direction
	status      solver.Status
	relaxed     float64
	recovered   bool // relaxed holds beliefs recovered at the current lam
	stats       Stats
}

func (r *runner) setDual(q float64, phase string) {
	r.q = q
	if r.opts.trace != nil {
		r.opts.trace(phase, q)
	}
	if q < r.bestDual {
		r.bestDual = q
	}
}

// consider improves x with ICM and keeps it if it beats the best assignment.
func (r *runner) consider(x []int) {
	r.p.icm(x, r.opts.ICMSweeps, r.sc.buf)
	xo := r.red.Expand(r.p.expand(x))
	if s := r.m.Score(xo); s > r.bestPrimal {
		r.bestPrimal, r.bestX = s, xo
	}
}

func (r *runner) decodeRep() {
	r.p.decodeRep(r.lam, r.sc.buf, r.x)
	r.consider(r.x)
}

func (r *runner) optimal() bool {
	return solver.Closed(r.bestDual, r.bestPrimal, r.opts.Tol)
}

// limited reports whether the context or the time limit ends the run.
func (r *runner) limited(ctx context.Context) bool {
	return ctx.Err() != nil || (r.opts.TimeLimit > 0 && time.Since(r.start) >= r.opts.TimeLimit)
}

// stopped sets the status and reports true when a limit is reached.
func (r *runner) stopped(ctx context.Context) bool {
	st, stop := r.opts.Reached(ctx, r.iter, time.Since(r.start))
	if stop {
		r.status = st
	}
	return stop
}

func (r *runner) report(force bool) {
	if r.progress == nil {
		return
	}
	now := time.Now()
	if !force && now.Sub(r.reported) < r.opts.ProgressEvery {
		return
	}
	r.reported = now
	var fields solver.Field
	if r.opts.EpsDescent {
		fields = solver.HasDualRes | solver.HasEta // eps-descent's direction and eps
	}
	r.progress(solver.Progress{
		Iteration: r.iter,
		Dual:      r.bestDual,
		Primal:    r.bestPrimal,
		Gap:       r.bestDual - r.bestPrimal,
		DualRes:   r.dualRes,
		Eta:       r.eps,
		Elapsed:   now.Sub(r.start),
		Fields:    fields,
	})
}

func (r *runner) run(ctx context.Context) {
	p := r.p
	r.bestDual = math.Inf(1)
	r.setDual(p.dual(r.lam, r.sc.buf), "init")
	r.decodeRep()
	if r.opts.EpsDescent {
		r.eps = r.opts.Eps0
	}
	switched := false
	for {
		if r.optimal() {
			r.status = solver.Optimal
			break
		}
		if r.stopped(ctx) {
			break
		}
		prev := r.q
		p.sweep(r.lam, r.sc)
		r.iter++
		r.stats.Sweeps++
		r.recovered = false
		r.setDual(p.dual(r.lam, r.sc.buf), "sweep")
		if r.stats.Sweeps%r.opts.DecodeEvery == 0 {
			r.decodeRep()
		}
		r.report(false)
		thresh := r.opts.StallTol * max(1, math.Abs(r.q))
		if r.opts.EpsDescent {
			// A sweep is worth less than an eps-descent step, which
			// gains more than eps.
			thresh = max(thresh, r.eps)
		}
		if prev-r.q > thresh {
			continue
		}
		if !switched {
			switched = true
			r.stats.StallDual, r.stats.StallIter = r.q, r.iter
		}
		r.decodeRep()
		if !r.opts.EpsDescent {
			r.status = solver.Converged
			if r.optimal() {
				r.status = solver.Optimal
			}
			break
		}
		if r.epsPhase(ctx) {
			break
		}
	}
	r.finish()
}

// epsPhase runs steepest eps-descent from a stall: it solves the min-norm
// QP of Corollary 2 and line-searches along the direction it gives,
// shrinking eps whenever the eps-subdifferential contains 0 (or no descent
// is found), until one step is taken (it returns false: back to block
// coordinate descent) or the run is over (true, status set).
func (r *runner) epsPhase(ctx context.Context) bool {
	if r.qp == nil {
		r.qp = newQP(r.p)
	}
	qp := r.qp
	shrink := func() { r.eps = max(r.eps*r.opts.EpsShrink, r.opts.EpsMin) }
	for {
		if r.stopped(ctx) {
			return true
		}
		r.stats.Eps = r.eps
		qp.reset(r.lam, r.eps)
		res := qp.solve(r.opts.QPIters, func() bool { return r.limited(ctx) })
		r.stats.QPSolves++
		r.stats.QPIters += res.iters
		r.dualRes = math.Sqrt(res.norm2 / float64(max(len(qp.d), 1)))
		if !res.zero && !res.cert && r.stopped(ctx) {
			return true
		}
		if res.zero {
			// 0 is in the eps-subdifferential: q is within
			// (|V|+|E|)*eps of the LP optimum, and the beliefs are
			// consistent (Corollary 2).
			r.recordBeliefs()
			if r.optimal() {
				r.status = solver.Optimal
				return true
			}
			if r.eps <= r.opts.EpsMin {
				r.status = solver.Converged
				return true
			}
			shrink()
			r.report(false)
			continue
		}
		if t := qp.lineSearch(res.norm2); t > 0 {
			lam := make([]float64, len(r.lam))
			for j, l := range r.lam {
				lam[j] = l - t*qp.d[j]
			}
			if qn := r.p.dual(lam, r.sc.buf); qn < r.q {
				gain := r.q - qn
				copy(r.lam, lam)
				r.iter++
				r.stats.EpsSteps++
				if res.cert {
					r.stats.CertSteps++
				}
				r.recovered = false
				r.setDual(qn, "eps")
				r.decodeRep()
				r.report(false)
				if gain <= r.eps {
					// The QP was not solved well enough to certify
					// a gain of eps.
					if r.eps <= r.opts.EpsMin {
						r.status = solver.Converged
						return true
					}
					shrink()
				}
				return false
			}
		}
		// No descent along an uncertified direction.
		if r.eps <= r.opts.EpsMin {
			r.recordBeliefs()
			r.status = solver.Converged
			return true
		}
		shrink()
	}
}

// recordBeliefs takes the QP's beliefs as the recovered primal: when they
// are consistent (Corollaries 1 and 2) they are a feasible point of the
// LP, and Relaxed keeps the best LP value of such points; their argmax is
// decoded.
func (r *runner) recordBeliefs() {
	qp := r.qp
	r.stats.Residual = qp.residual()
	if r.stats.Residual <= residualTol {
		if v := qp.beliefValue(); !(r.relaxed >= v) {
			r.relaxed = v
		}
	}
	r.recovered = true
	qp.decode(r.x)
	r.consider(r.x)
}

// residualTol is the largest marginalisation disagreement of beliefs whose
// LP value is reported.
const residualTol = 1e-6

// finish recovers beliefs at the final lam when none were (Corollary 1,
// with the eps margin EpsMin for numerical ties), sets Relaxed, and
// reports.
func (r *runner) finish() {
	switch r.status {
	case solver.Optimal, solver.Interrupted, solver.TimeLimit:
	default:
		if !r.recovered {
			if r.qp == nil {
				r.qp = newQP(r.p)
			}
			eps := r.opts.EpsMin
			if !(eps > 0) {
				eps = DefaultOptions().EpsMin
			}
			r.qp.reset(r.lam, eps)
			res := r.qp.solve(r.opts.QPIters, nil)
			r.stats.QPSolves++
			r.stats.QPIters += res.iters
			r.recordBeliefs()
		}
	}
	// The integral beliefs of the best assignment are consistent too.
	if !math.IsInf(r.bestPrimal, -1) && !(r.relaxed >= r.bestPrimal) {
		r.relaxed = r.bestPrimal
	}
	if r.optimal() {
		r.status = solver.Optimal
	}
	r.report(true)
}
