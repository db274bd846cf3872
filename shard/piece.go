package shard

import (
	"context"
	"fmt"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
)

// Piece is a worker's part of a sharded job as a model of its own, for a
// solver that runs the part whole (distributed TRW-S, package dtrws): the
// part's factors over its variables Vars (global indices, increasing;
// local variable i is Vars[i]), with the unary of each boundary variable
// split between the parts that hold it, so that the pieces' scores add up
// to the model's for every assignment (the model's constant aside: the
// coordinator holds it, Layout.Boundary.Constant).
type Piece struct {
	Vars  []int
	Model *model.Model
	// Potts, when not nil, holds the part's factors, all Potts, flat (in
	// the file's order, over the part's numbering), and Model none: a
	// part of a Potts grid read without a model.Factor per factor (96
	// bytes and a scope each, 16 bytes here; trws.NewPartPotts runs it).
	Potts *consensus.Pairs
	// Boundary holds the local indices of the spec's boundary variables,
	// in the spec's order.
	Boundary []int32
}

// Factors is the number of the piece's factors.
func (pc *Piece) Factors() int {
	if pc.Potts != nil {
		return pc.Potts.Len()
	}
	return len(pc.Model.Factors)
}

// LoadPiece reads a worker's piece from its spec (as Load reads a part):
// copies[k] is the number of parts that hold the spec's boundary variable
// k (at least 2), whose unary the piece holds divided by it.
func LoadPiece(ctx context.Context, spec *Spec, copies []int32) (*Piece, error) {
	if len(copies) != len(spec.Boundary) {
		return nil, fmt.Errorf("shard: %d copy counts for %d boundary variables", len(copies), len(spec.Boundary))
	}
	part, err := readPart(ctx, spec, kindsOf(model.Potts), false)
	if err != nil {
		return nil, err
	}
	m := part.Model
	pc := &Piece{Vars: part.Vars, Model: m, Boundary: make([]int32, len(part.Boundary))}
	pc.Potts = part.Pairs // Potts pairs only (flat), or none
	for k, lv := range part.Boundary {
		c := copies[k]
		if c < 2 || int(c) > int(spec.Degree[k]) {
			return nil, fmt.Errorf("shard: boundary variable %d in %d parts (it has %d slaves)", spec.Boundary[k], c, spec.Degree[k])
		}
		u := m.Unary[m.UnaryOff[lv]:m.UnaryOff[lv+1]]
		for s := range u {
			u[s] /= float64(c)
		}
		pc.Boundary[k] = int32(lv)
	}
	return pc, nil
}

// Copies returns, for every boundary variable (boundary numbering), the
// workers whose parts hold it, increasing.
func (l *Layout) Copies() [][]int32 {
	cs := make([][]int32, len(l.BoundaryVars))
	for w, of := range l.Of {
		for _, j := range of {
			cs[j] = append(cs[j], int32(w))
		}
	}
	return cs
}
