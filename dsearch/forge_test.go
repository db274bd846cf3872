package dsearch

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/ratelimit"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/native"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// forgeAnswer publishes a on tr in job as the answer of the worker whose
// task subject is taskSubject, under sequence number seq.
func forgeAnswer(t *testing.T, tr transport.Transport, job, taskSubject string, seq uint64, a answerBody) {
	worker := taskSubject[strings.LastIndexByte(taskSubject, '.')+1:]
	msg, err := transport.Encode(transport.Header{Job: job, From: worker, Seq: seq}, a)
	if err != nil {
		t.Error(err)
		return
	}
	_ = tr.Publish(context.Background(), answerSubject(job, worker), msg)
}

// forger answers the first n tasks of job it sees, in the name of the
// worker they went to, before the worker can: with the assignment that
// fixes the task's clamps and puts every other variable in state 0, a
// score 100 above its true one, and no open node (the subtree claimed
// closed). It returns how many it forged.
func forger(t *testing.T, tr transport.Transport, m *model.Model, job string, n int64) *atomic.Int64 {
	var forged atomic.Int64
	sub, err := tr.Subscribe("ddrun."+job+".bb.task.*", func(subject string, data []byte) {
		var tb taskBody
		_, err := transport.DecodeInto(data, &tb)
		if err != nil || forged.Load() >= n {
			return
		}
		x := make([]int, m.NumVars())
		for i, v := range tb.Vars {
			x[v] = int(tb.States[i])
		}
		score := m.Score(x)
		if math.IsInf(score, -1) {
			score = 0
		}
		forged.Add(1)
		forgeAnswer(t, tr, job, subject, 1<<40, answerBody{CID: tb.CID, ID: tb.ID, Primal: score + 100, X: int32sOf(x), Nodes: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	return &forged
}

// Answers that claim a wrong score for their assignment are rejected:
// the assignment does not become the incumbent, the subtree is requeued
// and the search still certifies the brute-force MAP, whether the
// coordinator re-scores on the model (Run) or streaming from its indexed
// file (RunFile). On this unsealed transport a forgery heard after its
// worker's real answer was taken contradicts it (confirm.go): the search
// then refuses to certify (*ConflictError), which is as safe; the test
// takes either end, never a wrong certificate.
func TestForgedScoreRejected(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: 1})
	path := filepath.Join(t.TempDir(), "m.ddx")
	if err := indexed.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func(tr transport.Transport, o Options) (solver.Result, Stats, error){
		"model": func(tr transport.Transport, o Options) (solver.Result, Stats, error) {
			return Run(context.Background(), tr, m, nil, o, nil)
		},
		"file": func(tr transport.Transport, o Options) (solver.Result, Stats, error) {
			return RunFile(context.Background(), tr, path, nil, o, nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			tr := inProc(t)
			newPool(t, tr, "w1", "w2", "w3")
			o := testOptions(3, admmSettings(20))
			forged := forger(t, tr, m, o.Job, 2)
			res, st, err := run(tr, o)
			var ce *ConflictError
			if errors.As(err, &ce) && forged.Load() >= 1 {
				t.Logf("the search refused to certify: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkCertified(t, "forged", m, res)
			if forged.Load() < 1 || st.Rejected < 1 || st.Requeued < 1 {
				t.Fatalf("%d forged, %d rejected, %d requeued", forged.Load(), st.Rejected, st.Requeued)
			}
			t.Logf("%d forged, %d rejected, %d requeued; %d nodes", forged.Load(), st.Rejected, st.Requeued, st.Nodes)
		})
	}
}

// Garbled and misattributed messages on the answer subjects are dropped
// without touching the search: nothing is rejected in a worker's name.
func TestGarbledAnswersDropped(t *testing.T) {
	tr := inProc(t)
	newPool(t, tr, "w1", "w2")
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: 2})
	o := testOptions(2, admmSettings(20))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	good, _ := transport.Encode(transport.Header{Job: o.Job, From: "w1"}, answerBody{ID: 1, Primal: 1e9})
	msgs := [][]byte{
		nil, []byte("garbage"), good[:len(good)/2], append(bytes.Clone(good), 0),
		// From another worker than the subject names.
		mustEncode(t, transport.Header{Job: o.Job, From: "w2"}, answerBody{ID: 1, Primal: 1e9}),
		// For another job.
		mustEncode(t, transport.Header{Job: "other", From: "w1"}, answerBody{ID: 1, Primal: 1e9}),
		// Of a kind that does not travel there.
		mustEncode(t, transport.Header{Job: o.Job, From: "w1"}, taskBody{ID: 1}),
	}
	go func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = tr.Publish(ctx, answerSubject(o.Job, "w1"), msgs[i%len(msgs)])
			}
		}
	}()
	res, st, err := Run(ctx, tr, m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCertified(t, "garbled", m, res)
	if st.Rejected != 0 || st.Requeued != 0 {
		t.Fatalf("%d rejected, %d requeued", st.Rejected, st.Requeued)
	}
}

