package convexmp

import (
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// decodeRep writes argmax thetaHat_i into x.
func (p *problem) decodeRep(lam []float64, buf []float64, x []int) {
	for i := range p.cards {
		x[i] = solver.Argmax(p.unaryRep(i, lam, buf))
	}
}

// icm improves x by iterated conditional modes (localsearch.Local.Sweeps
// on the problem as a model): each variable in turn moves to its best
// state given the others, until no variable moves or after sweeps sweeps.
// Ties keep the current state, so the score never drops.
func (p *problem) icm(x []int, sweeps int, buf []float64) {
	p.local.Sweeps(x, sweeps, buf, nil)
}

// asModel returns the problem as a model (sharing its arrays): its
// variables and unaries, and its factors as dense tables, in order.
func (p *problem) asModel() *model.Model {
	m := &model.Model{Cards: p.cards, UnaryOff: p.uoff, Unary: p.unary, Constant: p.constant, Factors: make([]model.Factor, len(p.facs))}
	for a := range p.facs {
		m.Factors[a] = model.Factor{Kind: model.Dense, Vars: p.facs[a].vars, Table: p.facs[a].table}
	}
	return m
}
