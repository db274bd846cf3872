package dtrws

import (
	"context"
	"fmt"
	"math"
	"slices"
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
	// PrimalEvery: a candidate assignment is scored every PrimalEvery
	// outer iterations (>= 1; its score arrives with the next step), with
	// Sweeps ICM sweeps (>= 0) of each part's interior, the boundary
	// fixed.
	PrimalEvery int
	Sweeps      int
	// TimedPolish bounds the final polish by time: its boundary rounds
	// begin only while expected to end by solver.PolishDeadline. Off,
	// every round runs, and the result does not depend on the machine's
	// speed; set it for parts over TimedPolishVars variables, where a
	// round costs whole-part sweeps.
	TimedPolish bool
}

// TimedPolishVars is the part size (variables) above which a run's final
// polish is bounded by time (Options.TimedPolish): about the 2^20 states
// of DD-ADMM's bound (consensus) at 4 labels.
const TimedPolishVars = 1 << 18

// DefaultOptions: 2 parts on 2 threads, one inner iteration, 1000 outer
// iterations, relative gap 1e-6, the stall test of trws (1e-7 over 10),
// half steps, a candidate scored every iteration after one ICM sweep.
func DefaultOptions() Options {
	return Options{
		Limits: solver.Limits{MaxIter: 1000, Tol: 1e-6, ProgressEvery: 250 * time.Millisecond},
		Parts:  2, Threads: 2, Inner: 1, BoundTol: 1e-7, BoundWindow: 10, Step: 0.5, PrimalEvery: 1, Sweeps: 1,
	}
}

// Validate returns a *solver.OptionError naming the first bad option.
func (o *Options) Validate() error {
	return solver.FirstBad(
		o.Limits.Validate(),
		solver.WantAtLeast("Parts", o.Parts, 1),
		solver.WantAtLeast("Threads", o.Threads, 1),
		solver.WantAtLeast("Inner", o.Inner, 1),
		solver.WantNonNegative("BoundTol", o.BoundTol),
		solver.WantAtLeast("BoundWindow", o.BoundWindow, 1),
		solver.Want(o.Step > 0 && o.Step <= 1, "Step", "%v is not in (0, 1]", o.Step),
		solver.WantAtLeast("PrimalEvery", o.PrimalEvery, 1),
		solver.WantAtLeast("Sweeps", o.Sweeps, 0),
	)
}

// Solve runs distributed TRW-S on m with evidence ev, the parts in
// process (LocalLink) and the coordinator (Run) knowing only their
// boundary. progress, when not nil, gets the first iteration and then one
// every ProgressEvery.
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, error) {
	start := time.Now()
	red, err := solver.Prepare("dtrws", &opts, m, ev)
	if err != nil {
		return solver.Result{}, err
	}
	if red == nil {
		return solver.InfeasibleResult(time.Since(start)), nil
	}
	sp, err := NewSplit(red.Model, opts.Parts)
	if err != nil {
		return solver.Result{}, err
	}
	links, err := sp.LocalLinks()
	if err != nil {
		return solver.Result{}, err
	}
	res, err := Run(ctx, sp.Seam(red.Model), links, opts, start, progress)
	if err != nil {
		return solver.Result{}, err
	}
	if res.Assignment, err = sp.Gather(context.WithoutCancel(ctx), links, res); err != nil {
		return solver.Result{}, err
	}
	return solver.Finish(m, red, res), nil
}

// LocalLinks returns one LocalLink per part.
func (s *Split) LocalLinks() ([]Link, error) {
	links := make([]Link, len(s.Models))
	for p := range links {
		l, err := NewLocalLink(s.Models[p], s.BoundaryOf(p))
		if err != nil {
			return nil, err
		}
		links[p] = l
	}
	return links, nil
}

