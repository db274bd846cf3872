package consensus

import "math"

// icmEvery is how often (in iterations) the decoded assignment is improved
// by a local search before it is scored.
const icmEvery = 10

// icm is iterated conditional modes: each variable in turn takes the state
// that maximises its local score (unary plus the factors that touch it) with
// the others fixed, until a sweep changes nothing or the sweep budget is
// spent. It never lowers the score of a feasible assignment and often
// repairs an infeasible one. During the run the budget is small (a sweep
// costs about as much as a third of an iteration); the final polish of the
// best assignment gets a large one.
type icm struct {
	p   *Problem
	y   []int
	loc []float64
}

func newICM(p *Problem) *icm {
	maxCard := 1
	for _, c := range p.Model.Cards {
		maxCard = max(maxCard, c)
	}
	return &icm{p: p, y: make([]int, p.maxScope()), loc: make([]float64, maxCard)}
}

// Sweep budgets: during the run, and for the final polish.
const (
	icmRunSweeps   = 3
	icmFinalSweeps = 100
)

func (c *icm) improve(x []int, sweeps int) {
	p, m := c.p, c.p.Model
	for sweep := 0; sweep < sweeps; sweep++ {
		changed := false
		for i := range m.Cards {
			if m.Cards[i] == 1 {
				continue
			}
			loc := c.loc[:m.Cards[i]]
			copy(loc, m.Unaries(i))
			for j := p.VarRepOff[i]; j < p.VarRepOff[i+1]; j++ {
				a, pos := p.RepSlave[j], p.RepPos[j]
				sc := p.Scope(a)
				y := c.y[:len(sc)]
				for k, v := range sc {
					y[k] = x[v]
				}
				for st := range loc {
					if math.IsInf(loc[st], -1) {
						continue
					}
					y[pos] = st
					loc[st] += p.Slaves[a].Score(y)
				}
			}
			best := x[i]
			for st, v := range loc {
				if v > loc[best] {
					best = st
				}
			}
			if best != x[i] {
				x[i] = best
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}
