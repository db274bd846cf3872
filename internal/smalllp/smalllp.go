// Package smalllp solves small dense linear programs exactly enough for the
// per-cycle subproblems of TRW-S(LP-C) (Kumar and Torr, ICML 2008, problem
// (12)): a two-phase tableau simplex with Bland's rule, which cannot cycle
// on the highly degenerate local-polytope LPs, and which returns the dual
// values of the rows along with the primal vertex, because the dual solution
// is what the cycle step applies to the model.
//
// It is meant for LPs of a few dozen rows and a few hundred columns; the
// tableau is dense. It knows nothing about models or solvers.
package smalllp

import (
	"errors"
	"fmt"
	"math"
)

// Sense is the relation of one row.
type Sense int8

const (
	Eq Sense = iota // a.x == b
	Le              // a.x <= b
)

// ErrInfeasible reports an LP without a feasible point; ErrUnbounded one
// whose objective grows without bound; ErrIterations a run that hit the
// pivot limit (numerical trouble: Bland's rule terminates in exact
// arithmetic).
var (
	ErrInfeasible = errors.New("smalllp: infeasible")
	ErrUnbounded  = errors.New("smalllp: unbounded")
	ErrIterations = errors.New("smalllp: pivot limit reached")
)

// Tolerance for pivots, reduced costs and phase-one feasibility.
const tol = 1e-9

// LP is max C.x subject to, for every row r, A[r].x (Sense[r]) B[r], and
// x >= 0. A is dense, row-major, len(B) rows of len(C) entries.
type LP struct {
	C     []float64
	A     []float64
	B     []float64
	Sense []Sense
}

// Solution is an optimal vertex X, its value, and dual values Dual (one per
// row) such that Dual.A[.,j] >= C[j] for every column, Dual[r] >= 0 for Le
// rows, and Dual.B == Value (strong duality).
type Solution struct {
	X     []float64
	Dual  []float64
	Value float64
}

// Solver keeps its tableau between calls so that repeated solves of
// similar sizes do not allocate; its zero value is ready to use. A Solver
// is not safe for concurrent use.
type Solver struct {
	t     []float64 // tableau rows (m of them, width w), then the cost row
	basis []int
	neg   []bool

	slackCol, artCol []int
}

// Solve returns an optimal solution of p. The slices of the returned
// Solution are freshly allocated.
func (s *Solver) Solve(p *LP) (Solution, error) {
	var sol Solution
	err := s.SolveTo(p, &sol)
	return sol, err
}

