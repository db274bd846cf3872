// Package localsearch is iterated conditional modes (ICM) on a model: the
// local search that moves one variable at a time to its best state with
// the others fixed. It owns the local scores of a variable (its unary plus
// the factors that touch it), the move rule (ties keep the current state,
// so the score of a feasible assignment never drops) and the plain
// schedule by sweeps; schedules that run blocks of variables in parallel
// (consensus's) use Scores and Best directly.
//
// It knows only package model: nothing of decompositions, slaves, dual
// updates or how callers parallelise.
package localsearch

import (
	"math"

	"github.com/ddrun/ddrun/model"
)

// Local gives the local scores of a model's variables, through an index
// of the factors touching each variable.
type Local struct {
	m      *model.Model
	varOff []int // factors of variable i: facs[varOff[i]:varOff[i+1]]
	facs   []int
	dirty  []bool // Sweeps' variables to visit, made on first use
}

// New indexes the factors of m by variable.
func New(m *model.Model) *Local {
	n := m.NumVars()
	l := &Local{m: m, varOff: make([]int, n+1)}
	for a := range m.Factors {
		for _, v := range m.Factors[a].Vars {
			l.varOff[v+1]++
		}
	}
	for i := 1; i < len(l.varOff); i++ {
		l.varOff[i] += l.varOff[i-1]
	}
	l.facs = make([]int, l.varOff[n])
	fill := append([]int(nil), l.varOff[:n]...)
	for a := range m.Factors {
		for _, v := range m.Factors[a].Vars {
			l.facs[fill[v]] = a
			fill[v]++
		}
	}
	return l
}

// Factors returns the factors touching variable i, in increasing order.
func (l *Local) Factors(i int) []int { return l.facs[l.varOff[i]:l.varOff[i+1]] }

// Scores writes into loc (len Cards[i]) the score of each state of
// variable i with the other variables at their states in x: its unary
// plus, factor by factor in increasing order, each touching factor's
// score. A state at -Inf stays there (nothing is added to it). x[i] is
// changed while Scores runs and restored.
func (l *Local) Scores(i int, x []int, loc []float64) {
	m := l.m
	copy(loc, m.Unaries(i))
	orig := x[i]
	for _, a := range l.Factors(i) {
		f := &m.Factors[a]
		if f.Kind == model.Dense {
			// A table: the others' states pick a line of it, with i's
			// states at stride st from e (last variable fastest).
			e, st, stride := 0, 0, 1
			for k := len(f.Vars) - 1; k >= 0; k-- {
				v := f.Vars[k]
				if v == i {
					st = stride
				} else {
					e += x[v] * stride
				}
				stride *= m.Cards[v]
			}
			for s := range loc {
				if !math.IsInf(loc[s], -1) {
					loc[s] += f.Table[e+s*st]
				}
			}
			continue
		}
		if f.Kind == model.Potts {
			// FactorScore of a Potts factor: its weight when both
			// states agree, else 0 (adding 0 changes nothing).
			o := f.Vars[0]
			if o == i {
				o = f.Vars[1]
			}
			if s := x[o]; !math.IsInf(loc[s], -1) {
				loc[s] += f.Weight
			}
			continue
		}
		for s := range loc {
			if !math.IsInf(loc[s], -1) {
				x[i] = s
				loc[s] += m.FactorScore(a, x)
			}
		}
		x[i] = orig
	}
}

// Best returns the state of largest score in loc, keeping cur unless
// another is strictly better (the first of those on ties).
func Best(loc []float64, cur int) int {
	best := cur
	for s, v := range loc {
		if v > loc[best] {
			best = s
		}
	}
	return best
}

// Sweeps is ICM by sweeps: each variable in index order moves to its best
// state given the others (Scores, Best), until a sweep moves none or after
// sweeps sweeps, and reports whether it stopped for the first reason (x is
// then a local optimum: no variable's move raises its score). buf holds at
// least the largest cardinality. The variables i with fixed[i] keep their
// states (fixed nil: none does). A visit to a variable none of whose
// neighbours moved since its last visit cannot move it (Best keeps the
// current state on ties), so such visits are skipped: from the second
// sweep on, a sweep costs the neighbourhoods of the last moves, not the
// model, and the moves are those of the plain sweeps. Sweeps keeps these
// marks in l: one l runs one Sweeps at a time.
func (l *Local) Sweeps(x []int, sweeps int, buf []float64, fixed []bool) bool {
	d := l.marks()
	for i := range d {
		d[i] = true
	}
	return l.sweeps(x, sweeps, buf, fixed)
}

// marks returns the per-variable marks of the visits to make.
func (l *Local) marks() []bool {
	if l.dirty == nil {
		l.dirty = make([]bool, l.m.NumVars())
	}
	return l.dirty
}

// markNeighbours marks the variables that share a factor with i, i apart.
func (l *Local) markNeighbours(i int) {
	for _, a := range l.Factors(i) {
		for _, v := range l.m.Factors[a].Vars {
			if v != i {
				l.dirty[v] = true
			}
		}
	}
}

// sweeps runs Sweeps' sweeps, visiting the marked variables only.
func (l *Local) sweeps(x []int, sweeps int, buf []float64, fixed []bool) bool {
	d := l.dirty
	for range sweeps {
		moved := false
		for i, c := range l.m.Cards {
			if !d[i] {
				continue
			}
			d[i] = false
			if c == 1 || fixed != nil && fixed[i] {
				continue
			}
			loc := buf[:c]
			l.Scores(i, x, loc)
			if best := Best(loc, x[i]); best != x[i] {
				x[i] = best
				moved = true
				l.markNeighbours(i)
			}
		}
		if !moved {
			return true
		}
	}
	return false
}
