package consensus

import (
	"math"
	"slices"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/slaves"
)

// icmEvery is how often (in iterations) the coordinator gathers the decoded
// assignment, scores it and improves it by local search.
const icmEvery = 10

// Sweep budgets of ICM: during the run (a sweep costs about a third of an
// iteration's work), and for the final polish of the best assignment.
const (
	icmRunSweeps   = 3
	icmFinalSweeps = 100
)

// localSearch improves assignments of a model: iterated conditional modes,
// and a repair for assignments that violate hard constraints. It uses the
// model's own factor scores, so it gives the same result wherever it runs.
type localSearch struct {
	m      *model.Model
	varOff []int // factors of variable i: facs[varOff[i]:varOff[i+1]]
	facs   []int
	loc    []float64
	rep    *repair // built on first use
	queue  []int   // ICM worklist
	queued []bool
}

func newLocalSearch(m *model.Model) *localSearch {
	ls := &localSearch{m: m, varOff: make([]int, m.NumVars()+1)}
	for a := range m.Factors {
		for _, v := range m.Factors[a].Vars {
			ls.varOff[v+1]++
		}
	}
	for i := 1; i < len(ls.varOff); i++ {
		ls.varOff[i] += ls.varOff[i-1]
	}
	ls.facs = make([]int, ls.varOff[len(ls.varOff)-1])
	fill := append([]int(nil), ls.varOff[:len(ls.varOff)-1]...)
	maxCard := 1
	for a := range m.Factors {
		for _, v := range m.Factors[a].Vars {
			ls.facs[fill[v]] = a
			fill[v]++
		}
	}
	for _, c := range m.Cards {
		maxCard = max(maxCard, c)
	}
	ls.loc = make([]float64, maxCard)
	return ls
}

// improve runs the repair when x is infeasible, then a few ICM sweeps.
func (ls *localSearch) improve(x []int, infeasible bool) {
	if infeasible && math.IsInf(ls.m.Score(x), -1) {
		if ls.rep == nil {
			ls.rep = newRepair(ls.m)
		}
		ls.rep.run(x)
	}
	ls.icm(x, icmRunSweeps)
}

// polish runs ICM to a local optimum (or the final sweep budget).
func (ls *localSearch) polish(x []int) { ls.icm(x, icmFinalSweeps) }

// icm is iterated conditional modes: a variable takes the state that
// maximises its local score (unary plus the factors that touch it) with the
// others fixed. Every variable is visited once, in order; after that only
// the neighbours of variables that changed are revisited (a FIFO worklist),
// until nothing changes or sweeps*n visits are spent. It never lowers the
// score of a feasible assignment and often repairs an infeasible one.
func (ls *localSearch) icm(x []int, sweeps int) {
	m := ls.m
	n := m.NumVars()
	if ls.queued == nil {
		ls.queued = make([]bool, n)
		ls.queue = make([]int, 0, n)
	}
	q := ls.queue[:0]
	for i := 0; i < n; i++ {
		q = append(q, i)
		ls.queued[i] = true
	}
	for visits, head := 0, 0; head < len(q) && visits < sweeps*n; visits++ {
		i := q[head]
		head++
		ls.queued[i] = false
		if head > n && head*2 > len(q) {
			// Compact the worklist so that it stays within n entries.
			q = append(q[:0], q[head:]...)
			head = 0
		}
		if m.Cards[i] == 1 {
			continue
		}
		loc := ls.loc[:m.Cards[i]]
		copy(loc, m.Unaries(i))
		orig := x[i]
		for _, a := range ls.facs[ls.varOff[i]:ls.varOff[i+1]] {
			f := &m.Factors[a]
			if f.Kind == model.Dense && len(f.Vars) == 2 {
				// A pairwise table: the other variable's state picks a
				// row or a column, read directly.
				base, stride := 0, 1
				if f.Vars[0] == i {
					stride = m.Cards[f.Vars[1]]
					base = x[f.Vars[1]]
				} else {
					base = x[f.Vars[0]] * m.Cards[i]
				}
				for st := range loc {
					if !math.IsInf(loc[st], -1) {
						loc[st] += f.Table[base+st*stride]
					}
				}
				continue
			}
			for st := range loc {
				if !math.IsInf(loc[st], -1) {
					x[i] = st
					loc[st] += m.FactorScore(a, x)
				}
			}
			x[i] = orig
		}
		best := orig
		for st, v := range loc {
			if v > loc[best] {
				best = st
			}
		}
		x[i] = best
		if best == orig {
			continue
		}
		for _, a := range ls.facs[ls.varOff[i]:ls.varOff[i+1]] {
			for _, v := range m.Factors[a].Vars {
				if v != i && !ls.queued[v] {
					ls.queued[v] = true
					q = append(q, v)
				}
			}
		}
	}
	for _, v := range q {
		ls.queued[v] = false
	}
	ls.queue = q[:0]
}

