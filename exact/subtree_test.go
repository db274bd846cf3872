package exact

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// driveSubtrees is the loop of a distributed search in one process: it
// keeps the open nodes, always hands the one of largest bound out as a
// subtree of at most slice nodes, and files what comes back. It returns
// the incumbent, the certified bound and the nodes solved.
func driveSubtrees(t *testing.T, m *model.Model, solve WarmSolver, slice int) (float64, []int, float64, int) {
	t.Helper()
	open := []Open{{Evidence: model.Evidence{}, Bound: math.Inf(1)}}
	inc, x := math.Inf(-1), []int(nil)
	nodes := 0
	for first := true; len(open) > 0; first = false {
		sort.Slice(open, func(i, j int) bool { return open[i].Bound > open[j].Bound })
		top := open[0]
		if solver.Closed(top.Bound, inc, 1e-6) {
			break
		}
		open = open[1:]
		res, st, more, err := SolveSubtree(context.Background(), m, top.Evidence, solve,
			SubtreeOptions{Options: Options{Tol: 1e-6, MaxNodes: slice}, Bound: top.Bound, Incumbent: inc, Root: first})
		if err != nil {
			t.Fatal(err)
		}
		nodes += st.Nodes
		if st.Nodes > slice {
			t.Fatalf("%d nodes solved in a slice of %d", st.Nodes, slice)
		}
		if res.Assignment != nil {
			if res.Primal <= inc || m.Score(res.Assignment) != res.Primal || !fits(res.Assignment, top.Evidence) {
				t.Fatalf("subtree's assignment: primal %v (incumbent %v, score %v)", res.Primal, inc, m.Score(res.Assignment))
			}
			inc, x = res.Primal, res.Assignment
		} else if !math.IsInf(res.Primal, -1) {
			t.Fatalf("primal %v without an assignment", res.Primal)
		}
		for _, o := range more {
			if o.Bound > top.Bound || !fits(evidenceAssignment(m, o.Evidence), top.Evidence) || len(o.Evidence) <= len(top.Evidence) {
				t.Fatalf("open node %v (bound %v) is not a child of %v (bound %v)", o.Evidence, o.Bound, top.Evidence, top.Bound)
			}
		}
		if (len(more) == 0) != (res.Status == solver.Optimal) {
			t.Fatalf("status %s with %d open nodes", res.Status, len(more))
		}
		open = append(open, more...)
		if nodes > 100000 {
			t.Fatal("search does not end")
		}
	}
	bound := inc
	for _, o := range open {
		bound = math.Max(bound, o.Bound)
	}
	return inc, x, bound, nodes
}

// evidenceAssignment is ev as an assignment (-1 where it fixes nothing).
func evidenceAssignment(m *model.Model, ev model.Evidence) []int {
	x := make([]int, m.NumVars())
	for i := range x {
		x[i] = -1
	}
	for v, s := range ev {
		x[v] = s
	}
	return x
}

// Subtrees of one, two or five nodes, searched one after another with the
// open nodes handed back and out again, certify the brute-force MAP on
// random tiny models and frustrated grids: what SolveSubtree hands back,
// with what it solved and pruned, covers its subtree.
func TestSubtreesMatchBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	ms := []*model.Model{generate.Potts(generate.GridOptions{Height: 3, Width: 4, Labels: 3, Rho: 2, Seed: 3})}
	for seed := int64(1); seed <= 6; seed++ {
		ms = append(ms, generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: seed}))
	}
	for range 40 {
		ms = append(ms, oracle.RandomTinyModel(rng, oracle.TinyOptions{}))
	}
	split := 0
	for i, m := range ms {
		best, _ := oracle.BruteMAP(t, m)
		for _, slice := range []int{1, 2, 5} {
			inc, x, bound, nodes := driveSubtrees(t, m, ADMM(admmOpts(300)), slice)
			if nodes > slice {
				split++
			}
			if math.IsInf(best, -1) {
				if x != nil {
					t.Fatalf("model %d: infeasible model, assignment %v", i, x)
				}
				continue
			}
			if !close(inc, best) || m.Score(x) != inc || bound-inc > 1e-6*math.Max(1, math.Abs(inc)) {
				t.Fatalf("model %d, slice %d: incumbent %v bound %v, MAP %v", i, slice, inc, bound, best)
			}
		}
	}
	t.Logf("%d of %d searches took more than one subtree", split, 3*len(ms))
	if split < 10 {
		t.Errorf("only %d searches took more than one subtree: the test proves little", split)
	}
}
