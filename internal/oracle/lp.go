package oracle

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ddrun/ddrun/model"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// MaxLPVariables bounds the number of LP variables (one per unary state and
// one per feasible configuration of each factor) LocalPolytopeLP accepts.
// Every simplex pivot factorises the dense basis, so the time grows like the
// cube of the number of constraints: keep to a few hundred variables when
// speed matters.
const MaxLPVariables = 3000

// LocalPolytopeLP returns the optimum of the local-polytope LP relaxation of
// m's MAP problem (Martins et al., ICML 2011, eq. 3-4):
//
//	max  Constant + sum_i theta_i . mu_i + sum_a phi_a . nu_a
//	s.t. mu_i >= 0, sum_s mu_i(s) = 1                   for every variable i
//	     nu_a >= 0 over the feasible configurations of a
//	     sum_{y: y_k = s} nu_a(y) = mu_{v_k}(s)         for every factor a,
//	                                                   scope position k, state s
//
// A factor's feasible configurations are its table entries above -Inf
// (Dense), the ones satisfying the constraint (logic kinds), or all (Pair,
// Potts); a unary state of -Inf is fixed to mu = 0. Zero-arity Dense factors
// add their single entry to the constant. The LP value bounds the MAP score
// from above and equals it when the relaxation is tight (for instance on
// factor graphs without cycles). It returns -Inf when the LP is infeasible
// (for instance a factor without a feasible configuration), and an error
// when m is invalid, has more than MaxLPVariables LP variables, or the
// simplex fails.
func LocalPolytopeLP(m *model.Model) (value float64, err error) {
	value, _, err = LocalPolytopeLPSolution(m)
	return value, err
}

// LocalPolytopeLPSolution is LocalPolytopeLP also returning an optimal mu,
// flattened like m.Unary (mu[m.UnaryOff[i]+s] = mu_i(s)); mu is nil when the
// LP is infeasible. When the optimum is not unique, mu is one optimal vertex.
func LocalPolytopeLPSolution(m *model.Model) (value float64, mu []float64, err error) {
	if err := m.Validate(); err != nil {
		return 0, nil, fmt.Errorf("oracle: %w", err)
	}
	p, feasible, err := buildLP(m)
	if err != nil {
		return 0, nil, err
	}
	if !feasible {
		return math.Inf(-1), nil, nil
	}
	mu = make([]float64, len(m.Unary))
	if len(p.cost) == 0 { // no variables: only the constant is left
		return p.constant, mu, nil
	}
	rows, feasible := independentRows(p.rows, p.b, len(p.cost))
	if !feasible {
		return math.Inf(-1), nil, nil
	}
	A := mat.NewDense(len(rows), len(p.cost), nil)
	b := make([]float64, len(rows))
	for r, ri := range rows {
		for _, e := range p.rows[ri] {
			A.Set(r, e.col, e.coef)
		}
		b[r] = p.b[ri]
	}
	opt, x, err := solveLP(p.cost, A, b)
	if err != nil {
		if errors.Is(err, errInfeasible) {
			return math.Inf(-1), nil, nil
		}
		return 0, nil, fmt.Errorf("oracle: local polytope LP: %w", err)
	}
	for j, col := range p.muCol {
		if col >= 0 {
			mu[j] = max(x[col], 0)
		}
	}
	return p.constant - opt, mu, nil
}

// entry is one nonzero coefficient of a constraint row.
type entry struct {
	col  int
	coef float64
}

// lpProblem is the local-polytope LP in equality form, minimising cost.x.
type lpProblem struct {
	cost     []float64
	rows     [][]entry
	b        []float64
	muCol    []int   // LP column of each unary state (flattened like Unary), -1 if fixed to 0
	nuCol    [][]int // per factor, the LP column of each table entry, -1 if none
	constant float64
}

