package exact

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trws"
)

// The node solvers, comparisons and grids that the tests of several files
// share.

func admmOpts(maxIter int) consensus.Options {
	o := consensus.DefaultOptions()
	o.MaxIter = maxIter
	return o
}

func admm(maxIter int) Solver {
	return func(ctx context.Context, m *model.Model, ev model.Evidence) (solver.Result, error) {
		return consensus.Solve(ctx, m, ev, admmOpts(maxIter), nil)
	}
}

func trwsSolver(ctx context.Context, m *model.Model, ev model.Evidence) (solver.Result, error) {
	o := trws.DefaultOptions()
	o.MaxIter = 200
	return trws.Solve(ctx, m, ev, o, nil)
}

func close(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// eachTinyModel calls check on n random tiny models (oracle.RandomTinyModel:
// hard constraints and logic factors included) drawn from the stream
// (seed, seed+1), each with its brute-force MAP.
func eachTinyModel(t *testing.T, seed uint64, n int, check func(it int, m *model.Model, best float64)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for it := range n {
		m := oracle.RandomTinyModel(rng, oracle.TinyOptions{})
		best, _ := oracle.BruteMAP(t, m)
		check(it, m, best)
	}
}

// certifies says what is wrong with res as a finished search's answer on m,
// whose MAP is best (-Inf: infeasible): an infeasible model must be
// reported so, any other certified at the MAP with the score of its
// assignment as the primal.
func certifies(m *model.Model, res solver.Result, best float64) error {
	if math.IsInf(best, -1) {
		if res.Status != solver.Infeasible {
			return fmt.Errorf("infeasible model reported %s", res.Status)
		}
		return nil
	}
	if res.Status != solver.Optimal || !close(res.Primal, best) || m.Score(res.Assignment) != res.Primal {
		return fmt.Errorf("%s with primal %v, MAP %v", res.Status, res.Primal, best)
	}
	return nil
}
