package exact

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// bruteUnder is the MAP score of m under evidence ev by enumeration (-Inf
// when infeasible).
func bruteUnder(m *model.Model, ev model.Evidence) float64 {
	x := make([]int, m.NumVars())
	for v, s := range ev {
		x[v] = s
	}
	best := math.Inf(-1)
	for {
		best = math.Max(best, m.Score(x))
		v := len(x) - 1
		for ; v >= 0; v-- {
			if _, fixed := ev[v]; fixed {
				continue
			}
			if x[v]++; x[v] < m.Cards[v] {
				break
			}
			x[v] = 0
		}
		if v < 0 {
			return best
		}
	}
}

// randomEvidence fixes each variable with probability p to a random state.
func randomEvidence(rng *rand.Rand, m *model.Model, p float64) model.Evidence {
	ev := model.Evidence{}
	for v, c := range m.Cards {
		if rng.Float64() < p {
			ev[v] = rng.IntN(c)
		}
	}
	return ev
}

func extend(ev model.Evidence, v, s int) model.Evidence {
	child := model.Evidence{v: s}
	for k, x := range ev {
		child[k] = x
	}
	return child
}

// A warm start from nil is Solve's run, bit for bit.
func TestSolveWarmNilIsSolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for it := 0; it < 40; it++ {
		m := oracle.RandomTinyModel(rng, oracle.TinyOptions{})
		ev := randomEvidence(rng, m, 0.2)
		a, err := consensus.Solve(context.Background(), m, ev, admmOpts(200), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, w, err := consensus.SolveWarm(context.Background(), m, ev, admmOpts(200), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != b.Status || a.Iterations != b.Iterations || !same(a.Dual, b.Dual) || !same(a.Primal, b.Primal) || !slices.Equal(a.Mu, b.Mu) {
			t.Fatalf("model %d: Solve %s %d it dual %v primal %v, SolveWarm(nil) %s %d it dual %v primal %v",
				it, a.Status, a.Iterations, a.Dual, a.Primal, b.Status, b.Iterations, b.Dual, b.Primal)
		}
		if a.Status != solver.Infeasible && (w == nil || len(w.Lambda) != consensus.WarmLayout(m)[len(m.Factors)] || len(w.Mu) != len(m.Unary)) {
			t.Fatalf("model %d: final state %v", it, w)
		}
	}
}

// variant is ADMM with its warm starts or its cutoff switched off.
func variant(maxIter int, warm, cutoff bool) WarmSolver {
	s := ADMM(admmOpts(maxIter))
	return func(ctx context.Context, m *model.Model, sp Subproblem) (solver.Result, *consensus.Warm, error) {
		if !warm {
			sp.Warm = nil
		}
		if !cutoff {
			sp.Cutoff = math.Inf(-1)
		}
		return s(ctx, m, sp)
	}
}

// The four ways of running branch and bound over DD-ADMM, "cold" being
// the plain Solver's.
var variants = []struct {
	name         string
	warm, cutoff bool
}{{"cold", false, false}, {"warm", true, false}, {"cold+cutoff", false, true}, {"warm+cutoff", true, true}}

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// The child's dual at its parent's restricted, re-centred multipliers (one
// iteration evaluates it before moving) is a valid bound on the child, and
// no larger than the parent's dual at the same multipliers: re-centring
// hands each folded factor's multipliers to the remaining replicas exactly.
// A mapping that misplaced entries or forgot to re-centre would break one
// of the two on some model.
func TestWarmChildBound(t *testing.T) {
	for _, algo := range []consensus.Algo{consensus.ADMM, consensus.Subgradient} {
		t.Run(string(algo), func(t *testing.T) { testWarmChildBound(t, algo) })
	}
}

func testWarmChildBound(t *testing.T, algo consensus.Algo) {
	opts := func(maxIter int) consensus.Options {
		o := admmOpts(maxIter)
		o.Algo = algo
		return o
	}
	rng := rand.New(rand.NewPCG(7, 8))
	ctx := context.Background()
	checked := 0
	for it := 0; it < 120; it++ {
		m := oracle.RandomTinyModel(rng, oracle.TinyOptions{})
		ev := randomEvidence(rng, m, 0.15)
		parent, warm, err := consensus.SolveWarm(ctx, m, ev, opts(40+rng.IntN(200)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if warm == nil {
			continue // infeasible
		}
		at, _, err := consensus.SolveWarm(ctx, m, ev, opts(1), warm, nil)
		if err != nil {
			t.Fatal(err)
		}
		d0 := at.Dual
		if best := bruteUnder(m, ev); d0 < best-1e-9*math.Max(1, math.Abs(best)) {
			t.Fatalf("model %d: restored parent dual %v below its MAP %v", it, d0, best)
		}
		if parent.Status == solver.Converged && d0 > parent.Dual+1e-3*math.Max(1, math.Abs(parent.Dual)) {
			t.Errorf("model %d: converged parent's dual %v, %v at its restored final state", it, parent.Dual, d0)
		}
		for v, c := range m.Cards {
			if _, fixed := ev[v]; fixed || c < 2 {
				continue
			}
			for s := range c {
				child := extend(ev, v, s)
				r, _, err := consensus.SolveWarm(ctx, m, child, opts(1), warm, nil)
				if err != nil {
					t.Fatal(err)
				}
				best := bruteUnder(m, child)
				tol := 1e-9 * math.Max(1, math.Abs(d0))
				if math.IsInf(best, -1) {
					continue
				}
				if r.Dual < best-tol || r.Dual > d0+tol {
					t.Fatalf("model %d, %v=%d: child dual %v outside [child MAP %v, parent dual %v]", it, v, s, r.Dual, best, d0)
				}
				checked++
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d children checked", checked)
	}
}

// Warm starts need the per-factor layout and a state of the right size.
func TestSolveWarmRejects(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 2, Width: 3, Rho: 1, Seed: 1})
	_, w, err := consensus.SolveWarm(context.Background(), m, nil, admmOpts(10), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	chains := admmOpts(10)
	chains.Slaves = consensus.Chains
	bad := &consensus.Warm{Lambda: w.Lambda[1:], Mu: w.Mu}
	for name, c := range map[string]struct {
		o consensus.Options
		w *consensus.Warm
	}{"chains": {chains, w}, "short": {admmOpts(10), bad}} {
		if _, _, err := consensus.SolveWarm(context.Background(), m, nil, c.o, c.w, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
