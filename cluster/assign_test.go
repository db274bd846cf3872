package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// startMute runs a worker that announces itself like an idle one and
// grants claims until it is assigned a part, then goes silent: no
// receipt, no heartbeat, no acknowledgement (a process that hung or died
// as the part arrived). A hung one goes on announcing itself as idle and
// granting claims (its service goroutines still run), but never takes a
// part. assigned is closed when its first part arrives.
func startMute(t *testing.T, tr transport.Transport, name string, hung bool) (assigned <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan struct{})
	seq := transport.NewSequence()
	sub, err := tr.Subscribe(assignWildcard(name), func(_ string, data []byte) {
		h, _, err := transport.Decode(data)
		if err != nil {
			return
		}
		select {
		case <-got:
			if !hung {
				return // silent
			}
		default:
		}
		switch h.Kind {
		case kindClaim:
			grant, err := transport.Encode(transport.Header{Job: h.Job, From: name, Seq: seq.Next(), Kind: kindClaimed}, claimedBody{Granted: true})
			if err == nil {
				_ = tr.Publish(ctx, reportSubject(h.Job, name), grant)
			}
		case kindAssign:
			select {
			case <-got:
			default:
				close(got)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	hello, err := transport.Encode(transport.Header{Kind: kindHello, From: name}, helloBody{Name: name, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(helloEvery)
		defer tick.Stop()
		stop := (<-chan struct{})(got)
		if hung {
			stop = nil // announces itself until the test ends
		}
		for {
			_ = tr.Publish(ctx, controlSubject, hello)
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; _ = sub.Unsubscribe() })
	return got
}

// A worker that goes silent while its part is being assigned is lost after
// LostAfter, as in a step, not waited for until the step timeout: a spare
// takes its part, or, with none, the job continues on the workers left.
func TestSilentWorkerLostWhileAssigning(t *testing.T) {
	// run runs the grid job on tr's workers and checks it did not wait
	// for the step timeout.
	run := func(t *testing.T, tr transport.Transport, ro RunOptions) (got, want solver.Result, stats RunStats) {
		t.Helper()
		m, opts, want := gridJob(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		ro.WaitWorkers, ro.StepTimeout, ro.LostAfter = 10*time.Second, 30*time.Second, 300*time.Millisecond
		start := time.Now()
		o, err := RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Run: ro})
		got, stats = o.Result, o.Stats
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > ro.StepTimeout/2 {
			t.Errorf("the job took %v: the silent worker was waited for", took)
		}
		return got, want, stats
	}
	t.Run("spare", func(t *testing.T) {
		tr := transport.NewInProc()
		defer tr.Close()
		startOne(t, tr, "a")
		assigned := startMute(t, tr, "mute", false)
		go func() {
			// The spare joins once the job has taken the mute worker.
			<-assigned
			startOne(t, tr, "spare")
		}()
		got, want, stats := run(t, tr, RunOptions{Base: "mute1", Workers: 2, SpareWait: 5 * time.Second})
		if stats.Failovers != 1 {
			t.Errorf("%d failovers, want 1", stats.Failovers)
		}
		compare(t, got, want) // the spare started the part afresh, as the lost worker would have
	})
	t.Run("no spare", func(t *testing.T) {
		tr := transport.NewInProc()
		defer tr.Close()
		startOne(t, tr, "a")
		startOne(t, tr, "b")
		startMute(t, tr, "mute", false)
		got, want, stats := run(t, tr, RunOptions{Base: "mute2", Workers: 3, SpareWait: 300 * time.Millisecond})
		if stats.Failovers != 1 || stats.Redone != 0 {
			t.Errorf("%d failovers, %d redone; want 1 and 0", stats.Failovers, stats.Redone)
		}
		closeTo(t, "on the workers left", got, want)
	})
}

// A hung worker that still announces itself and grants claims is lost
// once; the job's next epoch does not claim it again (it would be lost
// again while its part is assigned: a second failover), nor does it
// become a spare.
func TestLostWorkerNotClaimedAgain(t *testing.T) {
	tr := transport.NewInProc()
	defer tr.Close()
	startOne(t, tr, "a")
	startOne(t, tr, "b")
	startMute(t, tr, "mute", true)
	// A job name whose next epoch (RunJob runs the first as epoch 1)
	// would ask the hung worker first.
	job := ""
	for i := 0; job == ""; i++ {
		name := fmt.Sprintf("hung%d", i)
		next := EpochJob(name, 2)
		if claimOrder(next, "mute") < min(claimOrder(next, "a"), claimOrder(next, "b")) {
			job = name
		}
	}
	m, opts, want := gridJob(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ro := RunOptions{Base: job, Workers: 3, WaitWorkers: 10 * time.Second, StepTimeout: 30 * time.Second,
		LostAfter: 300 * time.Millisecond, SpareWait: 300 * time.Millisecond}
	o, err := RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Run: ro})
	got, stats := o.Result, o.Stats
	if err != nil {
		t.Fatal(err)
	}
	if stats.Failovers != 1 {
		t.Errorf("%d failovers, want 1: the hung worker was taken again", stats.Failovers)
	}
	closeTo(t, "on the workers left", got, want)
}
