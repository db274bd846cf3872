package cluster

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/testlog"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// undisturbed returns the options of a job of maxIter iterations with no
// progress reports, and the result of m solved with them in this process:
// what a job that forgeries do not disturb ends with.
func undisturbed(t *testing.T, m *model.Model, maxIter int) (consensus.Options, solver.Result) {
	t.Helper()
	opts := consensus.DefaultOptions()
	opts.MaxIter = maxIter
	opts.ProgressEvery = 0
	want, err := consensus.Solve(context.Background(), m, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return opts, want
}

// forger is a client of the job's transport that sniffs the job's steps
// and reports (as anyone on an open NATS server can) and publishes
// hand-built messages.
type forger struct {
	t      *testing.T
	tr     transport.Transport
	job    string
	mu     sync.Mutex
	steps  map[string]sniffed[stepBody]
	report map[string]sniffed[reportBody]
}

type sniffed[B any] struct {
	h    transport.Header
	body B
}

func newForger(t *testing.T, tr transport.Transport, job string) *forger {
	f := &forger{t: t, tr: tr, job: job, steps: map[string]sniffed[stepBody]{}, report: map[string]sniffed[reportBody]{}}
	for _, kind := range []string{"step", "report"} {
		sub, err := tr.Subscribe(subjectRoot+"."+job+"."+kind+".*", func(subject string, data []byte) {
			name := subject[strings.LastIndexByte(subject, '.')+1:]
			f.mu.Lock()
			defer f.mu.Unlock()
			if kind == "step" {
				var b stepBody
				if h, err := transport.DecodeInto(data, &b); err == nil && !b.Stop && b.Coord != 0 {
					f.steps[name] = sniffed[stepBody]{h, b}
				}
				return
			}
			var b reportBody
			if h, err := transport.DecodeInto(data, &b); err == nil && h.Kind == kindReport {
				f.report[name] = sniffed[reportBody]{h, b}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	return f
}

// publish sends body under h on subject.
func (f *forger) publish(subject string, h transport.Header, body any) {
	h.Job = f.job
	data, err := transport.Encode(h, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.tr.Publish(context.Background(), subject, data); err != nil {
		f.t.Error(err)
	}
}

func (f *forger) lastStep(name string) sniffed[stepBody] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.steps[name]
}

func (f *forger) lastReport(name string) sniffed[reportBody] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.report[name]
}

// catchUp waits until the sniffer has seen both workers' steps and
// reports of iteration iter: its subscription runs behind the job's own
// on a loaded machine, and a forgery built from an older message (an old
// Seq) is dropped as a duplicate before anything checks it.
func (f *forger) catchUp(iter int) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		ok := true
		for _, name := range []string{"w0", "w1"} {
			ok = ok && f.steps[name].body.Iter >= iter && f.report[name].body.Iter >= iter
		}
		f.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
	f.t.Errorf("the sniffer did not see iteration %d within 10s", iter)
}

// A forged report for the next iteration: it reaches the coordinator
// before the real one.
func (f *forger) nextReport(name string, iter int, edit func(r *reportBody)) {
	last := f.lastReport(name)
	r := last.body
	r.Iter = iter + 1
	edit(&r)
	f.publish(reportSubject(f.job, name), transport.Header{Iter: uint64(iter + 1), Kind: kindReport, From: name, Seq: last.h.Seq + 500}, r)
}

// forgeCases are the forged messages of the issue, each sent once after
// iteration at of a job on workers named w0 and w1.
var forgeCases = []struct {
	name string
	// log is a message the coordinator's ("c") or worker's ("w") log must
	// show: the forgery was seen and dropped.
	log   string
	forge func(f *forger, iter int)
}{
	{"empty-nu", "c:report rejected", func(f *forger, iter int) {
		f.nextReport("w0", iter, func(r *reportBody) { r.Nu = nil })
	}},
	{"low-dual", "c:impossible bound: reports asked again", func(f *forger, iter int) {
		f.nextReport("w0", iter, func(r *reportBody) { r.Dual = -1e6 })
	}},
	{"nan-report", "c:report rejected", func(f *forger, iter int) {
		f.nextReport("w1", iter, func(r *reportBody) { r.Relaxed = math.NaN() })
	}},
	{"huge-value", "c:report rejected", func(f *forger, iter int) {
		f.nextReport("w0", iter, func(r *reportBody) { r.Nu = append(transport.Floats(nil), r.Nu...); r.Nu[0] = 1e308 })
	}},
	{"error-report", "c:report with an error dropped", func(f *forger, iter int) {
		f.nextReport("w1", iter, func(r *reportBody) { r.Err = "forged" })
	}},
	{"far-step", "w:step dropped", func(f *forger, iter int) {
		last := f.lastStep("w0")
		st := last.body
		st.Iter = iter + 1000
		f.publish(stepSubject(f.job, "w0"), transport.Header{Iter: uint64(st.Iter), Kind: kindStep, From: "coordinator", Seq: last.h.Seq + 500}, st)
	}},
	{"short-step", "w:step dropped", func(f *forger, iter int) {
		last := f.lastStep("w1")
		st := last.body
		st.Iter, st.Lambda = iter+1, st.Lambda[:len(st.Lambda)/2]
		f.publish(stepSubject(f.job, "w1"), transport.Header{Iter: uint64(st.Iter), Kind: kindStep, From: "coordinator", Seq: last.h.Seq + 500}, st)
	}},
	{"huge-seq", "", func(f *forger, iter int) {
		last := f.lastReport("w0")
		f.publish(reportSubject(f.job, "w0"), transport.Header{Iter: uint64(iter), Kind: kindReport, From: "w0", Seq: 1 << 62}, last.body)
	}},
	{"blind-stop", "w:step dropped", func(f *forger, iter int) {
		last := f.lastStep("w0")
		f.publish(stepSubject(f.job, "w0"), transport.Header{Iter: math.MaxInt32, Kind: kindStep, From: "coordinator", Seq: last.h.Seq + 500}, stepBody{Stop: true})
	}},
	{"garbage-steps", "w:undecodable step dropped", func(f *forger, iter int) {
		rng := rand.New(rand.NewPCG(1, 2))
		for range 2000 {
			b := make([]byte, 1+rng.IntN(64))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			if rng.IntN(2) == 0 {
				copy(b, "DDM\x01")
			}
			_ = f.tr.Publish(context.Background(), stepSubject(f.job, "w1"), b)
		}
	}},
}

// Each forged message of the issue, sent once into a running job, is
// dropped: the job ends exactly like an undisturbed one, the drop is
// logged, and at most a few lines are logged per kind of fault.
func TestForgedMessagesChangeNothing(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 1, Seed: 4})
	opts, want := undisturbed(t, m, 120)
	for _, c := range forgeCases {
		t.Run(c.name, func(t *testing.T) {
			var wlog, clog testlog.Buffer
			tr := NewTestCluster(t, TestClusterOptions{Worker: WorkerOptions{Logger: slog.New(slog.NewTextHandler(&wlog, nil))}}).
				StartN("w", 2).Transport("coordinator")
			job := "forge-" + c.name
			f := newForger(t, tr, EpochJob(job, 1)) // RunJob's first epoch
			const at = 30
			progress := func(p solver.Progress) {
				if p.Iteration == at {
					f.catchUp(at)
					c.forge(f, at)
				}
			}
			rctx, rcancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer rcancel()
			o, err := RunJob(rctx, Job{Transport: tr, Model: m, Options: opts, Progress: progress, Run: RunOptions{Base: job, Workers: 2,
				WaitWorkers: 10 * time.Second, StepTimeout: 20 * time.Second, ResendEvery: 200 * time.Millisecond, LostAfter: 5 * time.Second,
				Logger: slog.New(slog.NewTextHandler(&clog, nil))}})
			got, stats := o.Result, o.Stats
			if err != nil {
				t.Fatalf("%v\ncoordinator:\n%s\nworkers:\n%s", err, clog.String(), wlog.String())
			}
			compare(t, got, want)
			t.Logf("%s after %d; warnings:\n%s%s", got.Status, got.Iterations, grepWarn(clog.String()), grepWarn(wlog.String()))
			if stats.Failovers != 0 {
				t.Errorf("%d failovers", stats.Failovers)
			}
			if c.log != "" {
				logged := map[byte]string{'c': clog.String(), 'w': wlog.String()}[c.log[0]]
				if !strings.Contains(logged, c.log[2:]) {
					t.Errorf("no %q logged:\n%s", c.log[2:], logged)
				}
			}
			if n := strings.Count(wlog.String()+clog.String(), "level=WARN"); n > 4 {
				t.Errorf("%d warnings:\n%s%s", n, clog.String(), wlog.String())
			}
		})
	}
}

func grepWarn(log string) string {
	var b strings.Builder
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=WARN") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// FuzzWorkerStep feeds a worker's step handling decoded but inconsistent
// steps (random iteration, coordinator id, flags, lengths and values) after
// a first good one: it never panics, takes only the next iteration or a
// repeat from its coordinator with vectors that fit, and answers what it
// takes with a report that fits the part.
func FuzzWorkerStep(f *testing.F) {
	f.Add(int64(2), uint64(7), false, false, false, int16(-1), int16(-1), 0.5, 1.0, 0.0)
	f.Add(int64(1001), uint64(7), false, true, false, int16(-1), int16(-1), 0.5, 1.0, 0.0)
	f.Add(int64(2), uint64(8), true, false, false, int16(-1), int16(-1), 0.5, 1.0, 0.0)
	f.Add(int64(2), uint64(7), true, false, false, int16(-1), int16(-1), 0.5, 1.0, 0.0)
	f.Add(int64(2), uint64(7), false, false, true, int16(0), int16(3), 0.5, 1.0, 0.0)
	f.Add(int64(1), uint64(7), false, true, true, int16(-1), int16(-1), math.NaN(), 1.0, 0.0)
	f.Add(int64(2), uint64(7), false, false, false, int16(-1), int16(-1), 0.5, math.Inf(1), -1.0)
	f.Add(int64(-5), uint64(7), false, false, false, int16(-1), int16(-1), 0.5, 0.0, 0.0)
	m := generate.Potts(generate.GridOptions{Height: 5, Width: 5, Labels: 3, Rho: 1, Seed: 2})
	opts := consensus.DefaultOptions()
	plan, err := consensus.PartitionPlan(m, opts.Slaves)
	if err != nil {
		f.Fatal(err)
	}
	where := make([]int32, len(plan.Slaves))
	for s := range where {
		where[s] = int32(2 * s / len(where))
	}
	parts, _, err := consensus.Split(m, plan, where, 2)
	if err != nil {
		f.Fatal(err)
	}
	body, err := encodePart(parts[0], 0, 2, opts)
	if err != nil {
		f.Fatal(err)
	}
	body.Coord, body.Next = 7, 1
	f.Fuzz(func(t *testing.T, iter int64, coord uint64, stop, gather, save bool, lamLen, muLen int16, val, eta, prev float64) {
		_, w, err := newPartWorker(context.Background(), body, WorkerOptions{Threads: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		nl, nm := w.NumBoundaryReplicaEntries(), w.NumBoundaryMuEntries()
		good := func(it int) *stepBody {
			return &stepBody{Iter: it, Eta: 1, Lambda: make([]float64, nl), Mu: make([]float64, nm), Coord: 7}
		}
		exp := expect{coord: body.Coord, next: body.Next}
		in, out := &consensus.StepIn{}, &consensus.StepOut{}
		if what, err := exp.take(good(1), w); err != nil || what != stepNext {
			t.Fatalf("the first good step: %v %v", what, err)
		}
		answer(w, good(1), in, out)
		exp.last = 1
		st := good(int(iter))
		st.Coord, st.Stop, st.GatherX, st.Save, st.Eta, st.PrevStep = coord, stop, gather, save, eta, prev
		if lamLen >= 0 {
			st.Lambda = make([]float64, int(lamLen)%256)
		}
		if muLen >= 0 {
			st.Mu = make([]float64, int(muLen)%256)
		}
		if len(st.Lambda) > 0 {
			st.Lambda[len(st.Lambda)-1] = val
		}
		what, err := exp.take(st, w)
		if err != nil {
			return
		}
		switch {
		case coord != 7:
			t.Fatalf("took a step of coordinator %d", coord)
		case what == stepNext && st.Iter != 2, what == stepRepeat && st.Iter != 1:
			t.Fatalf("took iteration %d as %d after 1", st.Iter, what)
		}
		if what != stepNext {
			return
		}
		rep := answer(w, st, in, out)
		if len(rep.Nu) != nl || gather && len(rep.X) != w.NumInterior() || save != (rep.State != nil) {
			t.Fatalf("report: %d marginals, %d states, state %v", len(rep.Nu), len(rep.X), rep.State != nil)
		}
	})
}

// The false certificate: once the gap is open, one forged report
// per worker, a copy of its last real one (every checked field plausible)
// whose dual puts the iteration's bound a hair below the best primal, within
// the honest-certificate tolerance. Unsealed, the coordinator must not end
// optimal with a value below the undisturbed run's; sealed, the forgeries do
// not open and the job ends exactly like the undisturbed one.
func TestForgedCertificate(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 4, Rho: 1, Seed: 7})
	opts, want := undisturbed(t, m, 400)
	const at = 5
	var sniffed [2]sniffed[reportBody] // the unsealed run's reports, replayed at the sealed one
	for _, sealed := range []bool{false, true} {
		name := map[bool]string{false: "unsealed", true: "sealed"}[sealed]
		t.Run(name, func(t *testing.T) {
			inproc, s := sealedInProc(t)
			var tr transport.Transport = inproc
			if sealed {
				tr = s
			}
			NewTestCluster(t, TestClusterOptions{Transport: tr}).StartN("w", 2)
			job := "cert-" + name
			f := newForger(t, inproc, EpochJob(job, 1))
			var clog testlog.Buffer
			var forgedPrimal float64
			progress := func(p solver.Progress) {
				if p.Iteration != at {
					return
				}
				if p.Gap <= opts.Tol*math.Max(1, math.Abs(p.Primal)) {
					t.Errorf("the gap is closed at iteration %d: nothing to forge", at)
				}
				forgedPrimal = p.Primal
				target := p.Primal - 1e-9*math.Abs(p.Primal)
				for w, name := range []string{"w0", "w1"} {
					if !sealed {
						f.catchUp(at)
						sniffed[w] = f.lastReport(name)
					}
					last := sniffed[w]
					r := last.body
					r.Iter, r.Dual = at+1, target/2
					f.publish(reportSubject(f.job, name), transport.Header{Iter: uint64(at + 1), Kind: kindReport, From: name, Seq: last.h.Seq + 500}, r)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			o, err := RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Progress: progress, Run: RunOptions{Base: job, Workers: 2,
				WaitWorkers: 10 * time.Second, StepTimeout: 20 * time.Second, ResendEvery: 200 * time.Millisecond, LostAfter: 5 * time.Second,
				Logger: slog.New(slog.NewTextHandler(&clog, nil))}})
			got := o.Result
			t.Logf("%s: %s after %d, dual %.9g primal %.9g (err %v); undisturbed %s after %d, dual %.9g primal %.9g; forged at primal %.9g",
				name, got.Status, got.Iterations, got.Dual, got.Primal, err, want.Status, want.Iterations, want.Dual, want.Primal, forgedPrimal)
			if sealed {
				if err != nil {
					t.Fatalf("%v\n%s", err, clog.String())
				}
				compare(t, got, want)
				return
			}
			if err == nil && got.Status == solver.Optimal && (got.Primal < want.Primal-1e-6*math.Abs(want.Primal) || got.Dual < want.Primal-1e-6*math.Abs(want.Primal)) {
				t.Errorf("a false certificate: optimal with dual %.9g and primal %.9g, but the undisturbed run scores %.9g", got.Dual, got.Primal, want.Primal)
			}
			if err == nil && got.Status != want.Status {
				t.Errorf("ended %s without an error; undisturbed: %s", got.Status, want.Status)
			}
		})
	}
}

// A forged "ready with an error" (a refusal of the part) sent as the parts
// go out used to fail the job at once; on an unsealed transport it is now
// logged and the job goes on with the worker's real acknowledgement. (The
// forgery races the worker's acknowledgement: the job is run until the
// forgery came first, at most 20 times, and every run must succeed; a
// machine so loaded that the forgery never wins skips the test.)
func TestForgedRefusalDoesNotFailTheJob(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 10, Width: 10, Labels: 3, Rho: 1, Seed: 2})
	opts, want := undisturbed(t, m, 60)
	tr := NewTestCluster(t, TestClusterOptions{}).StartN("w", 2).Transport("coordinator")
	for try := range 20 {
		job := "refusal" + strconv.Itoa(try)
		var sent sync.Once
		sub, err := tr.Subscribe(assignSubject(EpochJob(job, 1), "w0"), func(string, []byte) {
			sent.Do(func() {
				data, err := transport.Encode(transport.Header{Job: EpochJob(job, 1), Kind: kindReady, From: "w0", Seq: 1 << 40}, readyBody{Err: "forged"})
				if err == nil {
					err = tr.Publish(context.Background(), reportSubject(EpochJob(job, 1), "w0"), data)
				}
				if err != nil {
					t.Error(err)
				}
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		var clog testlog.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		o, err := RunJob(ctx, Job{Transport: tr, Model: m, Options: opts, Run: RunOptions{Base: job, Workers: 2, WaitWorkers: 10 * time.Second,
			StepTimeout: 20 * time.Second, Logger: slog.New(slog.NewTextHandler(&clog, nil))}})
		cancel()
		_ = sub.Unsubscribe()
		if err != nil {
			t.Fatalf("%v\n%s", err, clog.String())
		}
		compare(t, o.Result, want)
		if strings.Contains(clog.String(), "unauthenticated refusal of a part") {
			return
		}
	}
	t.Skip("the forged refusal never reached the coordinator before the acknowledgement in 20 runs (every run ended right): nothing checked about it")
}

// With a job key, a killed worker's recorded (sealed) heartbeats, replayed
// on their subject, used to keep it "alive" and the job waited for it until
// the step timeout; a heartbeat counts now only when it is newer than the
// worker's earlier ones, so the part moves to a spare within LostAfter.
func TestReplayedHeartbeatsDoNotHideALostWorker(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 1, Seed: 5})
	opts := consensus.DefaultOptions()
	opts.MaxIter = 1_000_000 // until cancelled once the part moved
	opts.Tol, opts.ResidualTol = 0, 0
	opts.ProgressEvery = 0
	inproc, sealed := sealedInProc(t)
	cl := NewTestCluster(t, TestClusterOptions{Transport: sealed}).StartN("w", 2)
	job := "replay-beats"
	beats := record(t, inproc, heartbeatSubject(EpochJob(job, 1), "w1"))
	stopReplay := func() {}
	var once sync.Once
	progress := func(p solver.Progress) {
		if p.Elapsed < 1500*time.Millisecond { // a few heartbeats recorded
			return
		}
		once.Do(func() {
			cl.Kill("w1")
			cl.Start("spare")
			stopReplay = replay(inproc, heartbeatSubject(EpochJob(job, 1), "w1"), beats.recorded)
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var clog testlog.Buffer
	go func() { // the part moved: the job may end
		for !strings.Contains(clog.String(), "its part moves to a spare") && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	o, err := RunJob(ctx, Job{Transport: sealed, Model: m, Options: opts, Progress: progress, Run: RunOptions{Base: job, Workers: 2,
		WaitWorkers: 10 * time.Second, StepTimeout: 8 * time.Second, LostAfter: time.Second, SpareWait: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&clog, nil))}})
	stopReplay()
	n := len(beats.recorded())
	if err != nil {
		t.Fatalf("%v (%d heartbeats recorded and replayed)\n%s", err, n, clog.String())
	}
	if n == 0 || o.Stats.Failovers != 1 {
		t.Errorf("%d heartbeats recorded, %d failovers\n%s", n, o.Stats.Failovers, clog.String())
	}
}

// With a job key, a recorded (sealed) claim replayed after its job ended
// used to hold the worker again (the pool "busy" for a job long gone); the
// worker now drops a claim of a job released after the claim was sent.
func TestReplayedClaimAfterReleaseDropped(t *testing.T) {
	inproc, sealed := sealedInProc(t)
	var wlog testlog.Buffer
	NewTestCluster(t, TestClusterOptions{Transport: sealed, Worker: WorkerOptions{Logger: slog.New(slog.NewTextHandler(&wlog, nil))}}).StartN("w", 1)
	job := "replay-claim"
	claims := record(t, inproc, assignSubject(EpochJob(job, 1), "w0"))
	m := generate.Potts(generate.GridOptions{Height: 6, Width: 6, Labels: 3, Rho: 1, Seed: 1})
	opts := consensus.DefaultOptions()
	opts.MaxIter = 20
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := RunJob(ctx, Job{Transport: sealed, Model: m, Options: opts, Run: RunOptions{Base: job, Workers: 1, WaitWorkers: 10 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the release reaches the worker
	recorded := claims.recorded()
	if len(recorded) == 0 {
		t.Fatal("nothing recorded")
	}
	for _, b := range recorded {
		if err := inproc.Publish(context.Background(), assignSubject(EpochJob(job, 1), "w0"), b); err != nil {
			t.Fatal(err)
		}
	}
	if st := poolState(t, sealed); !strings.Contains(st, "name=w0 job= claimed=\n") {
		t.Errorf("after %d replayed messages the worker is held:\n%s\n%s", len(recorded), st, wlog.String())
	}
	if !strings.Contains(wlog.String(), "a replayed claim of a released job dropped") {
		t.Errorf("the replayed claim was not logged:\n%s", wlog.String())
	}
}

// sealedInProc is an in-process transport (what a forger on the server
// sees and publishes on) and the same sealed with a job key (what the
// job's processes use), both closed when the test ends.
func sealedInProc(t *testing.T) (*transport.InProc, *transport.Sealed) {
	inproc := transport.NewInProc()
	t.Cleanup(func() { _ = inproc.Close() })
	sealed, err := transport.NewSealed(inproc, transport.SealOptions{Keys: [][]byte{[]byte("0123456789abcdef0123456789abcdef")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sealed.Close() })
	return inproc, sealed
}

// recorder keeps copies of the messages published on a subject, as anyone
// on the server can record them.
type recorder struct {
	mu   sync.Mutex
	msgs [][]byte
}

// record records what tr carries on subject until the test ends.
func record(t *testing.T, tr transport.Transport, subject string) *recorder {
	r := &recorder{}
	sub, err := tr.Subscribe(subject, func(_ string, data []byte) {
		r.mu.Lock()
		r.msgs = append(r.msgs, append([]byte(nil), data...))
		r.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return r
}

// recorded returns the messages recorded so far.
func (r *recorder) recorded() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// replay publishes the messages msgs returns on subject, all of them every
// 50 ms, until the function it returns is called (which waits for it).
func replay(tr transport.Transport, subject string, msgs func() [][]byte) (stop func()) {
	done := make(chan struct{})
	var replayed sync.WaitGroup
	replayed.Go(func() {
		for {
			for _, b := range msgs() {
				_ = tr.Publish(context.Background(), subject, b)
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	return func() { close(done); replayed.Wait() }
}

// With a job key, a dead worker's recorded (sealed) hellos, replayed on
// the control subject, used to keep it in the pool: a job waiting for one
// worker waited as long as the replay went on instead of failing after
// WaitWorkers. A hello counts now only when it is newer than its sender's
// earlier ones, and a worker silent to its claim is not counted as
// present, so the job fails with the usual "waited" error and none joined.
func TestReplayedHellosDoNotStretchTheWait(t *testing.T) {
	inproc, sealed := sealedInProc(t)
	hellos := record(t, inproc, controlSubject)
	cl := NewTestCluster(t, TestClusterOptions{Transport: sealed}).StartN("w", 1)
	for len(hellos.recorded()) < 4 {
		time.Sleep(50 * time.Millisecond)
	}
	cl.Kill("w0")
	recorded := hellos.recorded()
	defer replay(inproc, controlSubject, func() [][]byte { return recorded })()
	m := generate.Potts(generate.GridOptions{Height: 6, Width: 6, Labels: 3, Rho: 1, Seed: 1})
	opts := consensus.DefaultOptions()
	opts.MaxIter = 20
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := RunJob(ctx, Job{Transport: sealed, Model: m, Options: opts, Run: RunOptions{Base: "replay-hello", Workers: 1, WaitWorkers: time.Second}})
	if err == nil || !strings.Contains(err.Error(), "waited 1s for 1 workers, 0 joined") {
		t.Fatalf("with %d recorded hellos replayed: %v, want the wait to fail with none joined", len(recorded), err)
	}
}

// A worker's hello makes it a spare only when it is newer than the
// worker's earlier ones: the same hello again, an older one, or one whose
// header names another sender than its body does not make a worker that
// has since announced itself busy (or was never heard) a spare again.
func TestReplayedHelloDoesNotMakeASpare(t *testing.T) {
	c := &coordinator{job: "j-e1", joinable: joinableFor("j", 1), byName: map[string]int{}, spares: map[string]time.Time{}}
	hello := func(from string, seq uint64, h helloBody) []byte {
		b, err := transport.Encode(transport.Header{Kind: kindHello, From: from, Seq: seq}, h)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	idle := hello("s", 10, helloBody{Name: "s", Threads: 1})
	busy := hello("s", 11, helloBody{Name: "s", Threads: 1, Job: "other-e1"})
	c.onHello(controlSubject, idle)
	if _, ok := c.spares["s"]; !ok {
		t.Fatal("an idle worker's hello did not make it a spare")
	}
	c.onHello(controlSubject, busy)
	if _, ok := c.spares["s"]; ok {
		t.Fatal("a busy worker's hello left it a spare")
	}
	for name, data := range map[string][]byte{
		"the idle hello replayed":       idle,
		"an older idle hello":           hello("s", 9, helloBody{Name: "s", Threads: 1}),
		"the busy hello's number again": hello("s", 11, helloBody{Name: "s", Threads: 1}),
		"another sender's header":       hello("x", 12, helloBody{Name: "s", Threads: 1}),
		"a hello with no number at all": hello("t", 0, helloBody{Name: "t", Threads: 1}),
	} {
		c.onHello(controlSubject, data)
		if len(c.spares) != 0 {
			t.Fatalf("%s made a spare: %v", name, c.spares)
		}
	}
	c.onHello(controlSubject, hello("s", 12, helloBody{Name: "s", Threads: 1}))
	if _, ok := c.spares["s"]; !ok {
		t.Fatal("the worker's next hello, idle again, did not make it a spare")
	}
}
