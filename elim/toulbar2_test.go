package elim

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/solver"
)

// On random grids too large for brute force, exact elimination and the
// mini-bucket search agree with toulbar2.
func TestAgainstToulbar2(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		m := grid(rand.New(rand.NewPCG(seed, 11)), 6, 3)
		want, err := oracle.Toulbar2Optimum(m, 30*time.Second)
		if errors.Is(err, oracle.ErrNoToulbar2) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, ib := range []float64{0, 8} {
			o := DefaultOptions()
			o.IBound, o.Tol = ib, 0
			res, err := Solve(context.Background(), m, nil, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			// toulbar2 rounds costs to 7 decimals while searching.
			if res.Status != solver.Optimal || math.Abs(res.Primal-want) > 1e-5 || res.Dual < want-1e-5 {
				t.Fatalf("seed %d i-bound %v: status %s primal %v dual %v, toulbar2 %v", seed, ib, res.Status, res.Primal, res.Dual, want)
			}
		}
	}
}
