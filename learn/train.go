package learn

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/ddrun/ddrun/internal/rusage"
)

// Options are what every training algorithm takes. Algorithm-specific
// fields say which algorithm reads them.
type Options struct {
	C         float64       // the loss weight of the primal (default 1)
	TimeLimit time.Duration // 0: none
	MaxIter   int           // passes over the data; 0: none (then TimeLimit or Tol must stop the run)
	Tol       float64       // stop when gap <= Tol * max(1, primal); 0: never on the gap
	Threads   int           // goroutines for the objective evaluation, BCFW/SSG mini-batches and GDMM's two-stage sequence pass (0: GOMAXPROCS)
	Seed      int64         // sampling and example order
	// EvalEvery evaluates the primal and dual every EvalEvery passes (0:
	// every pass); EvalAuto evaluates after a pass when the time since
	// the last evaluation is at least that evaluation's duration (at most
	// about half the run evaluating: at hundreds of labels one
	// evaluation, a loss-augmented Viterbi pass, costs more than a GDMM
	// pass; which passes are evaluated then depends on the clock). The
	// last pass is always evaluated.
	EvalEvery int
	// Progress, when not nil, receives each evaluation (Seconds counting
	// the training time so far, evaluations included).
	Progress func(Result)

	// GDMM: the augmented Lagrangian's penalty rho (eq. 12, default 1),
	// the multiplier step eta (eq. 13; 0: rho times DefaultEta on
	// sequences, DefaultEtaML on multilabel data) and whether the
	// factorwise maximization oracles use Sect. 3.2's sublinear versions
	// (ordered maps for transitions, sampling for emissions).
	Rho, Eta  float64
	Sublinear bool
	// SampleParts is nu, the number of label subsets that the sampled
	// emission oracle picks one of (Sect. 3.2, eq. 21). Default 1, the
	// exact search: on Brown the sampled one lost more progress per pass
	// than it saved (docs/learning.md).
	SampleParts int

	// RegEmit and RegTrans are the block regularization coefficients
	// (Belanger et al. 2012, Sect. 4 and 6.2): the primal's regularizer
	// becomes 1/2 (RegEmit ||W_emit||^2 + RegTrans ||W_trans||^2), the
	// transition block being the transitions (sequences) or the label
	// pairs (multilabel). Default 1 each (the plain primal); every row of
	// Algorithms honours them through BlockRegularized.
	RegEmit, RegTrans float64
	// Average (ssg): report and return the weighted average of the
	// iterates (weights proportional to t) instead of the last iterate.
	Average bool
}

// DefaultEta is GDMM's multiplier step (eq. 13) on sequences when none is
// given, as a fraction of rho; DefaultEtaML is the same on multilabel
// data. Theorem 1's linear rate asks for a step small against rho (eta <=
// rho / (4 + ...)). On Brown with the sentences in the corpus' fixed order
// eta = rho stalled the primal after about 20 passes where rho/4 kept it
// falling; with the order shuffled every pass eta = rho is the faster
// (1,952 against 2,045 after 30 passes at 105 tags) and did not stall.
// On planted multilabel data eta = rho stalled (docs/learning.md, "The
// multiplier step").
const (
	DefaultEta   = 1
	DefaultEtaML = 0.25
)

// gdmmEta returns GDMM's multiplier step: Eta, or its default on
// multilabel (ml) or sequence data. Validate must have run.
func (o *Options) gdmmEta(ml bool) float64 {
	if o.Eta > 0 {
		return o.Eta
	}
	if ml {
		return o.Rho * DefaultEtaML
	}
	return o.Rho * DefaultEta
}

// EvalAuto is Options.EvalEvery's automatic schedule.
const EvalAuto = -1

