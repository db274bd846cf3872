package e2e

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/ddrun/ddrun/dsearch"
	"github.com/ddrun/ddrun/internal/instances"
)

// sameOptimum fails unless run certified the optimum solve certified.
func sameOptimum(t *testing.T, got, want result) {
	t.Helper()
	if want.Status != "optimal" || got.Status != "optimal" || got.Primal == nil || want.Primal == nil ||
		math.Abs(*got.Primal-*want.Primal) > 1e-9*math.Max(1, math.Abs(*want.Primal)) || got.Dual == nil || *got.Dual-*got.Primal > 1e-6*math.Max(1, math.Abs(*got.Primal)) {
		t.Fatalf("run --exact: %s primal %v dual %v; solve --exact: %s primal %v", got.Status, deref(got.Primal), deref(got.Dual), want.Status, deref(want.Primal))
	}
}

// coordinator run --exact --local --workers 2: distributed branch and
// bound on worker processes over the embedded NATS server certifies the
// optimum solve --exact certifies.
func TestRunExactLocalMatchesSolve(t *testing.T) {
	coord, _ := binaries(t)
	model := genModel(t, coord, "ising", "--height", "6", "--width", "6", "--rho", "3", "--seed", "4", ".uai")
	flags := []string{"--exact", "--algo", "admm", "--max-iter", "20", "--threads", "2", "--json", "--quiet"}
	want := runJSON(t, time.Minute, coord, append(append([]string{"solve"}, flags...), model)...)
	got := runJSON(t, 2*time.Minute, coord, append(append([]string{"run", "--local", "--workers", "2"}, flags...), model)...)
	sameOptimum(t, got, want)
	if got.Workers < 1 || got.Workers > 2 {
		t.Errorf("result says %d workers", got.Workers)
	}
}

// Separate worker processes on a NATS server, the job sealed with a key:
// one is killed while the search runs, its subtree goes back to the queue
// and the other certifies the optimum solve --exact certifies.
func TestRunExactKillWorker(t *testing.T) {
	coord, worker := binaries(t)
	srv := startNATS(t, false)
	key := keyFile(t)
	ws := startWorkerProcs(t, worker, srv.URL(), "bbw", 2, "--job-key-file", key)
	model := genModel(t, coord, "ising", "--height", "7", "--width", "7", "--rho", "3", "--seed", "4", ".uai")
	flags := []string{"--exact", "--algo", "admm", "--max-iter", "20", "--threads", "1", "--json"}
	want := runJSON(t, 2*time.Minute, coord, append(append([]string{"solve", "--quiet"}, flags...), model)...)
	run := startProc(t, "coordinator", coord, append(append([]string{"run", "--nats", srv.URL(), "--workers", "2", "--job", "bbkill",
		"--job-key-file", key, "--lost-after", "1s"}, flags...), model)...)
	waitLine(t, ws[0], "search: job opened", time.Minute)
	waitLine(t, run, "nodes=", time.Minute) // subtrees are being answered
	ws[0].kill()
	if err := run.wait(t, 2*time.Minute); err != nil {
		t.Fatalf("run: %v\n%s", err, run.stderr())
	}
	got := run.result(t)
	sameOptimum(t, got, want)
	if !strings.Contains(run.stderr(), "worker lost") || !strings.Contains(run.stderr(), "bbw0") {
		t.Errorf("the coordinator did not lose the killed worker:\n%s", run.stderr())
	}
	t.Log(lastLines(run.stderr(), 3))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// coordinator run --time-limit --local --workers 2, the job sealed with a
// key: the relaxation on the worker processes stops with a gap, branch and
// bound goes on on the same processes and certifies the optimum solve
// --exact certifies; the JSON result names both phases.
func TestRunTimeLimitLocalSearches(t *testing.T) {
	coord, _ := binaries(t)
	model := genModel(t, coord, "ising", "--height", "6", "--width", "6", "--rho", "3", "--seed", "4", ".uai")
	want := runJSON(t, time.Minute, coord, "solve", "--exact", "--algo", "admm", "--max-iter", "100", "--threads", "2", "--json", "--quiet", model)
	var got struct {
		result
		Phase  string `json:"phase"`
		Phases []struct {
			Phase string   `json:"phase"`
			Dual  *float64 `json:"dual"`
		} `json:"phases"`
	}
	runJSONInto(t, 2*time.Minute, coord, &got, "run", "--local", "--workers", "2", "--threads", "2", "--job-key-file", keyFile(t),
		"--time-limit", "60", "--anytime", "--json", "--quiet", model)
	sameOptimum(t, got.result, want)
	if len(got.Phases) != 2 || got.Phases[0].Phase != "relax" || got.Phases[1].Phase != "branch-and-bound" || got.Phase != "branch-and-bound" {
		t.Fatalf("phases %+v closed by %q: want the relaxation, then the search", got.Phases, got.Phase)
	}
	if d := got.Phases[0].Dual; d == nil || *d < *want.Primal+1e-3 {
		t.Errorf("relaxation bound %v, MAP %v: no gap, the test proves little", deref(d), *want.Primal)
	}
}

// Real instances with their evidence beside them (skipped when the
// instances folder is absent): run --exact on the default path (the model
// converted into --state-dir, the workers reading it, the coordinator
// holding no model) certifies the optimum solve --exact certifies, which
// OPTIMA.tsv lists as proven.
func TestRealInstancesRunExact(t *testing.T) {
	coord, _ := binaries(t)
	proven := map[string]float64{}
	for _, o := range instances.Optima(t) {
		if o.Proven {
			proven[o.File] = o.Best
		}
	}
	for _, name := range []string{"bn/water.uai", "segmentation/Segmentation_12.uai"} {
		path := instances.Path(t, name)
		best, ok := proven[name]
		if !ok {
			t.Fatalf("%s: no proven optimum in OPTIMA.tsv", name)
		}
		t.Run(filepath.Base(name), func(t *testing.T) {
			want := runJSON(t, time.Minute, coord, "solve", "--exact", "--json", "--quiet", path)
			got := runJSON(t, 2*time.Minute, coord, "run", "--local", "--workers", "2", "--exact", "--json", "--quiet",
				"--state-dir", t.TempDir(), path)
			sameOptimum(t, got, want)
			if math.Abs(*got.Primal-best) > 1e-6*math.Max(1, math.Abs(best)) {
				t.Errorf("run --exact: optimum %v, OPTIMA.tsv %v", *got.Primal, best)
			}
			t.Logf("optimum %v (OPTIMA.tsv %v) on %d workers", *got.Primal, best, got.Workers)
		})
	}
}
