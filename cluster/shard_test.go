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