// Validate fills defaults and checks the options; errors name the field.
func (o *Options) Validate() error {
	o.C = cmp.Or(o.C, 1)
	o.Rho = cmp.Or(o.Rho, 1)
	o.SampleParts = cmp.Or(o.SampleParts, 1)
	o.RegEmit = cmp.Or(o.RegEmit, 1)
	o.RegTrans = cmp.Or(o.RegTrans, 1)
	switch {
	case !(o.C > 0) || math.IsInf(o.C, 0):
		return fmt.Errorf("C %v: want a positive finite number", o.C)
	case o.TimeLimit < 0 || o.MaxIter < 0 || o.EvalEvery < EvalAuto:
		return fmt.Errorf("TimeLimit %v, MaxIter %d, EvalEvery %d: want non-negative (EvalEvery: or EvalAuto, -1)", o.TimeLimit, o.MaxIter, o.EvalEvery)
	case !(o.Tol >= 0) || math.IsInf(o.Tol, 0):
		return fmt.Errorf("Tol %v: want a non-negative finite number", o.Tol)
	case o.TimeLimit == 0 && o.MaxIter == 0 && o.Tol == 0:
		return fmt.Errorf("no stopping rule: set TimeLimit, MaxIter or Tol")
	case !(o.Rho > 0) || !(o.Eta >= 0) || math.IsInf(o.Rho, 0) || math.IsInf(o.Eta, 0):
		return fmt.Errorf("Rho %v, Eta %v: want positive finite numbers (Eta: or 0, the default)", o.Rho, o.Eta)
	case o.SampleParts < 1:
		return fmt.Errorf("SampleParts %d: want >= 1", o.SampleParts)
	case !(o.RegEmit > 0) || !(o.RegTrans > 0) || math.IsInf(o.RegEmit, 0) || math.IsInf(o.RegTrans, 0):
		return fmt.Errorf("RegEmit %v, RegTrans %v: want positive finite numbers", o.RegEmit, o.RegTrans)
	}
	return nil
}

// Run is what every account of a training run states, its Result and its
// Report alike: the algorithm, its iterations and time, and the primal
// objective of the weights it returns.
type Run struct {
	Algo       string  `json:"algo"`
	Iterations int     `json:"iterations"`
	Seconds    float64 `json:"seconds"`
	// PassSeconds is the part of Seconds spent in passes, evaluations
	// excluded: per-pass cost, comparable between trainers whatever their
	// evaluation schedules. PassCPUSeconds is the process's CPU seconds in
	// them (every thread: above PassSeconds with mini-batches on several
	// threads; a measure that the machine's other load does not inflate).
	PassSeconds    float64 `json:"pass_seconds"`
	PassCPUSeconds float64 `json:"pass_cpu_seconds"`
	Primal         float64 `json:"primal"`
}

// Result is a training run's outcome (and each progress report): the
// primal objective of the returned weights, a dual objective that is a
// valid lower bound on the primal optimum (-Inf when the algorithm has
// none), and Gap = Primal - Dual.
type Result struct {
	Run
	Dual float64 `json:"dual"`
	Gap  float64 `json:"gap"`
	// PrimalExact is false when some loss-augmented maximisation of the
	// primal was not proved optimal (multilabel beyond MaxBruteLabels
	// with an unfinished search): Primal is then a lower estimate.
	PrimalExact bool `json:"-"`
	// Objective names the objective Primal and Dual bound: ObjectiveExact
	// (the structural SVM with exact loss-augmented maximisation) or
	// ObjectiveLP (its LP relaxation, multilabel GDMM; see PrimalLP).
	Objective string `json:"objective,omitempty"`
	// Steps counts the oracle calls of the passes (a block step of BCFW
	// or SSG, a factor's Frank-Wolfe step of GDMM).
	Steps int `json:"-"`
}

// Objectives of Result.Objective.
const (
	ObjectiveExact = "exact"
	ObjectiveLP    = "lp-relaxed"
)

// Trainer trains weights on d. It returns the weights of the best primal
// evaluated and the result; a cancelled ctx stops it with what it has.
type Trainer func(ctx context.Context, d *Data, o Options) (*Weights, Result, error)

