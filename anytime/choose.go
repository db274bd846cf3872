package anytime

import (
	"fmt"

	"github.com/ddrun/ddrun/model"
)

// Relaxation names the algorithm that bounds the model in the first phase
// (and, by default, the kind of tightening and of branch and bound that
// follow).
type Relaxation string

// The relaxations.
const (
	// TRWS is TRW-S (package trws): pairwise models only.
	TRWS Relaxation = "trws"
	// ADMM is DD-ADMM (package consensus): factors of any arity.
	ADMM Relaxation = "admm"
)

// Pairwise reports whether TRW-S takes m: every factor is over at most two
// variables or is a Sequence (a chain of pairwise terms).
func Pairwise(m *model.Model) bool {
	_, _, ok := firstHigher(m)
	return ok
}

// firstHigher returns the first factor over more than two variables that
// is not a Sequence, and its arity; ok when there is none.
func firstHigher(m *model.Model) (a, arity int, ok bool) {
	for a := range m.Factors {
		f := &m.Factors[a]
		if f.Kind != model.Sequence && len(f.Vars) > 2 {
			return a, len(f.Vars), false
		}
	}
	return -1, 0, true
}

// Choose picks the relaxation by model class and says why: TRW-S for
// pairwise models (on a 300x300 4-label Potts grid it reaches in 100
// iterations the bound DD-ADMM reaches in about 300, several times sooner;
// docs/anytime.md has the measurements), DD-ADMM otherwise (AD3 takes
// factors of any arity).
func Choose(m *model.Model) (Relaxation, string) {
	a, arity, pairwise := firstHigher(m)
	if pairwise {
		return TRWS, fmt.Sprintf("pairwise model (all %d factors over at most 2 variables): TRW-S gives the tightest bound soonest on pairwise models", len(m.Factors))
	}
	return ADMM, fmt.Sprintf("factor %d is over %d variables, not a pairwise model: DD-ADMM (AD3) takes factors of any arity", a, arity)
}
