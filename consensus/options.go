package consensus

import (
	"time"
)

// Algo names a dual-decomposition algorithm.
type Algo string

// Algorithms.
const (
	// ADMM is DD-ADMM, Martins et al. ICML 2011 Alg. 2 (QUAD slaves).
	ADMM Algo = "admm"
	// Subgradient is DD-subgradient, Alg. 1 (MAP slaves).
	Subgradient Algo = "subgradient"
	// TRWS is sequential tree-reweighted message passing (package trws).
	TRWS Algo = "trws"
	// CMP is convex max-product, optionally with eps-descent (package cmp).
	CMP Algo = "cmp"
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

// Status says why a run stopped.
type Status string

// Stop reasons, as reported in the result's "status" field.
const (
	// Optimal: the gap is closed within the tolerance; the primal is a
	// certified MAP.
	Optimal Status = "optimal"
	// Converged: both residuals are below the threshold (LP optimum reached,
	// possibly fractional) but the gap is open.
	Converged      Status = "converged"
	IterationLimit Status = "iteration_limit"
	TimeLimit      Status = "time_limit"
	Interrupted    Status = "interrupted"
	// Infeasible: the dual bound is -Inf (no assignment satisfies the hard
	// constraints).
	Infeasible Status = "infeasible"
)

// Options configures a run. The zero value is not usable; start from
// DefaultOptions.
type Options struct {
	Algo      Algo
	Slaves    Decomposition
	Step      StepRule      // DD-subgradient only
	Threads   int           // goroutines for the slave and variable loops (>= 1)
	MaxIter   int           // iteration limit (>= 1)
	TimeLimit time.Duration // 0: none
	Tol       float64       // relative gap for Optimal: gap <= Tol*max(1,|primal|)
	// ResidualTol: Converged when both the primal and the dual residual
	// (root-mean-square per replica entry) are below it.
	ResidualTol float64
	// Eta is DD-ADMM's initial penalty, or DD-subgradient's step scale
	// eta0 (> 0).
	Eta      float64
	AdaptEta bool    // residual balancing
	Tau      float64 // multiplier step factor, in (0, 1.618]
	// ProgressEvery is the minimum time between two Progress callbacks.
	ProgressEvery time.Duration
}

// DefaultOptions returns the defaults of `coordinator solve`.
func DefaultOptions() Options {
	return Options{
		Algo:          ADMM,
		Slaves:        PerFactor,
		Step:          Polyak,
		Threads:       1,
		MaxIter:       1000,
		Tol:           1e-6,
		ResidualTol:   1e-6,
		Eta:           0.1,
		AdaptEta:      true,
		Tau:           1,
		ProgressEvery: 250 * time.Millisecond,
	}
}

// Progress is a snapshot reported during a run.
type Progress struct {
	Iteration int
	Dual      float64 // best (lowest) valid upper bound so far
	Primal    float64 // best assignment score so far (-Inf if none)
	Gap       float64
	PrimalRes float64
	DualRes   float64
	Eta       float64
	Elapsed   time.Duration
}

// Result is the outcome of a run. Assignment is in the model's variable
// order; it is nil when no feasible assignment was found.
type Result struct {
	Status     Status
	Primal     float64 // score of Assignment (-Inf when none)
	Dual       float64 // valid upper bound on the MAP score
	Gap        float64 // Dual - Primal
	Relaxed    float64 // LP objective of the final iterate
	Iterations int
	Elapsed    time.Duration
	Assignment []int
	// Mu holds the final consensus marginals, laid out like the model's
	// Unary (zero on states that evidence or hard constraints exclude),
	// when the run was in this process; nil otherwise.
	Mu []float64
}
