package consensus

import (
	"fmt"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
)

// Regroup moves a state taken with the plan's slaves placed by from (on
// len(st.Parts) parts) onto the placement to (on parts parts), so that a
// run can continue on another number of workers: after losing a worker
// with no spare to replace it, or on a restart with other machines. The
// multipliers and marginals of every replica keep their values; only their
// layout changes. The scalars, the assignments and the bounds are shared.
func Regroup(m *model.Model, plan partition.Plan, st *State, from, to []int32, parts int) (*State, error) {
	if len(from) != len(plan.Slaves) || len(to) != len(plan.Slaves) {
		return nil, fmt.Errorf("regrouping: placements of %d and %d slaves for %d", len(from), len(to), len(plan.Slaves))
	}
	oldParts, oldB, err := Split(m, plan, from, len(st.Parts))
	if err != nil {
		return nil, fmt.Errorf("regrouping: the state's placement: %w", err)
	}
	newParts, newB, err := Split(m, plan, to, parts)
	if err != nil {
		return nil, fmt.Errorf("regrouping: the new placement: %w", err)
	}
	g := newGlobalLayout(m, plan)
	withNu := false
	for w, p := range oldParts {
		ps := &st.Parts[w]
		n := p.replicaEntries()
		if len(ps.Lambda) != n || len(ps.Mu) != len(p.Model.Unary) || len(ps.Nu) != 0 && len(ps.Nu) != n {
			return nil, fmt.Errorf("regrouping: part %d holds %d/%d/%d entries, its layout %d/%d/%d", w, len(ps.Lambda), len(ps.Nu), len(ps.Mu), n, n, len(p.Model.Unary))
		}
		withNu = withNu || len(ps.Nu) > 0
	}
	if len(st.BLambda) != oldB.size || len(st.BNu) != oldB.size {
		return nil, fmt.Errorf("regrouping: boundary state of %d entries, its layout %d", len(st.BLambda), oldB.size)
	}
	// Gather into the global layout: part blocks, then the boundary (the
	// coordinator's copy is the current one).
	lam := make([]float64, g.size)
	var nu []float64
	if withNu {
		nu = make([]float64, g.size)
	}
	mu := make([]float64, len(m.Unary))
	for v := range m.Cards {
		u := mu[m.UnaryOff[v]:m.UnaryOff[v+1]]
		for k := range u {
			u[k] = 1 / float64(len(u))
		}
	}
	cursor := make([]int, len(oldParts))
	for s := range plan.Slaves {
		w := from[s]
		lo, hi := g.off[s], g.off[s+1]
		copy(lam[lo:hi], st.Parts[w].Lambda[cursor[w]:])
		if withNu {
			copy(nu[lo:hi], st.Parts[w].Nu[cursor[w]:])
		}
		cursor[w] += hi - lo
	}
	for w, p := range oldParts {
		lm := p.Model
		for lv, v := range p.Vars {
			copy(mu[m.UnaryOff[v]:m.UnaryOff[v+1]], st.Parts[w].Mu[lm.UnaryOff[lv]:lm.UnaryOff[lv+1]])
		}
	}
	bmuOff := 0
	for j, v := range oldB.vars {
		c := m.Cards[v]
		for k, r := range g.reps[v] {
			e := oldB.entry[oldB.repOff[j]+k]
			copy(lam[r:r+c], st.BLambda[e:e+c])
			if withNu {
				copy(nu[r:r+c], st.BNu[e:e+c])
			}
		}
		copy(mu[m.UnaryOff[v]:m.UnaryOff[v+1]], st.BMu[bmuOff:bmuOff+c])
		bmuOff += c
	}
	if bmuOff != len(st.BMu) {
		return nil, fmt.Errorf("regrouping: boundary marginals of %d entries, its layout %d", len(st.BMu), bmuOff)
	}
	// Scatter into the new layout.
	out := *st
	out.Parts = make([]PartState, parts)
	for w, p := range newParts {
		n := p.replicaEntries()
		out.Parts[w].Lambda = make([]float64, 0, n)
		if withNu {
			out.Parts[w].Nu = make([]float64, 0, n)
		}
		lm := p.Model
		out.Parts[w].Mu = make([]float64, len(lm.Unary))
		for lv, v := range p.Vars {
			copy(out.Parts[w].Mu[lm.UnaryOff[lv]:lm.UnaryOff[lv+1]], mu[m.UnaryOff[v]:m.UnaryOff[v+1]])
		}
	}
	for s := range plan.Slaves {
		w := to[s]
		out.Parts[w].Lambda = append(out.Parts[w].Lambda, lam[g.off[s]:g.off[s+1]]...)
		if withNu {
			out.Parts[w].Nu = append(out.Parts[w].Nu, nu[g.off[s]:g.off[s+1]]...)
		}
	}
	out.BLambda = make([]float64, newB.size)
	out.BNu = make([]float64, newB.size)
	out.BMu = out.BMu[:0:0]
	for j, v := range newB.vars {
		c := m.Cards[v]
		for k, r := range g.reps[v] {
			e := newB.entry[newB.repOff[j]+k]
			copy(out.BLambda[e:e+c], lam[r:r+c])
			if withNu {
				copy(out.BNu[e:e+c], nu[r:r+c])
			}
		}
		out.BMu = append(out.BMu, mu[m.UnaryOff[v]:m.UnaryOff[v+1]]...)
	}
	return &out, nil
}

// globalLayout is the replica layout of a whole plan, independent of any
// placement: slave s's replica vectors at off[s]:off[s+1] (its scope's
// variables in order), and each variable's replicas in slave order.
type globalLayout struct {
	off  []int
	reps [][]int // per variable: the start of each of its replicas
	size int
}

func newGlobalLayout(m *model.Model, plan partition.Plan) *globalLayout {
	g := &globalLayout{off: make([]int, len(plan.Slaves)+1), reps: make([][]int, m.NumVars())}
	for s, sl := range plan.Slaves {
		at := g.off[s]
		for _, v := range sl.Vars {
			g.reps[v] = append(g.reps[v], at)
			at += m.Cards[v]
		}
		g.off[s+1] = at
	}
	g.size = g.off[len(plan.Slaves)]
	return g
}