// forbidden is the score given to excluded states when asking a slave's MAP
// oracle whether a partial assignment can be completed; a MAP value below
// forbidden/2 means it cannot.
const forbidden = -1e30

// repair builds a feasible assignment when the decoded one violates hard
// constraints: a depth-first search fixes variables one at a time in a
// breadth-first order over the factor graph, trying first each variable's
// current state and then the others by decreasing unary, and keeps a state
// only if every factor touching the variable can still be completed
// (forward checking with the factors' MAP oracles); a dead end backtracks.
// The search has a budget of checks; when it runs out, x keeps the states
// of the variables not reached and its score stays -Inf.
type repair struct {
	p        *Problem
	order    []int
	assigned []bool
	states   []int // per variable: its states in the order to try
	tried    []int // per position in order: how many states were tried
	w        []float64
	y        []int
}

func newRepair(m *model.Model) *repair {
	p, err := Decompose(m, partition.PerFactor(m), slaves.Build)
	if err != nil {
		return nil // the workers built the same slaves: cannot happen
	}
	maxRep := 0
	for s := range p.Slaves {
		maxRep = max(maxRep, p.RepOff[s+1]-p.RepOff[s])
	}
	n := m.NumVars()
	return &repair{p: p, order: make([]int, n), assigned: make([]bool, n),
		states: make([]int, len(m.Unary)), tried: make([]int, n),
		w: make([]float64, maxRep), y: make([]int, p.maxScope())}
}

// run overwrites x with a repaired assignment and reports whether the
// search completed.
func (r *repair) run(x []int) bool {
	if r == nil {
		return false
	}
	m := r.p.Model
	n := m.NumVars()
	r.bfsOrder()
	for i := 0; i < n; i++ {
		r.assigned[i] = false
		th := m.Unaries(i)
		st := r.states[m.UnaryOff[i]:m.UnaryOff[i+1]]
		for k := range st {
			st[k] = k
		}
		cur := x[i]
		slices.SortStableFunc(st, func(a, b int) int {
			switch {
			case a == cur:
				return -1
			case b == cur:
				return 1
			case th[a] > th[b]:
				return -1
			case th[a] < th[b]:
				return 1
			}
			return 0
		})
	}
	budget := 50*n + 10000
	pos := 0
	if n > 0 {
		r.tried[0] = 0
	}
	for pos < n {
		i := r.order[pos]
		st := r.states[m.UnaryOff[i]:m.UnaryOff[i+1]]
		found := false
		for r.tried[pos] < len(st) && budget > 0 {
			s := st[r.tried[pos]]
			r.tried[pos]++
			budget--
			if r.completable(i, s, x) {
				x[i] = s
				r.assigned[i] = true
				found = true
				break
			}
		}
		switch {
		case found:
			pos++
			if pos < n {
				r.tried[pos] = 0
			}
		case budget <= 0 || pos == 0:
			return false
		default: // dead end: undo the previous choice and try its next state
			pos--
			r.assigned[r.order[pos]] = false
		}
	}
	return true
}

// bfsOrder orders the variables breadth-first over the factor graph, so
// that neighbours come soon after each other and a conflict shows up, and
// is undone, close to its cause.
func (r *repair) bfsOrder() {
	p := r.p
	n := len(r.order)
	seen := make([]bool, n)
	k := 0
	queue := r.order[:0:n]
	for root := 0; root < n; root++ {
		if seen[root] {
			continue
		}
		seen[root] = true
		queue = append(queue, root)
		for k < len(queue) {
			i := queue[k]
			k++
			for j := p.VarRepOff[i]; j < p.VarRepOff[i+1]; j++ {
				for _, v := range p.Scope(p.RepSlave[j]) {
					if !seen[v] {
						seen[v] = true
						queue = append(queue, v)
					}
				}
			}
		}
	}
}

// completable reports whether every factor touching variable i can still
// be satisfied with x_i = s and the variables assigned so far.
func (r *repair) completable(i, s int, x []int) bool {
	p, m := r.p, r.p.Model
	for j := p.VarRepOff[i]; j < p.VarRepOff[i+1]; j++ {
		a := p.RepSlave[j]
		w := r.w[:p.RepOff[a+1]-p.RepOff[a]]
		off := 0
		for _, v := range p.Scope(a) {
			c := m.Cards[v]
			fixed := -1
			if v == i {
				fixed = s
			} else if r.assigned[v] {
				fixed = x[v]
			}
			for k := 0; k < c; k++ {
				w[off+k] = 0
				if fixed >= 0 && k != fixed {
					w[off+k] = forbidden
				}
			}
			off += c
		}
		if p.Slaves[a].MAP(w, r.y) < forbidden/2 {
			return false
		}
	}
	return true
}
