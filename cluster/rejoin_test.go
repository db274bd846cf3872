package cluster

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/testlog"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// A lost worker is taken back only by a hello numbered above everything
// heard from it, never when it was stuck (it never spoke in the job), and
// at most maxRejoins times.
func TestLostWorkerBack(t *testing.T) {
	for _, c := range []struct {
		name string
		l    lostWorker
		seq  uint64
		want bool
	}{
		{"newer hello", lostWorker{heard: 10, times: 1}, 11, true},
		{"the last number heard", lostWorker{heard: 10, times: 1}, 10, false},
		{"an older hello", lostWorker{heard: 10, times: 1}, 3, false},
		{"stuck", lostWorker{stuck: true, heard: 10, times: 1}, 11, false},
		{"lost maxRejoins times", lostWorker{heard: 10, times: maxRejoins}, 11, true},
		{"lost once more", lostWorker{heard: 10, times: maxRejoins + 1}, 11, false},
	} {
		if got := c.l.back(c.seq); got != c.want {
			t.Errorf("%s: back(%d) = %v", c.name, c.seq, got)
		}
	}
}

// A worker lost from a sharded job (killed) does not come back through
// hellos in its name that a party without the job key sends: unsealed,
// sealed under another key, or its own sealed hellos recorded and
// replayed. The next epoch never claims it: it waits for a second worker
// in vain and fails, having claimed only the worker left.
func TestForgedRejoinRefused(t *testing.T) {
	inproc, sealed := sealedInProc(t)
	other, err := transport.NewSealed(inproc, transport.SealOptions{Keys: [][]byte{[]byte("another key, not the job's 32 b.")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	m := reducedPotts(t, generate.GridOptions{Height: 8, Width: 8, Labels: 3, Rho: 0.5, Seed: 7})
	layout, loadShard := shardFixture(t, m, 2)
	hellos := record(t, inproc, controlSubject)
	base := "forged-back"
	claimsW1 := record(t, inproc, assignSubject(EpochJob(base, 2), "w1"))
	claimsW0 := record(t, inproc, assignSubject(EpochJob(base, 2), "w0"))
	cl := NewTestCluster(t, TestClusterOptions{Transport: sealed}).Sharded(loadShard).Start("w0", "w1")
	forge := func() {
		hello, err := transport.Encode(transport.Header{Kind: kindHello, From: "w1", Seq: uint64(time.Now().UnixNano()) << 1},
			helloBody{Name: "w1", Threads: 1})
		if err != nil {
			t.Error(err)
			return
		}
		_ = inproc.Publish(context.Background(), controlSubject, hello) // no seal
		_ = other.Publish(context.Background(), controlSubject, hello)  // another key's
	}
	var stopForging func()
	var once sync.Once
	progress := func(p solver.Progress) {
		if p.Iteration < 5 {
			return
		}
		once.Do(func() {
			recorded := hellos.recorded()
			cl.Kill("w1")
			stopReplay := replay(inproc, controlSubject, func() [][]byte { return recorded })
			done := make(chan struct{})
			var forging sync.WaitGroup
			forging.Go(func() {
				for {
					forge()
					select {
					case <-done:
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			})
			stopForging = func() { close(done); forging.Wait(); stopReplay() }
		})
	}
	opts := consensus.DefaultOptions()
	opts.Algo, opts.MaxIter, opts.Tol, opts.ProgressEvery, opts.Threads = consensus.ADMM, 100_000, 0, 0, 1
	var clog testlog.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err = cl.RunSharded(ctx, layout, "", opts, RunOptions{Base: base, WaitWorkers: 2 * time.Second, StepTimeout: 20 * time.Second,
		LostAfter: time.Second, Logger: slog.New(slog.NewTextHandler(&clog, nil))}, progress)
	if stopForging == nil {
		t.Fatalf("the job ended before the kill: %v", err)
	}
	stopForging()
	if err == nil || !strings.Contains(err.Error(), "waited 2s for 2 workers, 1 joined [w0]") {
		t.Errorf("%v, want the next epoch to wait for a second worker in vain\n%s", err, clog.String())
	}
	if n := len(claimsW1.recorded()); n > 0 {
		t.Errorf("the next epoch sent %d claims to the killed worker\n%s", n, clog.String())
	}
	if len(claimsW0.recorded()) == 0 {
		t.Errorf("the next epoch did not claim the worker left: nothing recorded\n%s", clog.String())
	}
	if strings.Contains(clog.String(), "taken back") {
		t.Errorf("a worker was taken back:\n%s", clog.String())
	}
}
