package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/internal/testlog"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// assignLog records which worker received a part of which job, and when.
// With meet > 0, an assignment waits (at most 20 s) until meet jobs have
// sent one: jobs that hold their workers side by side all get there, while
// jobs the pool ran one after the other cannot, so the wait takes out the
// machine's speed without hiding a pool that serialises.
type assignLog struct {
	transport.Transport
	mu    sync.Mutex
	parts map[string][]string // job -> workers
	at    map[string]time.Time
	meet  int
	met   chan struct{} // closed once meet jobs have sent an assignment
}

func (a *assignLog) Publish(ctx context.Context, subject string, data []byte) error {
	if h, _, err := transport.Decode(data); err == nil && h.Kind == kindAssign {
		worker := subject[strings.LastIndexByte(subject, '.')+1:]
		a.mu.Lock()
		if !strings.Contains(strings.Join(a.parts[h.Job], ","), worker) {
			a.parts[h.Job] = append(a.parts[h.Job], worker)
		}
		if _, ok := a.at[h.Job]; !ok {
			a.at[h.Job] = time.Now()
			if a.meet > 0 && len(a.at) == a.meet {
				close(a.met)
			}
		}
		a.mu.Unlock()
		if a.meet > 0 {
			select {
			case <-a.met:
			case <-time.After(20 * time.Second):
			case <-ctx.Done():
			}
		}
	}
	return a.Transport.Publish(ctx, subject, data)
}

// runJobAt runs the grid job as job on tr and returns its result and when
// it ended.
func runJobAt(t *testing.T, tr transport.Transport, job string, opts consensus.Options, ro RunOptions) (solver.Result, time.Time, error) {
	t.Helper()
	m, _, _ := gridJob(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ro.Base, ro.Workers = job, 2
	if ro.WaitWorkers == 0 {
		ro.WaitWorkers = 10 * time.Second
	}
	ro.StepTimeout = 20 * time.Second
	o, err := RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Run: ro})
	res := o.Result
	return res, time.Now(), err
}

