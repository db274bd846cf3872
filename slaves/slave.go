package slaves

// Slave is one subproblem of dual decomposition over a scope of variables.
//
// A Slave may keep state between calls (warm starts, scratch space) and is
// therefore not safe for concurrent use; the engine gives each slave to one
// goroutine at a time. Hot-path methods must not allocate.
type Slave interface {
	// Cards returns the cardinalities of the scope's variables, in scope
	// order. The flattened vectors below have Len() = sum(Cards()) entries.
	Cards() []int

	// MAP maximises phi(y) + sum_k w_k(y_k) over the slave's configurations
	// y, where w is flattened in scope order. It writes the maximiser into y
	// (one state per scope variable) and returns the maximum, or -Inf when no
	// configuration is feasible.
	MAP(w []float64, y []int) float64

	// QUAD solves the slave's quadratic subproblem, AD3 eq. (12) divided by
	// eta:
	//   minimise 1/2 sum_k ||u_k - c_k||^2 - (1/eta) phi . q
	// over distributions q on the slave's feasible configurations, where u_k
	// is the marginal of variable k under q. It writes u (flattened like c)
	// and returns phi . q, the slave's own score at the solution (its term of
	// the LP objective). Solvers may be inexact (AD3 Prop. 2) as long as the
	// error shrinks when called repeatedly with converging inputs.
	QUAD(c []float64, eta float64, u []float64) float64

	// Score returns phi(y), -Inf when y violates a hard constraint.
	Score(y []int) float64
}

// Offsets returns the prefix sums of cards: variable k of a scope occupies
// [off[k], off[k+1]) of a flattened per-variable vector.
func Offsets(cards []int) []int {
	off := make([]int, len(cards)+1)
	for k, c := range cards {
		off[k+1] = off[k] + c
	}
	return off
}

// Inexact is implemented by slaves whose QUAD may stop short of the optimum
// (an iteration cap); Converged reports whether the last QUAD call reached
// it. The engine re-solves such a slave even when its inputs did not change.
type Inexact interface {
	Converged() bool
}

// ScratchUser is implemented by slaves whose solvers can share per-call
// scratch space with other slaves that are never run concurrently with
// them; the engine gives one Scratch to each chunk of slaves, which one
// goroutine at a time solves, so scratch memory does not grow with the
// number of slaves.
type ScratchUser interface {
	UseScratch(*Scratch)
}
