package engine

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trws"
)

func given(s Settings, names ...string) Settings {
	s.Given = map[string]bool{}
	for _, n := range names {
		s.Given[n] = true
	}
	return s
}

// The defaults that depend on other settings: a time limit without
// max-iter lifts the iteration limit (not under exact), and runs the
// anytime phases when no algorithm was given (unless anytime is given).
func TestSettle(t *testing.T) {
	for _, c := range []struct {
		name            string
		s               Settings
		maxIter         int
		auto, anytimeOn bool
	}{
		{"defaults", given(Defaults()), Defaults().MaxIter, true, false},
		{"time limit", given(Settings{TimeLimit: time.Second, MaxIter: 7}, "time-limit"), math.MaxInt, true, true},
		{"time limit, max-iter", given(Settings{TimeLimit: time.Second, MaxIter: 7}, "time-limit", "max-iter"), 7, true, true},
		{"time limit, exact", given(Settings{TimeLimit: time.Second, MaxIter: 7, Exact: true}, "time-limit", "exact"), 7, true, false},
		{"time limit, algo", given(Settings{TimeLimit: time.Second, Algo: "trws"}, "time-limit", "algo"), math.MaxInt, false, false},
		{"algo auto", given(Settings{TimeLimit: time.Second, Algo: "auto"}, "time-limit", "algo"), math.MaxInt, true, true},
		{"anytime off", given(Settings{TimeLimit: time.Second}, "time-limit", "anytime"), math.MaxInt, true, false},
		{"anytime on", given(Settings{Anytime: true, Algo: "admm"}, "anytime", "algo"), 0, false, true},
	} {
		s := c.s
		s.Settle()
		if s.MaxIter != c.maxIter || s.Auto != c.auto || s.AnytimeOn != c.anytimeOn {
			t.Errorf("%s: max-iter %d, auto %v, anytime %v; want %d, %v, %v", c.name, s.MaxIter, s.Auto, s.AnytimeOn, c.maxIter, c.auto, c.anytimeOn)
		}
		s.TimeLimit = 0
		if s.Settle(); s.MaxIter != c.maxIter { // settled once
			t.Errorf("%s: Settle applied twice", c.name)
		}
	}
}

// Errors name the settings, which each front end writes its own way.
func TestErrorsNameTheSetting(t *testing.T) {
	for _, c := range []struct {
		s           Settings
		flag, param string
	}{
		{given(Defaults(), "algo"), "", ""},
		{func() Settings { s := given(Defaults(), "algo"); s.Algo = "magic"; return s }(),
			`--algo: unknown algorithm "magic" (want admm, subgradient, trws, cmp or elim)`,
			`algo: unknown algorithm "magic" (want admm, subgradient, trws, cmp or elim)`},
		{func() Settings { s := given(Defaults(), "algo", "eps-descent"); s.Algo = "trws"; return s }(),
			"--eps-descent goes with --algo cmp, not trws", "eps_descent goes with algo cmp, not trws"},
		{func() Settings { s := given(Defaults(), "max-iter"); s.MaxIter = -3; return s }(),
			"--max-iter: -3 < 1", "max_iter: -3 < 1"},
		{func() Settings { s := given(Defaults(), "threads", "algo"); s.Threads, s.Algo = 4, "cmp"; return s }(),
			"--threads: --algo cmp runs on one thread (admm and subgradient use --threads)",
			"threads: algo cmp runs on one thread (admm and subgradient use threads)"},
		{func() Settings { s := given(Defaults(), "exact", "anytime"); s.Exact, s.Anytime = true, true; return s }(),
			"--anytime and --exact: --anytime already ends in branch and bound", "anytime and exact: anytime already ends in branch and bound"},
	} {
		err := c.s.Validate()
		if c.flag == "" {
			if err != nil {
				t.Errorf("defaults: %v", err)
			}
			continue
		}
		var se *Error
		if !errors.As(err, &se) {
			t.Fatalf("want %q, got %v", c.flag, err)
		}
		if got := se.Error(); got != c.flag {
			t.Errorf("flags: %q, want %q", got, c.flag)
		}
		if got := se.Named(Param); got != c.param {
			t.Errorf("params: %q, want %q", got, c.param)
		}
	}
}

// With no algorithm given, a distributed run and a setting of dual
// decomposition decide DD-ADMM before the model is read; else the model's
// class decides (TRW-S on a pairwise grid), and the job says why.
func TestChoice(t *testing.T) {
	grid := model.New([]int{2, 2, 2})
	addTable(grid, []int{0, 1}, []float64{1, 0, 0, 1})
	addTable(grid, []int{1, 2}, []float64{1, 0, 0, 1})
	for _, c := range []struct {
		name string
		s    Settings
		algo string
	}{
		{"pairwise", given(Defaults()), "trws"},
		{"distributed", func() Settings { s := given(Defaults()); s.Distributed = true; return s }(), "admm"},
		{"eta", given(Defaults(), "eta"), "admm"},
	} {
		j, err := Prepare(c.s)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Bind(grid, nil); err != nil {
			t.Fatal(err)
		}
		if j.Algorithm.Name != c.algo || j.Why == "" {
			t.Errorf("%s: %s (%q), want %s with why", c.name, j.Algorithm.Name, j.Why, c.algo)
		}
	}
}

// Solve runs the algorithm that the settings name with the options they
// give: the same result as the solver called directly.
func TestSolveMatchesTheSolver(t *testing.T) {
	m := model.New([]int{3, 3, 3, 3})
	for i := 0; i < 3; i++ {
		addTable(m, []int{i, i + 1}, []float64{2, 0, 1, 0, 2, 0, 1, 0, 2})
	}
	addTable(m, []int{0, 3}, []float64{0, 1, 3, 1, 0, 1, 3, 1, 0})
	for _, algo := range []string{"admm", "trws"} {
		s := given(Defaults(), "algo", "max-iter", "threads")
		s.Algo, s.MaxIter, s.Threads = algo, 50, 1
		got, _, err := Solve(context.Background(), m, nil, s, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		var want solver.Result
		if algo == "admm" {
			o := consensus.DefaultOptions()
			o.MaxIter, o.Threads, o.ProgressEvery = 50, 1, 0
			o.ResidualTol = min(o.ResidualTol, o.Tol)
			want, err = consensus.Solve(context.Background(), m, nil, o, nil)
		} else {
			o := trws.DefaultOptions()
			o.MaxIter, o.Threads, o.ProgressEvery = 50, 1, 0
			o.Tol = Defaults().Tol
			o.BoundTol = min(o.BoundTol, o.Tol/10)
			want, err = trws.Solve(context.Background(), m, nil, o, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got.Dual != want.Dual || got.Primal != want.Primal || got.Status != want.Status || got.Iterations != want.Iterations {
			t.Errorf("%s: dual %v primal %v %s %d, want %v %v %s %d", algo, got.Dual, got.Primal, got.Status, got.Iterations,
				want.Dual, want.Primal, want.Status, want.Iterations)
		}
	}
}

func addTable(m *model.Model, vars []int, t []float64) {
	m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: vars, Table: t})
}