// Gather returns the assignment of the model res is about (nil when res
// has no primal): every variable from its owner part's kept labels.
func (s *Split) Gather(ctx context.Context, links []Link, res solver.Result) ([]int, error) {
	if math.IsInf(res.Primal, -1) {
		return nil, nil
	}
	x := make([]int, len(s.Owner))
	labels := make([][]int32, len(links))
	for p, l := range links {
		var err error
		if labels[p], err = l.Labels(ctx); err != nil {
			return nil, fmt.Errorf("dtrws: part %d: %w", p, err)
		}
		if len(labels[p]) != len(s.Vars[p]) {
			return nil, fmt.Errorf("dtrws: part %d: %d labels for %d variables", p, len(labels[p]), len(s.Vars[p]))
		}
	}
	for v := range x {
		x[v] = int(labels[s.Owner[v]][s.OwnerLocal[v]])
	}
	return x, nil
}

// BoundaryOf returns the local indices of part p's boundary copies, in the
// order of Shared: the order of a Link's flat slices.
func (s *Split) BoundaryOf(p int) []int32 {
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

// Seam returns what the coordinator knows of the split of m: the shared
// variables' cardinalities and the parts holding their copies (the
// owner first; m's
// constant is part 0's).
func (s *Split) Seam(m *model.Model) *Seam {
	sm := &Seam{Parts: len(s.Models), Cards: make([]int, len(s.Shared)), Copies: make([][]int32, len(s.Shared))}
	for j, v := range s.Shared {
		sm.Cards[j] = m.Cards[v]
		for _, c := range s.Copies[j] {
			sm.Copies[j] = append(sm.Copies[j], c.Part)
		}
	}
	return sm
}

// Seam is all the coordinator knows of a model cut into parts: the shared
// variables (boundary variable j has Cards[j] states and a copy in each
// part of Copies[j], distinct parts) and the model's constant where no part
// holds it. Part p's flat slices hold its copies in the order of j.
type Seam struct {
	Parts    int
	Cards    []int
	Copies   [][]int32
	Constant float64
}

// Validate checks the seam's shape (every shared variable in two parts at
// least, each once, in range).
func (s *Seam) Validate() error {
	if s.Parts < 1 || len(s.Cards) != len(s.Copies) || math.IsNaN(s.Constant) || math.IsInf(s.Constant, 0) {
		return fmt.Errorf("dtrws: seam of %d parts, %d cardinalities for %d shared variables, constant %v", s.Parts, len(s.Cards), len(s.Copies), s.Constant)
	}
	for j, cs := range s.Copies {
		if s.Cards[j] < 1 || len(cs) < 2 {
			return fmt.Errorf("dtrws: shared variable %d: %d states, %d copies", j, s.Cards[j], len(cs))
		}
		for i, p := range cs {
			if p < 0 || int(p) >= s.Parts || slices.Contains(cs[:i], p) {
				return fmt.Errorf("dtrws: shared variable %d: copy in part %d out of range or repeated", j, p)
			}
		}
	}
	return nil
}

// Width returns the length of part p's flat boundary slices.
func (s *Seam) Width(p int) int {
	w := 0
	for j, cs := range s.Copies {
		for _, q := range cs {
			if int(q) == p {
				w += s.Cards[j]
			}
		}
	}
	return w
}

// Run is the coordinator: it drives the parts' links (links[p] runs part
// p of the seam) through outer iterations and returns the result, without
// its assignment: the parts keep theirs (Link.Labels).
//
// Each outer iteration: every part scores the last candidate (see below),
// adds its multiplier changes and runs opts.Inner TRW-S iterations; the
// dual is the sum of the parts' bounds and the constant (valid: the
// multipliers of every shared variable sum to zero); the candidate's
// score is the sum of the parts' scores and the constant, the exact score
// of one assignment (each variable is in one part or shared, and the
// parts' scores add up to the model's); the next candidate's boundary is
// the largest summed belief of every shared variable, its interior each
// part's last forward pass moved by ICM; then every copy's belief b_p is
// moved to (n_p/N) B, B the sum of the copies' beliefs and N of their
// chain counts (docs/distributed-trws.md). At the end the best candidate
// is polished: ICM sweeps of the parts' interiors, and moves of the
// boundary by the parts' summed local scores, each kept only when the
// exact score rises.
func Run(ctx context.Context, seam *Seam, links []Link, opts Options, start time.Time, progress func(solver.Progress)) (solver.Result, error) {
	k := len(links)
	if err := seam.Validate(); err != nil {
		return solver.Result{}, err
	}
	if k != seam.Parts {
		return solver.Result{}, fmt.Errorf("dtrws: %d links for %d parts", k, seam.Parts)
	}
	c := newCoord(seam, links, opts)
	lctx := context.WithoutCancel(ctx)
	res := solver.Result{Status: solver.IterationLimit, Dual: posInf, Primal: math.Inf(-1)}
	w := opts.BoundWindow + 1
	hist := make([]float64, w)
	var lastReport time.Duration
	var laps solver.Laps // the iterations' times, for the polish's deadline
	laps.Start(time.Now())
	for t := 1; ; t++ {
		for p := range c.ins {
			c.ins[p].Iters, c.ins[p].Sweeps, c.ins[p].Polish = opts.Inner, opts.Sweeps, false
		}
		evaluated := c.hasCand
		c.setStates(c.cand, c.hasCand)
		// The steps are not cancelled (a part must never stop half way
		// through an order): cancellation is seen between steps.
		if err := c.step(lctx); err != nil {
			return solver.Result{}, err
		}
		{
			if evaluated {
				c.scored(&res)
			}
			dual := seam.Constant
			for p := range c.outs {
				dual += c.outs[p].Bound
			}
			res.Relaxed = dual
			res.Dual = min(res.Dual, dual)
			c.decode((t)%opts.PrimalEvery == 0 || t == 1)
			c.updateMultipliers(opts.Step)
		}
		res.Iterations = t
		roundGap(&res)
		laps.Lap(time.Now())
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
		case c.found && solver.Closed(res.Dual, res.Primal, opts.Tol):
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
	var deadline time.Time // zero: every round
	if opts.TimedPolish {
		deadline = solver.PolishDeadline(time.Now(), &laps)
	}
	if err := c.finish(lctx, &res, deadline, time.Now); err != nil {
		return solver.Result{}, err
	}
	roundGap(&res)
	res.Elapsed = time.Since(start)
	return res, nil
}

// roundGap sets res.Gap. The dual (the parts' bounds summed) and the primal
// (the parts' shares summed) add the same terms in other orders: at the
// optimum the dual may come out a few ulps below the primal, a bound that
// rounding made invalid. The primal, the exact score of an assignment, is
// then the bound (a dual below it by more than rounding is left as it is,
// for the checks to see).
func roundGap(res *solver.Result) {
	if d := res.Primal - res.Dual; d > 0 && d <= 1e-12*math.Max(1, math.Abs(res.Primal)) {
		res.Dual = res.Primal
	}
	res.Gap = res.Dual - res.Primal
}

// coord is the coordinator's state: the seam's flat layout, the parts'
// orders and answers, the candidate and the best boundary.
type coord struct {
	seam  *Seam
	links []Link
	// Copy i of shared variable j is entry idx[j][i] of its part's Chains
	// and States, and starts at off[j][i] in its Delta, Beliefs and Local.
	off, idx [][]int
	ins      []StepIn
	outs     []StepOut
	states   [][]int32 // the orders' States buffers
	count    []int     // each part's copies
	width    []int     // and their states
	errs     []error
	sem      chan struct{}
	bsum     []float64
	// cand is the next candidate's boundary (hasCand: there is one), best
	// the best scored one's; keep: the last scored candidate is the best.
	cand, best     []int32
	hasCand, found bool
	keep           bool
	bestScore      float64
}

func newCoord(seam *Seam, links []Link, opts Options) *coord {
	k := seam.Parts
	c := &coord{seam: seam, links: links, off: make([][]int, len(seam.Copies)), idx: make([][]int, len(seam.Copies)),
		ins: make([]StepIn, k), outs: make([]StepOut, k), errs: make([]error, k), sem: make(chan struct{}, opts.Threads),
		cand: make([]int32, len(seam.Cards)), best: make([]int32, len(seam.Cards)), bestScore: math.Inf(-1)}
	width, count := make([]int, k), make([]int, k)
	maxCard := 1
	for j, cs := range seam.Copies {
		c.off[j], c.idx[j] = make([]int, len(cs)), make([]int, len(cs))
		card := seam.Cards[j]
		maxCard = max(maxCard, card)
		for i, p := range cs {
			c.off[j][i], c.idx[j][i] = width[p], count[p]
			width[p] += card
			count[p]++
		}
	}
	c.states, c.count, c.width = make([][]int32, k), count, width
	for p := range c.ins {
		c.ins[p].Delta = make([]float64, width[p])
		c.states[p] = make([]int32, 0, count[p])
	}
	c.bsum = make([]float64, maxCard)
	return c
}

// step sends every part its order (at most Threads at once) and checks
// the answers' shapes.
func (c *coord) step(ctx context.Context) error {
	var wg sync.WaitGroup
	for p := range c.links {
		wg.Add(1)
		c.sem <- struct{}{}
		go func() {
			defer wg.Done()
			c.errs[p] = c.links[p].Step(ctx, &c.ins[p], &c.outs[p])
			<-c.sem
		}()
	}
	wg.Wait()
	for p, err := range c.errs {
		if err == nil {
			in, out := &c.ins[p], &c.outs[p]
			switch {
			case in.Iters > 0 && (len(out.Beliefs) != c.width[p] || len(out.Chains) != c.count[p] || math.IsNaN(out.Bound)):
				err = fmt.Errorf("%d beliefs and %d chain counts for %d boundary states, bound %v", len(out.Beliefs), len(out.Chains), c.width[p], out.Bound)
			case in.States != nil && (len(out.Local) != c.width[p] || math.IsNaN(out.Score) || math.IsInf(out.Score, 1)):
				err = fmt.Errorf("%d local scores for %d boundary states, score %v", len(out.Local), c.width[p], out.Score)
			}
		}
		if err != nil {
			return fmt.Errorf("dtrws: part %d: %w", p, err)
		}
	}
	for p := range c.ins {
		c.ins[p].Keep = false
	}
	return nil
}

// setStates puts the boundary x into the parts' orders (none: no
// evaluation) and the keep flag.
func (c *coord) setStates(x []int32, on bool) {
	for p := range c.ins {
		c.ins[p].Keep = c.keep
		c.ins[p].States = nil
		if on {
			c.ins[p].States = c.states[p][:0]
		}
	}
	c.keep = false
	if !on {
		return
	}
	for j, cs := range c.seam.Copies {
		for _, p := range cs {
			c.ins[p].States = append(c.ins[p].States, x[j])
		}
	}
}

// scored takes the parts' scores of the candidate sent (boundary c.cand or
// the states in the orders): the best is kept (the parts are told with
// the next order).
func (c *coord) scored(res *solver.Result) bool {
	sc := c.seam.Constant
	for p := range c.outs {
		sc += c.outs[p].Score
	}
	if sc > c.bestScore || !c.found && !math.IsInf(sc, -1) {
		if !math.IsInf(sc, -1) {
			c.found = true
		}
		c.bestScore, c.keep = sc, true
		for j, cs := range c.seam.Copies {
			c.best[j] = c.ins[cs[0]].States[c.idx[j][0]]
		}
		if c.found {
			res.Primal = sc
		}
		return true
	}
	return false
}

// decode sets the next candidate's boundary (on: there is one) to the
// largest summed belief of every shared variable.
func (c *coord) decode(on bool) {
	c.hasCand = on
	if !on {
		return
	}
	for j, cs := range c.seam.Copies {
		b := c.bsum[:c.seam.Cards[j]]
		c.sumBeliefs(b, j, cs, false)
		c.cand[j] = int32(solver.Argmax(b))
	}
}

// sumBeliefs writes the sum of the copies' beliefs (local scores) into b.
func (c *coord) sumBeliefs(b []float64, j int, cs []int32, local bool) {
	clear(b)
	for i, p := range cs {
		src := c.outs[p].Beliefs
		if local {
			src = c.outs[p].Local
		}
		src = src[c.off[j][i]:]
		for x := range b {
			b[x] += src[x]
		}
	}
}

// finish scores the last candidate, then polishes the best: ICM sweeps of
// the parts' interiors with its boundary fixed, and boundary moves to the
// largest summed local score, while the exact score rises and a move is
// expected to end by deadline (the last one's time from now();
// solver.PolishDeadline; zero: no deadline); the parts keep the best.
func (c *coord) finish(ctx context.Context, res *solver.Result, deadline time.Time, now func() time.Time) error {
	evalOnly := func(x []int32, polish bool) error {
		for p := range c.ins {
			c.ins[p].Delta, c.ins[p].Iters, c.ins[p].Polish = nil, 0, polish
			c.ins[p].Sweeps = polishSweeps
		}
		c.setStates(x, true)
		return c.step(ctx)
	}
	if c.hasCand {
		if err := evalOnly(c.cand, false); err != nil {
			return err
		}
		c.scored(res)
	}
	if !c.found {
		return nil
	}
	next := append([]int32(nil), c.best...)
	if err := evalOnly(next, true); err != nil {
		return err
	}
	c.scored(res)
	var last time.Duration // the last move's time
	for range polishSweeps {
		// Move the boundary to the largest summed local score given the
		// last candidate; keep going while the exact score rises.
		began := now()
		if solver.PastDeadline(deadline, began.Add(last)) {
			break
		}
		moved := false
		for j, cs := range c.seam.Copies {
			b := c.bsum[:c.seam.Cards[j]]
			c.sumBeliefs(b, j, cs, true)
			if s := int32(localsearch.Best(b, int(next[j]))); s != next[j] {
				next[j], moved = s, true
			}
		}
		if !moved {
			break
		}
		if err := evalOnly(next, true); err != nil {
			return err
		}
		last = now().Sub(began)
		if !c.scored(res) {
			break
		}
	}
	if c.keep {
		for p := range c.ins {
			c.ins[p].Delta, c.ins[p].Iters = nil, 0
		}
		c.setStates(nil, false)
		return c.step(ctx)
	}
	return nil
}

// updateMultipliers sets the orders' Delta so that every copy's belief b_p
// moves the fraction step of the way to (n_p/N) B (B the sum of the
// copies' beliefs, N of their chain counts): the changes of a variable's
// copies sum to zero where B is finite; where B is -Inf the state is dead
// in the model (no assignment of finite score uses it) and becomes -Inf in
// every copy.
func (c *coord) updateMultipliers(step float64) {
	for p := range c.ins {
		c.ins[p].Delta = c.ins[p].Delta[:cap(c.ins[p].Delta)]
	}
	for j, cs := range c.seam.Copies {
		b := c.bsum[:c.seam.Cards[j]]
		c.sumBeliefs(b, j, cs, false)
		n := 0
		for i, p := range cs {
			n += int(c.outs[p].Chains[c.idx[j][i]])
		}
		for i, p := range cs {
			share := float64(c.outs[p].Chains[c.idx[j][i]]) / float64(n)
			own := c.outs[p].Beliefs[c.off[j][i]:]
			d := c.ins[p].Delta[c.off[j][i]:]
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