// Two jobs started together on a pool of four idle workers each claim two,
// run side by side on disjoint workers, and each ends like its single
// process run.
func TestPoolJobsRunSideBySide(t *testing.T) {
	inner := NewTestCluster(t, TestClusterOptions{}).StartN("p", 4).Transport("coordinator")
	m, opts, _ := gridJob(t)
	opts.MaxIter, opts.Tol, opts.ResidualTol = 3000, 0, 0 // long enough to overlap
	want, err := consensus.Solve(context.Background(), m, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs := []string{"side1", "side2"}
	tr := &assignLog{Transport: inner, parts: map[string][]string{}, at: map[string]time.Time{}, meet: len(jobs), met: make(chan struct{})}
	ends := make([]time.Time, len(jobs))
	var wg sync.WaitGroup
	for i, job := range jobs {
		wg.Go(func() {
			res, end, err := runJobAt(t, tr, job, opts, RunOptions{})
			if err != nil {
				t.Errorf("%s: %v", job, err)
				return
			}
			ends[i] = end
			compare(t, res, want)
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	seen := map[string]string{}
	for _, job := range jobs {
		job := EpochJob(job, 1) // RunJob's first epoch, on the transport
		if len(tr.parts[job]) != 2 {
			t.Fatalf("job %s had parts on %v, want two workers", job, tr.parts[job])
		}
		for _, w := range tr.parts[job] {
			if other, ok := seen[w]; ok {
				t.Errorf("worker %s served %s and %s", w, other, job)
			}
			seen[w] = job
		}
	}
	// Side by side: each job had its parts out before the other ended.
	for i, job := range jobs {
		other := 1 - i
		if at, ok := tr.at[EpochJob(job, 1)]; !ok || !at.Before(ends[other]) {
			t.Errorf("%s was assigned at %v, after %s ended at %v: the jobs ran one after the other",
				job, at.Format(time.StampMicro), jobs[other], ends[other].Format(time.StampMicro))
		}
	}
}

// A job that finds the pool busy waits for it, saying so (and which jobs
// hold the workers, for how long), instead of
// failing after WaitWorkers; it runs once the other job gives its workers
// back.
func TestPoolQueuedJobWaits(t *testing.T) {
	inner := NewTestCluster(t, TestClusterOptions{}).StartN("q", 2).Transport("coordinator")
	m, opts, want := gridJob(t)
	long := opts
	long.MaxIter, long.Tol, long.ResidualTol = 1_000_000, 0, 0 // holds the pool until cancelled
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := RunJob(ctx, Job{Transport: inner, Model: m, Options: long, Run: RunOptions{Base: "holder", Workers: 2, WaitWorkers: 10 * time.Second, StepTimeout: 20 * time.Second}})
		first <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(poolState(t, inner), "job=holder") < 2 && time.Now().Before(deadline) {
	}
	var logs testlog.Buffer
	queued := make(chan error, 1)
	var res solver.Result
	go func() {
		var err error
		res, _, err = runJobAt(t, inner, "queued", opts, RunOptions{WaitWorkers: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		queued <- err
	}()
	// Queued past its WaitWorkers, saying why.
	time.Sleep(1500 * time.Millisecond)
	for !strings.Contains(logs.String(), "waiting for workers: the pool is busy") && time.Now().Before(deadline.Add(10*time.Second)) {
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case err := <-queued:
		t.Fatalf("the queued job ended while the pool was busy: %v\n%s", err, logs.String())
	default:
	}
	cancel() // the first job ends and gives the workers back
	if err := <-first; err != nil {
		t.Fatalf("first job: %v", err)
	}
	if err := <-queued; err != nil {
		t.Fatalf("queued job: %v\n%s", err, logs.String())
	}
	compare(t, res, want)
	if !strings.Contains(logs.String(), "waiting for workers: the pool is busy") {
		t.Errorf("the queued job did not say it waits:\n%s", logs.String())
	}
	// And which job holds the workers (RunJob's first epoch of holder).
	if !strings.Contains(logs.String(), "held_by=\""+EpochJob("holder", 1)+" ") {
		t.Errorf("the queued job did not say which job holds the pool:\n%s", logs.String())
	}
}

// A job whose coordinator dies gives its workers back within seconds: the
// next job gets them.
func TestPoolDeadCoordinatorReleasesWorkers(t *testing.T) {
	c := NewTestCluster(t, TestClusterOptions{}).StartN("d", 2)
	inner := c.Transport("next")
	_, opts, want := gridJob(t)
	long := opts
	long.MaxIter, long.Tol, long.ResidualTol = 1_000_000, 0, 0
	dead := c.Coordinator("doomed")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, _, _ := gridJob(t)
	go func() {
		_, _ = RunJob(ctx, Job{Transport: dead, Model: m, Options: long, Run: RunOptions{Base: "doomed", Workers: 2, WaitWorkers: 10 * time.Second,
			StepTimeout: time.Hour, LostAfter: time.Hour, ReleaseAfter: time.Second}})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(poolState(t, inner), "job=doomed") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	dead.Sever() // the coordinator's process is gone
	killed := time.Now()
	res, end, err := runJobAt(t, inner, "next", opts, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	compare(t, res, want)
	t.Logf("the next job ended %v after the coordinator died", end.Sub(killed).Round(time.Millisecond))
}

// poolState describes the workers' latest announcements, e.g.
// "name=d0 job=doomed claimed=".
func poolState(t *testing.T, tr transport.Transport) string {
	t.Helper()
	var mu sync.Mutex
	latest := map[string]helloBody{}
	sub, err := tr.Subscribe(controlSubject, func(_ string, data []byte) {
		var h helloBody
		if _, err := transport.DecodeInto(data, &h); err == nil {
			mu.Lock()
			latest[h.Name] = h
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * helloEvery)
	_ = sub.Unsubscribe()
	mu.Lock()
	defer mu.Unlock()
	var b strings.Builder
	for _, h := range latest {
		fmt.Fprintf(&b, "name=%s job=%s claimed=%s\n", h.Name, h.Job, h.Claimed)
	}
	return b.String()
}

// Two jobs that each need three of four workers, started together, both
// end, one after the other. (Here one job's claims usually all arrive
// first, so this rarely reaches the hold-and-wait case that claimPatience
// resolves; that path has no deterministic test yet.)
func TestPoolOversubscribedJobsBothEnd(t *testing.T) {
	inner := NewTestCluster(t, TestClusterOptions{}).StartN("h", 4).Transport("coordinator")
	m, opts, want := gridJob(t)
	var wg sync.WaitGroup
	for _, job := range []string{"hold1", "hold2"} {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			o, err := RunJob(ctx, Job{Transport: inner, Model: m, Options: opts, Run: RunOptions{Base: job, Workers: 3, WaitWorkers: 10 * time.Second, StepTimeout: 20 * time.Second}})
			res := o.Result
			if err != nil {
				t.Errorf("%s: %v", job, err)
				return
			}
			compare(t, res, want)
		})
	}
	wg.Wait()
}
