package engine

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// With Hooks.Start, every time a job reports counts from the command's
// start (reading included, as a run on workers counts): the progress, the
// anytime phases' lines and the result. Without it, from the solver's
// start.
func TestTimesCountFromStart(t *testing.T) {
	m := model.New([]int{3, 3, 3, 3})
	for i := 0; i < 3; i++ {
		addTable(m, []int{i, i + 1}, []float64{2, 0, 1, 0, 2, 0, 1, 0, 2})
	}
	addTable(m, []int{0, 3}, []float64{0, 1, 3, 1, 0, 1, 3, 1, 0})
	secs := regexp.MustCompile(`([0-9.]+)s\)`)
	for _, c := range []struct {
		name  string
		setup func(*Settings)
	}{
		{"trws", func(s *Settings) { *s = given(*s, "algo", "max-iter"); s.Algo, s.MaxIter = "trws", 20 }},
		{"anytime", func(s *Settings) {
			*s = given(*s, "anytime", "max-iter")
			s.Anytime, s.MaxIter, s.TimeLimit = true, 20, time.Minute
		}},
		{"exact", func(s *Settings) { *s = given(*s, "exact", "algo"); s.Exact, s.Algo = true, "trws" }},
		{"branch and bound", func(s *Settings) { // elimination's tables do not fit: the search runs
			*s = given(*s, "exact", "algo", "elim-memory")
			s.Exact, s.Algo, s.ElimMemory = true, "trws", 1
		}},
	} {
		for _, ago := range []time.Duration{0, time.Hour} {
			s := Defaults()
			c.setup(&s)
			s.Threads = 1
			var h Hooks
			if ago > 0 {
				h.Start = time.Now().Add(-ago)
			}
			var first, last time.Duration = -1, -1
			h.Progress = func(p solver.Progress) {
				if first < 0 {
					first = p.Elapsed
				}
				last = p.Elapsed
			}
			var phases []float64
			h.Print = func(key, text string, kv ...any) {
				if key == "phase" {
					if g := secs.FindStringSubmatch(text); g != nil {
						v, _ := strconv.ParseFloat(g[1], 64)
						phases = append(phases, v)
					}
				}
			}
			res, _, err := Solve(context.Background(), m, nil, s, h)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			check := func(what string, d time.Duration) {
				if (d >= time.Hour) != (ago > 0) {
					t.Errorf("%s, start %v ago: %s %v", c.name, ago, what, d)
				}
			}
			check("result", res.Elapsed)
			if first >= 0 {
				check("first progress", first)
				check("last progress", last)
			} else if c.name == "trws" || c.name == "branch and bound" {
				t.Errorf("%s: no progress", c.name)
			}
			if c.name == "anytime" && len(phases) == 0 {
				t.Errorf("anytime: no phase line with a time")
			}
			for _, v := range phases {
				check("phase line", time.Duration(v*float64(time.Second)))
			}
		}
	}
}
