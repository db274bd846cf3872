package engine

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
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

// docs/openapi.yaml's Result names the fields of Result, no more and no
// fewer: the schema is documented once.
func TestOpenAPIResultMatches(t *testing.T) {
	data, err := os.ReadFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc []string
	in, props := false, false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "    Result:":
			in = true
		case in && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			in = false
		case in && line == "      properties:":
			props = true
		case in && props && strings.HasPrefix(line, "        ") && !strings.HasPrefix(line, "         "):
			key, _, _ := strings.Cut(strings.TrimSpace(line), ":")
			doc = append(doc, key)
		}
	}
	var fields []string
	rt := reflect.TypeOf(Result{})
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	slices.Sort(doc)
	slices.Sort(fields)
	if !slices.Equal(doc, fields) {
		t.Errorf("docs/openapi.yaml Result has %v; engine.Result has %v", doc, fields)
	}
}
