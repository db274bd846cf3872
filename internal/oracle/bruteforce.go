package oracle

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
)

// MaxBruteForceAssignments is the largest number of joint assignments
// BruteForceMAP accepts (2^22).
const MaxBruteForceAssignments = 1 << 22

// bfTableLimit bounds the tables materialised for logic factors; larger
// logic factors are evaluated through model.FactorScore.
const bfTableLimit = 1 << 16

// bfFactor is one factor prepared for enumeration.
type bfFactor struct {
	a       int       // index in m.Factors
	vars    []int     // scope
	strides []int     // table index step per scope position
	table   []float64 // nil: evaluate with m.FactorScore
}

// Clamped is m under evidence ev as a model without evidence: the other
// states of each observed variable get a unary of -Inf (the factors are
// m's, shared). Its MAP is m's under ev, for BruteForceMAP.
func Clamped(m *model.Model, ev model.Evidence) *model.Model {
	c := *m
	c.Unary = append([]float64(nil), m.Unary...)
	for v, s := range ev {
		for k := range m.Cards[v] {
			if k != s {
				c.Unary[m.UnaryOff[v]+k] = math.Inf(-1)
			}
		}
	}
	return &c
}

// BruteForceMAP returns an exact MAP assignment of m and its score
// (m.Score(x) == best) by enumerating every joint assignment. It returns an
// error if m is invalid or has more than MaxBruteForceAssignments
// assignments, and (-Inf, nil, nil) when every assignment violates a hard
// constraint. Among tied maximisers it returns one of them, unspecified.
//
// The enumeration is a depth-first odometer that fixes variables from the
// last to the first, keeps the partial score of every factor whose scope is
// fully fixed, skips subtrees made infeasible by a hard constraint, and prunes
// subtrees whose optimistic bound cannot beat the best score found.
func BruteForceMAP(m *model.Model) (best float64, x []int, err error) {
	if err := m.Validate(); err != nil {
		return 0, nil, fmt.Errorf("oracle: %w", err)
	}
	n := m.NumVars()
	total := 1
	for _, c := range m.Cards {
		if total > MaxBruteForceAssignments/c {
			return 0, nil, fmt.Errorf("oracle: brute force: more than %d assignments", MaxBruteForceAssignments)
		}
		total *= c
	}

	// A factor joins the partial score at the level of its smallest
	// variable, the last of its scope to be fixed. level[l] also bounds the
	// best contribution of that level for pruning.
	byLevel := make([][]bfFactor, n)
	levelMax := make([]float64, n)
	base := m.Constant
	for i := 0; i < n; i++ {
		levelMax[i] = maxOf(m.Unaries(i))
	}
	for a := range m.Factors {
		f := &m.Factors[a]
		bf := bfFactor{a: a, vars: f.Vars, strides: strides(m, f.Vars)}
		if t, err := factorTable(m, a, bfTableLimit); err == nil {
			bf.table = t
		} else if f.Kind == model.Dense {
			bf.table = f.Table
		}
		fmax := 0.0 // logic factors evaluated on the fly: 0 bounds them
		if bf.table != nil {
			fmax = maxOf(bf.table)
		}
		if len(f.Vars) == 0 {
			base += bf.table[0]
			continue
		}
		lo := f.Vars[0]
		for _, v := range f.Vars {
			lo = min(lo, v)
		}
		byLevel[lo] = append(byLevel[lo], bf)
		levelMax[lo] += fmax
	}
	// rest[l] bounds the total contribution of levels 0..l-1.
	rest := make([]float64, n+1)
	for l := 0; l < n; l++ {
		rest[l+1] = rest[l] + levelMax[l]
	}

	e := &enumerator{m: m, byLevel: byLevel, rest: rest, x: make([]int, n), best: math.Inf(-1), bestX: make([]int, 0, n)}
	if base > math.Inf(-1) {
		e.search(n-1, base)
	}
	if !e.found {
		return math.Inf(-1), nil, nil
	}
	return m.Score(e.bestX), e.bestX, nil
}

type enumerator struct {
	m       *model.Model
	byLevel [][]bfFactor
	rest    []float64
	x       []int
	best    float64
	bestX   []int
	found   bool
}

// search fixes variable l, given acc, the score of everything fixed so far.
func (e *enumerator) search(l int, acc float64) {
	if l < 0 {
		if acc > e.best || !e.found {
			e.best, e.found = acc, true
			e.bestX = append(e.bestX[:0], e.x...)
		}
		return
	}
	u := e.m.Unaries(l)
	fs := e.byLevel[l]
	x := e.x
	for s := range u {
		x[l] = s
		v := acc + u[s]
		for k := range fs {
			if math.IsInf(v, -1) {
				break
			}
			f := &fs[k]
			if f.table == nil {
				v += e.m.FactorScore(f.a, x)
				continue
			}
			idx := 0
			for j, w := range f.vars {
				idx += x[w] * f.strides[j]
			}
			v += f.table[idx]
		}
		if math.IsInf(v, -1) {
			continue
		}
		// Prune only when the bound is clearly below the best: the slack
		// absorbs rounding differences between the bound and the sum.
		if e.found && v+e.rest[l] < e.best-1e-9*(1+math.Abs(e.best)) {
			continue
		}
		e.search(l-1, v)
	}
}

// maxOf returns the largest entry of t (-Inf for an empty t).
func maxOf(t []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range t {
		mx = max(mx, v)
	}
	return mx
}
