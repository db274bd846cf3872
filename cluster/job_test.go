package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/jobstate"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// withWorkers returns an in-process transport with three workers and a
// context for a job on it, both ended with the test.
func withWorkers(t *testing.T) (transport.Transport, context.Context) {
	t.Helper()
	tr := NewTestCluster(t, TestClusterOptions{}).StartN("w", 3).Transport("coordinator")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return tr, ctx
}

func testJob(t *testing.T, tr transport.Transport, base string) (Job, solver.Result) {
	t.Helper()
	m, opts, want := gridJob(t)
	id, err := NewIdentity([]byte("model file"), opts, 3)
	if err != nil {
		t.Fatal(err)
	}
	return Job{Name: "grid", Transport: tr, Model: m, Options: opts, Identity: id,
		Run: RunOptions{Base: base, Workers: 3, WaitWorkers: 10 * time.Second, StepTimeout: 10 * time.Second,
			Checkpoint: &CheckpointOptions{Every: 25}}}, want
}

// RunJob keeps its checkpoints in a directory; LoadResume finds the
// latest, refuses it to another identity, and RunJob continues from it in
// the next epoch to the same end.
func TestRunJobResumesFromDir(t *testing.T) {
	tr, ctx := withWorkers(t)
	d, err := checkpoint.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j, want := testJob(t, tr, "local")
	j.Dir = d
	first, err := RunJob(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Ran || first.Info.Workers != 3 {
		t.Fatalf("first run: %+v", first)
	}
	closeTo(t, "first run", first.Result, want)
	ms, err := d.Manifests("local")
	if err != nil || len(ms) != 2 || ms[0].Epoch != 1 {
		t.Fatalf("manifests after the run: %d (%v), want the latest two of epoch 1", len(ms), err)
	}
	// Resume from the older one, as after a crash.
	other := j.Identity
	other.Settings = json.RawMessage(`{"other":true}`)
	var re *RefusedError
	if _, err := LoadResume(ctx, d, ms[1:], other, nil); !errors.As(err, &re) {
		t.Fatalf("resuming with other settings: %v, want a RefusedError", err)
	}
	rp, err := LoadResume(ctx, d, ms[1:], j.Identity, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Epoch != 1 || rp.State.Iter != ms[1].Iteration {
		t.Fatalf("resume point: epoch %d iteration %d, want 1, %d", rp.Epoch, rp.State.Iter, ms[1].Iteration)
	}
	j.Resume = rp
	const outage = 300 * time.Millisecond
	time.Sleep(outage)
	second, err := RunJob(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "resumed run", second.Result, want)
	// Its time counts from the first start, in the checkpoint.
	if el := second.Result.Elapsed; el < first.Result.Elapsed+outage {
		t.Errorf("resumed run: %v elapsed; the first run took %v, then %v without a run", el, first.Result.Elapsed, outage)
	}
	if second.Stats.Resumed != ms[1].Iteration {
		t.Fatalf("resumed from %d, want %d", second.Stats.Resumed, ms[1].Iteration)
	}
	if ms, _ := d.Manifests("local"); len(ms) == 0 || ms[0].Epoch != 2 {
		t.Fatalf("the resumed run's checkpoints are not of epoch 2: %+v", ms)
	}
}

// runToCheckpoint runs j as g's leader and stops it once g has committed
// a checkpoint: a leader that fails after its first checkpoint.
func runToCheckpoint(t *testing.T, ctx context.Context, j Job, g *jobstate.Group) Outcome {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	j.Progress = func(solver.Progress) {
		if g.State().Checkpoint != nil {
			stop()
		}
	}
	first, err := RunReplicated(runCtx, j, g)
	if err != nil {
		t.Fatal(err)
	}
	return first
}

// soloGroup opens a Raft group of one member, id, in memory (no port),
// closed with the test.
func soloGroup(t *testing.T, id string) *jobstate.Group {
	t.Helper()
	_, rt := raft.NewInmemTransport(raft.ServerAddress("mem-" + id))
	logs := raft.NewInmemStore()
	g, err := jobstate.Open(jobstate.Config{ID: id, Peers: map[string]string{id: "mem-" + id}, Transport: rt,
		LogStore: logs, StableStore: logs, SnapshotStore: raft.NewInmemSnapshotStore()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// replicatedJob is testJob for RunReplicated: its blobs in memory, its
// result recorded as its iterations and workers.
func replicatedJob(t *testing.T, tr transport.Transport, base string) (Job, solver.Result) {
	t.Helper()
	j, want := testJob(t, tr, base)
	j.Store = checkpoint.NewMem()
	j.Record = func(res solver.Result, info JobInfo) (json.RawMessage, error) {
		return json.Marshal(map[string]any{"iterations": res.Iterations, "workers": info.Workers})
	}
	return j, want
}

// RunReplicated on a one-member group (in memory: no port) drives the job,
// commits its checkpoints and records the result; run again, the member
// finds the job done and returns the recorded result.
func TestRunReplicatedRecordsTheResult(t *testing.T) {
	tr, ctx := withWorkers(t)
	g := soloGroup(t, "solo")
	j, want := replicatedJob(t, tr, "replicated")
	out, err := RunReplicated(ctx, j, g)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Ran || out.Recorded != nil {
		t.Fatalf("outcome %+v: want the run's result", out)
	}
	closeTo(t, "replicated run", out.Result, want)
	st := g.State()
	rec, _ := j.Record(out.Result, out.Info)
	if !st.Done || string(st.Result) != string(rec) || st.Epoch != 1 || st.Checkpoint == nil || st.ModelHash != j.Identity.ModelHash {
		t.Fatalf("group state %+v: want done with %s, epoch 1, a checkpoint", st, rec)
	}
	again, err := RunReplicated(ctx, j, g)
	if err != nil || again.Ran || string(again.Recorded) != string(rec) {
		t.Fatalf("second RunReplicated: %+v, %v; want the recorded result", again, err)
	}
}

// A job that a Raft group resumes reports its wall time since it first
// started (in the log), the time no member ran it included, not the last
// leader's run plus the checkpointed elapsed.
func TestRunReplicatedCountsOutages(t *testing.T) {
	tr, ctx := withWorkers(t)
	g := soloGroup(t, "out")
	j, want := replicatedJob(t, tr, "outage")
	// The first leader stops after its first committed checkpoint.
	j.Options.ProgressEvery = 0 // every iteration
	first := runToCheckpoint(t, ctx, j, g)
	if first.Result.Status != solver.Interrupted || g.State().Done {
		t.Fatalf("first run: %s, done %v; want it interrupted, the job open", first.Result.Status, g.State().Done)
	}
	started := g.State().Started
	const outage = 500 * time.Millisecond
	time.Sleep(outage)
	second, err := RunReplicated(ctx, j, g)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "resumed run", second.Result, want)
	if second.Stats.Resumed == 0 || g.State().Epoch != 2 || !g.State().Started.Equal(started) {
		t.Fatalf("second run resumed from %d in epoch %d, started %v (first %v); want a resume in epoch 2, the same start",
			second.Stats.Resumed, g.State().Epoch, g.State().Started, started)
	}
	if el := second.Result.Elapsed; el < first.Result.Elapsed+outage || el > time.Since(started) {
		t.Errorf("%v elapsed; the first leader ran %v, then none for %v, and the job started %v ago",
			el, first.Result.Elapsed, outage, time.Since(started))
	}
}
