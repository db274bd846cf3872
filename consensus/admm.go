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
	slaveChunk = 128
	varChunk   = 128
)

// cacheLine is a safe cache-line size (two lines on most x86 and ARM parts,
// which prefetch in pairs).
const cacheLine = 128

// padded returns n float64s in an allocation of at least a cache line,
// starting on a line of its own, with nothing else on its last line.
func padded(n int) []float64 {
	return make([]float64, n+2*cacheLine/8)[cacheLine/8 : cacheLine/8+n]
}

// admm holds the state of a DD-ADMM run (Martins et al. ICML 2011, Alg. 2)
// in flat slices. Replica arrays are indexed like Problem.RepOff.
type admm struct {
	p    *Problem
	opts Options

	invDeg   []float64 // 1/d_i (0 for isolated variables)
	isolated float64   // sum over isolated variables of max theta_i
	lambda   []float64 // multipliers lambda_i^a, one replica entry each
	prevC    []float64 // targets of the previous QUAD call, for caching
	prevW    []float64 // dual inputs of the previous MAP call, for caching
	nu       []float64 // slave marginals nu_i^a
	mu       []float64 // consensus marginals, laid out like Model.Unary
	x        []int     // decoded assignment

	dualTerm []float64 // per slave: max_y phi(y) + w.y at the current lambda
	phiq     []float64 // per slave: phi . q at the QUAD solution
	cached   []bool    // per slave: QUAD skipped, inputs unchanged
	inexact  []slaves.Inexact
	prevEta  float64

	ys    [][]int     // per worker: MAP scratch
	cs    [][]float64 // per worker: one slave's dual inputs, then QUAD targets
	newMu [][]float64 // per worker: scratch for one variable's new marginal
	lsum  [][]float64 // per worker: scratch for one variable's multiplier sums

	// Per variable chunk partial sums, reduced in chunk order.
	partPrimalRes []float64
	partDualRes   []float64
	partRelaxed   []float64
	partChanged   []bool // some decoded x_i changed in this chunk

	eta         float64 // ADMM penalty, or the subgradient step of this iteration
	iter        int     // iterations completed
	subgradient bool

	decodedChanged bool
	bestPrimal     float64 // for Polyak steps

	nextAdapt, adaptWait int // eta adaptation schedule

	phaseA, phaseB, phaseC, phaseScore func(worker, chunk int)
	scoreX                             []int     // the assignment phaseScore scores
	partScore                          []float64 // per slave chunk, then per variable chunk
	pool                               *pool
}

