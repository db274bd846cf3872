package consensus

import (
	"fmt"

	"github.com/ddrun/ddrun/slaves"
)

// StepIn is the coordinator's instruction to a worker for one iteration.
type StepIn struct {
	Iter int
	// Eta is DD-ADMM's penalty for this iteration.
	Eta float64
	// PrevStep is DD-subgradient's step for the previous iteration's
	// multiplier update (Alg. 1, line 9), applied before this iteration's
	// slaves are solved; 0 for none.
	PrevStep float64
	// Lambda holds the multipliers of the part's boundary replicas and Mu
	// the marginals of its boundary variables, in the part's export order.
	Lambda, Mu []float64
	// GatherX asks for the decoded states of the interior variables.
	GatherX bool
	// Save asks for the part's replica state after the iteration.
	Save bool
}

// StepOut is a worker's answer for one iteration.
type StepOut struct {
	Iter int
	// Nu holds the slave marginals of the part's boundary replicas.
	Nu []float64
	// Sums over the part: dual terms, relaxed objective, squared primal
	// and dual residuals (interior variables only for the last three).
	Dual, Relaxed, PrimalRes, DualRes float64
	// Changed: some interior variable's decoded state changed.
	Changed bool
	// X holds the interior variables' decoded states when asked.
	X []int32
	// State is the part's replica state when asked (StepIn.Save).
	State *PartState
}

// Worker holds a part's slaves and the state of its replicas, and runs the
// slave phase and the interior variable phase of each iteration.
type Worker struct {
	// vars and boundary are the part's (Part.Vars, Part.Boundary); the
	// worker keeps no other reference to the Part, whose plan and
	// degrees it no longer needs once built.
	vars, boundary []int
	pairs          *Pairs // the part's factors when it keeps them flat (Part.Pairs)
	p              *Problem
	opts           Options

	invDeg   []float64
	interior []int // local variables that are not boundary
	isolated []int // interior variables in no slave
	// Export order of boundary replicas: for each boundary variable, its
	// replicas in slave order (offsets into the replica arrays).
	bReps   []int
	bRepLen []int // the replica vectors' lengths
	bRepID  []int // the replica vectors' indices (for lamDirty)
	bMu     []int // offsets into mu of the boundary variables, in order

	lambda, nu, mu []float64
	x              []int
	dualTerm, phiq []float64
	// inexact marks the slaves that implement slaves.Inexact (nil: none
	// does); a flag, not the interface value, which would take 16 bytes
	// per slave.
	inexact []bool
	// Change flags, set by the variable phase and read by the next slave
	// phase (AD3's caching: a slave whose inputs did not change bitwise is
	// not solved again): lamDirty per replica vector (indexed like
	// Problem.SlaveVars), muDirty per variable, unsolved per slave (its
	// last QUAD stopped short of the optimum).
	lamDirty, muDirty, unsolved []bool
	prevEta                     float64
	eta, prevStep               float64
	iter                        int
	subgradient                 bool

	// Per goroutine scratch.
	ys []([]int)
	cs [][]float64
	vs []*varScratch

	// Per chunk partial sums, reduced in chunk order: of the variable
	// phase (by chunk of interior variables) and of the slave phase (by
	// chunk of slaves; summed by the chunk's goroutine so that the caller
	// does not walk every slave serially).
	partPres, partDres, partRel []float64
	partChanged                 []bool
	partDual, partPhi           []float64

	phaseA, phaseB, phaseC func(worker, chunk int)
	pool                   *pool

	eval *shardEval // a sharded run's primal search (shard.go), built on first use
}

