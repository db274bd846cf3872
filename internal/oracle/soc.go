package oracle

import (
	"errors"
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
	"gonum.org/v1/gonum/mat"
)

// SOCTol is the largest violation of a clique constraint that LocalSOC
// leaves: it adds cutting planes until none is violated by more.
const SOCTol = 1e-9

// maxSOCRounds bounds LocalSOC's cutting-plane rounds.
const maxSOCRounds = 400

// SOCStats describes a LocalSOC run.
type SOCStats struct {
	Triangles int // triangles of the model's graph
	Cuts      int // tangent planes in the final LP
	Rounds    int // LPs solved
}

// LocalSOC returns the optimum of LP-S + SOC for m: the local polytope
// (LocalPolytopeLP) cut by the SOCP-Q clique constraint of Kumar,
// Kolmogorov and Torr ("An analysis of convex relaxations for MAP
// estimation", NIPS 2007; JMLR 10, 2009) on every triangle {a, b, c} of the
// graph (every pair joined by a pairwise factor) and every label l, in the
// variables x_a(l) = 2 mu_a(l) - 1 and
// X_ab(l,l) = 4 mu_ab(l,l) - 2 mu_a(l) - 2 mu_b(l) + 1:
//
//	(x_a + x_b + x_c)^2 <= 3 + 2 (X_ab + X_bc + X_ac),
//
// which in the marginals, with P = mu_a(l) + mu_b(l) + mu_c(l) and
// Q = mu_ab(l,l) + mu_bc(l,l) + mu_ac(l,l), reads Q >= f(P) = (P^2 - P)/2
// (equality on integral points: Q = P(P-1)/2 pairs agree on l).
//
// It is computed by cutting planes with gonum's simplex (solveLP): solve
// the LP, add for each triangle and label with Q < f(P) - SOCTol the
// tangent plane of f at the current P, (P0 - 1/2) P - Q <= P0^2/2 (valid
// for every integral point, where it is (P - P0)^2/2 >= 0), and solve
// again, until no constraint is violated by more than SOCTol. Every LP
// contains the SOC set, so the values decrease to the SOC optimum from
// above. Pairwise factors over the same pair are first summed into one (as
// TRW-S holds them), so that the pair has one mu_ab. It returns -Inf when
// the local polytope is empty, and an error for the same reasons as
// LocalPolytopeLP or when the cuts have not converged after 400 rounds.
func LocalSOC(m *model.Model) (value float64, st SOCStats, err error) {
	if err := m.Validate(); err != nil {
		return 0, st, fmt.Errorf("oracle: %w", err)
	}
	m, err = mergePairs(m)
	if err != nil {
		return 0, st, err
	}
	p, feasible, err := buildLP(m)
	if err != nil {
		return 0, st, err
	}
	if !feasible {
		return math.Inf(-1), st, nil
	}
	// pairFac[{a,b}] is the pairwise factor over a < b.
	pairFac := map[[2]int]int{}
	for a := range m.Factors {
		f := &m.Factors[a]
		if len(f.Vars) == 2 && f.Vars[0] != f.Vars[1] {
			pairFac[[2]int{min(f.Vars[0], f.Vars[1]), max(f.Vars[0], f.Vars[1])}] = a
		}
	}
	n := m.NumVars()
	var tris [][3]int
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			if _, ok := pairFac[[2]int{a, b}]; !ok {
				continue
			}
			for c := b + 1; c < n; c++ {
				_, ok1 := pairFac[[2]int{a, c}]
				_, ok2 := pairFac[[2]int{b, c}]
				if ok1 && ok2 {
					tris = append(tris, [3]int{a, b, c})
				}
			}
		}
	}
	st.Triangles = len(tris)
	// One constraint per triangle and label shared by its three variables.
	type con struct {
		mu, nu []int // LP columns summed into P and into Q
	}
	var cons []con
	for _, t := range tris {
		labels := min(m.Cards[t[0]], m.Cards[t[1]], m.Cards[t[2]])
		for l := 0; l < labels; l++ {
			var c con
			for _, v := range t {
				if col := p.muCol[m.UnaryOff[v]+l]; col >= 0 {
					c.mu = append(c.mu, col)
				}
			}
			for _, e := range [3][2]int{{t[0], t[1]}, {t[0], t[2]}, {t[1], t[2]}} {
				a := pairFac[e]
				if col := p.nuCol[a][l*m.Cards[m.Factors[a].Vars[1]]+l]; col >= 0 {
					c.nu = append(c.nu, col)
				}
			}
			cons = append(cons, c)
		}
	}
	if len(p.cost) == 0 {
		return p.constant, st, nil
	}
	base, feasible := independentRows(p.rows, p.b, len(p.cost))
	if !feasible {
		return math.Inf(-1), st, nil
	}
	type cut struct {
		con  int
		s, r float64 // s P - Q <= r
	}
	var cuts []cut
	for round := 1; round <= maxSOCRounds; round++ {
		st.Rounds = round
		nv := len(p.cost)
		nc := nv + len(cuts) // a slack per cut
		A := mat.NewDense(len(base)+len(cuts), nc, nil)
		b := make([]float64, len(base)+len(cuts))
		c := make([]float64, nc)
		copy(c, p.cost)
		for r, ri := range base {
			for _, e := range p.rows[ri] {
				A.Set(r, e.col, A.At(r, e.col)+e.coef)
			}
			b[r] = p.b[ri]
		}
		for k, ct := range cuts {
			r := len(base) + k
			for _, col := range cons[ct.con].mu {
				A.Set(r, col, A.At(r, col)+ct.s)
			}
			for _, col := range cons[ct.con].nu {
				A.Set(r, col, A.At(r, col)-1)
			}
			A.Set(r, nv+k, 1)
			b[r] = ct.r
		}
		opt, x, err := solveLP(c, A, b)
		if err != nil {
			if errors.Is(err, errInfeasible) {
				return math.Inf(-1), st, nil
			}
			return 0, st, fmt.Errorf("oracle: LP-S + SOC, round %d: %w", round, err)
		}
		// Keep the cuts that hold with equality: the others are implied
		// near the current point, and near-parallel tangents at clustered
		// points would make the bases ill-conditioned.
		kept := cuts[:0]
		for k, ct := range cuts {
			if x[nv+k] <= SOCTol {
				kept = append(kept, ct)
			}
		}
		cuts = kept
		added := 0
		for k, cn := range cons {
			P, Q := 0.0, 0.0
			for _, col := range cn.mu {
				P += x[col]
			}
			for _, col := range cn.nu {
				Q += x[col]
			}
			if Q-(P*P-P)/2 < -SOCTol {
				cuts = append(cuts, cut{con: k, s: P - 0.5, r: P * P / 2})
				added++
			}
		}
		st.Cuts = len(cuts)
		if added == 0 {
			return p.constant - opt, st, nil
		}
	}
	return 0, st, fmt.Errorf("oracle: LP-S + SOC: cuts still violated after %d rounds", maxSOCRounds)
}