func newADMM(p *Problem, opts Options) *admm {
	m := p.Model
	nr := p.NumReplicaEntries()
	s := &admm{
		p: p, opts: opts,
		invDeg:     make([]float64, len(m.Cards)),
		lambda:     make([]float64, nr),
		prevC:      make([]float64, nr),
		prevW:      make([]float64, nr),
		nu:         make([]float64, nr),
		mu:         make([]float64, len(m.Unary)),
		x:          make([]int, len(m.Cards)),
		dualTerm:   make([]float64, len(p.Slaves)),
		phiq:       make([]float64, len(p.Slaves)),
		cached:     make([]bool, len(p.Slaves)),
		eta:        opts.Eta,
		bestPrimal: math.Inf(-1),
		inexact:    make([]slaves.Inexact, len(p.Slaves)),

		subgradient: opts.Algo == Subgradient,
	}
	for a, sl := range p.Slaves {
		if ie, ok := sl.(slaves.Inexact); ok {
			s.inexact[a] = ie
		}
	}
	for i := range m.Cards {
		if d := p.Degree(i); d > 0 {
			s.invDeg[i] = 1 / float64(d)
		} else {
			// An isolated variable contributes max theta_i to the dual.
			mx := math.Inf(-1)
			for _, t := range m.Unaries(i) {
				mx = math.Max(mx, t)
			}
			s.isolated += mx
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
	s.partChanged = make([]bool, nchunks)
	ms := p.maxScope()
	maxCard := 1
	for _, c := range m.Cards {
		maxCard = max(maxCard, c)
	}
	maxRep := 0
	for a := range p.Slaves {
		maxRep = max(maxRep, p.RepOff[a+1]-p.RepOff[a])
	}
	s.cs = make([][]float64, opts.Threads)
	s.ys = make([][]int, opts.Threads)
	s.newMu = make([][]float64, opts.Threads)
	s.lsum = make([][]float64, opts.Threads)
	for w := range s.ys {
		// Each worker's scratch is padded to whole cache lines of its own,
		// so that two workers never write to the same line.
		s.cs[w] = padded(maxRep)
		s.ys[w] = make([]int, max(ms, cacheLine/8))[:ms]
		s.newMu[w] = padded(maxCard)
		s.lsum[w] = padded(maxCard)
	}
	s.phaseA = s.solveSlaves
	s.phaseB = s.updateVariables
	s.phaseC = s.stepMultipliers
	s.phaseScore = s.scoreChunk
	s.partScore = make([]float64, (len(p.Slaves)+slaveChunk-1)/slaveChunk+nchunks)
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
		c := s.cs[worker][:r1-r0] // first w = theta/d + lambda, then w/eta + mu
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
		pw := s.prevW[r0:r1]
		if s.iter > 0 && equal(c, pw) {
			if s.subgradient {
				continue // same MAP, same replicas
			}
		} else {
			copy(pw, c)
			s.dualTerm[a] = sl.MAP(c, y)
			if s.subgradient {
				// Alg. 1, line 6: the replicas are the MAP's indicators.
				nu := s.nu[r0:r1]
				clear(nu)
				sc := p.Scope(a)
				off := 0
				for k, v := range sc {
					nu[off+y[k]] = 1
					off += m.Cards[v]
				}
				s.phiq[a] = sl.Score(y[:len(sc)])
				continue
			}
		}
		off = 0
		for _, v := range p.Scope(a) {
			mu := s.mu[m.UnaryOff[v]:m.UnaryOff[v+1]]
			for k, mk := range mu {
				c[off+k] = c[off+k]*inv + mk
			}
			off += len(mu)
		}
		prev := s.prevC[r0:r1]
		if etaSame && s.iter > 0 && equal(c, prev) {
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
func (s *admm) updateVariables(worker, chunk int) {
	p, m := s.p, s.p.Model
	lo := chunk * varChunk
	hi := min(lo+varChunk, len(m.Cards))
	step := s.opts.Tau * s.eta
	if s.subgradient {
		step = 0 // the step needs ||g||^2 first: stepMultipliers applies it
	}
	var pres, dres, rel float64
	changed := false
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
			changed = changed || s.x[i] != best
			s.x[i] = best
			rel += th[best]
			continue
		}
		d := s.invDeg[i]
		nm, ls := s.newMu[worker][:len(mu)], s.lsum[worker][:len(mu)]
		clear(nm)
		for _, r := range reps {
			for k, v := range s.nu[r : r+len(nm)] {
				nm[k] += v
			}
		}
		best, bestV := 0, math.Inf(-1)
		for k := range nm {
			v := nm[k] * d
			nm[k] = v
			diff := v - mu[k]
			dres += float64(len(reps)) * diff * diff
			mu[k] = v
			rel += th[k] * v
			ls[k] = 0
			if v > bestV || (v == bestV && th[k] > th[best]) {
				best, bestV = k, v
			}
		}
		moved := false
		for _, r := range reps {
			nu := s.nu[r : r+len(nm)]
			lam := s.lambda[r : r+len(nm)]
			for k, v := range nm {
				e := nu[k] - v
				if e != 0 {
					moved = true
					pres += e * e
					lam[k] -= step * e
				}
				ls[k] += lam[k]
			}
		}
		// Re-centre only what moved: unchanged multipliers stay bitwise
		// unchanged, which keeps the slave caches valid.
		if moved {
			for k := range ls {
				ls[k] *= d
			}
			for _, r := range reps {
				lam := s.lambda[r : r+len(nm)]
				for k, l := range ls {
					lam[k] -= l
				}
			}
		}
		changed = changed || s.x[i] != best
		s.x[i] = best
	}
	s.partChanged[chunk] = changed
	s.partPrimalRes[chunk] = pres
	s.partDualRes[chunk] = dres
	s.partRelaxed[chunk] = rel
}

// iterate runs one iteration and returns the dual value at the multipliers
// it started from, the relaxed objective, and the residuals. s.decodedChanged
// tells whether the decoded assignment s.x differs from the previous one.
func (s *admm) iterate() (dual, relaxed, primalRes, dualRes float64) {
	p, m := s.p, s.p.Model
	s.pool.run((len(p.Slaves)+slaveChunk-1)/slaveChunk, s.phaseA)
	s.prevEta = s.eta
	s.iter++
	dual = m.Constant
	relaxed = m.Constant
	for a := range p.Slaves {
		dual += s.dualTerm[a]
		relaxed += s.phiq[a]
	}
	dual += s.isolated
	s.pool.run(len(s.partPrimalRes), s.phaseB)
	s.decodedChanged = s.iter == 1
	for c := range s.partPrimalRes {
		s.decodedChanged = s.decodedChanged || s.partChanged[c]
		primalRes += s.partPrimalRes[c]
		dualRes += s.partDualRes[c]
		relaxed += s.partRelaxed[c]
	}
	if s.subgradient {
		// primalRes is ||g||^2 for the projected subgradient g = nu - mu.
		s.eta = s.subgradientStep(dual, primalRes)
		if s.eta > 0 {
			s.pool.run(len(s.partPrimalRes), s.phaseC)
		}
	}
	n := float64(max(1, p.NumReplicaEntries()))
	primalRes = math.Sqrt(primalRes / n)
	dualRes = s.eta * math.Sqrt(dualRes/n)
	return
}

// subgradientStep returns eta_t of Alg. 1 for the configured rule, given
// the dual value at the current multipliers and ||g||^2.
func (s *admm) subgradientStep(dual, g2 float64) float64 {
	if g2 == 0 {
		return 0 // the slaves agree: lambda is dual optimal
	}
	t := float64(s.iter)
	switch s.opts.Step {
	case Diminishing:
		return s.opts.Eta / t
	case InvSqrt:
		return s.opts.Eta / math.Sqrt(t)
	}
	// Polyak: (L(lambda) - target) / ||g||^2 with the best primal as the
	// target (Eta/t until there is one).
	if math.IsInf(s.bestPrimal, -1) || dual <= s.bestPrimal {
		return s.opts.Eta / t
	}
	return s.opts.Eta * (dual - s.bestPrimal) / g2
}

// stepMultipliers is line 9 of Alg. 1 for one chunk of variables:
// lambda_i^a -= eta_t (nu_i^a - mu_i), then re-centred like the ADMM update.
func (s *admm) stepMultipliers(worker, chunk int) {
	p, m := s.p, s.p.Model
	lo := chunk * varChunk
	hi := min(lo+varChunk, len(m.Cards))
	step := s.eta
	for i := lo; i < hi; i++ {
		mu := s.mu[m.UnaryOff[i]:m.UnaryOff[i+1]]
		reps := p.VarReps[p.VarRepOff[i]:p.VarRepOff[i+1]]
		if len(reps) == 0 {
			continue
		}
		ls := s.lsum[worker][:len(mu)]
		clear(ls)
		moved := false
		for _, r := range reps {
			nu := s.nu[r : r+len(mu)]
			lam := s.lambda[r : r+len(mu)]
			for k, v := range mu {
				if e := nu[k] - v; e != 0 {
					moved = true
					lam[k] -= step * e
				}
				ls[k] += lam[k]
			}
		}
		if moved {
			d := s.invDeg[i]
			for _, r := range reps {
				lam := s.lambda[r : r+len(mu)]
				for k, l := range ls {
					lam[k] -= l * d
				}
			}
		}
	}
}

// adaptEta is AD3's residual balancing: grow eta when the primal residual
// dominates, shrink it when the dual residual does. ADMM converges for a
// fixed eta (Prop. 1) but can cycle when eta keeps flipping, so after each
// change the next one must wait twice as long as the previous wait: eta
// changes O(log T) times in T iterations and is eventually fixed.
func (s *admm) adaptEta(primalRes, dualRes float64) {
	const ratio, factor = 10, 2
	if s.iter < s.nextAdapt {
		return
	}
	old := s.eta
	switch {
	case primalRes > ratio*dualRes:
		s.eta = math.Min(s.eta*factor, 1e4)
	case dualRes > ratio*primalRes:
		s.eta = math.Max(s.eta/factor, 1e-4)
	}
	if s.eta != old {
		s.adaptWait = max(1, 2*s.adaptWait)
		s.nextAdapt = s.iter + s.adaptWait
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
	icmDue := false
	var lastReport time.Duration
	consider := func(x []int) {
		sc := s.score(x)
		if sc > res.Primal {
			res.Primal = sc
			s.bestPrimal = sc
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
		if s.decodedChanged {
			consider(s.x)
			icmDue = true
		}
		if icmDue && (t == 1 || t%icmEvery == 0) {
			icmDue = false
			if math.IsInf(res.Primal, -1) {
				if rep == nil {
					rep = newRepair(p)
				}
				rep.run(s.x, s.mu)
			}
			icm.improve(s.x, icmRunSweeps)
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
			if s.opts.AdaptEta && !s.subgradient {
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
			icm.improve(s.x, icmFinalSweeps)
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

// scoreChunk adds up the slaves' scores (or, past the slave chunks, the
// unaries) of s.scoreX for one chunk.
func (s *admm) scoreChunk(worker, chunk int) {
	p, m := s.p, s.p.Model
	x := s.scoreX
	sum := 0.0
	nsc := (len(p.Slaves) + slaveChunk - 1) / slaveChunk
	if chunk < nsc {
		y := s.ys[worker]
		for a := chunk * slaveChunk; a < min((chunk+1)*slaveChunk, len(p.Slaves)); a++ {
			sc := p.Scope(a)
			for k, v := range sc {
				y[k] = x[v]
			}
			sum += p.Slaves[a].Score(y[:len(sc)])
		}
	} else {
		c := chunk - nsc
		for i := c * varChunk; i < min((c+1)*varChunk, len(m.Cards)); i++ {
			sum += m.Unary[m.UnaryOff[i]+x[i]]
		}
	}
	s.partScore[chunk] = sum
}

// score returns the exact score of x, computed on the pool in a fixed
// reduction order.
func (s *admm) score(x []int) float64 {
	s.scoreX = x
	s.pool.run(len(s.partScore), s.phaseScore)
	total := s.p.Model.Constant
	for _, v := range s.partScore {
		total += v
	}
	return total
}
