package cluster

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
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