// NewWorker builds the slaves of a part. Call Close when done.
func NewWorker(part *Part, opts Options) (*Worker, error) {
	var p *Problem
	var err error
	if part.Pairs != nil {
		if len(part.Model.Factors) > 0 || len(part.Plan.Slaves) > 0 {
			return nil, fmt.Errorf("part with pairs and %d factors, %d planned slaves", len(part.Model.Factors), len(part.Plan.Slaves))
		}
		p, err = decomposePairs(part.Model, part.Pairs)
	} else {
		p, err = Decompose(part.Model, part.Plan, slaves.Build)
	}
	if err != nil {
		return nil, err
	}
	m := p.Model
	nr := p.NumReplicaEntries()
	w := &Worker{
		vars: part.Vars, boundary: part.Boundary, pairs: part.Pairs, p: p, opts: opts,
		invDeg:      make([]float64, m.NumVars()),
		lambda:      make([]float64, nr),
		nu:          make([]float64, nr),
		mu:          make([]float64, len(m.Unary)),
		x:           make([]int, m.NumVars()),
		dualTerm:    make([]float64, len(p.Slaves)),
		phiq:        make([]float64, len(p.Slaves)),
		lamDirty:    make([]bool, len(p.SlaveVars)),
		muDirty:     make([]bool, m.NumVars()),
		unsolved:    make([]bool, len(p.Slaves)),
		subgradient: opts.Algo == Subgradient,
	}
	boundary := make([]bool, m.NumVars())
	for _, v := range part.Boundary {
		boundary[v] = true
	}
	for i := range m.Cards {
		if part.Degree[i] > 0 {
			w.invDeg[i] = 1 / float64(part.Degree[i])
		}
		u := w.mu[m.UnaryOff[i]:m.UnaryOff[i+1]]
		for k := range u {
			u[k] = 1 / float64(len(u)) // Alg. 2, line 1: mu uniform
		}
		if boundary[i] {
			for j := p.VarRepOff[i]; j < p.VarRepOff[i+1]; j++ {
				w.bReps = append(w.bReps, int(p.VarReps[j]))
				w.bRepLen = append(w.bRepLen, m.Cards[i])
				w.bRepID = append(w.bRepID, int(p.RepVec[j]))
			}
			w.bMu = append(w.bMu, m.UnaryOff[i])
		} else {
			if p.Degree(i) != part.Degree[i] {
				return nil, fmt.Errorf("variable %d: %d local slaves but degree %d, and not on the boundary", part.Vars[i], p.Degree(i), part.Degree[i])
			}
			w.interior = append(w.interior, i)
			if p.Degree(i) == 0 {
				w.isolated = append(w.isolated, i)
			}
		}
	}
	var sc *slaves.Scratch
	for a, sl := range p.Slaves {
		if _, ok := sl.(slaves.Inexact); ok {
			if w.inexact == nil { // only models with such slaves pay for the slice
				w.inexact = make([]bool, len(p.Slaves))
			}
			w.inexact[a] = true
		}
		// One scratch per chunk of slaves: a chunk is solved by one
		// goroutine at a time (solveSlaves).
		if a%slaveChunk == 0 {
			sc = new(slaves.Scratch)
		}
		if su, ok := sl.(slaves.ScratchUser); ok {
			su.UseScratch(sc)
		}
	}
	maxCard, maxRep := 1, 0
	for _, c := range m.Cards {
		maxCard = max(maxCard, c)
	}
	for a := range p.Slaves {
		maxRep = max(maxRep, int(p.RepOff[a+1]-p.RepOff[a]))
	}
	threads := opts.Threads
	w.ys = make([][]int, threads)
	w.cs = make([][]float64, threads)
	w.vs = make([]*varScratch, threads)
	for t := range w.ys {
		// Each goroutine's scratch sits on cache lines of its own.
		w.ys[t] = make([]int, max(p.maxScope(), cacheLine/8))[:p.maxScope()]
		w.cs[t] = padded(maxRep)
		w.vs[t] = newVarScratch(maxCard)
	}
	nc := w.varChunks()
	w.partPres = make([]float64, nc)
	w.partDres = make([]float64, nc)
	w.partRel = make([]float64, nc)
	w.partChanged = make([]bool, nc)
	w.partDual = make([]float64, w.slaveChunks())
	w.partPhi = make([]float64, w.slaveChunks())
	w.phaseA = w.solveSlaves
	w.phaseB = w.updateVariables
	w.phaseC = w.stepMultipliers
	w.pool = newPool(threads)
	return w, nil
}

// Close stops the worker's goroutines.
func (w *Worker) Close() { w.pool.close() }

// NumBoundaryReplicaEntries is the length of StepIn.Lambda and StepOut.Nu.
func (w *Worker) NumBoundaryReplicaEntries() int {
	n := 0
	for _, l := range w.bRepLen {
		n += l
	}
	return n
}

// NumBoundaryMuEntries is the length of StepIn.Mu.
func (w *Worker) NumBoundaryMuEntries() int {
	n := 0
	for _, v := range w.boundary {
		n += w.p.Model.Cards[v]
	}
	return n
}

