package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// Exact runs bucket elimination first when its tables fit elim-memory,
// and says so; without the memory it runs branch and bound on the
// algorithm's bound. Both certify the same optimum.
func TestExactEliminatesFirst(t *testing.T) {
	m := model.New([]int{3, 3, 3, 3})
	for i := 0; i < 3; i++ {
		addTable(m, []int{i, i + 1}, []float64{2, 0, 1, 0, 2, 0, 1, 0, 2})
	}
	addTable(m, []int{0, 3}, []float64{0, 1, 3, 1, 0, 1, 3, 1, 0})
	var primal []float64
	for _, mem := range []string{"1MiB", "0"} {
		s := given(Defaults(), "exact", "elim-memory", "algo", "threads")
		s.Exact, s.Algo, s.Threads = true, "admm", 1
		if err := s.Set("elim-memory", mem); err != nil {
			t.Fatal(err)
		}
		var lines []string
		h := Hooks{Print: func(key, text string, kv ...any) { lines = append(lines, key+": "+text) }}
		res, _, err := Solve(context.Background(), m, nil, s, h)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != "optimal" {
			t.Errorf("elim-memory %s: %s", mem, res.Status)
		}
		primal = append(primal, res.Primal)
		all := strings.Join(lines, "\n")
		eliminated := strings.Contains(all, "exact: bucket elimination first")
		searched := strings.Contains(all, "branch and bound: ")
		if eliminated != (mem != "0") || searched != (mem == "0") {
			t.Errorf("elim-memory %s: lines %q", mem, all)
		}
	}
	if primal[0] != primal[1] {
		t.Errorf("elimination found %v, branch and bound %v", primal[0], primal[1])
	}
}
