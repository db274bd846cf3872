package engine

import (
	"encoding/json"
	"testing"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// The JSON result holds an assignment up to MaxAssignment variables;
// above, it says the assignment was left out and where --out wrote it, so
// the result (and what a Raft leader records) stays small.
func TestResultJSONLeavesOutBigAssignments(t *testing.T) {
	a, err := Find("admm")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{3, MaxAssignment, MaxAssignment + 1} {
		cards := make([]int, n)
		for i := range cards {
			cards[i] = 1
		}
		m := model.New(cards)
		j := &Job{Algorithm: a, Threads: 1, Model: m}
		res := solver.Result{Status: solver.Optimal, Primal: 1, Dual: 1, Assignment: make([]int, n)}
		for _, out := range []string{"", "x.mpe"} {
			r := NewResult(res, j, Distributed{}, out)
			big := n > MaxAssignment
			if (r.Assignment == nil) != big || r.Omitted != big || r.AssignmentFile != out {
				t.Errorf("%d variables, out %q: assignment of %d, omitted %v, file %q", n, out, len(r.Assignment), r.Omitted, r.AssignmentFile)
			}
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if big && len(data) > 1024 {
				t.Errorf("%d variables: the result takes %d bytes", n, len(data))
			}
		}
	}
}
