package convexmp

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/oracle"
)

// TestSpinGlassOracle compares eps-descent with the simplex LP on a few of
// the experiment's 10x10 models (slow: the LP has 1920 variables). Opt-in:
// DDRUN_LONG=1; DDRUN_SG_ORACLE sets the count (3).
func TestSpinGlassOracle(t *testing.T) {
	if os.Getenv("DDRUN_LONG") != "1" {
		t.Skip("set DDRUN_LONG=1")
	}
	n := envInt(t, "DDRUN_SG_ORACLE", 3)
	seed := uint64(envInt(t, "DDRUN_SG_SEED", 2012))
	for k := range n {
		m := spinGlass(rand.New(rand.NewPCG(seed, uint64(k))), 10, 3, false)
		t0 := time.Now()
		lpv := oracle.LP(t, m)
		tl := time.Since(t0)
		o := DefaultOptions()
		plain, _ := Solve(context.Background(), m, nil, o, nil)
		o.EpsDescent = true
		res, _ := Solve(context.Background(), m, nil, o, nil)
		t.Logf("model %d: LP %.9f (simplex %v), eps-descent dual %.9f relaxed %.9f, plain %.9f", k, lpv, tl.Round(time.Millisecond), res.Dual, res.Relaxed, plain.Dual)
		if !relClose(res.Dual, lpv, 1e-6) || !relClose(res.Relaxed, lpv, 1e-6) {
			t.Errorf("model %d: eps-descent dual %v relaxed %v, LP %v", k, res.Dual, res.Relaxed, lpv)
		}
	}
}
