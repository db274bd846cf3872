package consensus

import (
	"context"
	"math"
	"time"

	"github.com/ddrun/ddrun/slaves"
)

// Chunk sizes are fixed, independent of the thread count, so that partial
// sums are reduced in the same order whatever the number of threads.
const (
	slaveChunk = 256
	varChunk   = 512
)

// admm holds the state of a DD-ADMM run (Martins et al. ICML 2011, Alg. 2)
// in flat slices. Replica arrays are indexed like Problem.RepOff.
type admm struct {
	p    *Problem
	opts Options

	invDeg []float64 // 1/d_i (0 for isolated variables)
	lambda []float64 // multipliers lambda_i^a, one replica entry each
	c      []float64 // slave targets (first w = theta/d + lambda, then w/eta + mu)
	prevC  []float64 // targets of the previous QUAD call, for caching
	nu     []float64 // slave marginals nu_i^a
	mu     []float64 // consensus marginals, laid out like Model.Unary
	x      []int     // decoded assignment

	dualTerm []float64 // per slave: max_y phi(y) + w.y at the current lambda
	phiq     []float64 // per slave: phi . q at the QUAD solution
	cached   []bool    // per slave: QUAD skipped, inputs unchanged
	inexact  []slaves.Inexact
	prevEta  float64

	ys [][]int // per worker: MAP scratch

	// Per variable chunk partial sums, reduced in chunk order.
	partPrimalRes []float64
	partDualRes   []float64
	partRelaxed   []float64

	eta float64

	phaseA, phaseB func(worker, chunk int)
	pool           *pool
}

func newADMM(p *Problem, opts Options) *admm {
	m := p.Model
	nr := p.NumReplicaEntries()
	s := &admm{
		p: p, opts: opts,
		invDeg:   make([]float64, len(m.Cards)),
		lambda:   make([]float64, nr),
		c:        make([]float64, nr),
		prevC:    make([]float64, nr),
		nu:       make([]float64, nr),
		mu:       make([]float64, len(m.Unary)),
		x:        make([]int, len(m.Cards)),
		dualTerm: make([]float64, len(p.Slaves)),
		phiq:     make([]float64, len(p.Slaves)),
		cached:   make([]bool, len(p.Slaves)),
		eta:      opts.Eta,
		inexact:  make([]slaves.Inexact, len(p.Slaves)),
	}
	for a, sl := range p.Slaves {
		if ie, ok := sl.(slaves.Inexact); ok {
			s.inexact[a] = ie
		}
	}
	for i := range m.Cards {
		if d := p.Degree(i); d > 0 {
			s.invDeg[i] = 1 / float64(d)
		}
		u := s.mu[m.UnaryOff[i]:m.UnaryOff[i+1]]
		for k := range u {
			u[k] = 1 / float64(len(u)) // Alg. 2, line 1: mu uniform
		}
	}
	nchunks := (len(m.Cards) + varChunk - 1) / varChunk
	s.partPrimalRes = make([]float64, nchunks)
	s.partDualRes = make([]float64, nchunks)
	s.partRelaxed = make([]float64, nchunks)
	ms := p.maxScope()
	s.ys = make([][]int, opts.Threads)
	for w := range s.ys {
		s.ys[w] = make([]int, ms)
	}
	s.phaseA = s.solveSlaves
	s.phaseB = s.updateVariables
	s.pool = newPool(opts.Threads)
	return s
}

