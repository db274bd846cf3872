package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/solver"
)

// shardFixture is a sharded layout over in-memory parts: the spec of part
// k ranges over the factors from k, and the workers' LoadShard hands out
// the part.
func shardFixture(t *testing.T, m *model.Model, w int) (*shard.Layout, func(context.Context, []byte) (*consensus.Part, error)) {
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
	job := &shard.Layout{BoundaryVars: b.Vars(), NumVars: m.NumVars(), Of: make([][]int, w), Deg: make([][]int, w)}
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
		job.Specs = append(job.Specs, shard.Spec{From: k})
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
		sp, err := shard.DecodeSpec(spec)
		if err != nil {
			return nil, err
		}
		if sp.From >= len(parts) {
			return nil, fmt.Errorf("bad spec %+v", sp)
		}
		return parts[sp.From], nil
	}
}

// reducedPotts is a generated Potts grid reduced as a coordinator reduces
// a model before it shards it.
func reducedPotts(t *testing.T, o generate.GridOptions) *model.Model {
	t.Helper()
	red, err := model.Reduce(generate.Potts(o), nil)
	if err != nil {
		t.Fatal(err)
	}
	return red.Model
}

// A sharded job over the transport gives the iterations and dual of a run
// in one process, and the assignment it delivers, put together from the
// workers' pieces, scores its primal exactly.
func TestShardedJobOverTransport(t *testing.T) {
	m := reducedPotts(t, generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 1, Seed: 5})
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
			run, err := c.RunSharded(rctx, job, "", opts, RunOptions{Base: fmt.Sprintf("sharded%d", w), WaitWorkers: 10 * time.Second, StepTimeout: 10 * time.Second}, nil)
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
	_, err := c.RunSharded(ctx, job, "", consensus.DefaultOptions(), RunOptions{Base: "refused", WaitWorkers: 10 * time.Second, StepTimeout: 10 * time.Second}, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot read sharded parts") {
		t.Fatalf("error %v", err)
	}
}

// A sharded job in a Raft group (RunReplicated, one member in memory)
// goes through the same lifecycle as a whole-model one: its leader commits
// its checkpoints (the master and refs blobs); interrupted after the first,
// it leaves the job open, and the group's next leader resumes every part
// from the committed references in epoch 2 and ends like an undisturbed
// run (DD-subgradient: the same iterations, dual and primal), delivering
// an assignment that scores its primal.
func TestRunReplicatedShardedResumes(t *testing.T) {
	m := reducedPotts(t, generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 0.5, Seed: 7})
	opts := consensus.DefaultOptions()
	opts.Algo, opts.MaxIter, opts.Threads, opts.ProgressEvery, opts.Tol = consensus.Subgradient, 45, 1, 0, 0
	layout, loadShard := shardFixture(t, m, 2)
	tr := NewTestCluster(t, TestClusterOptions{}).Sharded(loadShard).StartN("rs", 2).Transport("coordinator")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := NewIdentity([]byte("layout"), opts, 2)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]int, m.NumVars())
	j := Job{Transport: tr, Shards: layout, StateDir: t.TempDir(), Options: opts, Identity: id, Store: checkpoint.NewMem(),
		Deliver: func(ctx context.Context, a *ShardAssignment) error {
			return a.Pieces(ctx, func(vars []int, states []int32) error {
				for k, v := range vars {
					x[v] = int(states[k])
				}
				return nil
			})
		},
		Record: func(res solver.Result, info JobInfo) (json.RawMessage, error) {
			return json.Marshal(map[string]any{"iterations": res.Iterations, "failovers": info.Failovers})
		},
		Run: RunOptions{Base: "calm", Workers: 2, WaitWorkers: 10 * time.Second, StepTimeout: 20 * time.Second,
			Checkpoint: &CheckpointOptions{Every: 10}}}
	calm, err := RunJob(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	want := calm.Result
	g := soloGroup(t, "sharded")
	j.Run.Base = "shraft"
	first := runToCheckpoint(t, ctx, j, g)
	ck := g.State().Checkpoint
	if first.Result.Status != solver.Interrupted || g.State().Done || ck == nil {
		t.Fatalf("first leader: %s, done %v, checkpoint %v; want it interrupted after a committed checkpoint", first.Result.Status, g.State().Done, ck)
	}
	if _, ok := ck.Find(roleRefs); !ok {
		t.Fatalf("the committed checkpoint has no %q blob: %+v", roleRefs, ck.Blobs)
	}
	second, err := RunReplicated(ctx, j, g)
	if err != nil {
		t.Fatal(err)
	}
	got := second.Result
	if !second.Ran || second.Stats.Resumed != ck.Iteration || g.State().Epoch != 2 || !g.State().Done {
		t.Fatalf("second leader: ran %v, resumed from %d in epoch %d, done %v; want a run resumed from %d in epoch 2",
			second.Ran, second.Stats.Resumed, g.State().Epoch, g.State().Done, ck.Iteration)
	}
	if got.Iterations != want.Iterations || got.Dual != want.Dual || got.Primal != want.Primal {
		t.Errorf("resumed: %d iterations, dual %.15g primal %.15g; undisturbed %d, dual %.15g primal %.15g",
			got.Iterations, got.Dual, got.Primal, want.Iterations, want.Dual, want.Primal)
	}
	if sc := m.Score(x); !relClose(sc, got.Primal, 1e-9) {
		t.Errorf("primal %.12g, the delivered assignment scores %.12g", got.Primal, sc)
	}
}

// keepParts gives each worker claimed again the part it held, the others
// the parts left in their order, whatever order the claims came in.
func TestKeepParts(t *testing.T) {
	for _, c := range []struct {
		names []string
		parts map[string]int
		want  []string
	}{
		{[]string{"a", "b", "c"}, nil, []string{"a", "b", "c"}},
		{[]string{"spare", "s2", "s0"}, map[string]int{"s0": 0, "s2": 2}, []string{"s0", "spare", "s2"}},
		{[]string{"x", "s1", "y"}, map[string]int{"s1": 1}, []string{"x", "s1", "y"}},
		{[]string{"s1", "x", "y"}, map[string]int{"s1": 2}, []string{"x", "y", "s1"}},
		{[]string{"s0", "s9"}, map[string]int{"s0": 1, "s9": 7}, []string{"s9", "s0"}}, // part 7 gone: s9 takes what is left
	} {
		if got := keepParts(slices.Clone(c.names), c.parts); !slices.Equal(got, c.want) {
			t.Errorf("keepParts(%v, %v) = %v, want %v", c.names, c.parts, got, c.want)
		}
	}
}
