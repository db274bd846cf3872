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

// DenseDegree and DenseShare say when Choose prefers DD-ADMM to TRW-S on a
// pairwise model: its graph (edges counted once per pair of variables) has
// an average degree 2E/n of at least DenseDegree and joins at least
// DenseShare of all pairs of variables. TRW-S's trees weigh each edge about 1/degree of its
// ends, so on dense graphs it moves slowly and stops at a weak tree
// agreement point: on ObjectDetection_11 (60 variables, 11 labels, the
// complete graph, degree 59) it stalls at the bound 24188 where DD-ADMM
// reaches 22670, and its forward-pass labelling scores 4839 against
// DD-ADMM's decoded and ICM-improved 10110; internal/primal's search from
// TRW-S's labelling reaches only 8654, whatever its budget. On DBN_11
// (degree 20, half of all pairs) both reach the same bound, but the whole
// anytime run is far better after TRW-S (TRW-S(LP-C) on its squares, then
// TRW-S nodes: bound 195.5 and the optimum 133.46 at 10 s, against 264.6
// and 132.77 after DD-ADMM), so the rule asks for a near-complete graph
// too. On the sparser pairwise instances (grids, degree 4; Segmentation,
// 5.5; CSP_11, 9.3) TRW-S keeps its lead. The rule rests on these few
// instances (docs/anytime.md); an explicit --algo overrides it.
const (
	DenseDegree = 16
	DenseShare  = 0.75
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

// Dense reports whether m's pairwise graph is dense in Choose's sense,
// with its edges and average degree.
func Dense(m *model.Model) (dense bool, edges int, avg float64) {
	edges, avg = Degree(m)
	n := m.NumVars()
	return n > 1 && avg >= DenseDegree && float64(edges) >= DenseShare*float64(n)*float64(n-1)/2, edges, avg
}

// Degree returns the number of distinct pairs of variables that m's
// factors over two variables join (a Sequence joins each pair of
// neighbours in its chain), and the average degree 2*edges/n of that
// graph (0 without variables).
func Degree(m *model.Model) (edges int, avg float64) {
	n := m.NumVars()
	if n == 0 {
		return 0, 0
	}
	seen := make(map[[2]int]struct{})
	add := func(u, v int) {
		if u == v {
			return
		}
		if u > v {
			u, v = v, u
		}
		seen[[2]int{u, v}] = struct{}{}
	}
	for a := range m.Factors {
		f := &m.Factors[a]
		switch {
		case f.Kind == model.Sequence:
			for k := 0; k+1 < len(f.Vars); k++ {
				add(f.Vars[k], f.Vars[k+1])
			}
		case len(f.Vars) == 2:
			add(f.Vars[0], f.Vars[1])
		}
	}
	return len(seen), 2 * float64(len(seen)) / float64(n)
}

// Choose picks the relaxation by model class and says why: TRW-S for
// sparse pairwise models (on a 300x300 4-label Potts grid it reaches in
// 100 iterations the bound DD-ADMM reaches in about 300, several times
// sooner; docs/anytime.md has the measurements), DD-ADMM for pairwise
// models whose graph is near-complete with a high degree (Dense: TRW-S
// stalls there with a weaker bound and a worse labelling), and DD-ADMM
// otherwise (AD3 takes factors of any arity).
func Choose(m *model.Model) (Relaxation, string) {
	a, arity, pairwise := firstHigher(m)
	if !pairwise {
		return ADMM, fmt.Sprintf("factor %d is over %d variables, not a pairwise model: DD-ADMM (AD3) takes factors of any arity", a, arity)
	}
	dense, edges, deg := Dense(m)
	if dense {
		return ADMM, fmt.Sprintf("dense pairwise model (%d variables, %d edges, average degree %.1f >= %d, at least %.0f%% of all pairs): TRW-S stalls with a weaker bound and labelling on near-complete graphs, DD-ADMM does not", m.NumVars(), edges, deg, DenseDegree, 100*DenseShare)
	}
	return TRWS, fmt.Sprintf("pairwise model (all %d factors over at most 2 variables, average degree %.1f, not near-complete): TRW-S gives the tightest bound soonest on such models", len(m.Factors), deg)
}
