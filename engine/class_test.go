package engine

import (
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// classOf sums m up as a sharded coordinator does, factor by factor.
func classOf(m *model.Model) Class {
	c := Class{Vars: m.NumVars(), Higher: -1}
	for a := range m.Factors {
		c.Add(a, &m.Factors[a])
	}
	return c
}

// TestChooseClass: from a model's class summary the choice is Choose's
// on a grid, a model with a factor over three variables and a complete
// pairwise graph.
func TestChooseClass(t *testing.T) {
	grid := generate.Potts(generate.GridOptions{Height: 5, Width: 6, Labels: 3, Rho: 0.5, Seed: 1})
	higher := model.New([]int{2, 2, 2, 2})
	addTable(higher, []int{0, 1}, []float64{1, 0, 0, 1})
	addTable(higher, []int{1, 2, 3}, []float64{1, 0, 0, 1, 0, 1, 1, 0})
	cards := make([]int, 20)
	for i := range cards {
		cards[i] = 2
	}
	complete := model.New(cards)
	for u := range 20 {
		for v := u + 1; v < 20; v++ {
			addTable(complete, []int{u, v}, []float64{1, 0, 0, 1})
		}
	}
	for name, m := range map[string]*model.Model{"grid": grid, "higher": higher, "complete": complete} {
		want, _ := Choose(m)
		got, why := ChooseClass(classOf(m))
		if got != want || why == "" {
			t.Errorf("%s: %s (%q), Choose %s", name, got, why, want)
		}
	}
}

// TestChooseForRun: a distributed job with nothing decided runs TRW-S on
// a sparse pairwise model and says why; a given algorithm or a setting of
// dual decomposition keeps DD-ADMM.
func TestChooseForRun(t *testing.T) {
	grid := classOf(generate.Potts(generate.GridOptions{Height: 5, Width: 6, Labels: 3, Rho: 0.5, Seed: 1}))
	dist := func(s Settings) Settings { s.Distributed = true; return s }
	for _, c := range []struct {
		name string
		s    Settings
		trws bool
	}{
		{"default", dist(given(Defaults())), true},
		{"admm", dist(given(Defaults(), "algo")), false},
		{"eta", dist(given(Defaults(), "eta")), false},
	} {
		if c.name == "admm" {
			c.s.Algo = "admm"
		}
		j, err := Prepare(c.s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := j.ChooseForRun(grid)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.trws || got && (j.Algorithm.Name != "trws" || j.Why == "") || !got && j.Algorithm.Name != "admm" {
			t.Errorf("%s: trws %v, algorithm %s (%q)", c.name, got, j.Algorithm.Name, j.Why)
		}
		if got {
			if o := j.DTRWS(3, 3000); o.Parts != 3 || o.TimedPolish || o.Validate() != nil {
				t.Errorf("%s: options %+v", c.name, o)
			}
			if !j.DTRWS(2, 10_000_000).TimedPolish {
				t.Errorf("%s: parts of 5e6 variables: the polish not bounded by time", c.name)
			}
		}
	}
}
