package main

import (
	"context"
	"encoding/json"
	"github.com/ddrun/ddrun/engine"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ddrun/ddrun/dsearch"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model/native"
	"github.com/ddrun/ddrun/transport"
)

// run --exact with two search workers (in this process, over a real NATS
// server) certifies the optimum solve --exact certifies, and prints its
// result the same way.
func TestRunExactMatchesSolveExact(t *testing.T) {
	srv, err := transport.StartEmbedded(transport.EmbeddedOptions{Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, name := range []string{"x1", "x2"} {
		tr, err := transport.NewNATS(ctx, transport.NATSOptions{URL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer tr.Close()
			if err := dsearch.Serve(ctx, tr, dsearch.WorkerOptions{Name: name, Threads: 1,
				ModelPath: func(p string) (string, error) { return p, nil }}); err != nil {
				t.Error(err)
			}
		}()
	}
	m := generate.Ising(generate.GridOptions{Height: 5, Width: 5, Rho: 3, Seed: 4})
	path := filepath.Join(t.TempDir(), "ising.json")
	if err := native.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--exact", "--algo", "admm", "--max-iter", "20", "--threads", "1", "--json", "--quiet"}
	code, out, stderr := runCLI(t, append(append([]string{"solve"}, flags...), path)...)
	if code != 0 {
		t.Fatalf("solve --exact: exit %d: %s", code, stderr)
	}
	var want, got engine.Result
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, append(append([]string{"run", "--insecure", "--nats", srv.URL(), "--workers", "2", "--job", "exactjob"}, flags...), path)...)
	if code != 0 {
		t.Fatalf("run --exact: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status != "optimal" || want.Status != "optimal" || math.Abs(*got.Primal-*want.Primal) > 1e-9*math.Max(1, math.Abs(*want.Primal)) ||
		m.Score(got.Assignment) != *got.Primal || got.Workers < 1 {
		t.Fatalf("run --exact: %s primal %v on %d workers; solve --exact: %s primal %v", got.Status, *got.Primal, got.Workers, want.Status, *want.Primal)
	}
	if !strings.Contains(stderr, "status=optimal") {
		t.Errorf("no status line:\n%s", stderr)
	}
}

// The flags distributed branch and bound does not take are usage errors.
func TestRunExactBadFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ising.json")
	if err := native.WriteFile(path, generate.Ising(generate.GridOptions{Height: 2, Width: 2, Rho: 1, Seed: 1})); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--checkpoint-dir", t.TempDir()}, "checkpoints"},
		{[]string{"--resume", "--job", "j"}, "checkpoints"},
		{[]string{"--raft-id", "c1", "--nats", "nats://127.0.0.1:1", "--job", "j"}, "--raft"},
	} {
		code, _, stderr := runCLI(t, append(append([]string{"run", "--exact", "--quiet"}, c.args...), path)...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
			t.Errorf("run --exact %v: exit %d, %q", c.args, code, stderr)
		}
	}
}