// solveSlaves is lines 4-6 of Alg. 2 for one chunk of slaves, plus the
// evaluation of each slave's term of the dual L(lambda) (eq. 6) by its MAP
// oracle at the current, centred multipliers.
func (s *admm) solveSlaves(worker, chunk int) {
	p, m := s.p, s.p.Model
	lo := chunk * slaveChunk
	hi := min(lo+slaveChunk, len(p.Slaves))
	eta := s.eta
	inv := 1 / eta
	etaSame := eta == s.prevEta
	y := s.ys[worker]
	for a := lo; a < hi; a++ {
		r0, r1 := p.RepOff[a], p.RepOff[a+1]
		c := s.c[r0:r1]
		lam := s.lambda[r0:r1]
		off := 0
		for _, v := range p.Scope(a) {
			th := m.Unary[m.UnaryOff[v]:m.UnaryOff[v+1]]
			d := s.invDeg[v]
			for k, t := range th {
				c[off+k] = t*d + lam[off+k]
			}
			off += len(th)
		}
		sl := p.Slaves[a]
		s.dualTerm[a] = sl.MAP(c, y)
		off = 0
		for _, v := range p.Scope(a) {
			mu := s.mu[m.UnaryOff[v]:m.UnaryOff[v+1]]
			for k, mk := range mu {
				c[off+k] = c[off+k]*inv + mk
			}
			off += len(mu)
		}
		prev := s.prevC[r0:r1]
		if etaSame && equal(c, prev) {
			s.cached[a] = true
			continue
		}
		s.cached[a] = false
		copy(prev, c)
		s.phiq[a] = sl.QUAD(c, eta, s.nu[r0:r1])
		if ie := s.inexact[a]; ie != nil && !ie.Converged() && len(prev) > 0 {
			prev[0] = math.NaN() // not a solution to reuse
		}
	}
}

func equal(a, b []float64) bool {
	for i, v := range a {
		if v != b[i] {
			return false
		}
	}
	return true
}

// updateVariables is lines 7-8 of Alg. 2 for one chunk of variables: the
// consensus mu_i is the mean of the replicas (eq. 10 with sum_a lambda_i^a =
// 0), then the multipliers move by eq. (11) and are re-centred so that
// sum_a lambda_i^a = 0 holds exactly up to rounding (the dual bound needs it).
// It also decodes x_i = argmax mu_i and accumulates the residuals and the
// unary part of the relaxed objective.
func (s *admm) updateVariables(_, chunk int) {
	p, m := s.p, s.p.Model
	lo := chunk * varChunk
	hi := min(lo+varChunk, len(m.Cards))
	step := s.opts.Tau * s.eta
	var pres, dres, rel float64
	for i := lo; i < hi; i++ {
		u0, u1 := m.UnaryOff[i], m.UnaryOff[i+1]
		mu := s.mu[u0:u1]
		th := m.Unary[u0:u1]
		reps := p.VarReps[p.VarRepOff[i]:p.VarRepOff[i+1]]
		if len(reps) == 0 {
			best := 0
			for k := range th {
				if th[k] > th[best] {
					best = k
				}
			}
			for k := range mu {
				mu[k] = 0
			}
			mu[best] = 1
			s.x[i] = best
			rel += th[best]
			continue
		}
		d := s.invDeg[i]
		best, bestV := 0, math.Inf(-1)
		for k := range mu {
			sum := 0.0
			for _, r := range reps {
				sum += s.nu[r+k]
			}
			nm := sum * d
			diff := nm - mu[k]
			dres += float64(len(reps)) * diff * diff
			mu[k] = nm
			rel += th[k] * nm
			lsum := 0.0
			for _, r := range reps {
				e := s.nu[r+k] - nm
				pres += e * e
				l := s.lambda[r+k] - step*e
				s.lambda[r+k] = l
				lsum += l
			}
			lmean := lsum * d
			for _, r := range reps {
				s.lambda[r+k] -= lmean
			}
			if nm > bestV || (nm == bestV && th[k] > th[best]) {
				best, bestV = k, nm
			}
		}
		s.x[i] = best
	}
	s.partPrimalRes[chunk] = pres
	s.partDualRes[chunk] = dres
	s.partRelaxed[chunk] = rel
}

// iterate runs one iteration and returns the dual value at the multipliers
// it started from, the relaxed objective, and the residuals.
func (s *admm) iterate() (dual, relaxed, primalRes, dualRes float64) {
	p, m := s.p, s.p.Model
	s.pool.run((len(p.Slaves)+slaveChunk-1)/slaveChunk, s.phaseA)
	s.prevEta = s.eta
	dual = m.Constant
	relaxed = m.Constant
	for a := range p.Slaves {
		dual += s.dualTerm[a]
		relaxed += s.phiq[a]
	}
	// Isolated variables contribute max theta_i to the dual.
	for i := range m.Cards {
		if p.Degree(i) == 0 {
			mx := math.Inf(-1)
			for _, t := range m.Unaries(i) {
				mx = math.Max(mx, t)
			}
			dual += mx
		}
	}
	s.pool.run(len(s.partPrimalRes), s.phaseB)
	for c := range s.partPrimalRes {
		primalRes += s.partPrimalRes[c]
		dualRes += s.partDualRes[c]
		relaxed += s.partRelaxed[c]
	}
	n := float64(max(1, p.NumReplicaEntries()))
	primalRes = math.Sqrt(primalRes / n)
	dualRes = s.eta * math.Sqrt(dualRes/n)
	return
}

