package launch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/solver"
)

func exactJob(t *testing.T) *engine.Job {
	t.Helper()
	return distributedJob(t, "exact", "true", "algo", "admm", "max-iter", "20", "threads", "1")
}

// TestShardedExactRun: run --exact on the sharded path (the input
// converted to the indexed file, the workers reading it, the coordinator
// never loading the model) certifies the brute-force MAP, solve --exact's
// optimum and toulbar2's (where installed) on frustrated grids and random
// tiny models with hard constraints, in msgpack and UAI with evidence
// beside it; --out holds the optimal assignment (the observed states set),
// and the result too.
func TestShardedExactRun(t *testing.T) {
	loads := countLoads(t)
	dir := t.TempDir()
	tr := workers(t, 2)
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		m    *model.Model
		name string
		ev   model.Evidence
	}{
		{generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: 2}), "ising.msgpack", nil},
		{generate.Potts(generate.GridOptions{Height: 3, Width: 4, Labels: 3, Rho: 2, Seed: 3}), "potts.uai", model.Evidence{0: 2, 5: 1}},
	}
	for i := range 8 {
		cases = append(cases, struct {
			m    *model.Model
			name string
			ev   model.Evidence
		}{oracle.RandomTinyModel(rng, oracle.TinyOptions{}), fmt.Sprintf("tiny%d.msgpack", i), nil})
	}
	for i, c := range cases {
		path := filepath.Join(dir, c.name)
		if err := modelfile.Save(path, c.m); err != nil {
			t.Fatal(err)
		}
		clamped := c.m
		if c.ev != nil {
			evid := "2"
			for _, v := range []int{0, 5} {
				evid += fmt.Sprintf(" %d %d", v, c.ev[v])
			}
			if err := os.WriteFile(path+".evid", []byte(evid), 0o644); err != nil {
				t.Fatal(err)
			}
			clamped = clampedModel(t, path, c.ev)
		}
		best, _ := oracle.BruteMAP(t, clamped)
		want, _, err := engine.Solve(context.Background(), c.m, c.ev, exactJob(t).Settings, engine.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsInf(best, -1) && (want.Status != solver.Optimal || !near(want.Primal, best)) {
			t.Fatalf("%s: solve --exact %s %v, brute force %v", c.name, want.Status, want.Primal, best)
		}
		out := filepath.Join(dir, c.name+".mpe")
		j := exactJob(t)
		target := Target{Workers: 2, Transport: tr, Job: fmt.Sprintf("exact%d", i), Name: path, Out: out, Assignment: true,
			Wait: 10 * time.Second, Sharded: &Sharded{Path: path, Fallback: &Input{Path: path}}}
		o, err := Run(context.Background(), j, target, Hooks{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := o.Result
		if j.Model != nil || loads.Load() != 0 {
			t.Fatalf("%s: the coordinator loaded the model (%d loads)", c.name, loads.Load())
		}
		if o.Report.Sharded == nil || o.Report.Model.Variables != c.m.NumVars() {
			t.Errorf("%s: reported %+v, %d variables", c.name, o.Report.Sharded, o.Report.Model.Variables)
		}
		if math.IsInf(best, -1) {
			if got.Status != solver.Infeasible {
				t.Fatalf("%s: %s on an infeasible model", c.name, got.Status)
			}
			continue
		}
		if got.Status != solver.Optimal || !near(got.Primal, best) || got.Dual-got.Primal > 1e-6*math.Max(1, math.Abs(best)) {
			t.Fatalf("%s: %s primal %v dual %v; brute force %v", c.name, got.Status, got.Primal, got.Dual, best)
		}
		x := oracle.ReadMPE(t, out)
		if s := clamped.Score(x); s != got.Primal && !near(s, got.Primal) {
			t.Errorf("%s: --out scores %v, the primal is %v", c.name, s, got.Primal)
		}
		if len(o.Report.Assignment) != len(x) || fmt.Sprint(o.Report.Assignment) != fmt.Sprint(x) {
			t.Errorf("%s: the result's assignment %v, --out %v", c.name, o.Report.Assignment, x)
		}
		tb, err := oracle.Toulbar2Optimum(clamped, time.Minute)
		switch {
		case errors.Is(err, oracle.ErrNoToulbar2):
			tb = math.NaN()
		case err != nil:
			t.Errorf("%s: toulbar2: %v", c.name, err)
		case !near(tb, best):
			t.Errorf("%s: toulbar2 %v, brute force %v", c.name, tb, best)
		}
		t.Logf("%s: %d variables, optimum %v (brute force %v, toulbar2 %v)", c.name, c.m.NumVars(), got.Primal, best, tb)
	}
	// The hook sees the whole-model loader when it runs.
	if err := Load(context.Background(), exactJob(t), Input{Path: filepath.Join(dir, cases[0].name)}); err != nil || loads.Load() != 1 {
		t.Fatalf("Load: %v, %d loads seen", err, loads.Load())
	}
}

// clampedModel is the model at path with ev applied as toulbar2 reads it:
// every other state of an observed variable forbidden.
func clampedModel(t *testing.T, path string, ev model.Evidence) *model.Model {
	t.Helper()
	m, err := modelfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return oracle.Clamped(m, ev)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestShardedAnytimeRun: run --anytime on the sharded path (the
// relaxation on the parts, then the search with every worker reading the
// converted file) certifies the brute-force MAP of frustrated grids whose
// relaxation leaves a gap, reports both phases, writes the optimal
// assignment to --out, and never loads the model on the coordinator.
func TestShardedAnytimeRun(t *testing.T) {
	loads := countLoads(t)
	dir := t.TempDir()
	tr := workers(t, 2)
	searched := 0
	for seed := int64(1); seed <= 3; seed++ {
		m := generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: seed})
		path := filepath.Join(dir, fmt.Sprintf("ising%d.msgpack", seed))
		if err := modelfile.Save(path, m); err != nil {
			t.Fatal(err)
		}
		best, _ := oracle.BruteMAP(t, m)
		j := distributedJob(t, "anytime", "true", "time-limit", "60", "algo", "admm", "max-iter", "50", "threads", "1")
		out := filepath.Join(dir, fmt.Sprintf("ising%d.mpe", seed))
		target := Target{Workers: 2, Transport: tr, Job: fmt.Sprintf("anytime%d", seed), Name: path, Out: out, Assignment: true,
			Wait: 10 * time.Second, Sharded: &Sharded{Path: path, Fallback: &Input{Path: path}}}
		o, err := Run(context.Background(), j, target, Hooks{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if j.Model != nil || loads.Load() != 0 {
			t.Fatalf("seed %d: the coordinator loaded the model (%d loads)", seed, loads.Load())
		}
		got, r := o.Result, o.Report
		if got.Status != solver.Optimal || !near(got.Primal, best) || got.Dual-got.Primal > 1e-6*math.Max(1, math.Abs(best)) {
			t.Fatalf("seed %d: %s primal %v dual %v; brute force %v", seed, got.Status, got.Primal, got.Dual, best)
		}
		if x := oracle.ReadMPE(t, out); m.Score(x) != got.Primal || fmt.Sprint(x) != fmt.Sprint(r.Assignment) {
			t.Errorf("seed %d: --out scores %v, the primal is %v", seed, m.Score(x), got.Primal)
		}
		if len(r.Phases) == 2 {
			searched++
			if r.Phase != "branch-and-bound" || r.Phases[0].Phase != "relax" || *r.Phases[0].Dual < best+1e-6 {
				t.Errorf("seed %d: phases %+v closed by %s", seed, r.Phases, r.Phase)
			}
		} else if len(r.Phases) != 1 || r.Phase != "relax" {
			t.Errorf("seed %d: phases %+v closed by %s", seed, r.Phases, r.Phase)
		}
		t.Logf("seed %d: %d phases, closed by %s, optimum %v", seed, len(r.Phases), r.Phase, got.Primal)
	}
	if searched == 0 {
		t.Error("no relaxation left a gap: the search never ran, the test proves little")
	}
}

// countLoads counts the models the coordinator loads (launch's loading
// hook) until the test ends.
func countLoads(t *testing.T) *atomic.Int64 {
	var loads atomic.Int64
	loading = func(string) { loads.Add(1) }
	t.Cleanup(func() { loading = nil })
	return &loads
}
