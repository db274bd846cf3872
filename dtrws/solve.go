package dtrws

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ddrun/ddrun/internal/localsearch"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

var posInf = math.Inf(1)

// polishSweeps bounds the ICM sweeps on the final assignment.
const polishSweeps = 20

// Options configure Solve.
type Options struct {
	// Limits: an iteration is one outer iteration (Inner TRW-S iterations
	// on every part, then one multiplier update); the first is always
	// reported to progress.
	solver.Limits
	// Parts is the number of parts K (>= 1; clamped to the variables).
	Parts int
	// Threads runs at most this many parts at once (>= 1), one goroutine
	// each; the results do not depend on it.
	Threads int
	// Inner is the number of TRW-S iterations per part and outer
	// iteration (>= 1).
	Inner int
	// BoundTol and BoundWindow: with Tol > 0 the run stops as Converged
	// when the dual improved by at most BoundTol*max(1, |Dual|) over the
	// last BoundWindow outer iterations.
	BoundTol    float64
	BoundWindow int
	// Step in (0, 1] is the fraction of the way each copy's belief is
	// moved to its share of the copies' sum. 1, the full averaging,
	// oscillates when the adjacent boundary variables of a part move
	// together (every part updates at once); 0.5 converged on every
	// model tried (docs/distributed-trws.md).
	Step float64
}

// DefaultOptions: 2 parts on 2 threads, one inner iteration, 1000 outer
// iterations, relative gap 1e-6, the stall test of trws (1e-7 over 10),
// half steps.
func DefaultOptions() Options {
	return Options{
		Limits: solver.Limits{MaxIter: 1000, Tol: 1e-6, ProgressEvery: 250 * time.Millisecond},
		Parts:  2, Threads: 2, Inner: 1, BoundTol: 1e-7, BoundWindow: 10, Step: 0.5,
	}
}

// Validate returns a *solver.OptionError naming the first bad option.
func (o *Options) Validate() error {
	if err := o.Limits.Validate(); err != nil {
		return err
	}
	switch {
	case o.Parts < 1:
		return solver.Errorf("Parts", "%d < 1", o.Parts)
	case o.Threads < 1:
		return solver.Errorf("Threads", "%d < 1", o.Threads)
	case o.Inner < 1:
		return solver.Errorf("Inner", "%d < 1", o.Inner)
	case !solver.NonNegative(o.BoundTol):
		return solver.Errorf("BoundTol", "%v is not a finite number >= 0", o.BoundTol)
	case o.BoundWindow < 1:
		return solver.Errorf("BoundWindow", "%d < 1", o.BoundWindow)
	case !(o.Step > 0 && o.Step <= 1):
		return solver.Errorf("Step", "%v is not in (0, 1]", o.Step)
	}
	return nil
}

// Solve runs distributed TRW-S on m with evidence ev, the parts in
// process (LocalLink). progress, when not nil, gets the first iteration and
// then one every ProgressEvery.
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, error) {
	start := time.Now()
	if err := opts.Validate(); err != nil {
		return solver.Result{}, err
	}
	if err := m.Validate(); err != nil {
		return solver.Result{}, fmt.Errorf("dtrws: %w", err)
	}
	red, err := solver.Reduce(m, ev)
	if err != nil {
		return solver.Result{}, fmt.Errorf("dtrws: %w", err)
	}
	if red == nil {
		return solver.InfeasibleResult(time.Since(start)), nil
	}
	sp, err := NewSplit(red.Model, opts.Parts)
	if err != nil {
		return solver.Result{}, err
	}
	links := make([]Link, len(sp.Models))
	for p := range links {
		l, err := NewLocalLink(sp.Models[p], sp.Boundary(p))
		if err != nil {
			return solver.Result{}, err
		}
		links[p] = l
	}
	res, err := Run(ctx, red.Model, sp, links, opts, start, progress)
	if err != nil {
		return solver.Result{}, err
	}
	return solver.Finish(m, red, res), nil
}