// SolveTo is Solve writing into sol, reusing its slices when they are big
// enough (no allocation once the Solver and sol have seen the size).
func (s *Solver) SolveTo(p *LP, sol *Solution) error {
	m, n := len(p.B), len(p.C)
	if len(p.A) != m*n || len(p.Sense) != m {
		return fmt.Errorf("smalllp: %d rows, %d columns, but %d matrix entries and %d senses", m, n, len(p.A), len(p.Sense))
	}
	// Columns: n structural, one slack per Le row, one artificial per row
	// that has no slack to start from (Eq rows, and Le rows with b < 0).
	nSlack, nArt := 0, 0
	s.slackCol, s.artCol = growInt(s.slackCol, m), growInt(s.artCol, m)
	slackCol, artCol := s.slackCol, s.artCol
	s.neg = growBool(s.neg, m)
	for r := 0; r < m; r++ {
		slackCol[r], artCol[r] = -1, -1
		if p.Sense[r] == Le {
			slackCol[r] = n + nSlack
			nSlack++
		}
		s.neg[r] = p.B[r] < 0
	}
	for r := 0; r < m; r++ {
		if p.Sense[r] == Eq || s.neg[r] {
			artCol[r] = n + nSlack + nArt
			nArt++
		}
	}
	w := n + nSlack + nArt + 1 // the last column is the right-hand side
	s.t = growFloat(s.t, (m+1)*w)
	t := s.t
	s.basis = growInt(s.basis, m)
	for r := 0; r < m; r++ {
		row := t[r*w : (r+1)*w]
		sg := 1.0
		if s.neg[r] {
			sg = -1
		}
		for j := 0; j < n; j++ {
			row[j] = sg * p.A[r*n+j]
		}
		if c := slackCol[r]; c >= 0 {
			row[c] = sg
		}
		row[w-1] = sg * p.B[r]
		if c := artCol[r]; c >= 0 {
			row[c] = 1
			s.basis[r] = c
		} else {
			s.basis[r] = slackCol[r]
		}
	}
	limit := 50 * (m + w)
	cost := t[m*w : (m+1)*w]
	if nArt > 0 {
		// Phase one: minimise the sum of the artificials. The cost row
		// holds reduced costs; with the artificials basic it is minus the
		// sum of their rows.
		for r := 0; r < m; r++ {
			if artCol[r] < 0 {
				continue
			}
			row := t[r*w : (r+1)*w]
			for j := range cost {
				cost[j] -= row[j]
			}
		}
		for r := 0; r < m; r++ {
			if c := artCol[r]; c >= 0 {
				cost[c] = 0
			}
		}
		if err := s.iterate(m, w, w-1, limit); err != nil {
			if errors.Is(err, ErrUnbounded) { // cannot happen: phase one is bounded
				err = ErrIterations
			}
			return err
		}
		if -cost[w-1] > tol*float64(1+m) {
			return ErrInfeasible
		}
		// Drive the artificials still basic (at zero) out where a
		// structural or slack column allows it; a row without one is
		// redundant and keeps its artificial at zero.
		for r := 0; r < m; r++ {
			if s.basis[r] < n+nSlack {
				continue
			}
			row := t[r*w : (r+1)*w]
			for j := 0; j < n+nSlack; j++ {
				if math.Abs(row[j]) > tol {
					s.pivot(m, w, r, j)
					break
				}
			}
		}
	}
	// Phase two: minimise -C.x; artificial columns never enter.
	for j := range cost {
		cost[j] = 0
	}
	for j := 0; j < n; j++ {
		cost[j] = -p.C[j]
	}
	for r := 0; r < m; r++ {
		b := s.basis[r]
		if cb := cost[b]; cb != 0 {
			row := t[r*w : (r+1)*w]
			for j := range cost {
				cost[j] -= cb * row[j]
			}
		}
	}
	if err := s.iterate(m, w, n+nSlack, limit); err != nil {
		return err
	}
	sol.X, sol.Dual = growFloat(sol.X, n), growFloat(sol.Dual, m)
	for r := 0; r < m; r++ {
		if b := s.basis[r]; b < n {
			sol.X[b] = t[r*w+w-1]
		}
	}
	// With y = c_B B^-1 for the minimisation of -C.x over the (sign
	// adjusted) rows, the reduced cost of a row's unit column is -y_r; the
	// dual of the maximisation is -y, and the row's sign flips it back.
	for r := 0; r < m; r++ {
		c := artCol[r]
		if c < 0 {
			c = slackCol[r]
		}
		d := cost[c]
		if s.neg[r] {
			d = -d
		}
		sol.Dual[r] = d
	}
	// The value: recompute from X for accuracy.
	sol.Value = 0
	for j, x := range sol.X {
		sol.Value += p.C[j] * x
	}
	return nil
}

// iterate runs Bland's-rule simplex pivots on the tableau until no column
// below enter (exclusive) has a negative reduced cost.
func (s *Solver) iterate(m, w, enter, limit int) error {
	t := s.t
	cost := t[m*w : (m+1)*w]
	for it := 0; ; it++ {
		if it >= limit {
			return ErrIterations
		}
		col := -1
		for j := 0; j < enter; j++ {
			if cost[j] < -tol {
				col = j
				break
			}
		}
		if col < 0 {
			return nil
		}
		row, best := -1, math.Inf(1)
		for r := 0; r < m; r++ {
			a := t[r*w+col]
			if a <= tol {
				continue
			}
			ratio := t[r*w+w-1] / a
			if ratio < best-tol || (ratio <= best+tol && row >= 0 && s.basis[r] < s.basis[row]) {
				row, best = r, ratio
			}
		}
		if row < 0 {
			return ErrUnbounded
		}
		s.pivot(m, w, row, col)
	}
}

// pivot makes column col basic in row r.
func (s *Solver) pivot(m, w, r, col int) {
	t := s.t
	pr := t[r*w : (r+1)*w]
	inv := 1 / pr[col]
	for j := range pr {
		pr[j] *= inv
	}
	pr[col] = 1
	for i := 0; i <= m; i++ {
		if i == r {
			continue
		}
		row := t[i*w : (i+1)*w]
		f := row[col]
		if f == 0 {
			continue
		}
		for j, v := range pr {
			row[j] -= f * v
		}
		row[col] = 0
	}
	s.basis[r] = col
}

func growFloat(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	b = b[:n]
	clear(b)
	return b
}

func growInt(b []int, n int) []int {
	if cap(b) < n {
		return make([]int, n)
	}
	return b[:n]
}

func growBool(b []bool, n int) []bool {
	if cap(b) < n {
		return make([]bool, n)
	}
	return b[:n]
}
