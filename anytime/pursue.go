package anytime

import (
	"context"
	"fmt"
	"math"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/tighten"
)

// TightenMode says how the default tightening phase adds cycles.
type TightenMode string

// The tightening modes.
const (
	// AllCycles adds every triangle and chordless square up front:
	// DD-ADMM on tighten.Cycles's regrouping, after either relaxation
	// (TRW-S(LP-C) after TRW-S on graphs with more cycles than edges).
	AllCycles TightenMode = "cycles"
	// LPC, after TRW-S, runs TRW-S(LP-C) with the cycle inequalities of
	// every triangle and chordless square (trws Options.Cycles) on every
	// graph; after DD-ADMM it is AllCycles. It is not the default on
	// sparse graphs: on the 300x300 4-label mixed-sign grid its bound is
	// better (72,706.9 at 5.3 s, 72,692.0 at 24 s, against 72,733.0 at
	// 7.8 s and 72,699.0) but its primal lags (72,541.9 until the phase
	// ends, against DD-ADMM's decoded 72,649.2 at 9.2 s), so the gap
	// reaches 1e-3 at 24.3 s instead of 9.2 s.
	LPC TightenMode = "lpc"
	// Pursue adds frustrated cycles of any length incrementally
	// (tighten.Pursuit): rounds of MaxAdd cycles, each followed by DD-ADMM
	// on the model regrouped over the cycles so far, until a round finds
	// nothing new or the phase's time is up.
	Pursue TightenMode = "pursue"
)

// pursueRoundIter bounds each pursuit round's DD-ADMM run, so that the
// next round's cycles come from a solution that has moved.
const pursueRoundIter = 300

// pursueAdd is the most cycles a round adds.
const pursueAdd = 50

// tightenPursue is the Pursue tightening. Each round's signal is the
// latest marginals (Signal.Mu: DD-ADMM's, or none after TRW-S, which has
// none, and then the unaries pick each variable's state); the cycles'
// edge weights are tighten.Pursuit's, from the model's tables and a split
// of the unaries by degree. Every round's bound is valid for m (the
// regrouped model has the same score for every assignment): the phase
// reports the lowest, with the best primal of the rounds, and leaves the
// last model and DD-ADMM state for the search.
func (r *run) tightenPursue(ctx context.Context, m *model.Model, ev model.Evidence, lim solver.Limits, progress func(solver.Progress)) (Tightened, error) {
	p, err := tighten.NewPursuit(m, tighten.PursueOptions{MaxAdd: pursueAdd})
	if err != nil {
		return Tightened{}, err
	}
	r.mu.Lock()
	mu := r.lastMu
	r.mu.Unlock()
	o := r.opts.DD
	o.Slaves = consensus.PerFactor
	best := solver.Result{Dual: math.Inf(1), Primal: math.Inf(-1), Status: solver.Converged}
	var t Tightened
	iters, rounds := 0, 0
	for ctx.Err() == nil {
		tm, added, err := p.Round(tighten.Signal{Mu: mu})
		if err == nil && added == 0 && mu != nil {
			// Nothing new among the fractional variables' cycles: look
			// at every variable, projected by its unaries.
			tm, added, err = p.Round(tighten.Signal{})
		}
		if err != nil {
			return Tightened{}, err
		}
		if added == 0 {
			break
		}
		rounds++
		o.Limits = lim
		o.MaxIter = min(lim.MaxIter, pursueRoundIter)
		done := iters
		res, warm, err := consensus.SolveWarm(ctx, tm, ev, o, nil, func(pr solver.Progress) {
			pr.Iteration += done
			if progress != nil {
				progress(pr)
			}
		})
		if err != nil {
			return Tightened{}, err
		}
		iters += res.Iterations
		if res.Dual < best.Dual {
			best.Dual, best.Relaxed = res.Dual, res.Relaxed
		}
		if res.Assignment != nil && res.Primal > best.Primal {
			best.Primal, best.Assignment = res.Primal, res.Assignment
		}
		best.Status = res.Status
		t.Model, t.Warm = tm, warm
		if len(res.Mu) == len(m.Unary) {
			mu = res.Mu
		}
		if res.Status == solver.Optimal || res.Status == solver.Infeasible {
			break
		}
	}
	if rounds == 0 {
		return Tightened{Skipped: true, About: "cycle pursuit: no frustrated cycle"}, nil
	}
	if ctx.Err() != nil {
		best.Status = solver.Interrupted
	}
	best.Iterations, best.Mu = iters, mu
	best.Gap = best.Dual - best.Primal
	t.Result = best
	t.About = fmt.Sprintf("cycle pursuit (tighten.Pursuit): %d rounds, %d frustrated cycles, DD-ADMM on each regrouping", rounds, len(p.Cycles()))
	return t, nil
}