// Algorithm is one row of the table of training algorithms.
type Algorithm struct {
	Name    string
	Summary string
	Train   Trainer // nil: not implemented yet
}

// Algorithms is the table `coordinator train --algo` dispatches on. A new
// algorithm is one more row.
var Algorithms = []Algorithm{
	{Name: "gdmm", Summary: "greedy direction method of multipliers with factorwise oracles (Yen et al. 2016); sequences, multilabel (LP-relaxed objective)", Train: BlockRegularized(GDMM)},
	{Name: "bcfw", Summary: "block-coordinate Frank-Wolfe with the structured (Viterbi) oracle (Lacoste-Julien et al. 2013)", Train: BCFW},
	{Name: "ssg", Summary: "stochastic subgradient, Pegasos-style (Shalev-Shwartz et al. 2011)", Train: SSG},
}

// Lookup returns the algorithm named name.
func Lookup(name string) (Algorithm, bool) {
	for _, a := range Algorithms {
		if a.Name == name {
			return a, true
		}
	}
	return Algorithm{}, false
}

// CheckData reports a data set that cannot be trained on: no examples,
// fewer than 2 labels, or a shape too large for the weights.
func CheckData(d *Data) error {
	L, D := d.Shape()
	switch {
	case L < 2:
		return fmt.Errorf("%d labels: want at least 2", L)
	case D < 1:
		return fmt.Errorf("no features")
	case L*D > MaxWeights || L*L > MaxWeights:
		return fmt.Errorf("%d labels x %d features: more than %d weights", L, D, MaxWeights)
	case d.Seq != nil && d.Seq.Sentences() == 0, d.ML != nil && d.ML.Examples() == 0:
		return fmt.Errorf("no examples")
	}
	return nil
}

// stopper tracks a run's limits: the context, the pass count, the
// tolerance and the time limit. The time limit is a deadline: passes ask
// stop between steps (every few blocks), which turns true once the time
// so far plus the last evaluation's duration reaches the limit, so that
// the evaluation that ends the run (itself run under the deadline, see
// evalCtx) ends within it.
type stopper struct {
	start   time.Time
	o       *Options
	evalEnd time.Time       // when the last evaluation ended
	ctx     context.Context // the run's context, bounded by the deadline
	evalDur time.Duration   // the last evaluation's duration, reserved before the deadline
	cut     bool            // stop turned true
	steps   int             // oracle steps counted by the passes (Result.Steps)
}

// newStopper starts the clock of a run; the cancel function releases the
// deadline's timer.
func newStopper(ctx context.Context, o *Options) (*stopper, context.CancelFunc) {
	s := &stopper{start: time.Now(), o: o, ctx: ctx}
	cancel := context.CancelFunc(func() {})
	if o.TimeLimit > 0 {
		s.ctx, cancel = context.WithDeadline(ctx, s.start.Add(o.TimeLimit))
	}
	return s, cancel
}

// reserveFirstEval sets the reserve of the first evaluation, which has no
// duration measured yet, for a run with a time limit on sequences: evals
// primals of d (each one loss-augmented Viterbi per sentence, O(n L^2)),
// estimated from plain Viterbi on the first sentences at zero weights,
// spread over the evaluation's goroutines; at most half the time limit.
func (s *stopper) reserveFirstEval(d *Data, evals int) {
	if s.o.TimeLimit == 0 || d.Seq == nil {
		return
	}
	sd := d.Seq
	w := NewWeights(KindSequence, sd.Labels, 0)
	var sc SeqScratch
	t0 := time.Now()
	n := min(sd.Sentences(), 32)
	for i := 0; i < n; i++ {
		SeqHinge(w, sd, i, &sc)
	}
	frac := float64(len(sd.Y)) / float64(max(1, sd.Start[n]))
	threads := s.o.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	threads = min(threads, runtime.GOMAXPROCS(0))
	est := time.Duration(float64(time.Since(t0)) * frac * float64(evals) / float64(threads))
	s.evalDur = min(est, s.o.TimeLimit/2) // half the time trains, whatever the estimate
}

