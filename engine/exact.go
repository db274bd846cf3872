package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/ddrun/ddrun/elim"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// solveExact is the Exact run: exact bucket elimination first when its
// tables fit ElimMemory (elim, Dechter 1999), else, with a time limit,
// the mini-bucket branch and bound for half of it (BB-MBE, Kask and
// Dechter 2001), and branch and bound on the algorithm's dual bound
// (exact.SolveWarm) when neither decided the result; its counts go to
// Hooks.Print.
func (j *Job) solveExact(ctx context.Context) (solver.Result, error) {
	s, h := j.Settings, &j.hooks
	var before time.Duration // elimination's estimate and the mini-bucket search: branch and bound's times count from before them
	if s.ElimMemory > 0 && j.Algorithm.Name != "elim" {
		t0 := time.Now()
		if res, ran, err := j.eliminate(ctx); ran || err != nil {
			return res, err
		}
		before = time.Since(t0)
		if s.TimeLimit > 0 {
			// What the mini-bucket search left.
			if s.TimeLimit -= before; s.TimeLimit <= 0 {
				s.TimeLimit = time.Nanosecond
			}
		}
	}
	eo := exact.Options{Tol: s.Tol, TimeLimit: s.TimeLimit}
	warm := j.cfg.warm
	if warm == nil {
		warm = exact.Cold(func(ctx context.Context, m *model.Model, ev model.Evidence) (solver.Result, error) {
			return j.cfg.solve(ctx, m, ev, nil)
		})
	}
	res, st, err := exact.SolveWarm(ctx, j.Model, j.Evidence, warm, eo, Later(before, h.Progress))
	res.Elapsed += before
	if err == nil && h.Print != nil {
		h.endLine()
		h.Print("branch and bound", fmt.Sprintf("branch and bound: %d nodes solved, %d pruned, %d open", st.Nodes, st.Pruned, st.Open),
			"nodes", st.Nodes, "pruned", st.Pruned, "open", st.Open)
	}
	return res, err
}

// eliminate runs exact bucket elimination (package elim) before the Exact
// run's branch and bound when its estimated tables fit ElimMemory, and
// says (Hooks.Print) whether it does and why. ran reports that it ran (it
// then decides the result: optimal, or cut short by the limits).
func (j *Job) eliminate(ctx context.Context) (res solver.Result, ran bool, err error) {
	s, h := &j.Settings, &j.hooks
	e, err := elim.EstimateOf(ctx, j.Model, j.Evidence, s.ElimMemory)
	if err != nil {
		return res, false, err
	}
	if h.Print != nil {
		what := "bucket elimination first"
		if !e.Fits {
			what = "no bucket elimination, branch and bound"
		}
		h.Print("elimination", fmt.Sprintf("exact: %s (%s; --elim-memory)", what, e.Verdict()), "fits", e.Fits, "bytes", e.Bytes, "budget", s.ElimMemory, "width", e.Width)
	}
	if !e.Fits {
		if s.TimeLimit <= 0 || j.Model.NumVars() > 4096 {
			return res, false, nil
		}
		// Half the time to the mini-bucket search; the branch and bound
		// on the dual bound gets the rest when it does not certify.
		o := elim.DefaultOptions()
		o.TimeLimit, o.Tol, o.Memory, o.Search = s.TimeLimit/2, s.Tol, s.ElimMemory, true
		res, err = elim.Solve(ctx, j.Model, j.Evidence, o, h.Progress)
		if err != nil {
			if h.Print != nil {
				h.Print("elimination", fmt.Sprintf("exact: no mini-bucket search (%v)", err), "error", err.Error())
			}
			return res, false, nil
		}
		if h.Print != nil {
			h.endLine()
			h.Print("elimination", fmt.Sprintf("exact: mini-bucket search %s (bound %s, primal %s)", res.Status, num(res.Dual), num(res.Primal)), "status", string(res.Status))
		}
		if res.Status == solver.Optimal || res.Status == solver.Infeasible || ctx.Err() != nil {
			return res, true, nil
		}
		return res, false, nil
	}
	// With a time limit, an elimination whose work is over the search's
	// (elim.Options.MaxWork) is searched with mini-buckets instead, which
	// usually certifies sooner (CSP_11: 1.3 s, not 8.5 s); without one the
	// exact elimination always ends.
	o := elim.DefaultOptions()
	o.TimeLimit, o.Tol, o.Memory, o.Search = s.TimeLimit, s.Tol, s.ElimMemory, s.TimeLimit > 0
	res, err = elim.Solve(ctx, j.Model, j.Evidence, o, h.Progress)
	return res, true, err
}
