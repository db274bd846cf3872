package cluster

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/solver"
)

// shardFixture is a sharded job over in-memory parts: the spec of part k
// is the byte k, and the workers' LoadShard hands out the part.
func shardFixture(t *testing.T, m *model.Model, w int) (*ShardJob, func(context.Context, []byte) (*consensus.Part, error)) {
	t.Helper()
	plan := partition.PerFactor(m)
	place := make([]int32, len(plan.Slaves))
	for s := range place {
		place[s] = int32(s * w / len(plan.Slaves))
	}
	parts, b, err := consensus.Split(m, plan, place, w)
	if err != nil {
		t.Fatal(err)
	}
	job := &ShardJob{BoundaryVars: b.Vars(), NumVars: m.NumVars(), Of: make([][]int, w), Deg: make([][]int, w)}
	index := map[int]int{}
	cards := make([]int, len(job.BoundaryVars))
	for j, v := range job.BoundaryVars {
		index[v], cards[j] = j, m.Cards[v]
	}
	job.Boundary = model.New(cards)
	job.Boundary.Constant = m.Constant
	for j, v := range job.BoundaryVars {
		copy(job.Boundary.Unaries(j), m.Unaries(v))
	}
	for k, p := range parts {
		job.Specs = append(job.Specs, []byte{byte(k)})
		local := make([]int, len(p.Vars))
		for _, sl := range p.Plan.Slaves {
			for _, v := range sl.Vars {
				local[v]++
			}
		}
		for _, lv := range p.Boundary {
			job.Of[k] = append(job.Of[k], index[p.Vars[lv]])
			job.Deg[k] = append(job.Deg[k], local[lv])
		}
	}
	return job, func(_ context.Context, spec []byte) (*consensus.Part, error) {
		if len(spec) != 1 || int(spec[0]) >= len(parts) {
			return nil, fmt.Errorf("bad spec %v", spec)
		}
		return parts[spec[0]], nil
	}
}

// A sharded job over the transport gives the iterations and dual of a run
// in one process, and the assignment it delivers, put together from the
// workers' pieces, scores its primal exactly.
func TestShardedJobOverTransport(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 1, Seed: 5})
	red, err := model.Reduce(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	m = red.Model
	opts := consensus.DefaultOptions()
	opts.MaxIter, opts.Threads = 80, 1
	want, err := consensus.Solve(context.Background(), m, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{1, 3} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			job, loadShard := shardFixture(t, m, w)
			// These workers save no states (the job takes no checkpoints).
			c := NewTestCluster(t, TestClusterOptions{Worker: WorkerOptions{LoadShard: loadShard}}).StartN("s", w)
			rctx, rcancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer rcancel()
			run, err := c.RunSharded(rctx, job, opts, RunOptions{Job: fmt.Sprintf("sharded%d", w), WaitWorkers: 10 * time.Second, StepTimeout: 10 * time.Second}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, x, seen := run.Result, run.X, run.Delivered
			if seen != m.NumVars() {
				t.Fatalf("%d states delivered for %d variables", seen, m.NumVars())
			}
			if sc := m.Score(x); !relClose(sc, got.Primal, 1e-9) {
				t.Errorf("primal %.12g, the delivered assignment scores %.12g", got.Primal, sc)
			}
			if want.Status != "optimal" && got.Status != "optimal" && (got.Iterations != want.Iterations || !relClose(got.Dual, want.Dual, 1e-9)) {
				t.Errorf("%s after %d, dual %.12g; one process: %s after %d, dual %.12g", got.Status, got.Iterations, got.Dual, want.Status, want.Iterations, want.Dual)
			}
			if w == 1 && !relClose(got.Primal, want.Primal, 1e-9) {
				t.Errorf("one worker: primal %.12g, one process %.12g", got.Primal, want.Primal)
			}
			if math.IsInf(got.Primal, -1) {
				t.Error("no primal")
			}
		})
	}
}

// A worker that cannot read sharded parts says so, and the job fails with
// its reason.
func TestShardedPartRefused(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 4, Width: 4, Labels: 2, Rho: 1, Seed: 1})
	job, _ := shardFixture(t, m, 1)
	c := NewTestCluster(t, TestClusterOptions{}).StartN("plain", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.RunSharded(ctx, job, consensus.DefaultOptions(), RunOptions{Job: "refused", WaitWorkers: 10 * time.Second, StepTimeout: 10 * time.Second}, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot read sharded parts") {
		t.Fatalf("error %v", err)
	}
}

// A sharded run that loses a worker goes on in a new epoch, on a spare
// and the workers left, every part back at the latest checkpoint: it ends
// with a valid bound and a primal that is the exact score of the
// assignment it delivers. DD-subgradient's iterates do not depend on the
// slaves' warm starts, so its result equals the undisturbed run's; DD-ADMM
// differs within the slaves' tolerance.
func TestShardedWorkerLossRestoresFromCheckpoint(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 0.5, Seed: 7})
	red, err := model.Reduce(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	m = red.Model
	for _, algo := range []consensus.Algo{consensus.Subgradient, consensus.ADMM} {
		t.Run(string(algo), func(t *testing.T) {
			opts := consensus.DefaultOptions()
			opts.Algo, opts.MaxIter, opts.Threads, opts.ProgressEvery, opts.Tol = algo, 45, 1, 0, 0
			job, loadShard := shardFixture(t, m, 3)
			job.StateDir = t.TempDir()
			run := func(name string, kill bool) (consensus.ShardResult, ShardStats, []int) {
				c := NewTestCluster(t, TestClusterOptions{}).Sharded(loadShard)
				c.StartN(name, 3)
				killed := false
				progress := func(p solver.Progress) {
					if kill && !killed && p.Iteration == 25 {
						killed = true
						c.Start(name + "spare")
						c.Kill(name + "1")
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				run, err := c.RunSharded(ctx, job, opts, RunOptions{Job: name, WaitWorkers: 10 * time.Second, StepTimeout: 20 * time.Second,
					LostAfter: 500 * time.Millisecond, Checkpoint: &CheckpointOptions{Every: 10}}, progress)
				if err != nil {
					t.Fatal(err)
				}
				if kill != killed {
					t.Fatalf("killed %v", killed)
				}
				return run.Result, run.Stats, run.X
			}
			want, _, _ := run("calm"+string(algo), false)
			got, stats, x := run("loss"+string(algo), true)
			if stats.Failovers != 1 || stats.Restored != 1 || stats.Redone < 5 {
				t.Fatalf("%d failovers, %d restored, %d iterations redone; want 1, 1 and at least 5", stats.Failovers, stats.Restored, stats.Redone)
			}
			if sc := m.Score(x); !relClose(sc, got.Primal, 1e-9) {
				t.Errorf("primal %.12g, the delivered assignment scores %.12g", got.Primal, sc)
			}
			if got.Dual < got.Primal-1e-9*math.Abs(got.Primal) || got.Iterations != want.Iterations {
				t.Errorf("after the loss: dual %.12g, primal %.12g, %d iterations; undisturbed %d", got.Dual, got.Primal, got.Iterations, want.Iterations)
			}
			if algo == consensus.Subgradient && (got.Dual != want.Dual || got.Primal != want.Primal) {
				t.Errorf("after the loss: dual %.15g primal %.15g; undisturbed dual %.15g primal %.15g", got.Dual, got.Primal, want.Dual, want.Primal)
			}
			t.Logf("%s: dual %.12g primal %.12g; undisturbed dual %.12g primal %.12g", algo, got.Dual, got.Primal, want.Dual, want.Primal)
		})
	}
}
