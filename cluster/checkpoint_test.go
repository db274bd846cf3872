package cluster

import (
	"context"
	"errors"
	"fmt"
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

// A distributed run resumed from a checkpoint (on fresh workers, as after a
// full restart) ends like the uninterrupted run.
func TestResumeFromCheckpoint(t *testing.T) {
	tr := transport.NewInProc()
	defer tr.Close()
	startWorkers(t, tr, "r", 3)
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 1, Seed: 4})
	opts := consensus.DefaultOptions()
	opts.MaxIter = 300
	var sv saved
	ro := RunOptions{Base: "resume1", Workers: 3, WaitWorkers: 10 * time.Second, StepTimeout: 10 * time.Second,
		Checkpoint: &CheckpointOptions{Every: 10, Save: sv.save}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o, err := RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Run: ro})
	want := o.Result
	if err != nil {
		t.Fatal(err)
	}
	if len(sv.states) < 3 {
		t.Fatalf("%d states in %d iterations", len(sv.states), want.Iterations)
	}
	st := sv.states[len(sv.states)/2]
	ro2 := RunOptions{Base: "resume2", Workers: 3, WaitWorkers: 10 * time.Second, StepTimeout: 10 * time.Second}
	rp := &ResumePoint{State: st, Where: sv.where}
	o, err = RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Run: ro2, Resume: rp})
	got, stats := o.Result, o.Stats
	if err != nil {
		t.Fatal(err)
	}
	if stats.Resumed != st.Iter {
		t.Errorf("resumed at %d, want %d", stats.Resumed, st.Iter)
	}
	closeTo(t, "resumed", got, want)
	// A state for another number of workers is refused with a clear error.
	ro2.Workers = 2
	if _, err := RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Run: ro2, Resume: rp}); err == nil {
		t.Error("resumed 3 parts on 2 workers")
	}
}

// A spare taking over a lost worker's part starts from the latest
// checkpoint of that part.
func TestWorkerLossRestoresFromCheckpoint(t *testing.T) {
	tr := transport.NewInProc()
	defer tr.Close()
	a, b := startOne(t, tr, "ca"), startOne(t, tr, "cb")
	_ = b
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 0.5, Seed: 5})
	opts := consensus.DefaultOptions()
	opts.MaxIter = 2000
	want, err := consensus.Solve(context.Background(), m, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sv saved
	killed := false
	progress := func(p solver.Progress) {
		if p.Iteration >= 12 && !killed {
			killed = true
			startOne(t, tr, "cspare")
			a()
		}
	}
	opts.ProgressEvery = 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o, err := RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Run: RunOptions{Base: "ckloss", Workers: 2, WaitWorkers: 10 * time.Second,
		StepTimeout: 20 * time.Second, LostAfter: 500 * time.Millisecond, Checkpoint: &CheckpointOptions{Every: 5, Save: sv.save}}, Progress: progress})
	got, stats := o.Result, o.Stats
	if err != nil {
		t.Fatal(err)
	}
	if !killed || stats.Failovers != 1 || stats.Restored != 1 {
		t.Fatalf("killed %v, %d failovers, %d restored from a checkpoint; want 1 and 1", killed, stats.Failovers, stats.Restored)
	}
	if got.Status != solver.Optimal || !relClose(got.Primal, want.Primal, 1e-9) {
		t.Errorf("after failover: %s primal %v; undisturbed primal %v", got.Status, got.Primal, want.Primal)
	}
}

// startOne runs a worker until the returned function (or the test's end)
// stops it.
func startOne(t *testing.T, tr transport.Transport, name string) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(ctx, tr, WorkerOptions{Name: name, Threads: 1})
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// severable is a coordinator's view of the transport that can be cut off,
// as when its process dies: nothing it sends arrives, nothing reaches it.
type severable struct {
	transport.Transport
	cut atomic.Bool
}

func (s *severable) Publish(ctx context.Context, subject string, data []byte) error {
	if s.cut.Load() {
		return errors.New("severed")
	}
	return s.Transport.Publish(ctx, subject, data)
}

func (s *severable) Subscribe(subject string, h transport.Handler) (transport.Subscription, error) {
	return s.Transport.Subscribe(subject, func(subj string, data []byte) {
		if !s.cut.Load() {
			h(subj, data)
		}
	})
}

