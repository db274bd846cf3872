package solver

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/ddrun/ddrun/model"
)

func TestLimitsValidate(t *testing.T) {
	good := Limits{MaxIter: 1, Tol: 0, ProgressEvery: 0}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid limits: %v", err)
	}
	cases := []struct {
		name   string
		change func(*Limits)
		option string
	}{
		{"no iterations", func(l *Limits) { l.MaxIter = 0 }, "MaxIter"},
		{"negative time", func(l *Limits) { l.TimeLimit = -time.Second }, "TimeLimit"},
		{"negative tol", func(l *Limits) { l.Tol = -1e-9 }, "Tol"},
		{"NaN tol", func(l *Limits) { l.Tol = math.NaN() }, "Tol"},
		{"infinite tol", func(l *Limits) { l.Tol = math.Inf(1) }, "Tol"},
		{"negative progress", func(l *Limits) { l.ProgressEvery = -1 }, "ProgressEvery"},
	}
	for _, tc := range cases {
		l := good
		tc.change(&l)
		var oe *OptionError
		if err := l.Validate(); !errors.As(err, &oe) || oe.Option != tc.option {
			t.Errorf("%s: error %v, want an OptionError for %s", tc.name, err, tc.option)
		}
	}
}

func TestClosed(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		dual, primal, tol float64
		want              bool
	}{
		{10, 10, 0, true},
		{10.5, 10, 0.1, true},   // 0.5 <= 0.1*10
		{12, 10, 0.1, false},    // 2 > 1
		{0.5, 0, 0.5, true},     // tolerance is relative to max(1, |primal|)
		{0.6, 0, 0.5, false},    //
		{inf, 10, 0.1, false},   // no bound yet
		{1, -inf, 1e9, false},   // no feasible primal
		{-5, -5.1, 0.01, false}, // 0.1 > 0.051
	}
	for _, c := range cases {
		if got := Closed(c.dual, c.primal, c.tol); got != c.want {
			t.Errorf("Closed(%v, %v, %v) = %v, want %v", c.dual, c.primal, c.tol, got, c.want)
		}
	}
}

// twoVars is x0, x1 in {0,1,2}, a unary preferring x0 = 2 and a pair that
// forbids x0 == x1.
func twoVars(t *testing.T) *model.Model {
	t.Helper()
	m := model.New([]int{3, 3})
	copy(m.Unary, []float64{0, 0.5, 1, 0, 0.25, 0})
	tab := make([]float64, 9)
	for a := 0; a < 3; a++ {
		for b := 0; b < 3; b++ {
			if a == b {
				tab[a*3+b] = math.Inf(-1)
			}
		}
	}
	m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{0, 1}, Table: tab})
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReduceAndFinish(t *testing.T) {
	m := twoVars(t)
	// Evidence x0 = 1 leaves x1 in {0, 2}.
	red, err := Reduce(m, model.Evidence{0: 1})
	if err != nil || red == nil {
		t.Fatalf("Reduce: %v, %v", red, err)
	}
	// A result on the reduced model: some assignment with a wrong primal
	// and marginals in the reduced layout.
	x := make([]int, red.Model.NumVars())
	mu := make([]float64, len(red.Model.Unary))
	for i := range mu {
		mu[i] = float64(i + 1)
	}
	res := Finish(m, red, Result{Assignment: x, Primal: 1e9, Dual: 3, Mu: mu})
	if len(res.Assignment) != 2 || res.Assignment[0] != 1 {
		t.Fatalf("expanded assignment %v, want x0 = 1 and two variables", res.Assignment)
	}
	if want := m.Score(res.Assignment); res.Primal != want || res.Gap != 3-want {
		t.Errorf("primal %v gap %v, want the exact score %v and gap %v", res.Primal, res.Gap, want, 3-want)
	}
	if len(res.Mu) != len(m.Unary) {
		t.Fatalf("marginals of length %d, want %d", len(res.Mu), len(m.Unary))
	}
	var sum float64
	for _, v := range res.Mu {
		sum += v
	}
	if want := float64(len(mu) * (len(mu) + 1) / 2); sum != want {
		t.Errorf("marginals %v do not carry the reduced ones %v", res.Mu, mu)
	}
	if res.Mu[m.UnaryOff[0]+0] != 0 || res.Mu[m.UnaryOff[0]+2] != 0 {
		t.Errorf("marginals %v: excluded states of x0 must be 0", res.Mu)
	}

	// No assignment found: nothing to expand or rescore.
	none := Finish(m, red, Result{Primal: math.Inf(-1), Dual: 3})
	if none.Assignment != nil || !math.IsInf(none.Primal, -1) {
		t.Errorf("no assignment: got %v, primal %v", none.Assignment, none.Primal)
	}
}