// buildLP writes the LP down. feasible is false when some variable or factor
// has no allowed state or configuration, which makes the LP infeasible.
//
// Rows: one normalisation per variable, one per factor (sum_y nu_a(y) = 1),
// and the marginalisation rows for every scope position and every state but
// the last: the last state's row is the factor's normalisation minus the
// variable's minus the other states' rows. Remaining dependencies (from
// forbidden configurations) are removed by independentRows.
func buildLP(m *model.Model) (p *lpProblem, feasible bool, err error) {
	p = &lpProblem{constant: m.Constant, muCol: make([]int, len(m.Unary)), nuCol: make([][]int, len(m.Factors))}
	for j, t := range m.Unary {
		if math.IsInf(t, -1) {
			p.muCol[j] = -1
			continue
		}
		p.muCol[j] = len(p.cost)
		p.cost = append(p.cost, -t)
	}
	for i := range m.Cards {
		var row []entry
		for j := m.UnaryOff[i]; j < m.UnaryOff[i+1]; j++ {
			if p.muCol[j] >= 0 {
				row = append(row, entry{p.muCol[j], 1})
			}
		}
		if len(row) == 0 {
			return nil, false, nil
		}
		p.rows = append(p.rows, row)
		p.b = append(p.b, 1)
	}
	y := []int{}
	for a := range m.Factors {
		f := &m.Factors[a]
		t, err := factorTable(m, a, MaxLPVariables)
		if err != nil {
			return nil, false, fmt.Errorf("oracle: local polytope LP: %w", err)
		}
		if len(f.Vars) == 0 {
			if math.IsInf(t[0], -1) {
				return nil, false, nil
			}
			p.constant += t[0]
			continue
		}
		st := strides(m, f.Vars)
		// marg[k][s] collects the rows of position k, state s.
		marg := make([][][]entry, len(f.Vars))
		for k, v := range f.Vars {
			marg[k] = make([][]entry, m.Cards[v]-1)
		}
		var norm []entry
		p.nuCol[a] = make([]int, len(t))
		for idx := range t {
			p.nuCol[a][idx] = -1
		}
		y = y[:0]
		for range f.Vars {
			y = append(y, 0)
		}
	configs:
		for idx, phi := range t {
			if math.IsInf(phi, -1) {
				continue
			}
			for k, v := range f.Vars {
				y[k] = idx / st[k] % m.Cards[v]
				if p.muCol[m.UnaryOff[v]+y[k]] < 0 {
					continue configs // forced to 0 by a forbidden unary state
				}
			}
			col := len(p.cost)
			if col >= MaxLPVariables {
				return nil, false, fmt.Errorf("oracle: local polytope LP: more than %d LP variables", MaxLPVariables)
			}
			p.cost = append(p.cost, -phi)
			p.nuCol[a][idx] = col
			norm = append(norm, entry{col, 1})
			for k := range f.Vars {
				if y[k] < len(marg[k]) {
					marg[k][y[k]] = append(marg[k][y[k]], entry{col, 1})
				}
			}
		}
		if len(norm) == 0 {
			return nil, false, nil
		}
		p.rows = append(p.rows, norm)
		p.b = append(p.b, 1)
		for k, v := range f.Vars {
			for s, row := range marg[k] {
				if c := p.muCol[m.UnaryOff[v]+s]; c >= 0 {
					row = append(row, entry{c, -1})
				}
				if len(row) > 0 {
					p.rows = append(p.rows, row)
					p.b = append(p.b, 0)
				}
			}
		}
	}
	if len(p.cost) > MaxLPVariables {
		return nil, false, fmt.Errorf("oracle: local polytope LP: more than %d LP variables", MaxLPVariables)
	}
	return p, true, nil
}

// rankTol decides when a reduced row or column is zero. The constraint
// matrices hold 0 and +-1 entries, so eliminations keep small rationals.
const rankTol = 1e-9

// independentRows selects a maximal linearly independent subset of the rows
// (in order) by Gaussian elimination on the augmented rows [row | b]. It
// reports feasible = false when a dependent row's right-hand side does not
// follow from the others (the equations are inconsistent).
func independentRows(rows [][]entry, b []float64, ncols int) (keep []int, feasible bool) {
	type pivot struct {
		col int
		row []float64 // ncols+1 entries, 1 at col, 0 at earlier pivots' cols
	}
	var pivots []pivot
	for ri, row := range rows {
		r := make([]float64, ncols+1)
		for _, e := range row {
			r[e.col] += e.coef
		}
		r[ncols] = b[ri]
		for _, p := range pivots {
			if c := r[p.col]; c != 0 {
				for j, v := range p.row {
					if v != 0 {
						r[j] -= c * v
					}
				}
				r[p.col] = 0
			}
		}
		best, bestAbs := -1, rankTol
		for j := 0; j < ncols; j++ {
			if a := math.Abs(r[j]); a > bestAbs {
				best, bestAbs = j, a
			}
		}
		if best < 0 {
			if math.Abs(r[ncols]) > rankTol {
				return nil, false
			}
			continue
		}
		inv := 1 / r[best]
		for j := range r {
			r[j] *= inv
		}
		r[best] = 1
		pivots = append(pivots, pivot{best, r})
		keep = append(keep, ri)
	}
	return keep, true
}

