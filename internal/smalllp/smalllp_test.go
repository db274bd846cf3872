package smalllp

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// certify checks that sol is optimal for p by LP duality: X is feasible,
// Dual is dual feasible, and the two objectives agree. That is a proof of
// optimality that shares nothing with the simplex.
func certify(t *testing.T, name string, p *LP, sol Solution) {
	t.Helper()
	m, n := len(p.B), len(p.C)
	const eps = 1e-7
	for j, x := range sol.X {
		if x < -eps {
			t.Fatalf("%s: x[%d] = %v < 0", name, j, x)
		}
	}
	bd := 0.0
	for r := 0; r < m; r++ {
		ax := 0.0
		for j := 0; j < n; j++ {
			ax += p.A[r*n+j] * sol.X[j]
		}
		switch p.Sense[r] {
		case Eq:
			if math.Abs(ax-p.B[r]) > eps {
				t.Fatalf("%s: row %d: %v != %v", name, r, ax, p.B[r])
			}
		case Le:
			if ax > p.B[r]+eps {
				t.Fatalf("%s: row %d: %v > %v", name, r, ax, p.B[r])
			}
			if sol.Dual[r] < -eps {
				t.Fatalf("%s: dual of <= row %d is %v < 0", name, r, sol.Dual[r])
			}
		}
		bd += sol.Dual[r] * p.B[r]
	}
	for j := 0; j < n; j++ {
		ya := 0.0
		for r := 0; r < m; r++ {
			ya += sol.Dual[r] * p.A[r*n+j]
		}
		if ya < p.C[j]-eps {
			t.Fatalf("%s: dual infeasible at column %d: %v < %v", name, j, ya, p.C[j])
		}
	}
	cx := 0.0
	for j, x := range sol.X {
		cx += p.C[j] * x
	}
	if math.Abs(cx-sol.Value) > eps || math.Abs(bd-cx) > eps*(1+math.Abs(cx)) {
		t.Fatalf("%s: primal %v, reported %v, dual %v", name, cx, sol.Value, bd)
	}
}

// TestRandomBoundedLPs: random LPs over a box (so bounded) with equality
// rows through a known feasible point (so feasible), some degenerate.
func TestRandomBoundedLPs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s Solver
	for k := 0; k < 2000; k++ {
		n := 1 + rng.IntN(12)
		nEq, nLe := rng.IntN(4), rng.IntN(6)
		x0 := make([]float64, n)
		for j := range x0 {
			if rng.IntN(3) > 0 { // zeros make vertices degenerate
				x0[j] = float64(rng.IntN(3))
			}
		}
		p := &LP{C: make([]float64, n)}
		for j := range p.C {
			p.C[j] = float64(rng.IntN(7) - 3)
		}
		addRow := func(a []float64, sense Sense, b float64) {
			p.A = append(p.A, a...)
			p.Sense = append(p.Sense, sense)
			p.B = append(p.B, b)
		}
		for r := 0; r < nEq+nLe; r++ {
			a := make([]float64, n)
			ax := 0.0
			for j := range a {
				a[j] = float64(rng.IntN(5) - 2)
				ax += a[j] * x0[j]
			}
			if r < nEq {
				addRow(a, Eq, ax)
			} else {
				addRow(a, Le, ax+float64(rng.IntN(3)))
			}
		}
		for j := 0; j < n; j++ { // the box x <= 3
			a := make([]float64, n)
			a[j] = 1
			addRow(a, Le, 3)
		}
		sol, err := s.Solve(p)
		if err != nil {
			t.Fatalf("case %d: %v", k, err)
		}
		certify(t, "random", p, sol)
	}
}

func TestInfeasibleAndUnbounded(t *testing.T) {
	var s Solver
	inf := &LP{C: []float64{1, 1}, A: []float64{1, 1, 1, 1}, B: []float64{1, 2}, Sense: []Sense{Eq, Eq}}
	if _, err := s.Solve(inf); !errors.Is(err, ErrInfeasible) {
		t.Errorf("x+y=1, x+y=2: got %v, want ErrInfeasible", err)
	}
	neg := &LP{C: []float64{1}, A: []float64{1}, B: []float64{-1}, Sense: []Sense{Le}}
	if _, err := s.Solve(neg); !errors.Is(err, ErrInfeasible) {
		t.Errorf("x <= -1: got %v, want ErrInfeasible", err)
	}
	unb := &LP{C: []float64{1, 0}, A: []float64{1, -1}, B: []float64{1}, Sense: []Sense{Le}}
	if _, err := s.Solve(unb); !errors.Is(err, ErrUnbounded) {
		t.Errorf("max x, x - y <= 1: got %v, want ErrUnbounded", err)
	}
	if _, err := s.Solve(&LP{C: []float64{1}, A: []float64{1, 2}, B: []float64{1}, Sense: []Sense{Le}}); err == nil {
		t.Error("wrong matrix size accepted")
	}
}

// TestNegativeRightHandSides: rows with b < 0 start from artificials.
func TestNegativeRightHandSides(t *testing.T) {
	var s Solver
	// max -x - y, x + y >= 2 (as -x - y <= -2), x - y == -1: x = 0.5, y = 1.5.
	p := &LP{C: []float64{-1, -1}, A: []float64{-1, -1, 1, -1}, B: []float64{-2, -1}, Sense: []Sense{Le, Eq}}
	sol, err := s.Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	certify(t, "negative b", p, sol)
	if math.Abs(sol.X[0]-0.5) > 1e-9 || math.Abs(sol.X[1]-1.5) > 1e-9 {
		t.Errorf("x = %v, want [0.5 1.5]", sol.X)
	}
}

// TestRedundantRows: a repeated equality row keeps its artificial at zero
// and still yields a certified dual.
func TestRedundantRows(t *testing.T) {
	var s Solver
	p := &LP{C: []float64{1, 2, 0}, A: []float64{1, 1, 1, 1, 1, 1, 2, 2, 2}, B: []float64{1, 1, 2}, Sense: []Sense{Eq, Eq, Eq}}
	sol, err := s.Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	certify(t, "redundant", p, sol)
	if math.Abs(sol.Value-2) > 1e-9 {
		t.Errorf("value %v, want 2", sol.Value)
	}
}