// adaptEta is AD3's residual balancing: grow eta when the primal residual
// dominates, shrink it when the dual residual does.
func (s *admm) adaptEta(primalRes, dualRes float64) {
	const ratio, factor = 10, 2
	switch {
	case primalRes > ratio*dualRes:
		s.eta = math.Min(s.eta*factor, 1e4)
	case dualRes > ratio*primalRes:
		s.eta = math.Max(s.eta/factor, 1e-4)
	}
}

// run is the main loop. It returns the result in the reduced model's
// variables.
func (s *admm) run(ctx context.Context, progress func(Progress)) Result {
	defer s.pool.close()
	p := s.p
	start := time.Now()
	res := Result{Status: IterationLimit, Dual: math.Inf(1), Primal: math.Inf(-1)}
	bestX := make([]int, len(s.x))
	icm := newICM(p)
	var rep *repair
	var lastReport time.Duration
	yScore := make([]int, p.maxScope())
	consider := func(x []int) {
		sc := p.scoreAssignment(x, yScore)
		if sc > res.Primal {
			res.Primal = sc
			copy(bestX, x)
			res.Assignment = bestX
		}
	}
	var primalRes, dualRes float64
	for t := 1; ; t++ {
		dual, relaxed, pr, dr := s.iterate()
		primalRes, dualRes = pr, dr
		res.Iterations = t
		res.Relaxed = relaxed
		if dual < res.Dual {
			res.Dual = dual
		}
		consider(s.x)
		if t == 1 || t%icmEvery == 0 {
			if math.IsInf(res.Primal, -1) {
				if rep == nil {
					rep = newRepair(p)
				}
				rep.run(s.x, s.mu)
			}
			icm.improve(s.x)
			consider(s.x)
		}
		res.Gap = res.Dual - res.Primal
		elapsed := time.Since(start)
		if progress != nil && (t == 1 || elapsed-lastReport >= s.opts.ProgressEvery) {
			lastReport = elapsed
			progress(Progress{Iteration: t, Dual: res.Dual, Primal: res.Primal, Gap: res.Gap,
				PrimalRes: primalRes, DualRes: dualRes, Eta: s.eta, Elapsed: elapsed})
		}
		switch {
		case math.IsInf(res.Dual, -1):
			res.Status = Infeasible
		case closed(res, s.opts.Tol):
			res.Status = Optimal
		case t > 1 && primalRes < s.opts.ResidualTol && dualRes < s.opts.ResidualTol:
			res.Status = Converged
		case t >= s.opts.MaxIter:
			res.Status = IterationLimit
		case s.opts.TimeLimit > 0 && elapsed >= s.opts.TimeLimit:
			res.Status = TimeLimit
		case ctx.Err() != nil:
			res.Status = Interrupted
		default:
			if s.opts.AdaptEta {
				s.adaptEta(primalRes, dualRes)
			}
			continue
		}
		break
	}
	if res.Status != Optimal && res.Status != Infeasible {
		// A last local improvement from the best assignment found.
		if res.Assignment != nil {
			copy(s.x, bestX)
			icm.improve(s.x)
			consider(s.x)
			res.Gap = res.Dual - res.Primal
			if closed(res, s.opts.Tol) {
				res.Status = Optimal
			}
		}
	}
	if math.IsInf(res.Primal, -1) {
		res.Assignment = nil
	}
	res.Elapsed = time.Since(start)
	return res
}

// closed reports whether the gap certifies the primal optimal:
// gap <= tol * max(1, |primal|) with a feasible primal.
func closed(res Result, tol float64) bool {
	return !math.IsInf(res.Primal, -1) && res.Gap <= tol*math.Max(1, math.Abs(res.Primal))
}