func TestReduceInfeasible(t *testing.T) {
	m := model.New([]int{2})
	copy(m.Unary, []float64{0, math.Inf(-1)})
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	red, err := Reduce(m, model.Evidence{0: 1}) // the only forbidden state
	if red != nil || err != nil {
		t.Fatalf("Reduce of an infeasible model: %v, %v; want nil, nil", red, err)
	}
	res := InfeasibleResult(time.Second)
	if res.Status != Infeasible || !math.IsInf(res.Dual, -1) || !math.IsInf(res.Primal, -1) || res.Assignment != nil || res.Elapsed != time.Second {
		t.Errorf("InfeasibleResult: %+v", res)
	}
	if _, err := Reduce(m, model.Evidence{0: 5}); err == nil {
		t.Error("evidence outside the domain: no error")
	}
}

// Prepare returns the options' error as is, the model's and the
// reduction's prefixed with the algorithm's name and a check's as is, in
// that order, and a nil Reduced without error when nothing is feasible.
func TestPrepare(t *testing.T) {
	m := model.New([]int{2})
	copy(m.Unary, []float64{0, math.Inf(-1)})
	good, bad := &Limits{MaxIter: 1}, &Limits{}
	refuse := func(*model.Model) error { return errors.New("refused") }
	if _, err := Prepare("alg", bad, m, nil, refuse); err == nil || err.Error() != "MaxIter: 0 < 1" {
		t.Errorf("bad options: %v", err)
	}
	broken := model.New([]int{2})
	broken.Unary = broken.Unary[:1]
	if _, err := Prepare("alg", good, broken, nil, refuse); !namedBy("alg", err) {
		t.Errorf("an invalid model: %v, want it named alg", err)
	}
	if _, err := Prepare("alg", good, m, model.Evidence{0: 5}, refuse); err == nil || err.Error() != "refused" {
		t.Errorf("a check: %v, want its error before the reduction's", err)
	}
	if _, err := Prepare("alg", good, m, model.Evidence{0: 5}); !namedBy("alg", err) {
		t.Errorf("evidence outside the domain: %v, want it named alg", err)
	}
	if red, err := Prepare("alg", good, m, model.Evidence{0: 1}); red != nil || err != nil {
		t.Errorf("an infeasible model: %v, %v; want nil, nil", red, err)
	}
	if red, err := Prepare("alg", good, m, nil); red == nil || err != nil {
		t.Errorf("a feasible model: %v, %v", red, err)
	}
}

// The checks word their problems as the Validate methods always did, pass
// good values, and FirstBad keeps the first bad option of a list.
func TestChecks(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string // "" when the value is good
	}{
		{WantAtLeast("QPIters", 0, 1), "QPIters: 0 < 1"},
		{WantAtLeast("Sweeps", -2, 0), "Sweeps: -2 < 0"},
		{WantAtLeast("Parts", 1, 1), ""},
		{WantNotNegative("MaxNodes", -1), "MaxNodes: -1 is negative"},
		{WantNotNegative("TimeLimit", -time.Second), "TimeLimit: -1s is negative"},
		{WantNotNegative("TimeLimit", time.Duration(0)), ""},
		{WantNonNegative("Tol", -0.5), "Tol: -0.5 is not a finite number >= 0"},
		{WantNonNegative("Tol", math.Inf(1)), "Tol: +Inf is not a finite number >= 0"},
		{WantNonNegative("Tol", 0), ""},
		{WantPositive("EpsMin", 0), "EpsMin: 0 is not a finite number > 0"},
		{WantPositive("EpsMin", 1e-7), ""},
		{Want(false, "Step", "%v is not in (0, 1]", 1.5), "Step: 1.5 is not in (0, 1]"},
		{Want(true, "Step", "%v is not in (0, 1]", 0.5), ""},
	} {
		var oe *OptionError
		switch {
		case c.want == "" && c.err != nil:
			t.Errorf("a good value: %v", c.err)
		case c.want != "" && (!errors.As(c.err, &oe) || c.err.Error() != c.want):
			t.Errorf("%v, want the option error %q", c.err, c.want)
		}
	}
	err := FirstBad(nil, WantAtLeast("A", 0, 1), WantAtLeast("B", 0, 1))
	if err == nil || err.Error() != "A: 0 < 1" {
		t.Errorf("first bad: %v, want A's", err)
	}
	if err := FirstBad(nil, nil); err != nil {
		t.Errorf("no bad option: %v", err)
	}
	x, name := 0.5, "factor"
	good := func() {
		_ = FirstBad(Want(x > 0, "Step", "%v is not in (0, 1]", x), Want(name == "factor", "Slaves", "unknown decomposition %q", name),
			WantAtLeast("Parts", 2, 1), WantNonNegative("Tol", x))
	}
	if n := testing.AllocsPerRun(100, good); n != 0 {
		t.Errorf("good options: %v allocations, want none", n)
	}
}

