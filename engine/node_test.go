package engine

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/model"
)

// The node settings name one algorithm and carry its options: an unknown
// name, or dual decomposition options of another algorithm, are refused;
// each known one builds a node solver that bounds the root.
func TestNodeSettings(t *testing.T) {
	bad := []NodeSettings{{Algo: "magic"}, {Algo: "subgradient", DD: consensus.DefaultOptions()}}
	for _, s := range bad {
		if _, err := s.NodeSolver(1); err == nil || !strings.HasPrefix(err.Error(), "settings: ") {
			t.Errorf("%q: %v", s.Algo, err)
		}
	}
	m := model.New([]int{3, 3, 3})
	for i := 0; i < 2; i++ {
		addTable(m, []int{i, i + 1}, []float64{2, 0, 1, 0, 2, 0, 1, 0, 2})
	}
	for _, algo := range []string{"admm", "subgradient", "trws", "cmp"} {
		s := given(Defaults(), "algo", "exact", "max-iter")
		s.Algo, s.Exact, s.MaxIter = algo, true, 200
		j, err := Prepare(s)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := j.SearchSettings()
		if err != nil || ns.Algo != algo {
			t.Fatalf("%s: %+v, %v", algo, ns, err)
		}
		node, err := ns.NodeSolver(1)
		if err != nil {
			t.Fatal(err)
		}
		res, _, err := node(context.Background(), m, exact.Subproblem{Cutoff: math.Inf(-1)})
		if err != nil || res.Dual < res.Primal-1e-9 {
			t.Errorf("%s: dual %v primal %v, %v", algo, res.Dual, res.Primal, err)
		}
	}
}