// stopCheckEvery is how many blocks (sentences, tokens, examples) a pass
// runs between two calls of stop.
const stopCheckEvery = 16

// stop reports whether the pass in progress must stop now: the context is
// done, or the time limit less the evaluation's reserve has passed. It
// stays true once true.
func (s *stopper) stop() bool {
	if !s.cut && (s.ctx.Err() != nil || s.o.TimeLimit > 0 && time.Since(s.start)+s.evalDur >= s.o.TimeLimit) {
		s.cut = true
	}
	return s.cut
}

// loop runs pass until the options stop the run, evaluating with eval
// (which updates r's primal and returns the dual; it must give up without
// an error when s.ctx is done) when due and after the last pass; it returns eval's first error, and sets r.Iterations, r.Steps and
// r.Seconds.
func (s *stopper) loop(r *Result, pass func(), eval func() (float64, error)) error {
	for it := 1; ; it++ {
		p0, c0 := time.Now(), rusage.CPU().Seconds()
		pass()
		r.PassSeconds += time.Since(p0).Seconds()
		r.PassCPUSeconds += rusage.CPU().Seconds() - c0
		r.Iterations, r.Steps = it, s.steps
		last := s.done(it, *r)
		if s.due(it) || last {
			t0 := time.Now()
			dual, err := eval()
			if err != nil {
				return err
			}
			s.evalEnd = time.Now()
			s.evalDur = s.evalEnd.Sub(t0)
			last = s.evaluated(it, r, dual) || last
		}
		if last {
			break
		}
	}
	r.Seconds = s.elapsed()
	return nil
}

// due reports whether pass it is evaluated (see Options.EvalEvery).
func (s *stopper) due(it int) bool {
	if s.o.EvalEvery != EvalAuto {
		return s.o.EvalEvery <= 1 || it%s.o.EvalEvery == 0
	}
	return s.evalEnd.IsZero() || time.Since(s.evalEnd) >= s.evalDur
}

func (s *stopper) elapsed() float64 { return time.Since(s.start).Seconds() }

// evaluated takes an evaluation's dual into r (the best dual so far, the
// gap to r's primal, the time), reports r to the progress callback and
// returns whether the run must stop after iteration it: the end of every
// trainer's evaluation step.
func (s *stopper) evaluated(it int, r *Result, dual float64) bool {
	r.Dual = max(r.Dual, dual)
	r.Gap = r.Primal - r.Dual
	r.Seconds = s.elapsed()
	if s.o.Progress != nil && !math.IsInf(r.Primal, 1) {
		s.o.Progress(*r)
	}
	return s.done(it, *r)
}

// done reports whether the run must stop after iteration it with result r.
func (s *stopper) done(it int, r Result) bool {
	if s.stop() {
		return true
	}
	if s.o.MaxIter > 0 && it >= s.o.MaxIter {
		return true
	}
	// Before the first evaluation Gap and Primal are infinite: no stop.
	return s.o.Tol > 0 && !math.IsInf(r.Gap, 0) && r.Gap <= s.o.Tol*max(1, math.Abs(r.Primal))
}

// finish gives the run its weights when no evaluation finished (the
// deadline or the context cut the first one): the zero weights, whose
// primal is known without an oracle, C times the largest Hamming loss of
// every example (every score is 0): the tokens of the sequences, examples
// times labels for multilabel (of the LP relaxation too). Their dual
// bound is none.
func (s *stopper) finish(best *Weights, d *Data, r *Result) *Weights {
	if best != nil {
		return best
	}
	L, D := d.Shape()
	kind := KindSequence
	if d.ML != nil {
		kind, r.Primal = KindMultilabel, s.o.C*float64(d.ML.Examples()*L)
	} else {
		r.Primal = s.o.C * float64(len(d.Seq.Y))
	}
	r.Gap = r.Primal - r.Dual
	return NewWeights(kind, L, D)
}