var errInfeasible = errors.New("infeasible")

// Tolerances of solveLP.
const (
	simplexTol   = 1e-10 // reduced-cost tolerance handed to lp.Simplex
	phaseOneTol  = 1e-7  // largest phase-one objective of a feasible LP
	certifiedTol = 1e-8  // primal and dual feasibility of the final basis
)

// solveLP minimises c.x subject to A x = b, x >= 0, for A with full row rank
// and a bounded feasible set, with gonum's simplex.
//
// The local-polytope LP is highly degenerate, and lp.Simplex has no cycling
// guard. So the simplex runs on the right-hand side b + A eps for a small
// random eps > 0, which stays feasible (x + eps is feasible) and makes the
// vertices nondegenerate. Phase one (minimise the sum of artificial variables
// from the artificial basis) yields a feasible basis; phase two starts there.
// The optimal basis of the perturbed LP is then evaluated at the exact b: it
// is dual feasible whatever b, and for a small enough eps primal feasible too,
// which certifies it optimal for the exact LP; that is checked, and the
// unperturbed problem is solved directly as a fallback if the check fails.
func solveLP(c []float64, A *mat.Dense, b []float64) (opt float64, x []float64, err error) {
	var f2 float64
	// The first scale settles the local-polytope LPs; the cutting-plane
	// LPs of LocalSOC, whose cuts cluster near the optimum, sometimes need
	// a smaller or a larger one before their basis certifies.
	for _, scale := range []float64{1e-7, 1e-9, 1e-5} {
		var ok bool
		opt, x, f2, ok, err = solvePerturbed(c, A, b, scale)
		if err != nil || ok {
			return opt, x, err
		}
	}
	// Fallback: solve the exact problem (may be slow on degenerate LPs).
	opt, x, err = simplex(c, A, b, nil)
	if err != nil {
		if errors.Is(err, lp.ErrInfeasible) {
			err = errInfeasible
		}
		return 0, nil, fmt.Errorf("exact fallback (perturbed optimum %v): %w", f2, err)
	}
	return opt, x, nil
}

// solvePerturbed is solveLP's perturbed solve with perturbations of the
// given scale; ok reports a basis certified optimal for the exact LP.
func solvePerturbed(c []float64, A *mat.Dense, b []float64, scale float64) (opt float64, x []float64, f2 float64, ok bool, err error) {
	nr, nc := A.Dims()
	rng := rand.New(rand.NewPCG(0x6f7261636c65, uint64(nr)*1000003+uint64(nc)))
	eps := make([]float64, nc)
	for j := range eps {
		eps[j] = scale * (1 + rng.Float64())
	}
	bp := make([]float64, nr)
	mat.NewVecDense(nr, bp).MulVec(A, mat.NewVecDense(nc, eps))
	for i := range bp {
		bp[i] += b[i]
	}

	// Phase one on [A | diag(sign bp)].
	A1 := mat.NewDense(nr, nc+nr, nil)
	A1.Slice(0, nr, 0, nc).(*mat.Dense).Copy(A)
	c1 := make([]float64, nc+nr)
	basic := make([]int, nr)
	for i := range nr {
		sg := 1.0
		if bp[i] < 0 {
			sg = -1
		}
		A1.Set(i, nc+i, sg)
		c1[nc+i] = 1
		basic[i] = nc + i
	}
	f1, x1, err := simplex(c1, A1, bp, basic)
	if err != nil {
		return 0, nil, 0, false, fmt.Errorf("phase one: %w", err)
	}
	if f1 > phaseOneTol {
		return 0, nil, 0, false, errInfeasible
	}

	// Phase two from the support of the phase-one vertex, completed to a
	// basis of A if the vertex is degenerate after all.
	basic = completeBasis(A, support(x1[:nc]))
	if basic == nil || !feasibleBasis(A, bp, basic) {
		basic = nil // let lp.Simplex find its own start
	}
	f2, x2, err := simplex(c, A, bp, basic)
	if err != nil {
		return 0, nil, 0, false, fmt.Errorf("phase two: %w", err)
	}

	// Evaluate the final basis at the exact right-hand side.
	if basic := support(x2); len(basic) == nr {
		if opt, x, ok := certify(c, A, b, basic); ok {
			return opt, x, f2, true, nil
		}
	}
	return 0, nil, f2, false, nil
}

