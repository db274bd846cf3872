package cluster

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// saved collects the states a run takes.
type saved struct {
	mu     sync.Mutex
	states []*consensus.State
	where  []int32
}

func (s *saved) save(_ context.Context, st *consensus.State, where []int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states = append(s.states, st)
	s.where = where
	return nil
}

func (s *saved) last() (*consensus.State, []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.states) == 0 {
		return nil, nil
	}
	return s.states[len(s.states)-1], s.where
}

func closeTo(t *testing.T, what string, got, want solver.Result) {
	t.Helper()
	if got.Status != want.Status || !relClose(got.Dual, want.Dual, 1e-6) || !relClose(got.Primal, want.Primal, 1e-6) ||
		got.Iterations < want.Iterations-3 || got.Iterations > want.Iterations+3 {
		t.Errorf("%s: %s after %d, dual %.10g primal %.10g; undisturbed: %s after %d, dual %.10g primal %.10g",
			what, got.Status, got.Iterations, got.Dual, got.Primal, want.Status, want.Iterations, want.Dual, want.Primal)
	}
}

// States go through the checkpoint store and back unchanged; a resumed run
// from the newest verified checkpoint ends like the uninterrupted one, and
// a torn newest checkpoint falls back to the one before.
func TestCheckpointerRoundTrip(t *testing.T) {
	tr := NewTestCluster(t, TestClusterOptions{}).StartN("k", 2).Transport("coordinator")
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 1, Seed: 4})
	opts := consensus.DefaultOptions()
	opts.MaxIter = 300
	store := checkpoint.NewMem()
	var mu sync.Mutex
	var manifests []checkpoint.Manifest // newest first
	var sv saved
	cpr := NewCheckpointer(CheckpointerOptions{Store: store, Base: "rt", ModelHash: "h", Record: func(_ context.Context, m checkpoint.Manifest) error {
		mu.Lock()
		defer mu.Unlock()
		manifests = append([]checkpoint.Manifest{m}, manifests...)
		return nil
	}})
	ro := RunOptions{Base: "rt1", Workers: 2, WaitWorkers: 10 * time.Second, StepTimeout: 10 * time.Second,
		Checkpoint: &CheckpointOptions{Every: 10, Save: func(ctx context.Context, st *consensus.State, where []int32) error {
			_ = sv.save(ctx, st, where)
			return cpr.Save(ctx, st, where)
		}}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o, err := RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Run: ro})
	want := o.Result
	if err != nil {
		t.Fatal(err)
	}
	if err := cpr.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	st := cpr.Stats()
	if st.Written != len(sv.states) || st.Written < 3 || len(manifests) != st.Written {
		t.Fatalf("%d states, %d written, %d manifests", len(sv.states), st.Written, len(manifests))
	}
	// Only the last two checkpoints' objects are kept.
	objs, _ := store.List(ctx)
	if len(objs) > 2*(2+2) {
		t.Errorf("%d objects kept after pruning", len(objs))
	}
	mf, blobs, skipped, err := checkpoint.Latest(ctx, store, manifests)
	if err != nil || len(skipped) != 0 {
		t.Fatal(err, skipped)
	}
	got, where, err := DecodeState(blobs)
	if err != nil {
		t.Fatal(err)
	}
	orig := sv.states[len(sv.states)-1]
	if mf.Iteration != orig.Iter || got.Iter != orig.Iter || got.Eta != orig.Eta || got.BestPrimal != orig.BestPrimal ||
		len(got.Parts) != 2 || !slices.Equal(got.Parts[1].Lambda, orig.Parts[1].Lambda) || !slices.Equal(got.BMu, orig.BMu) ||
		!slices.Equal(got.BestX, orig.BestX) || !slices.Equal(where, sv.where) {
		t.Fatalf("decoded state differs from the saved one")
	}
	// Tear the newest checkpoint: the previous one is used.
	b, _ := mf.Find(rolePart(1))
	store.Corrupt(b.Object)
	mf2, blobs, skipped, err := checkpoint.Latest(ctx, store, manifests)
	if err != nil || len(skipped) != 1 || mf2.Iteration != mf.Iteration-10 {
		t.Fatalf("after tearing %d: got %d, skipped %v, err %v", mf.Iteration, mf2.Iteration, skipped, err)
	}
	prev, where, err := DecodeState(blobs)
	if err != nil {
		t.Fatal(err)
	}
	o, err = RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Resume: &ResumePoint{State: prev, Where: where},
		Run: RunOptions{Base: "rt2", Workers: 2, WaitWorkers: 10 * time.Second, StepTimeout: 10 * time.Second}})
	res := o.Result
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "resumed from the store", res, want)
}

// The NATS server goes away mid-run and comes back on the same address:
// every client reconnects, the messages lost in between are re-sent, and
// the run is the undisturbed one.
func TestNATSServerRestartMidRun(t *testing.T) {
	srv, err := transport.StartEmbedded(transport.EmbeddedOptions{Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	port := srv.Port()
	var srvMu sync.Mutex
	defer func() {
		srvMu.Lock()
		srv.Shutdown()
		srvMu.Unlock()
	}()
	var reconnects atomic.Int32
	c := NewTestCluster(t, TestClusterOptions{NATS: &transport.NATSOptions{URL: srv.URL(),
		ReconnectWait: 50 * time.Millisecond, MaxReconnects: -1, OnReconnect: func() { reconnects.Add(1) }}})
	c.StartN("rc", 2)
	m, opts, want := gridJob(t)
	restarted := false
	opts.ProgressEvery = 0
	progress := func(p solver.Progress) {
		if p.Iteration == 10 && !restarted {
			restarted = true
			srvMu.Lock()
			defer srvMu.Unlock()
			srv.Shutdown()
			time.Sleep(300 * time.Millisecond)
			s, err := transport.StartEmbedded(transport.EmbeddedOptions{Host: "127.0.0.1", Port: port})
			if err != nil {
				t.Errorf("restarting the server: %v", err)
				return
			}
			srv = s
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o, err := RunJob(ctx, Job{Transport: c.Transport("coord"), Model: m, Options: opts, Progress: progress, Run: RunOptions{Base: "reconnect", Workers: 2,
		WaitWorkers: 10 * time.Second, StepTimeout: 30 * time.Second, ResendEvery: 200 * time.Millisecond, LostAfter: 10 * time.Second}})
	got := o.Result
	if err != nil {
		t.Fatal(err)
	}
	if !restarted || reconnects.Load() < 3 {
		t.Fatalf("restarted %v, %d reconnects: the outage was not exercised", restarted, reconnects.Load())
	}
	compare(t, got, want)
}

// gridJob is the model most tests here disturb, its options and its
// undisturbed single-process result.
func gridJob(t *testing.T) (*model.Model, consensus.Options, solver.Result) {
	t.Helper()
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 1, Seed: 4})
	opts := consensus.DefaultOptions()
	opts.MaxIter = 300
	want, err := consensus.Solve(context.Background(), m, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, opts, want
}