// Argmax takes the first of equal largest entries, and 0 for an empty or
// all -Inf slice.
func TestArgmax(t *testing.T) {
	inf := math.Inf(-1)
	for _, c := range []struct {
		v    []float64
		want int
	}{
		{nil, 0}, {[]float64{inf, inf}, 0}, {[]float64{1, 3, 2, 3}, 1}, {[]float64{inf, -5, inf}, 1},
	} {
		if got := Argmax(c.v); got != c.want {
			t.Errorf("Argmax(%v) = %d, want %d", c.v, got, c.want)
		}
	}
}

// namedBy reports whether err is an error prefixed with "name: ".
func namedBy(name string, err error) bool {
	inner := errors.Unwrap(err)
	return inner != nil && err.Error() == name+": "+inner.Error()
}

func TestLimitsReached(t *testing.T) {
	l := Limits{MaxIter: 10, TimeLimit: time.Second}
	live := context.Background()
	done, cancel := context.WithCancel(live)
	cancel()
	cases := []struct {
		ctx     context.Context
		iter    int
		elapsed time.Duration
		want    Status
		stop    bool
	}{
		{live, 9, 0, "", false},
		{live, 10, 0, IterationLimit, true},
		{live, 9, time.Second, TimeLimit, true},
		{done, 9, 0, Interrupted, true},
		{done, 10, 2 * time.Second, IterationLimit, true}, // the iteration limit first, then time
		{done, 9, 2 * time.Second, TimeLimit, true},
	}
	for _, c := range cases {
		if st, stop := l.Reached(c.ctx, c.iter, c.elapsed); st != c.want || stop != c.stop {
			t.Errorf("Reached(iter %d, %v, cancelled %v) = %q, %v; want %q, %v", c.iter, c.elapsed, c.ctx.Err() != nil, st, stop, c.want, c.stop)
		}
	}
	if st, stop := (&Limits{MaxIter: 10}).Reached(live, 1, time.Hour); stop {
		t.Errorf("no time limit: stopped with %q after an hour", st)
	}
}

// The final polish's deadline: the floor on a fast run, PolishIters of
// the typical iteration on a slow one: the median of the laps but the
// first, so that neither a slow first iteration nor the primal checks of
// some iterations stretch the polish.
func TestPolishDeadline(t *testing.T) {
	t0 := time.Unix(1000, 0)
	laps := func(d ...time.Duration) *Laps {
		var l Laps
		now := t0
		l.Start(now)
		for _, x := range d {
			now = now.Add(x)
			l.Lap(now)
		}
		return &l
	}
	s := PolishFloor
	if got := PolishDeadline(t0, laps(s/1000, s/1000, s/1000)); !got.Equal(t0.Add(PolishFloor)) {
		t.Errorf("fast run: deadline %v after the start, want the floor %v", got.Sub(t0), PolishFloor)
	}
	for _, c := range []struct {
		laps []time.Duration
		want time.Duration
	}{
		{[]time.Duration{100 * s, 4 * s, 5 * s, 30 * s}, 5 * s}, // the first and a checking iteration left out
		{[]time.Duration{100 * s, 4 * s, 30 * s}, 4 * s},        // the lower middle
		{[]time.Duration{7 * s}, 7 * s},                         // the only lap
		// 16 laps: the first is no longer kept, and every kept one counts
		// (leaving out one more would make the lower middle 1 s).
		{[]time.Duration{100 * s, s, s, s, s, s, s, s, 3 * s, 3 * s, 3 * s, 3 * s, 3 * s, 3 * s, 3 * s, 3 * s}, 3 * s},
	} {
		want := t0.Add(time.Duration(PolishIters * float64(c.want)))
		if got := PolishDeadline(t0, laps(c.laps...)); !got.Equal(want) {
			t.Errorf("laps %v: deadline %v after the start, want %v", c.laps, got.Sub(t0), want.Sub(t0))
		}
	}
	if got := PolishDeadline(t0, laps()); !got.Equal(t0.Add(PolishFloor)) {
		t.Errorf("no iteration: deadline %v after the start, want the floor", got.Sub(t0))
	}
}
