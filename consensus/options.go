package consensus

import (
	"time"

	"github.com/ddrun/ddrun/solver"
)

// Algo names a dual-decomposition algorithm: how the master updates the
// multipliers and what the slaves solve.
type Algo string

// Algorithms.
const (
	// ADMM is DD-ADMM, Martins et al. ICML 2011 Alg. 2 (QUAD slaves).
	ADMM Algo = "admm"
	// Subgradient is DD-subgradient, Alg. 1 (MAP slaves).
	Subgradient Algo = "subgradient"
)

// Decomposition names how the model is split into slaves.
type Decomposition string

// Decompositions (package partition builds them).
const (
	PerFactor Decomposition = "factor"
	Chains    Decomposition = "chains"
	Trees     Decomposition = "trees"
)

// StepRule is DD-subgradient's step size rule.
type StepRule string

// Step rules: Polyak's (L(lambda) - best primal) / ||g||^2 scaled by Eta,
// Eta/t, and Eta/sqrt(t).
const (
	Polyak      StepRule = "polyak"
	Diminishing StepRule = "1/t"
	InvSqrt     StepRule = "1/sqrt(t)"
)

// Options configures a run. The zero value is not usable; start from
// DefaultOptions.
type Options struct {
	solver.Limits
	Algo    Algo
	Slaves  Decomposition
	Step    StepRule // DD-subgradient only
	Threads int      // goroutines for the slave and variable loops (>= 1)
	// ResidualTol: Converged when both the primal and the dual residual
	// (root-mean-square per replica entry) are below it.
	ResidualTol float64
	// Eta is DD-ADMM's initial penalty, or DD-subgradient's step scale
	// eta0 (> 0).
	Eta      float64
	AdaptEta bool    // residual balancing
	Tau      float64 // multiplier step factor, in (0, 1.618]
	// NoPolish leaves out the final polish of the best assignment (ICM
	// to a local optimum and, on models with hard constraints,
	// internal/primal's construction and large neighbourhood search): the
	// primal is then the best of the checks made during the run. Branch
	// and bound sets it below the root (exact.ADMM), where the polish of
	// every node cost more than the nodes' iterations (bn/water: 1.3 s
	// against 0.02 s to certify) and the search's incumbent already
	// comes from the root's polish.
	NoPolish bool
}

// DefaultOptions returns the defaults of `coordinator solve`.
func DefaultOptions() Options {
	return Options{
		Limits:      solver.Limits{MaxIter: 1000, Tol: 1e-6, ProgressEvery: 250 * time.Millisecond},
		Algo:        ADMM,
		Slaves:      PerFactor,
		Step:        Polyak,
		Threads:     1,
		ResidualTol: 1e-6,
		Eta:         0.1,
		AdaptEta:    true,
		Tau:         1,
	}
}

// Validate checks the options and returns a *solver.OptionError naming the
// first bad one.
func (o *Options) Validate() error {
	return solver.FirstBad(
		o.Limits.Validate(),
		solver.Want(o.Algo == ADMM || o.Algo == Subgradient, "Algo", "unknown algorithm %q (want %s or %s)", o.Algo, ADMM, Subgradient),
		solver.Want(o.Slaves == PerFactor || o.Slaves == Chains || o.Slaves == Trees, "Slaves", "unknown decomposition %q (want factor, chains or trees)", o.Slaves),
		solver.Want(o.Step == Polyak || o.Step == Diminishing || o.Step == InvSqrt, "Step", "unknown step rule %q (want polyak, 1/t or 1/sqrt(t))", o.Step),
		solver.WantAtLeast("Threads", o.Threads, 1),
		solver.WantNonNegative("ResidualTol", o.ResidualTol),
		solver.WantPositive("Eta", o.Eta),
		solver.Want(o.Tau > 0 && o.Tau <= 1.618, "Tau", "%v is outside (0, 1.618]", o.Tau),
	)
}
