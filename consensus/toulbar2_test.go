package consensus

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// toulbar2Optimum solves m exactly with toulbar2 (an independent branch and
// bound solver) and returns the score of its optimal assignment.
func toulbar2Optimum(t *testing.T, m *model.Model) float64 {
	t.Helper()
	dir := t.TempDir()
	file, sol := filepath.Join(dir, "m.uai"), filepath.Join(dir, "sol.txt")
	if err := uai.WriteFile(file, m); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "toulbar2", file, "-w="+sol).CombinedOutput()
	if err != nil {
		t.Fatalf("toulbar2: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Optimum:") {
		t.Fatalf("toulbar2 did not prove optimality:\n%s", out)
	}
	data, err := os.ReadFile(sol)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.SplitN(string(data), "\n", 2)[0] // only the first line is valid in 1.1.1
	fields := strings.Fields(line)
	if len(fields) != m.NumVars() {
		t.Fatalf("toulbar2 solution has %d values for %d variables", len(fields), m.NumVars())
	}
	x := make([]int, len(fields))
	for i, f := range fields {
		if x[i], err = strconv.Atoi(f); err != nil {
			t.Fatalf("toulbar2 solution: %v", err)
		}
	}
	return m.Score(x)
}

// Against toulbar2's exact optima on frustrated grids (where the local
// polytope is often not tight): the dual is an upper bound, the primal a
// lower bound, and both meet when the status says optimal.
func TestAgainstToulbar2(t *testing.T) {
	if _, err := exec.LookPath("toulbar2"); err != nil {
		t.Skip("toulbar2 not installed (apt-get install toulbar2)")
	}
	var models []*model.Model
	for seed := int64(1); seed <= 4; seed++ {
		models = append(models,
			generate.Potts(generate.GridOptions{Height: 6, Width: 6, Labels: 3, Rho: 2, Seed: seed}),
			generate.Ising(generate.GridOptions{Height: 8, Width: 8, Rho: 1.5, Seed: seed}))
	}
	for i, m := range models {
		opt := toulbar2Optimum(t, m)
		opts := DefaultOptions()
		opts.MaxIter = 2000
		res := solve(t, m, opts)
		// toulbar2 rounds costs to 7 decimals.
		tol := 1e-5 * math.Max(1, math.Abs(opt))
		if res.Dual < opt-tol {
			t.Errorf("model %d: dual %.9f below toulbar2's optimum %.9f", i, res.Dual, opt)
		}
		if res.Primal > opt+tol {
			t.Errorf("model %d: primal %.9f above toulbar2's optimum %.9f", i, res.Primal, opt)
		}
		if res.Status == Optimal && math.Abs(res.Primal-opt) > tol {
			t.Errorf("model %d: certified %.9f, toulbar2 %.9f", i, res.Primal, opt)
		}
		t.Logf("model %d: %s, dual %.6f primal %.6f toulbar2 %.6f", i, res.Status, res.Dual, res.Primal, opt)
	}
}
