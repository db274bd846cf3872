package consensus

import (
	"context"
	"fmt"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// Splitting the slaves over several workers changes where each per-slave and
// per-variable step runs and the order in which scalar partial sums are
// added, nothing else: the run takes the same iterations and reports the
// same values up to rounding.
func TestWorkersMatchSingleProcess(t *testing.T) {
	cases := smallMixed()
	for _, c := range cases {
		for _, algo := range []Algo{ADMM, Subgradient} {
			for _, d := range []Decomposition{PerFactor, Chains} {
				t.Run(fmt.Sprintf("%s/%s/%s", c.name, algo, d), func(t *testing.T) {
					opts := algoOptions(algo, d)
					opts.MaxIter = 150
					red, err := model.Reduce(c.m, nil)
					if err != nil {
						t.Fatal(err)
					}
					plan := mustPlan(t, red.Model, d)
					want, err := runLocal(context.Background(), red.Model, plan, opts, 1, nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, w := range []int{2, 3, 5} {
						s, _, done, err := newLocal(red.Model, plan, opts, w)
						if err != nil {
							t.Fatal(err)
						}
						done()
						if len(s.b.vars) == 0 {
							t.Fatalf("%d workers: no boundary variable, the split tests nothing", w)
						}
						got, err := runLocal(context.Background(), red.Model, plan, opts, w, nil)
						if err != nil {
							t.Fatal(err)
						}
						if got.Iterations != want.Iterations || got.Status != want.Status ||
							!relClose(got.Dual, want.Dual, 1e-9) || !relClose(got.Primal, want.Primal, 1e-9) || !relClose(got.Relaxed, want.Relaxed, 1e-9) {
							t.Errorf("%d workers: %s after %d, dual %.12g primal %.12g relaxed %.12g; one worker: %s after %d, dual %.12g primal %.12g relaxed %.12g",
								w, got.Status, got.Iterations, got.Dual, got.Primal, got.Relaxed, want.Status, want.Iterations, want.Dual, want.Primal, want.Relaxed)
						}
					}
				})
			}
		}
	}
}
