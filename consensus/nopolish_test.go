package consensus_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/internal/instances"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model/uai"
)

// Branch and bound with DD-ADMM nodes polishes the root's assignment only
// (exact.ADMM sets NoPolish below the root): on bn/water, which needs a
// few nodes, one polish, and the certified optimum is the known one.
func TestExactPolishesOnlyTheRoot(t *testing.T) {
	m, err := uai.ReadFile(instances.Path(t, "bn/water.uai"))
	if err != nil {
		t.Fatal(err)
	}
	before := consensus.PolishRuns()
	res, st, err := exact.SolveWarm(context.Background(), m, nil, exact.ADMM(consensus.DefaultOptions()), exact.Options{Tol: 1e-6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := consensus.PolishRuns() - before; n != 1 || st.Nodes < 2 {
		t.Errorf("%d polishes over %d nodes, want 1 over at least 2", n, st.Nodes)
	}
	if best := -7.958763150; res.Status != "optimal" || math.Abs(res.Primal-best) > 1e-6 || m.Score(res.Assignment) != res.Primal {
		t.Errorf("status %s primal %v (score %v), want optimal %v", res.Status, res.Primal, m.Score(res.Assignment), best)
	}
}

// NoPolish leaves out the polish and nothing else: the bound is the same,
// the primal is still the exact score of its assignment, and on random
// tiny models with hard constraints it is never above the MAP.
func TestNoPolishKeepsTheResultValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for seed := 1; seed <= 20; seed++ {
		m := oracle.RandomTinyModel(rng, oracle.TinyOptions{AllowInfeasible: true})
		best, _ := oracle.BruteMAP(t, m)
		o := consensus.DefaultOptions()
		o.MaxIter = 50
		with, err := consensus.Solve(context.Background(), m, nil, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		o.NoPolish = true
		before := consensus.PolishRuns()
		without, err := consensus.Solve(context.Background(), m, nil, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := consensus.PolishRuns() - before; n != 0 {
			t.Errorf("seed %d: %d polishes under NoPolish", seed, n)
		}
		if with.Dual != without.Dual {
			t.Errorf("seed %d: bound %v with the polish, %v without", seed, with.Dual, without.Dual)
		}
		if without.Assignment != nil && (m.Score(without.Assignment) != without.Primal || without.Primal > best+1e-9) {
			t.Errorf("seed %d: primal %v, its score %v, MAP %v", seed, without.Primal, m.Score(without.Assignment), best)
		}
		if without.Primal > with.Primal+1e-9 {
			t.Errorf("seed %d: primal %v without the polish above %v with it", seed, without.Primal, with.Primal)
		}
	}
}