// NumInterior is the length of StepOut.X when asked for.
func (w *Worker) NumInterior() int { return len(w.interior) }

func (w *Worker) varChunks() int { return (len(w.interior) + varChunk - 1) / varChunk }

func (w *Worker) slaveChunks() int { return (len(w.p.Slaves) + slaveChunk - 1) / slaveChunk }

// Step runs one iteration on the part: the previous subgradient step (if
// any), the slaves (AD3 Alg. 2 lines 4-6, with each slave's dual term), and
// the interior variables (lines 7-8). It fills out, reusing its slices.
func (w *Worker) Step(in *StepIn, out *StepOut) {
	m := w.p.Model
	w.eta = in.Eta
	if w.subgradient && in.PrevStep > 0 {
		w.prevStep = in.PrevStep
		w.pool.run(w.varChunks(), w.phaseC)
	}
	// Boundary state from the coordinator.
	off := 0
	for k, r := range w.bReps {
		n := w.bRepLen[k]
		w.lamDirty[w.bRepID[k]] = !equal(w.lambda[r:r+n], in.Lambda[off:off+n])
		copy(w.lambda[r:r+n], in.Lambda[off:off+n])
		off += n
	}
	off = 0
	for k, v := range w.boundary {
		n := m.Cards[v]
		w.muDirty[v] = !equal(w.mu[w.bMu[k]:w.bMu[k]+n], in.Mu[off:off+n])
		copy(w.mu[w.bMu[k]:w.bMu[k]+n], in.Mu[off:off+n])
		off += n
	}
	w.pool.run(w.slaveChunks(), w.phaseA)
	w.prevEta = w.eta
	w.iter++
	w.pool.run(w.varChunks(), w.phaseB)

	out.Iter = in.Iter
	out.Nu = out.Nu[:0]
	for k, r := range w.bReps {
		out.Nu = append(out.Nu, w.nu[r:r+w.bRepLen[k]]...)
	}
	out.Dual, out.Relaxed, out.PrimalRes, out.DualRes, out.Changed = 0, 0, 0, 0, w.iter == 1
	for c := range w.partDual {
		out.Dual += w.partDual[c]
		out.Relaxed += w.partPhi[c]
	}
	for c := range w.partPres {
		out.PrimalRes += w.partPres[c]
		out.DualRes += w.partDres[c]
		out.Relaxed += w.partRel[c]
		out.Changed = out.Changed || w.partChanged[c]
	}
	// Isolated interior variables: their dual term is their best unary,
	// which updateVariables counted in the relaxed part only.
	for _, i := range w.isolated {
		out.Dual += m.Unary[m.UnaryOff[i]+w.x[i]]
	}
	out.X = out.X[:0]
	if in.GatherX {
		for _, i := range w.interior {
			out.X = append(out.X, int32(w.x[i]))
		}
	}
	out.State = nil
	if in.Save {
		st := w.State()
		out.State = &st
	}
}

