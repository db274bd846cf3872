package main

import (
	"context"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/launch"
	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/transport"
)

// workerPool starts an embedded NATS server and n workers in this process
// that serve, as cmd/worker does, both the job protocol (cluster) and the
// search's subtrees (dsearch); it returns the server's URL.
func workerPool(t *testing.T, n int) string {
	t.Helper()
	srv, err := transport.StartEmbedded(transport.EmbeddedOptions{Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		srv.Shutdown()
	})
	states := t.TempDir() // the workers' shared state directory
	for i := range n {
		name := "w" + string(rune('a'+i))
		tr, err := transport.NewNATS(ctx, transport.NATSOptions{URL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { // both protocols, sharded parts included, as cmd/worker serves them
			defer wg.Done()
			defer tr.Close()
			if err := launch.ServeWorker(ctx, tr, launch.Worker{Name: name, Threads: 1, StateDir: states, ModelRoots: []string{os.TempDir()}}); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}()
	}
	return srv.URL()
}

// runJSON runs run --json with args, on in-process workers, unsealed, and
// reads its result.
func runJSON(t *testing.T, args ...string) (engine.Result, string) {
	t.Helper()
	return cliResult(t, append([]string{"run", "--json", "--insecure"}, args...)...)
}

// run --time-limit --anytime on frustrated grids (the local polytope is loose, the
// distributed relaxation stops with a gap) goes on with branch and bound
// on the same workers and certifies the optimum solve --exact certifies;
// it reports both phases on stderr and in the JSON result, every bound
// valid, the primal the score of its assignment.
//
// Both paths: sharded (the default: the relaxation on the parts, the
// search on workers each reading the converted file, the coordinator
// holding no model), whose primal is its assignment's score on the
// converted file (which folds the unary factors into the unaries: the
// same model, summed in another grouping, so equal to within rounding),
// and the whole model on the coordinator (--sharded=false), whose primal
// is the score on the model as read, to the bit.
func TestRunTimeLimitSearchesOnWorkers(t *testing.T) {
	url := workerPool(t, 2)
	for _, c := range []struct{ seed, sharded string }{{"1", "true"}, {"3", "true"}, {"1", "false"}, {"3", "false"}} {
		seed := c.seed + " sharded=" + c.sharded
		path := isingGrid(t, 5, 5, c.seed)
		m, err := modelfile.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := solveJSON(t, "--quiet", "--exact", "--algo", "admm", "--max-iter", "200", "--threads", "1", path)
		if want.Status != "optimal" {
			t.Fatalf("seed %s: solve --exact: %s", seed, want.Status)
		}
		best := *want.Primal
		r, stderr := runJSON(t, "--nats", url, "--workers", "2", "--threads", "2", "--time-limit", "30", "--anytime", "--sharded="+c.sharded, path)
		if r.Status != "optimal" || r.Primal == nil || math.Abs(*r.Primal-best) > 1e-6*math.Max(1, math.Abs(best)) {
			t.Fatalf("seed %s: run --time-limit: %s primal %v, solve --exact: %v\n%s", seed, r.Status, r.Primal, best, stderr)
		}
		rounding := 0.0
		if c.sharded == "true" {
			rounding = 1e-12 * math.Max(1, math.Abs(best))
		}
		if math.Abs(m.Score(r.Assignment)-*r.Primal) > rounding || *r.Dual < best-1e-6 {
			t.Errorf("seed %s: primal %v (its assignment scores %v), dual %v", seed, *r.Primal, m.Score(r.Assignment), *r.Dual)
		}
		if len(r.Phases) != 2 || r.Phases[0].Phase != "relax" || r.Phases[1].Phase != "branch-and-bound" || r.Phase != "branch-and-bound" {
			t.Fatalf("seed %s: phases %+v closed by %q: want the relaxation, then the search", seed, r.Phases, r.Phase)
		}
		if d := r.Phases[0].Dual; d == nil || *d < best+1e-3 {
			t.Errorf("seed %s: relaxation bound %v, MAP %v: no gap, the test proves little", seed, d, best)
		}
		for _, p := range r.Phases {
			if p.Dual != nil && *p.Dual < best-1e-6 {
				t.Errorf("seed %s: phase %s bound %v below the MAP %v", seed, p.Phase, *p.Dual, best)
			}
			if !strings.Contains(stderr, "phase "+p.Phase+":") {
				t.Errorf("seed %s: stderr does not show phase %s:\n%s", seed, p.Phase, stderr)
			}
		}
		for _, line := range []string{"on 2 workers, package cluster", "subtrees on 2 workers (package dsearch)", "\nnew best: primal ", "branch and bound: "} {
			if !strings.Contains(stderr, line) {
				t.Errorf("seed %s: stderr lacks %q:\n%s", seed, line, stderr)
			}
		}
	}
}

// On a tree-structured model (a chain: the local polytope is tight) the
// distributed relaxation closes the gap and run --time-limit stops there,
// without a search phase; --anytime=false keeps the relaxation alone and
// the result without phases, as before.
func TestRunTimeLimitTreeStopsAfterRelaxation(t *testing.T) {
	url := workerPool(t, 2)
	path := isingGrid(t, 1, 12, "2")
	r, stderr := runJSON(t, "--nats", url, "--workers", "2", "--threads", "2", "--time-limit", "30", "--anytime", path)
	if r.Status != "optimal" || len(r.Phases) != 1 || r.Phase != "relax" {
		t.Fatalf("chain: %s, phases %+v closed by %q\n%s", r.Status, r.Phases, r.Phase, stderr)
	}
	if strings.Contains(stderr, "branch-and-bound") {
		t.Errorf("chain: a search phase ran:\n%s", stderr)
	}
	r, _ = runJSON(t, "--quiet", "--nats", url, "--workers", "2", "--threads", "2", "--time-limit", "30", "--anytime=false", path)
	if r.Status != "optimal" || len(r.Phases) != 0 {
		t.Fatalf("--anytime=false: %s phases %+v", r.Status, r.Phases)
	}
}
