package generate

import (
	"math"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

func TestLogicFeasible(t *testing.T) {
	for seed := range int64(300) {
		o := LogicOptions{Vars: 3 + int(seed%20), Factors: int(seed % 37), Couplings: int(seed % 5), Rho: 1, Seed: seed}
		o.MaxArity = 2 + int(seed)%(o.Vars-1)
		m, hidden := logic(o)
		if err := m.Validate(); err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		for a := range m.Factors {
			if math.IsInf(m.FactorScore(a, hidden), -1) {
				t.Fatalf("%+v: the hidden assignment violates factor %d %+v", o, a, m.Factors[a])
			}
		}
		if math.IsInf(m.Score(hidden), -1) {
			t.Fatalf("%+v: the hidden assignment is infeasible", o)
		}
		if len(m.Factors) != o.Factors+o.Couplings {
			t.Fatalf("%+v: %d factors", o, len(m.Factors))
		}
	}
}

func TestLogicShape(t *testing.T) {
	o := LogicOptions{Vars: 40, Factors: 120, Couplings: 30, MaxArity: 6, Rho: 2, Seed: 5}
	m := Logic(o)
	kinds := map[model.Kind]int{}
	negated := 0
	for a, f := range m.Factors {
		kinds[f.Kind]++
		if a < o.Factors {
			if want := logicKinds[a%6]; f.Kind != want {
				t.Fatalf("factor %d is %s, want %s", a, f.Kind, want)
			}
			if len(f.Vars) < 1 || len(f.Vars) > o.MaxArity {
				t.Fatalf("factor %d has arity %d", a, len(f.Vars))
			}
			if f.NegatedInputs() != nil {
				negated++
			}
			continue
		}
		if (f.Kind != model.Pair && f.Kind != model.Potts) || math.Abs(f.Weight) > o.Rho {
			t.Fatalf("coupling %d: %+v", a, f)
		}
	}
	for k := model.Pair; k <= model.Budget; k++ { // every kind but Dense
		if kinds[k] == 0 {
			t.Errorf("no %s factor", k)
		}
	}
	if negated == 0 || negated == o.Factors {
		t.Errorf("%d of %d logic factors have negations, want some but not all", negated, o.Factors)
	}
	for i := range m.Cards {
		if u := m.Unaries(i); u[0] != 0 || u[1] < -1 || u[1] >= 1 {
			t.Fatalf("variable %d: unaries %v", i, u)
		}
	}
}

// TestLogicNotTrivial checks that the logic factors constrain: on a small
// model, most assignments are infeasible, and the hidden one is not.
func TestLogicNotTrivial(t *testing.T) {
	o := LogicOptions{Vars: 10, Factors: 12, MaxArity: 3, Seed: 8}
	m, hidden := logic(o)
	feasible := 0
	x := make([]int, o.Vars)
	for s := range 1 << o.Vars {
		for i := range x {
			x[i] = s >> i & 1
		}
		if !math.IsInf(m.Score(x), -1) {
			feasible++
		}
	}
	if feasible == 0 || feasible > 1<<o.Vars/2 {
		t.Errorf("%d of %d assignments feasible", feasible, 1<<o.Vars)
	}
	if math.IsInf(m.Score(hidden), -1) {
		t.Error("hidden assignment infeasible")
	}
}

func TestLogicDeterminism(t *testing.T) {
	o := LogicOptions{Vars: 30, Factors: 50, Couplings: 10, MaxArity: 5, Rho: 1, Seed: 99}
	if fingerprint(Logic(o)) != fingerprint(Logic(o)) {
		t.Error("the same seed gives different models")
	}
	o2 := o
	o2.Seed = 100
	if fingerprint(Logic(o)) == fingerprint(Logic(o2)) {
		t.Error("different seeds give the same model")
	}
}

func TestLogicValidate(t *testing.T) {
	ok := LogicOptions{Vars: 5, Factors: 3, Couplings: 1, MaxArity: 3, Rho: 1}
	bad := []struct {
		edit func(*LogicOptions)
		want string
	}{
		{func(o *LogicOptions) { o.Vars = 1 }, "1 variables"},
		{func(o *LogicOptions) { o.Vars = math.MaxInt }, "variables"},
		{func(o *LogicOptions) { o.Factors = -1 }, "must be >= 0"},
		{func(o *LogicOptions) { o.Couplings = -1 }, "must be >= 0"},
		{func(o *LogicOptions) { o.MaxArity = 1 }, "max arity 1"},
		{func(o *LogicOptions) { o.MaxArity = 6 }, "max arity 6"},
		{func(o *LogicOptions) { o.Rho = math.NaN() }, "rho NaN"},
		{func(o *LogicOptions) { o.Rho = -0.5 }, "rho -0.5"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range bad {
		o := ok
		c.edit(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", o, err, c.want)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Logic(%+v) did not panic", o)
				}
			}()
			Logic(o)
		}()
	}
}
