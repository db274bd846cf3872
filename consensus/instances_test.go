package consensus

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/instances"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// checkBestKnown checks a run on instance o: its dual bounds the best known
// score, its primal is its assignment's score and, when o is proven
// optimal, not above it.
func checkBestKnown(t *testing.T, o instances.Optimum, m *model.Model, res solver.Result) {
	t.Helper()
	tol := 1e-6 * math.Max(1, math.Abs(o.Best))
	if res.Dual < o.Best-tol {
		t.Errorf("dual %.9f below the best known score %.9f", res.Dual, o.Best)
	}
	if res.Assignment != nil && m.Score(res.Assignment) != res.Primal {
		t.Errorf("primal %.12g, assignment scores %.12g", res.Primal, m.Score(res.Assignment))
	}
	if o.Proven && res.Primal > o.Best+tol {
		t.Errorf("primal %.9f above the proven optimum %.9f", res.Primal, o.Best)
	}
}

// lpTight lists the proven instances whose local-polytope relaxation is
// tight (DD-ADMM's dual reaches the optimum), where the solver must find the
// optimum itself.
var lpTight = map[string]bool{
	"bn/network.uai":                        true,
	"image_alignment/ImageAlignment_12.uai": true,
	"promedas/Promedas_69.uai":              true,
	"protein_design/254_ARG.uai":            true,
	"relational/Alchemy_11.uai":             true,
	"segmentation/Segmentation_11.uai":      true,
	"segmentation/Segmentation_12.uai":      true,
	"opengm/triplepoint4-plain-ring.uai":    true,
}

// On the real UAI instances: the dual bound is never below the best known
// score, the primal is the exact score of the reported assignment with the
// evidence respected, and on LP-tight instances the optimum is found.
func TestRealInstances(t *testing.T) {
	optima := instances.Optima(t)
	limit := 5 * time.Second
	if testing.Short() {
		limit = time.Second
	}
	for _, o := range optima {
		t.Run(o.File, func(t *testing.T) {
			m, ev := oracle.Instance(t, o.File)
			opts := DefaultOptions()
			opts.MaxIter = 3000
			opts.TimeLimit = limit
			opts.Threads = 2
			res, err := Solve(context.Background(), m, ev, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkBestKnown(t, o, m, res)
			if res.Assignment != nil {
				for v, s := range ev {
					if res.Assignment[v] != s {
						t.Errorf("variable %d: state %d against evidence %d", v, res.Assignment[v], s)
					}
				}
			}
			if lpTight[o.File] && (res.Assignment == nil || math.Abs(res.Primal-o.Best) > 1e-4*math.Max(1, math.Abs(o.Best))) {
				t.Errorf("LP-tight instance: primal %.9f, optimum %.9f (%s)", res.Primal, o.Best, res.Status)
			}
			t.Logf("%s after %d iterations, %.2fs: dual %.6f primal %.6f best known %.6f",
				res.Status, res.Iterations, res.Elapsed.Seconds(), res.Dual, res.Primal, o.Best)
		})
	}
}

// Coarse slaves on the real instances that are pairwise: the bound stays
// valid and the primal honest with chains and trees, under both algorithms.
func TestRealInstancesCoarseSlaves(t *testing.T) {
	optima := instances.Optima(t)
	for _, o := range optima {
		m, ev := oracle.Instance(t, o.File)
		pairwise := true
		for a := range m.Factors {
			pairwise = pairwise && len(m.Factors[a].Vars) <= 2
		}
		if !pairwise {
			continue
		}
		for _, algo := range []Algo{ADMM, Subgradient} {
			for _, d := range []Decomposition{Chains, Trees} {
				t.Run(fmt.Sprintf("%s/%s/%s", o.File, algo, d), func(t *testing.T) {
					opts := algoOptions(algo, d)
					opts.MaxIter = 300
					opts.TimeLimit = 500 * time.Millisecond
					opts.Threads = 2
					res, err := Solve(context.Background(), m, ev, opts, nil)
					if err != nil {
						t.Fatal(err)
					}
					checkBestKnown(t, o, m, res)
					t.Logf("%s after %d iterations: dual %.6f primal %.6f best known %.6f", res.Status, res.Iterations, res.Dual, res.Primal, o.Best)
				})
			}
		}
	}
}

// The pedigree and linkage models (deterministic CPTs) get a feasible
// primal within a small budget (internal/primal's repair), under both
// algorithms and with 1 and 2 threads alike.
func TestPedigreeFeasiblePrimal(t *testing.T) {
	for _, c := range []struct {
		file string
		best float64
	}{{"pedigree/Pedigree_11.uai", -65.744317240}, {"pedigree/linkage_16.uai", -143.662079668}} {
		m, ev := oracle.Instance(t, c.file)
		for _, algo := range []Algo{ADMM, Subgradient} {
			var first []int
			for _, threads := range []int{1, 2} {
				opts := algoOptions(algo, PerFactor)
				opts.MaxIter, opts.Threads = 30, threads
				res, err := Solve(context.Background(), m, ev, opts, nil)
				if err != nil {
					t.Fatal(err)
				}
				if res.Assignment == nil || math.IsInf(res.Primal, -1) {
					t.Fatalf("%s %s: no feasible primal after %d iterations", c.file, algo, res.Iterations)
				}
				if sc := m.Score(res.Assignment); sc != res.Primal || sc > c.best+1e-6 {
					t.Fatalf("%s %s: primal %v, assignment scores %v, optimum %v", c.file, algo, res.Primal, sc, c.best)
				}
				if first == nil {
					first = res.Assignment
				} else if !slices.Equal(first, res.Assignment) {
					t.Fatalf("%s %s: the assignment depends on the thread count", c.file, algo)
				}
				t.Logf("%s %s threads %d: primal %.4f (optimum %.4f) in %v", c.file, algo, threads, res.Primal, c.best, res.Elapsed)
			}
		}
	}
}
