package solver

import "time"

// Status says why a run stopped.
type Status string

// Stop reasons, as reported in the result's "status" field.
const (
	// Optimal: the gap is closed within the tolerance; the primal is a
	// certified MAP.
	Optimal Status = "optimal"
	// Converged: the algorithm's own convergence test passed (for DD, both
	// residuals below the threshold: LP optimum reached, possibly
	// fractional) but the gap is open.
	Converged      Status = "converged"
	IterationLimit Status = "iteration_limit"
	TimeLimit      Status = "time_limit"
	Interrupted    Status = "interrupted"
	// Infeasible: the dual bound is -Inf (no assignment satisfies the hard
	// constraints).
	Infeasible Status = "infeasible"
)

// Progress is a snapshot reported during a run. Algorithms without
// residuals or a penalty leave PrimalRes, DualRes and Eta zero.
//
// Iteration counts the same thing as Result.Iterations: the algorithm's
// iterations so far (for branch and bound, the iterations of every node's
// solver added up), so that the last report of a run and its result agree.
type Progress struct {
	Iteration int
	Dual      float64 // best (lowest) valid upper bound so far
	Primal    float64 // best assignment score so far (-Inf if none)
	Gap       float64
	PrimalRes float64
	DualRes   float64
	Eta       float64
	Elapsed   time.Duration
	// Nodes and Open are set by branch and bound only: the nodes solved
	// so far and the nodes still open. Dual is then the largest open
	// bound and Primal the incumbent.
	Nodes, Open int
	// Fields says which of PrimalRes, DualRes and Eta the algorithm
	// fills (dual decomposition all three, convex max-product under
	// eps-descent DualRes and its eps in Eta, TRW-S none): displays show
	// only those.
	Fields Field
}

// Field is a set of Progress's optional fields.
type Field uint8

// The optional fields of Progress.
const (
	HasPrimalRes Field = 1 << iota
	HasDualRes
	HasEta
)

// Has reports whether every field of f is filled in p.
func (p Progress) Has(f Field) bool { return p.Fields&f == f }

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
	// Mu holds the final marginals, laid out like the model's Unary (zero
	// on states that evidence or hard constraints exclude), when the
	// algorithm has them and the run was in this process; nil otherwise.
	Mu []float64
}