// Boundary returns the local indices of part p's boundary copies, in the
// order of Shared: the order of a Link's flat slices.
func (s *Split) Boundary(p int) []int32 {
	var b []int32
	for _, cs := range s.Copies {
		for _, c := range cs {
			if int(c.Part) == p {
				b = append(b, c.Local)
			}
		}
	}
	return b
}

// Run is the coordinator: it drives the parts' links (links[p] runs
// sp.Models[p]) through outer iterations on m (the model sp splits, no
// evidence) and returns the result on m.
//
// Each outer iteration: every part runs opts.Inner TRW-S iterations after
// adding its multiplier changes; the dual is the sum of the parts' bounds
// (valid: the multipliers of every shared variable sum to zero); the
// primal takes each variable from its owner's labelling and each shared
// one from the largest summed belief, then moves the shared ones by ICM,
// and is scored exactly on m (the best is polished by ICM sweeps at the
// end); then every
// copy's belief b_p is moved to (n_p/N) B, B the sum of the copies'
// beliefs and N of their chain counts (docs/distributed-trws.md).
func Run(ctx context.Context, m *model.Model, sp *Split, links []Link, opts Options, start time.Time, progress func(solver.Progress)) (solver.Result, error) {
	k := len(links)
	if k != len(sp.Models) {
		return solver.Result{}, fmt.Errorf("dtrws: %d links for %d parts", k, len(sp.Models))
	}
	lay := newLayout(m, sp, k)
	ins := make([]StepIn, k)
	outs := make([]StepOut, k)
	errs := make([]error, k)
	for p := range ins {
		ins[p].Iters = opts.Inner
	}
	x := make([]int, m.NumVars())
	bestX := make([]int, m.NumVars())
	res := solver.Result{Status: solver.IterationLimit, Dual: posInf, Primal: math.Inf(-1)}
	found := false
	w := opts.BoundWindow + 1
	hist := make([]float64, w)
	var lastReport time.Duration
	sem := make(chan struct{}, opts.Threads)
	maxCard := 1
	for _, c := range m.Cards {
		maxCard = max(maxCard, c)
	}
	bsum := make([]float64, maxCard)
	icm, buf := localsearch.New(m), make([]float64, maxCard)
	for t := 1; ; t++ {
		var wg sync.WaitGroup
		for p := range links {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				errs[p] = links[p].Step(ctx, &ins[p], &outs[p])
				<-sem
			}()
		}
		wg.Wait()
		for p, err := range errs {
			if err != nil {
				if ctx.Err() != nil {
					break // the limits below report the cancellation
				}
				return solver.Result{}, fmt.Errorf("dtrws: part %d: %w", p, err)
			}
		}
		if ctx.Err() == nil {
			dual := 0.0
			for p := range outs {
				dual += outs[p].Bound
			}
			res.Relaxed = dual
			res.Dual = min(res.Dual, dual)
			// The primal.
			for v := range x {
				x[v] = int(outs[sp.Owner[v]].Labels[sp.OwnerLocal[v]])
			}
			for j, cs := range sp.Copies {
				card := m.Cards[sp.Shared[j]]
				b := bsum[:card]
				sumBeliefs(b, cs, lay.off[j], outs)
				x[sp.Shared[j]] = argmax(b)
			}
			// Settle the boundary given the parts' interiors: ICM
			// moves of the shared variables (never a lower score).
			for _, v := range sp.Shared {
				l := buf[:m.Cards[v]]
				icm.Scores(v, x, l)
				x[v] = localsearch.Best(l, x[v])
			}
			if sc := m.Score(x); sc > res.Primal || !found && !math.IsInf(sc, -1) {
				res.Primal, found = sc, !math.IsInf(sc, -1)
				copy(bestX, x)
			}
			// The multiplier update.
			updateMultipliers(m, sp, lay, outs, ins, bsum, opts.Step)
		}
		res.Iterations = t
		res.Gap = res.Dual - res.Primal
		elapsed := time.Since(start)
		if progress != nil && (t == 1 || elapsed-lastReport >= opts.ProgressEvery) {
			lastReport = elapsed
			progress(solver.Progress{Iteration: t, Dual: res.Dual, Primal: res.Primal, Gap: res.Gap, Elapsed: elapsed})
		}
		hist[t%w] = res.Dual
		stalled := t > opts.BoundWindow && hist[(t-opts.BoundWindow)%w]-res.Dual <= opts.BoundTol*math.Max(1, math.Abs(res.Dual))
		switch {
		case math.IsInf(res.Dual, -1):
			res.Status = solver.Infeasible
		case found && solver.Closed(res.Dual, res.Primal, opts.Tol):
			res.Status = solver.Optimal
		case stalled && opts.Tol > 0:
			res.Status = solver.Converged
		default:
			st, stop := opts.Reached(ctx, t, elapsed)
			if !stop {
				continue
			}
			res.Status = st
		}
		break
	}
	if found {
		// Polish the best assignment by ICM sweeps (never a lower score).
		icm.Sweeps(bestX, polishSweeps, buf)
		res.Primal = m.Score(bestX)
		res.Gap = res.Dual - res.Primal
		res.Assignment = append([]int(nil), bestX...)
	} else {
		res.Primal = math.Inf(-1)
		res.Gap = res.Dual - res.Primal
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// layout places the boundary copies in the parts' flat slices: copy i of
// Shared[j] is entry idx[j][i] of its part's Chains and starts at
// off[j][i] in its Delta and Beliefs; width[p] is part p's slice length.
type layout struct {
	off, idx [][]int
	width    []int
}

func newLayout(m *model.Model, sp *Split, k int) *layout {
	l := &layout{off: make([][]int, len(sp.Shared)), idx: make([][]int, len(sp.Shared)), width: make([]int, k)}
	count := make([]int, k)
	for j, cs := range sp.Copies {
		l.off[j], l.idx[j] = make([]int, len(cs)), make([]int, len(cs))
		card := m.Cards[sp.Shared[j]]
		for i, c := range cs {
			l.off[j][i], l.idx[j][i] = l.width[c.Part], count[c.Part]
			l.width[c.Part] += card
			count[c.Part]++
		}
	}
	return l
}

// sumBeliefs writes B = the sum of the copies' beliefs into b.
func sumBeliefs(b []float64, cs []Copy, off []int, outs []StepOut) {
	clear(b)
	for i, c := range cs {
		src := outs[c.Part].Beliefs[off[i]:]
		for x := range b {
			b[x] += src[x]
		}
	}
}

// argmax returns the first index of the largest entry of v.
func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// updateMultipliers sets ins[p].Delta so that every copy's belief b_p
// moves the fraction step of the way to (n_p/N) B (B the sum of the copies' beliefs, N
// of their chain counts): the changes of a variable's copies sum to zero
// where B is finite; where B is -Inf the state is dead in the model (no
// assignment of finite score uses it) and becomes -Inf in every copy.
func updateMultipliers(m *model.Model, sp *Split, lay *layout, outs []StepOut, ins []StepIn, bsum []float64, step float64) {
	for p := range ins {
		if cap(ins[p].Delta) < lay.width[p] {
			ins[p].Delta = make([]float64, lay.width[p])
		}
		ins[p].Delta = ins[p].Delta[:lay.width[p]]
	}
	for j, cs := range sp.Copies {
		card := m.Cards[sp.Shared[j]]
		b := bsum[:card]
		sumBeliefs(b, cs, lay.off[j], outs)
		n := 0
		for i, c := range cs {
			n += int(outs[c.Part].Chains[lay.idx[j][i]])
		}
		for i, c := range cs {
			share := float64(outs[c.Part].Chains[lay.idx[j][i]]) / float64(n)
			own := outs[c.Part].Beliefs[lay.off[j][i]:]
			d := ins[c.Part].Delta[lay.off[j][i]:]
			for x := range b {
				if math.IsInf(b[x], -1) {
					d[x] = math.Inf(-1)
				} else {
					d[x] = step * (share*b[x] - own[x])
				}
			}
		}
	}
}
