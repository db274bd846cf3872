package consensus

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/solver"
)

// Warm is a DD state (multipliers, consensus marginals, penalty) laid out
// over the original model, independent of the evidence a run applied and of
// the reduction that followed, so that a run under more evidence (a branch
// and bound child) can start where a run under less (its parent) stopped.
//
// It only exists for the per-factor decomposition, whose slaves are the
// model's factors: Lambda holds, for every factor a of the original model in
// order, for every variable v of its scope in order, m.Cards[v] multipliers
// (WarmLayout gives the offsets; factors over fewer than two variables keep
// their entries, always zero, since Reduce folds them). Entries of replicas
// or states the run did not have are zero. Mu is laid out like m.Unary.
//
// Warm starting is the standard trick of branch and bound over Lagrangian
// bounds (Fisher, "The Lagrangian relaxation method for solving integer
// programming problems", Management Science 1981, Sect. 6): a child's dual is
// evaluated first at its parent's final multipliers, restricted to the
// child's domains and re-centred so that sum_a lambda_ai = 0 holds again for
// every variable i (the dual of AD3 eq. 6 is an upper bound only then).
// Re-centring is exact, not a heuristic: when clamping v folds factor a into
// its other variable u, subtracting the mean of u's remaining multipliers
// adds lambda_au/d'_u to each, which is precisely the share of the folded
// term each remaining slave receives, so the child's first dual is at most
// the parent's dual restricted to the child (see TestWarmChildBound in
// package exact).
type Warm struct {
	Lambda []float64
	Mu     []float64
	// Eta is DD-ADMM's penalty at the end of the run (0: the options').
	Eta float64
}

// WarmLayout returns the offsets of each factor's block in Warm.Lambda:
// factor a's replicas start at off[a], one vector of m.Cards[v] entries per
// scope variable v in order; off[len(m.Factors)] is the length.
func WarmLayout(m *model.Model) []int {
	off := make([]int, len(m.Factors)+1)
	for a := range m.Factors {
		n := 0
		for _, v := range m.Factors[a].Vars {
			n += m.Cards[v]
		}
		off[a+1] = off[a] + n
	}
	return off
}

// SolveWarm is Solve starting from warm (nil: a cold start, the same run as
// Solve) and also returning the final state in m's layout, for runs on m
// under more evidence. It needs the per-factor decomposition. The restored
// multipliers are restricted to the reduced domains and re-centred, so the
// first iteration's dual is a valid upper bound; every slave is solved
// afresh on the first iteration. warm is not modified. The returned state
// is nil when the model is infeasible under ev.
func SolveWarm(ctx context.Context, m *model.Model, ev model.Evidence, opts Options, warm *Warm, progress func(solver.Progress)) (solver.Result, *Warm, error) {
	start := time.Now()
	if err := opts.Validate(); err != nil {
		return solver.Result{}, nil, err
	}
	if opts.Slaves != PerFactor {
		return solver.Result{}, nil, fmt.Errorf("warm starts need the %s decomposition, not %s", PerFactor, opts.Slaves)
	}
	lamOff := WarmLayout(m)
	if warm != nil && (len(warm.Lambda) != lamOff[len(m.Factors)] || len(warm.Mu) != len(m.Unary)) {
		return solver.Result{}, nil, fmt.Errorf("warm start of %d multipliers and %d marginals, want %d and %d",
			len(warm.Lambda), len(warm.Mu), lamOff[len(m.Factors)], len(m.Unary))
	}
	red, err := solver.Reduce(m, ev)
	if red == nil {
		return solver.InfeasibleResult(time.Since(start)), nil, err
	}
	wm, err := newWarmMap(m, red, lamOff)
	if err != nil {
		return solver.Result{}, nil, fmt.Errorf("warm start: %w", err)
	}
	s, entries, done, err := newLocal(red.Model, partition.PerFactor(red.Model), opts, 1)
	if err != nil {
		return solver.Result{}, nil, err
	}
	defer done()
	w := s.links[0].(LocalLink).W
	if warm != nil {
		if err := wm.restore(w, warm); err != nil {
			return solver.Result{}, nil, fmt.Errorf("warm start: %w", err)
		}
		if opts.Algo == ADMM && warm.Eta > 0 && !math.IsInf(warm.Eta, 1) {
			s.eta = warm.Eta
		}
	}
	res, err := s.run(ctx, entries, nil, progress)
	if err != nil {
		return solver.Result{}, nil, err
	}
	out := wm.capture(w)
	if opts.Algo == ADMM {
		out.Eta = s.eta
	}
	return solver.Finish(m, red, res), out, nil
}

// warmMap maps the replica arrays of a per-factor run on a reduced model to
// the Warm layout of the original model.
type warmMap struct {
	m, r   *model.Model
	size   int     // the length of Warm.Lambda
	states [][]int // original states of each variable's reduced states
	// at[e] is the Warm.Lambda index of replica entry e of the reduced
	// problem (slave order, scope order, reduced states).
	at []int
}