// mergePairs returns m with the pairwise factors over each pair of
// variables summed into one Dense factor over (smaller, larger) variable,
// in place of the first of them; m itself when no pair has two factors.
func mergePairs(m *model.Model) (*model.Model, error) {
	first := map[[2]int]int{}
	dup := false
	for a := range m.Factors {
		f := &m.Factors[a]
		if len(f.Vars) != 2 || f.Vars[0] == f.Vars[1] {
			continue
		}
		k := [2]int{min(f.Vars[0], f.Vars[1]), max(f.Vars[0], f.Vars[1])}
		if _, ok := first[k]; ok {
			dup = true
		} else {
			first[k] = a
		}
	}
	if !dup {
		return m, nil
	}
	out := *m
	out.Factors = nil
	merged := map[[2]int]int{} // pair -> index in out.Factors
	for a := range m.Factors {
		f := &m.Factors[a]
		if len(f.Vars) != 2 || f.Vars[0] == f.Vars[1] {
			out.Factors = append(out.Factors, *f)
			continue
		}
		u, v := min(f.Vars[0], f.Vars[1]), max(f.Vars[0], f.Vars[1])
		t, err := factorTable(m, a, MaxLPVariables)
		if err != nil {
			return nil, fmt.Errorf("oracle: LP-S + SOC: %w", err)
		}
		cu, cv := m.Cards[u], m.Cards[v]
		i, ok := merged[[2]int{u, v}]
		if !ok {
			i = len(out.Factors)
			merged[[2]int{u, v}] = i
			out.Factors = append(out.Factors, model.Factor{Kind: model.Dense, Vars: []int{u, v}, Table: make([]float64, cu*cv)})
		}
		dst := out.Factors[i].Table
		for x := 0; x < cu; x++ {
			for y := 0; y < cv; y++ {
				if f.Vars[0] == u {
					dst[x*cv+y] += t[x*cv+y]
				} else {
					dst[x*cv+y] += t[y*cu+x]
				}
			}
		}
	}
	return &out, nil
}
