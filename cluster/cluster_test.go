package cluster

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

func relClose(a, b, tol float64) bool {
	return a == b || math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func compare(t *testing.T, got, want solver.Result) {
	t.Helper()
	if got.Iterations != want.Iterations || got.Status != want.Status ||
		!relClose(got.Dual, want.Dual, 1e-9) || !relClose(got.Primal, want.Primal, 1e-9) {
		t.Errorf("distributed: %s after %d, dual %.12g primal %.12g; single process: %s after %d, dual %.12g primal %.12g",
			got.Status, got.Iterations, got.Dual, got.Primal, want.Status, want.Iterations, want.Dual, want.Primal)
	}
}

func runBoth(t *testing.T, tr transport.Transport, m *model.Model, opts consensus.Options, workers int, job string) {
	t.Helper()
	want, err := consensus.Solve(context.Background(), m, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o, err := RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Run: RunOptions{Base: job, Workers: workers, WaitWorkers: 10 * time.Second, StepTimeout: 10 * time.Second}})
	got := o.Result
	if err != nil {
		t.Fatal(err)
	}
	compare(t, got, want)
	if got.Assignment == nil || m.Score(got.Assignment) != got.Primal {
		t.Errorf("primal %v is not the assignment's score", got.Primal)
	}
}

func TestInProcWorkersMatchSolve(t *testing.T) {
	tr := NewTestCluster(t, TestClusterOptions{}).StartN("w", 3).Transport("coordinator")
	m := generate.Potts(generate.GridOptions{Height: 10, Width: 10, Labels: 3, Rho: 1, Seed: 9})
	opts := consensus.DefaultOptions()
	opts.MaxIter = 200
	runBoth(t, tr, m, opts, 3, "inproc1")
	// Workers stay up for the next job.
	opts.Algo, opts.Eta, opts.Slaves = consensus.Subgradient, 1, consensus.Chains
	runBoth(t, tr, m, opts, 2, "inproc2")
}

func TestNATSWorkersMatchSolve(t *testing.T) {
	srv, err := transport.StartEmbedded(transport.EmbeddedOptions{Host: "127.0.0.1", MaxPayload: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	c := NewTestCluster(t, TestClusterOptions{NATS: &transport.NATSOptions{URL: srv.URL()}}).StartN("worker", 2)
	m := generate.Logic(generate.LogicOptions{Vars: 60, Factors: 40, Couplings: 60, MaxArity: 5, Rho: 1, Seed: 2})
	opts := consensus.DefaultOptions()
	opts.MaxIter = 150
	runBoth(t, c.Transport("coordinator"), m, opts, 2, "nats1")
}