func newWarmMap(m *model.Model, red *model.Reduced, lamOff []int) (*warmMap, error) {
	wm := &warmMap{m: m, r: red.Model, size: lamOff[len(m.Factors)], states: red.States}
	if wm.states == nil {
		wm.states = make([][]int, len(m.Cards))
		for i, c := range m.Cards {
			wm.states[i] = make([]int, c)
			for k := range c {
				wm.states[i][k] = k
			}
		}
	}
	origin, err := factorOrigins(m, red)
	if err != nil {
		return nil, err
	}
	for s, a := range origin {
		ov := m.Factors[a].Vars
		j, off := 0, lamOff[a] // position in the original scope, its entry
		for _, v := range red.Factors[s].Vars {
			for j < len(ov) && ov[j] != v {
				off += m.Cards[ov[j]]
				j++
			}
			if j == len(ov) {
				return nil, fmt.Errorf("reduced factor %d's scope %v is not within factor %d's %v", s, red.Factors[s].Vars, a, ov)
			}
			for _, st := range wm.states[v] {
				wm.at = append(wm.at, off+st)
			}
		}
	}
	return wm, nil
}

// factorOrigins returns, for every factor of the reduced model, the factor
// of m it comes from, following model.Reduce: factors over fewer than two
// variables are folded; a factor is kept whole when its variables keep all
// their states, and kept sliced when it is a Sequence, when two or more of
// its variables keep several states, or when one does and the slice forbids
// some of its states (it cannot be folded into a finite unary).
func factorOrigins(m *model.Model, red *model.Reduced) ([]int, error) {
	if red.States == nil {
		if len(red.Factors) != len(m.Factors) {
			return nil, fmt.Errorf("unreduced model of %d factors, original of %d", len(red.Factors), len(m.Factors))
		}
		origin := make([]int, len(m.Factors))
		for a := range origin {
			origin[a] = a
		}
		return origin, nil
	}
	origin := make([]int, 0, len(red.Factors))
	var x []int
	for a := range m.Factors {
		f := &m.Factors[a]
		if len(f.Vars) < 2 {
			continue
		}
		untouched, free, last := true, 0, -1
		for _, v := range f.Vars {
			if red.Cards[v] != m.Cards[v] {
				untouched = false
			}
			if red.Cards[v] > 1 {
				free++
				last = v
			}
		}
		keep := untouched || f.Kind == model.Sequence || free >= 2
		if !keep && free == 1 {
			if x == nil {
				x = make([]int, len(m.Cards))
			}
			for _, v := range f.Vars {
				x[v] = red.States[v][0]
			}
			for _, st := range red.States[last] {
				x[last] = st
				if math.IsInf(m.FactorScore(a, x), -1) {
					keep = true
					break
				}
			}
		}
		if keep {
			origin = append(origin, a)
		}
	}
	if len(origin) != len(red.Factors) {
		return nil, fmt.Errorf("%d reduced factors traced to %d original ones", len(red.Factors), len(origin))
	}
	return origin, nil
}

// restore sets the worker's replica state from warm: multipliers restricted
// to the reduced replicas and states, then re-centred per variable and
// state; marginals restricted and renormalised (uniform where nothing
// positive is left).
func (wm *warmMap) restore(w *Worker, warm *Warm) error {
	p, r := w.p, wm.r
	if len(wm.at) != p.NumReplicaEntries() {
		return fmt.Errorf("%d mapped replica entries for %d", len(wm.at), p.NumReplicaEntries())
	}
	st := PartState{Lambda: make([]float64, len(wm.at)), Mu: make([]float64, len(r.Unary))}
	for e, k := range wm.at {
		st.Lambda[e] = warm.Lambda[k]
	}
	mean := make([]float64, 0, 8)
	for i := range r.Cards {
		reps := p.VarReps[p.VarRepOff[i]:p.VarRepOff[i+1]]
		c := r.Cards[i]
		if len(reps) > 0 {
			mean = slices.Grow(mean[:0], c)[:c]
			clear(mean)
			for _, e := range reps {
				for k, l := range st.Lambda[e : int(e)+c] {
					mean[k] += l
				}
			}
			recentre(st.Lambda, reps, mean, 1/float64(len(reps)))
		}
		mu := st.Mu[r.UnaryOff[i]:r.UnaryOff[i+1]]
		sum := 0.0
		for k, s := range wm.states[i] {
			v := warm.Mu[wm.m.UnaryOff[i]+s]
			if !(v > 0) || math.IsInf(v, 1) {
				v = 0
			}
			mu[k] = v
			sum += v
		}
		for k := range mu {
			if sum > 0 {
				mu[k] /= sum
			} else {
				mu[k] = 1 / float64(c)
			}
		}
	}
	if w.subgradient {
		st.Nu = make([]float64, len(w.nu))
	}
	return w.Restore(&st)
}

// capture returns the worker's replica state in the Warm layout.
func (wm *warmMap) capture(w *Worker) *Warm {
	m, r := wm.m, wm.r
	out := &Warm{Lambda: make([]float64, wm.size), Mu: make([]float64, len(m.Unary))}
	for e, k := range wm.at {
		out.Lambda[k] = w.lambda[e]
	}
	for i, sts := range wm.states {
		for k, s := range sts {
			out.Mu[m.UnaryOff[i]+s] = w.mu[r.UnaryOff[i]+k]
		}
	}
	return out
}