func mustEncode(t *testing.T, h transport.Header, body any) []byte {
	t.Helper()
	b, err := transport.Encode(h, body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// With the job sealed (transport.Sealed, as the job protocol is with a
// job key), a forger without the key is not heard at all.
func TestSealedForgerNotHeard(t *testing.T) {
	inner := transport.NewInProc()
	defer inner.Close()
	key := []byte("0123456789abcdef0123456789abcdef")
	seal := func() *transport.Sealed {
		s, err := transport.NewSealed(inner, transport.SealOptions{Keys: [][]byte{key}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	newPool(t, seal(), "w1", "w2")
	coord := seal()
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: 3})
	o := testOptions(2, admmSettings(20))
	// The forger sees only sealed tasks it cannot read, so it answers
	// every message on the task subjects with a forged answer of its own.
	var sent atomic.Int64
	sub, err := inner.Subscribe("ddrun."+o.Job+".bb.task.*", func(subject string, _ []byte) {
		sent.Add(1)
		forgeAnswer(t, inner, o.Job, subject, 0, answerBody{ID: 1, Primal: 1e9, X: make(transport.Int32s, m.NumVars())})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	res, st, err := Run(context.Background(), coord, m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCertified(t, "sealed", m, res)
	if sent.Load() == 0 || coord.Stats().Rejected == 0 || st.Rejected != 0 {
		t.Fatalf("%d forged, %d not authentic, %d rejected by the search", sent.Load(), coord.Stats().Rejected, st.Rejected)
	}
}

// checkAnswer rejects every way an answer can be wrong, and takes a
// right one with its re-scored assignment and its open nodes' bounds
// clamped to the parent's: on the model (Run) and on its indexed file
// (RunFile).
func TestCheckAnswer(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 2, Width: 3, Rho: 1, Seed: 1})
	for name, g := range grounds(t, m) {
		t.Run(name, func(t *testing.T) { checkAnswers(t, m, g) })
	}
}

// grounds are m as a coordinator holds it and as an indexed file.
func grounds(t *testing.T, m *model.Model) map[string]ground {
	path := filepath.Join(t.TempDir(), "m.ddx")
	if err := indexed.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	g, err := openFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.close() })
	return map[string]ground{"model": onModel(m), "file": g}
}

func checkAnswers(t *testing.T, m *model.Model, g ground) {
	parent := model.Evidence{0: 1}
	x := []int{1, 0, 1, 0, 1, 0}
	score := m.Score(x)
	ok := func() answerBody {
		return answerBody{Primal: score, X: int32sOf(x), Nodes: 3,
			Open: []openWire{{Vars: transport.Int32s{0, 2}, States: transport.Int32s{1, 1}, Bound: 50}}}
	}
	a := ok()
	gx, gs, open, err := checkAnswer(g, &a, parent, 10)
	if err != nil || gs != score || len(gx) != 6 || len(open) != 1 || open[0].bound != 10 {
		t.Fatalf("right answer: %v %v %v %v", gx, gs, open, err)
	}
	cases := map[string]func(a *answerBody){
		"wrong score":           func(a *answerBody) { a.Primal = score + 1 },
		"NaN score":             func(a *answerBody) { a.Primal = math.NaN() },
		"short assignment":      func(a *answerBody) { a.X = a.X[:5] },
		"state out of range":    func(a *answerBody) { a.X[3] = 2 },
		"negative state":        func(a *answerBody) { a.X[3] = -1 },
		"outside its subtree":   func(a *answerBody) { a.X[0] = 0; a.Primal = m.Score([]int{0, 0, 1, 0, 1, 0}) },
		"NaN bound":             func(a *answerBody) { a.Open[0].Bound = math.NaN() },
		"variable out of range": func(a *answerBody) { a.Open[0].Vars[1] = 6 },
		"negative variable":     func(a *answerBody) { a.Open[0].Vars[1] = -1 },
		"clamp state":           func(a *answerBody) { a.Open[0].States[1] = 5 },
		"clamped twice":         func(a *answerBody) { a.Open[0].Vars[1] = 0 },
		"lengths differ":        func(a *answerBody) { a.Open[0].States = a.Open[0].States[:1] },
		"not below the root":    func(a *answerBody) { a.Open[0].States[0] = 0 },
		"not deeper":            func(a *answerBody) { a.Open[0] = openWire{Vars: transport.Int32s{0}, States: transport.Int32s{1}} },
		"negative nodes":        func(a *answerBody) { a.Nodes = -1 },
		"too many clamps": func(a *answerBody) {
			a.Open[0] = openWire{Vars: make(transport.Int32s, 7), States: make(transport.Int32s, 7)}
		},
	}
	for name, spoil := range cases {
		a := ok()
		spoil(&a)
		if _, _, _, err := checkAnswer(g, &a, parent, 10); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// A worker drops tasks it cannot trust (garbage, bad clamps, no budget,
// NaN bounds) with a logged reason, and answers none of them.
func TestWorkerDropsMalformedTasks(t *testing.T) {
	tr := inProc(t)
	m := generate.Ising(generate.GridOptions{Height: 2, Width: 2, Rho: 1, Seed: 1})
	var buf bytes.Buffer
	if err := native.Write(&buf, m, native.Msgpack); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hello := make(chan struct{}, 1)
	hsub, _ := tr.Subscribe(helloSubject, func(string, []byte) {
		select {
		case hello <- struct{}{}:
		default:
		}
	})
	defer hsub.Unsubscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(ctx, tr, WorkerOptions{Name: "w", Threads: 1})
	}()
	defer func() { cancel(); <-done }()
	answers := make(chan transport.Kind, 64)
	sub, _ := tr.Subscribe(answerSubject("j", "w"), func(_ string, data []byte) {
		if h, _, err := transport.Decode(data); err == nil && h.Kind != kindBusy {
			answers <- h.Kind
		}
	})
	defer sub.Unsubscribe()
	<-hello // the worker has subscribed
	send := func(body any) {
		if err := tr.Publish(ctx, taskSubject("j", "w"), mustEncode(t, transport.Header{Job: "j"}, body)); err != nil {
			t.Fatal(err)
		}
	}
	// expect waits for the answer, of kind want, to what was sent.
	expect := func(want transport.Kind, what string) {
		t.Helper()
		select {
		case k := <-answers:
			if k != want {
				t.Fatalf("answer of kind %v to %s", k, what)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no answer to " + what)
		}
	}
	send(openBody{CID: 7, Settings: admmSettings(20), Model: buf.Bytes()})
	expect(kindOpened, "the open")
	good := taskBody{CID: 7, ID: 1, Bound: math.Inf(1), Incumbent: math.Inf(-1), MaxNodes: 5}
	for name, spoil := range map[string]func(*taskBody){
		"variable out of range": func(tb *taskBody) { tb.Vars, tb.States = transport.Int32s{4}, transport.Int32s{0} },
		"state out of range":    func(tb *taskBody) { tb.Vars, tb.States = transport.Int32s{1}, transport.Int32s{2} },
		"lengths differ":        func(tb *taskBody) { tb.Vars, tb.States = transport.Int32s{1}, nil },
		"no budget":             func(tb *taskBody) { tb.MaxNodes = 0 },
		"huge budget":           func(tb *taskBody) { tb.MaxNodes = math.MaxInt },
		"NaN bound":             func(tb *taskBody) { tb.Bound = math.NaN() },
		"bad tolerance":         func(tb *taskBody) { tb.Tol = -1 },
		"other coordinator":     func(tb *taskBody) { tb.CID = 8 },
		"id 0":                  func(tb *taskBody) { tb.ID = 0 },
	} {
		tb := good
		spoil(&tb)
		t.Log(name)
		send(tb)
	}
	_ = tr.Publish(ctx, taskSubject("j", "w"), []byte("garbage"))
	select {
	case k := <-answers:
		t.Fatalf("answered a malformed task (kind %v)", k)
	case <-time.After(300 * time.Millisecond):
	}
	// The worker still works.
	send(good)
	expect(kindAnswer, "a good task")
}

// FuzzAnswer feeds the coordinator's checks arbitrary answer messages:
// they are decoded and checked without panicking, and what passes has an
// assignment that scores what it claims.
func FuzzAnswer(f *testing.F) {
	m := generate.Ising(generate.GridOptions{Height: 2, Width: 3, Rho: 1, Seed: 1})
	x := []int{1, 0, 1, 0, 1, 0}
	for _, a := range []answerBody{
		{Primal: m.Score(x), X: int32sOf(x), Nodes: 3, Open: []openWire{{Vars: transport.Int32s{0, 2}, States: transport.Int32s{1, 1}, Bound: 50}}},
		{Primal: 3, X: transport.Int32s{9}},
		{Open: []openWire{{Vars: transport.Int32s{0}, States: transport.Int32s{1}, Bound: math.NaN()}}},
	} {
		b, err := transport.Encode(transport.Header{Job: "j", From: "w"}, a)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a answerBody
		_, err := transport.DecodeInto(data, &a)
		if err != nil {
			return
		}
		gx, score, open, err := checkAnswer(onModel(m), &a, model.Evidence{0: 1}, 10)
		if err != nil {
			return
		}
		if gx != nil && m.Score(gx) != score {
			t.Fatalf("accepted an assignment scoring %v as %v", m.Score(gx), score)
		}
		for _, n := range open {
			if math.IsNaN(n.bound) || n.bound > 10 {
				t.Fatalf("accepted an open node of bound %v", n.bound)
			}
		}
	})
}

// The issue's forged infeasibility: one answer to the root task, "searched,
// no assignment, no open nodes", sent before the worker's. Unsealed, the
// worker's own answer to that task contradicts it and the search fails
// instead of certifying anything; it never ends infeasible (or optimal) with
// a wrong value.
func TestForgedClosedRootNotCertified(t *testing.T) {
	tr := inProc(t)
	newPool(t, tr, "w1")
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: 1})
	o := testOptions(1, admmSettings(20))
	var forged atomic.Int64
	sub, err := tr.Subscribe("ddrun."+o.Job+".bb.task.*", func(subject string, data []byte) {
		var tb taskBody
		_, err := transport.DecodeInto(data, &tb)
		if err != nil || forged.Load() > 0 {
			return
		}
		forged.Add(1)
		forgeAnswer(t, tr, o.Job, subject, 1<<40, answerBody{CID: tb.CID, ID: tb.ID, Nodes: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	res, _, err := Run(context.Background(), tr, m, nil, o, nil)
	if forged.Load() != 1 {
		t.Fatalf("%d forged answers", forged.Load())
	}
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("ended %s (primal %v, dual %v) with error %v, want a conflict", res.Status, res.Primal, res.Dual, err)
	}
	t.Log(err)
}

// A worker's hello replayed after a newer one is not news to the
// coordinator: only hellos newer than the sender's last are posted, so a
// recorded announcement of a dead worker does not make the search open a
// job on it again.
func TestReplayedHelloDropped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &coord{ctx: ctx, events: make(chan event, 8), done: make(chan struct{}), log: slog.New(slog.DiscardHandler),
		drop: ratelimit.Repeats[string]{Every: time.Minute}}
	hello := func(seq uint64) []byte {
		b, err := transport.Encode(transport.Header{From: "w1", Seq: seq}, helloBody{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	old, recent := hello(10), hello(11)
	c.onHello(helloSubject, old)
	c.onHello(helloSubject, recent)
	c.onHello(helloSubject, old) // the replay
	c.onHello(helloSubject, recent)
	if n := len(c.events); n != 2 {
		t.Fatalf("%d hellos posted, want the 2 news ones", n)
	}
}