// simplex calls lp.Simplex, turning a panic (a numerically infeasible initial
// basis) into an error.
func simplex(c []float64, A mat.Matrix, b []float64, basic []int) (opt float64, x []float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("lp.Simplex panicked: %v", r)
		}
	}()
	return lp.Simplex(c, A, b, simplexTol, basic)
}

// support returns the indices of the positive entries of x, largest first.
func support(x []float64) []int {
	var s []int
	for j, v := range x {
		if v > 0 {
			s = append(s, j)
		}
	}
	// Insertion sort by decreasing value: supports are short.
	for i := 1; i < len(s); i++ {
		for k := i; k > 0 && x[s[k]] > x[s[k-1]]; k-- {
			s[k], s[k-1] = s[k-1], s[k]
		}
	}
	return s
}

// completeBasis greedily extends cols with further columns of A to nr
// linearly independent columns, skipping dependent ones; nil if it cannot.
func completeBasis(A *mat.Dense, cols []int) []int {
	nr, nc := A.Dims()
	var basis []int
	var reduced [][]float64 // orthonormal-free elimination: pivoted column vectors
	var pivRow []int
	try := func(j int) {
		v := mat.Col(nil, j, A)
		for k, r := range reduced {
			if c := v[pivRow[k]]; c != 0 {
				for i, w := range r {
					v[i] -= c * w
				}
			}
		}
		best, bestAbs := -1, rankTol
		for i, w := range v {
			if a := math.Abs(w); a > bestAbs {
				best, bestAbs = i, a
			}
		}
		if best < 0 {
			return
		}
		inv := 1 / v[best]
		for i := range v {
			v[i] *= inv
		}
		reduced = append(reduced, v)
		pivRow = append(pivRow, best)
		basis = append(basis, j)
	}
	in := make([]bool, nc)
	for _, j := range cols {
		if len(basis) == nr {
			break
		}
		in[j] = true
		try(j)
	}
	for j := 0; j < nc && len(basis) < nr; j++ {
		if !in[j] {
			try(j)
		}
	}
	if len(basis) < nr {
		return nil
	}
	return basis
}

// feasibleBasis reports whether the basis's solution of A x = b is
// nonnegative, as lp.Simplex requires of an initial basis.
func feasibleBasis(A *mat.Dense, b []float64, basic []int) bool {
	xb, ok := solveBasis(A, b, basic, false)
	if !ok {
		return false
	}
	for _, v := range xb {
		if v < -1e-14 {
			return false
		}
	}
	return true
}

// solveBasis solves B xb = rhs (or B^T xb = rhs when trans) for the basis
// matrix B = A[:, basic].
func solveBasis(A *mat.Dense, rhs []float64, basic []int, trans bool) ([]float64, bool) {
	nr, _ := A.Dims()
	B := mat.NewDense(nr, nr, nil)
	for k, j := range basic {
		B.SetCol(k, mat.Col(nil, j, A))
	}
	var lu mat.LU
	lu.Factorize(B)
	if lu.Cond() > 1e12 {
		return nil, false
	}
	xb := make([]float64, nr)
	if err := lu.SolveVecTo(mat.NewVecDense(nr, xb), trans, mat.NewVecDense(nr, rhs)); err != nil {
		return nil, false
	}
	return xb, true
}

// certify evaluates the basis at the exact right-hand side b and returns its
// objective and solution if it is primal feasible and dual feasible (all
// reduced costs nonnegative), which makes it optimal.
func certify(c []float64, A *mat.Dense, b []float64, basic []int) (opt float64, x []float64, ok bool) {
	nr, nc := A.Dims()
	xb, ok := solveBasis(A, b, basic, false)
	if !ok {
		return 0, nil, false
	}
	cb := make([]float64, nr)
	for k, j := range basic {
		cb[k] = c[j]
	}
	y, ok := solveBasis(A, cb, basic, true)
	if !ok {
		return 0, nil, false
	}
	scale := 1.0
	for _, v := range c {
		scale = max(scale, math.Abs(v))
	}
	for j := range nc {
		r := c[j]
		for i := range nr {
			if a := A.At(i, j); a != 0 {
				r -= a * y[i]
			}
		}
		if r < -certifiedTol*scale {
			return 0, nil, false
		}
	}
	x = make([]float64, nc)
	for k, j := range basic {
		if xb[k] < -certifiedTol {
			return 0, nil, false
		}
		x[j] = max(xb[k], 0)
		opt += c[j] * x[j]
	}
	return opt, x, true
}