// A new coordinator (the next Raft leader) takes the workers of a dead one
// over with a higher epoch and continues from its latest checkpoint; the
// workers' announcements tell how many iterations are redone.
func TestNewEpochTakesOverWorkers(t *testing.T) {
	inner := transport.NewInProc()
	defer inner.Close()
	startWorkers(t, inner, "e", 2)
	m, opts, want := gridJob(t)
	old := &severable{Transport: inner}
	var sv saved
	died := make(chan struct{})
	progress := func(p solver.Progress) {
		if p.Iteration >= 23 && !old.cut.Load() {
			old.cut.Store(true)
			close(died)
		}
	}
	opts1 := opts
	opts1.ProgressEvery = 0
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = RunJob(ctx, Job{Transport: old, Model: m, Options: opts1, Run: RunOptions{Base: "take", Workers: 2, WaitWorkers: 10 * time.Second,
			StepTimeout: time.Second, LostAfter: time.Minute, Checkpoint: &CheckpointOptions{Every: 10, Save: sv.save}}, Progress: progress})
	}()
	defer func() { <-firstDone }()
	select {
	case <-died:
	case <-time.After(30 * time.Second):
		t.Fatal("the first coordinator never reached iteration 23")
	}
	st, where := sv.last()
	if st == nil || st.Iter != 20 {
		t.Fatalf("latest state %v, want the one of iteration 20", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Epoch 2: the one after the state's.
	o, err := RunJob(ctx, Job{Transport: inner, Model: m, Options: opts, Run: RunOptions{Base: "take", Workers: 2, WaitWorkers: 10 * time.Second,
		StepTimeout: 10 * time.Second}, Resume: &ResumePoint{State: st, Where: where, Epoch: 1}})
	got, stats := o.Result, o.Stats
	if err != nil {
		t.Fatal(err)
	}
	if stats.Resumed != 20 || stats.Redone < 3 || stats.Redone > 5 {
		t.Errorf("resumed at %d with %d iterations redone; want 20 and 3 to 5 (the old leader reached 23 or 24 before the cut)", stats.Resumed, stats.Redone)
	}
	closeTo(t, "taken over", got, want)
}

// States go through the checkpoint store and back unchanged; a resumed run
// from the newest verified checkpoint ends like the uninterrupted one, and
// a torn newest checkpoint falls back to the one before.
func TestCheckpointerRoundTrip(t *testing.T) {
	tr := transport.NewInProc()
	defer tr.Close()
	startWorkers(t, tr, "k", 2)
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
	connect := func(name string) transport.Transport {
		tr, err := transport.NewNATS(context.Background(), transport.NATSOptions{URL: srv.URL(), Name: name,
			ReconnectWait: 50 * time.Millisecond, MaxReconnects: -1, OnReconnect: func() { reconnects.Add(1) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("rc%d-", i)
		startWorkers(t, connect(name), name, 1)
	}
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
	o, err := RunJob(ctx, Job{Transport: connect("coord"), Model: m, Options: opts, Run: RunOptions{Base: "reconnect", Workers: 2, WaitWorkers: 10 * time.Second,
		StepTimeout: 30 * time.Second, ResendEvery: 200 * time.Millisecond, LostAfter: 10 * time.Second}, Progress: progress})
	got := o.Result
	if err != nil {
		t.Fatal(err)
	}
	if !restarted || reconnects.Load() < 3 {
		t.Fatalf("restarted %v, %d reconnects: the outage was not exercised", restarted, reconnects.Load())
	}
	compare(t, got, want)
}

// A worker lost with no spare: after SpareWait the job continues on the
// two workers left, in a new epoch, from the latest checkpoint regrouped
// onto them, and ends like the undisturbed run.
func TestWorkerLossWithoutSpareRegroups(t *testing.T) {
	tr := transport.NewInProc()
	defer tr.Close()
	stopA := startOne(t, tr, "na")
	startOne(t, tr, "nb")
	startOne(t, tr, "nc")
	m, opts, want := gridJob(t)
	killed := false
	opts.ProgressEvery = 0
	progress := func(p solver.Progress) {
		if p.Iteration == 12 && !killed {
			killed = true
			stopA()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o, err := RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Run: RunOptions{Base: "shrink", Workers: 3, WaitWorkers: 10 * time.Second,
		StepTimeout: 20 * time.Second, LostAfter: 300 * time.Millisecond, SpareWait: 300 * time.Millisecond,
		Checkpoint: &CheckpointOptions{Every: 5}}, Progress: progress})
	got, stats := o.Result, o.Stats
	if err != nil {
		t.Fatal(err)
	}
	if !killed || stats.Failovers != 1 || stats.Restored != 1 || stats.Redone < 2 || stats.Redone > 3 {
		t.Errorf("killed %v, %d failovers, %d restored, %d redone; want 1, 1 and 2 or 3 (lost at 12 or 13, checkpoint of 10)",
			killed, stats.Failovers, stats.Restored, stats.Redone)
	}
	closeTo(t, "on the workers left", got, want)
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