// solveSlaves is lines 4-6 of Alg. 2 for one chunk of slaves, plus the
// evaluation of each slave's term of the dual L(lambda) (eq. 6) by its MAP
// oracle at the current, centred multipliers. For DD-subgradient it is
// line 6 of Alg. 1: the replicas are the MAP's indicators. A slave whose
// inputs did not change bitwise is not solved again (AD3's caching).
func (w *Worker) solveSlaves(worker, chunk int) {
	p, m := w.p, w.p.Model
	lo := chunk * slaveChunk
	hi := min(lo+slaveChunk, len(p.Slaves))
	eta := w.eta
	inv := 1 / eta
	first := w.iter == 0
	etaChanged := eta != w.prevEta
	y := w.ys[worker]
	for a := lo; a < hi; a++ {
		scope := p.Scope(a)
		// The dual term's inputs theta/d + lambda changed?
		wDirty := first
		for k := range scope {
			wDirty = wDirty || w.lamDirty[int(p.SlaveVarOff[a])+k]
		}
		// The QUAD's inputs (w/eta + mu, eta) changed?
		cDirty := wDirty || etaChanged || w.unsolved[a]
		for _, v := range scope {
			cDirty = cDirty || w.muDirty[v]
		}
		if !cDirty || (w.subgradient && !wDirty) {
			continue // same inputs, same answers
		}
		r0, r1 := p.RepOff[a], p.RepOff[a+1]
		c := w.cs[worker][:r1-r0] // first w = theta/d + lambda, then w/eta + mu
		lam := w.lambda[r0:r1]
		off := 0
		for _, v := range scope {
			th := m.Unary[m.UnaryOff[v]:m.UnaryOff[v+1]]
			d := w.invDeg[v]
			for k, t := range th {
				c[off+k] = t*d + lam[off+k]
			}
			off += len(th)
		}
		sl := p.Slaves[a]
		if wDirty {
			w.dualTerm[a] = sl.MAP(c, y)
			if w.subgradient {
				// Alg. 1, line 6: the replicas are the MAP's indicators.
				nu := w.nu[r0:r1]
				clear(nu)
				off := 0
				for k, v := range scope {
					nu[off+y[k]] = 1
					off += m.Cards[v]
				}
				w.phiq[a] = sl.Score(y[:len(scope)])
				continue
			}
		}
		off = 0
		for _, v := range scope {
			mu := w.mu[m.UnaryOff[v]:m.UnaryOff[v+1]]
			for k, mk := range mu {
				c[off+k] = c[off+k]*inv + mk
			}
			off += len(mu)
		}
		w.phiq[a] = sl.QUAD(c, eta, w.nu[r0:r1])
		if w.inexact == nil {
			continue
		}
		if w.inexact[a] {
			w.unsolved[a] = !sl.(slaves.Inexact).Converged()
		}
	}
	// The chunk's part of the dual and of the relaxed objective, cached
	// slaves included, in slave order.
	var dual, phi float64
	for a := lo; a < hi; a++ {
		dual += w.dualTerm[a]
		phi += w.phiq[a]
	}
	w.partDual[chunk] = dual
	w.partPhi[chunk] = phi
}

// updateVariables runs updateVariable on one chunk of interior variables.
func (w *Worker) updateVariables(worker, chunk int) {
	p, m := w.p, w.p.Model
	lo := chunk * varChunk
	hi := min(lo+varChunk, len(w.interior))
	step := w.opts.Tau * w.eta
	if w.subgradient {
		step = 0 // the step needs the global ||g||^2: the next StepIn brings it
	}
	sc := w.vs[worker]
	var pres, dres, rel float64
	changed := false
	for _, i := range w.interior[lo:hi] {
		u0, u1 := m.UnaryOff[i], m.UnaryOff[i+1]
		mu, th := w.mu[u0:u1], m.Unary[u0:u1]
		reps := p.VarReps[p.VarRepOff[i]:p.VarRepOff[i+1]]
		var best int
		if len(reps) == 0 {
			var r float64
			r, best = isolatedVariable(mu, th)
			rel += r
		} else {
			pr, dr, r, b, moved, muChanged := updateVariable(mu, th, w.nu, w.lambda, reps, w.invDeg[i], step, sc)
			pres, dres, rel, best = pres+pr, dres+dr, rel+r, b
			w.muDirty[i] = muChanged
			for j := p.VarRepOff[i]; j < p.VarRepOff[i+1]; j++ {
				w.lamDirty[p.RepVec[j]] = moved
			}
		}
		changed = changed || w.x[i] != best
		w.x[i] = best
	}
	w.partChanged[chunk] = changed
	w.partPres[chunk] = pres
	w.partDres[chunk] = dres
	w.partRel[chunk] = rel
}

// stepMultipliers applies the previous DD-subgradient step to one chunk of
// interior variables.
func (w *Worker) stepMultipliers(worker, chunk int) {
	p, m := w.p, w.p.Model
	lo := chunk * varChunk
	hi := min(lo+varChunk, len(w.interior))
	for _, i := range w.interior[lo:hi] {
		reps := p.VarReps[p.VarRepOff[i]:p.VarRepOff[i+1]]
		if len(reps) == 0 {
			continue
		}
		if stepVariable(w.mu[m.UnaryOff[i]:m.UnaryOff[i+1]], w.nu, w.lambda, reps, w.invDeg[i], w.prevStep, w.vs[worker]) {
			for j := p.VarRepOff[i]; j < p.VarRepOff[i+1]; j++ {
				w.lamDirty[p.RepVec[j]] = true
			}
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
