package convexmp

import (
	"math"
	"time"

	"github.com/ddrun/ddrun/solver"
)

// Options configures a run. The zero value is not usable; start from
// DefaultOptions.
type Options struct {
	// EpsDescent switches to steepest eps-descent when block coordinate
	// descent stalls, which makes the run converge to the LP optimum.
	// Without it the run stops at the first stall (convex max-product).
	EpsDescent bool
	// Limits: an iteration is a block coordinate descent sweep (every
	// variable updated once) or an eps-descent step; progress is also
	// reported once at the end.
	solver.Limits
	// StallTol decides when block coordinate descent stalls: a sweep that
	// lowers the dual by less than StallTol*max(1, |dual|). In plain mode
	// the run then stops; with EpsDescent the run switches to an
	// eps-descent step as soon as a sweep gains less than
	// max(StallTol*max(1, |dual|), eps).
	StallTol float64
	// Eps0 is the initial eps of eps-descent (absolute, in score units, per
	// max-function of the dual); EpsMin the last one: the run stops with
	// status Converged once an eps-subdifferential at an eps below EpsMin
	// contains 0, which puts the dual within (|V|+|E|)*EpsMin of the LP
	// optimum (the paper's Corollary 2). EpsShrink in (0, 1) multiplies eps
	// each time the eps-subdifferential contains 0.
	Eps0, EpsMin, EpsShrink float64
	// QPIters bounds the iterations of the min-norm QP solver per
	// eps-descent direction (>= 1).
	QPIters int
	// ICMSweeps bounds the iterated-conditional-modes sweeps that improve
	// each decoded assignment (0: decode only).
	ICMSweeps int
	// DecodeEvery is the number of block coordinate descent sweeps between
	// two decodings of a primal assignment (>= 1).
	DecodeEvery int
	// MaxTable bounds the number of entries of one factor table; a larger
	// factor (after model.DenseTable) is rejected with an error.
	MaxTable int

	// trace, when set (tests), is called with every dual value computed
	// after a sweep or an eps-descent step, in order.
	trace func(phase string, dual float64)
}

// DefaultOptions returns the defaults: plain convex max-product for at most
// 10000 sweeps (the paper's budget), eps-descent from eps = 0.01 (the
// paper's switch threshold) down to 1e-7 when enabled.
func DefaultOptions() Options {
	return Options{
		Limits:      solver.Limits{MaxIter: 10000, Tol: 1e-9, ProgressEvery: 250 * time.Millisecond},
		StallTol:    1e-10,
		Eps0:        1e-2,
		EpsMin:      1e-7,
		EpsShrink:   0.1,
		QPIters:     1000,
		ICMSweeps:   10,
		DecodeEvery: 10,
		MaxTable:    1 << 20,
	}
}

// Validate returns a *solver.OptionError naming the first bad option.
func (o *Options) Validate() error {
	if err := solver.FirstBad(
		o.Limits.Validate(),
		solver.WantNonNegative("StallTol", o.StallTol),
		solver.WantAtLeast("QPIters", o.QPIters, 1),
		solver.WantAtLeast("ICMSweeps", o.ICMSweeps, 0),
		solver.WantAtLeast("DecodeEvery", o.DecodeEvery, 1),
		solver.WantAtLeast("MaxTable", o.MaxTable, 1),
	); err != nil || !o.EpsDescent {
		return err
	}
	return solver.FirstBad(
		solver.WantPositive("EpsMin", o.EpsMin),
		solver.Want(o.Eps0 >= o.EpsMin && !math.IsInf(o.Eps0, 1), "Eps0", "%v is not a finite number >= EpsMin (%v)", o.Eps0, o.EpsMin),
		solver.Want(o.EpsShrink > 0 && o.EpsShrink < 1, "EpsShrink", "%v is outside (0, 1)", o.EpsShrink),
	)
}

// Stats describes a run beyond solver.Result.
type Stats struct {
	// Sweeps is the number of block coordinate descent sweeps; EpsSteps
	// the number of accepted eps-descent steps, CertSteps those along a
	// direction certified to lower the dual by more than eps (Claim 2);
	// QPSolves and QPIters count the min-norm QPs of Corollary 2 and their
	// iterations.
	Sweeps, EpsSteps, CertSteps, QPSolves, QPIters int
	// StallDual is the dual when block coordinate descent first stalled:
	// the plain convex max-product value in plain mode, the dual at the
	// first switch to eps-descent (a sweep gaining less than Eps0) with
	// EpsDescent; NaN if it never stalled.
	StallDual float64
	// StallIter is the iteration of that first stall.
	StallIter int
	// Eps is the last eps used (0 when eps-descent never ran).
	Eps float64
	// Residual is the largest marginalisation disagreement
	// |sum_{x_a \ x_i} b_a(x_a) - b_i(x_i)| of the recovered beliefs (NaN
	// when none were recovered).
	Residual float64
	// Vars, Factors and Regions describe the problem actually solved (after
	// reduction): Regions = |V| + |E| counts the max-functions of the dual.
	Vars, Factors, Regions int
}
