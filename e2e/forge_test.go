package e2e

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ddrun/ddrun/transport"
)

// seqAhead is how far above the sniffed Seq forged messages are numbered:
// beyond the receivers' dedup window (1024), where a forged number cannot
// collide with a real one. (A forged Seq inside the window that a real
// message later takes costs that message, and the job one resend
// interval, 10 s by default: cluster's TestForgedMessagesChangeNothing
// covers that case with a short interval.)
const seqAhead = 5000

// Wire numbers of the job protocol's kinds (cluster/wire.go).
const (
	kindStep   transport.Kind = 66
	kindReport transport.Kind = 67
)

// e2eForger is a plain NATS client on the job's server: it sniffs the
// job's steps and reports, and publishes hand-built messages (msgpack maps
// with the protocol's short keys) as the issue's forger did.
type e2eForger struct {
	t   *testing.T
	nc  *nats.Conn
	job string

	mu     sync.Mutex
	step   map[string]sniffedMsg // the last real step to each worker
	report map[string]sniffedMsg // the last real report of each worker
	script []forgery
	done   int
	forged map[uint64]bool // the Seqs it sent
}

type sniffedMsg struct {
	h    transport.Header
	body map[string]any
}

// forgery is sent once, after victim's report of an iteration iter >= at:
// the coordinator has read that report, so a forged one for iter+1 is the
// first it reads for iter+1.
type forgery struct {
	name   string
	victim string // sent after its report
	at     int
	send   func(f *e2eForger, iter int)
}

func (f *e2eForger) publish(subject string, h transport.Header, body any) {
	h.Job = f.job
	f.forged[h.Seq] = true
	data, err := transport.Encode(h, body)
	if err != nil {
		f.t.Error(err)
		return
	}
	if err := f.nc.Publish(subject, data); err != nil {
		f.t.Error(err)
	}
}

// sniffJob starts a forger of script on nc, listening to every job's
// steps and reports; stop ends it.
func sniffJob(t *testing.T, nc *nats.Conn, script []forgery) (f *e2eForger, stop func()) {
	f = &e2eForger{t: t, nc: nc, script: script, forged: map[uint64]bool{}, step: map[string]sniffedMsg{}, report: map[string]sniffedMsg{}}
	var subs []*nats.Subscription
	for _, kind := range []string{"step", "report"} {
		sub, err := nc.Subscribe("ddrun.*."+kind+".*", f.onMessage)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	return f, func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// nextReport forges worker name's report of iteration iter+1 from its
// last real one: it reaches the coordinator before the real one.
func (f *e2eForger) nextReport(name string, iter int, edit func(body map[string]any)) {
	last := f.report[name]
	body := clone(last.body)
	body["i"] = iter + 1
	edit(body)
	f.publish(fmt.Sprintf("ddrun.%s.report.%s", f.job, name), transport.Header{Iter: uint64(iter + 1), Kind: kindReport, From: name, Seq: last.h.Seq + seqAhead}, body)
}

func (f *e2eForger) onMessage(m *nats.Msg) {
	h, raw, err := transport.Decode(m.Data)
	if err != nil {
		return
	}
	var body map[string]any
	if transport.DecodeBody(raw, &body) != nil {
		return
	}
	name := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	f.mu.Lock()
	defer f.mu.Unlock()
	if h.Job != f.job {
		if f.job != "" {
			return
		}
		f.job = h.Job // the job's epoch: forge-e1
	}
	if f.forged[h.Seq] {
		return // our own
	}
	switch {
	case h.Kind == kindStep && body["stop"] != true:
		f.step[name] = sniffedMsg{h, body}
	case h.Kind == kindReport && h.From == name:
		f.report[name] = sniffedMsg{h, body}
		// Forge once both workers have answered a step, right after a real
		// report: the coordinator has taken it, and a forged report for
		// the next iteration is the first it reads for that iteration.
		iter := int(h.Iter)
		if f.done < len(f.script) && iter >= f.script[f.done].at && name == f.script[f.done].victim && len(f.report) == 2 && len(f.step) == 2 {
			fg := f.script[f.done]
			f.done++
			fg.send(f, iter)
			f.t.Logf("forged %s after iteration %d", fg.name, iter)
		}
	}
}

// The issue's forged messages, each sent once into a job of two worker
// processes run by a coordinator process on a NATS server anyone can
// reach: every one is dropped with a warning, the job ends like an
// undisturbed one (exit 0, the same bounds), and a burst of garbage costs
// a few log lines, not one per message.
func TestForgedMessagesIgnored(t *testing.T) {
	coord, worker := binaries(t)
	model, flags, want := faultModel(t, coord, faultRoundsLong)
	srv := startNATS(t, false)
	ws := startWorkerProcs(t, worker, srv.URL(), "fg", 2, "--insecure") // the forger reads the job
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	f, stop := sniffJob(t, nc, issueForgeries("fg0", "fg1", 100))
	defer stop()
	args := append([]string{"run", "--insecure", "--nats", srv.URL(), "--workers", "2", "--job", "forge"}, flags...)
	c := startProc(t, "coordinator", coord, append(args, model)...)
	if err := c.wait(t, 2*time.Minute); err != nil {
		t.Fatalf("coordinator: %v\n%s", err, c.stderr())
	}
	f.mu.Lock()
	sent := f.done
	f.mu.Unlock()
	if sent != len(f.script) {
		t.Errorf("only %d of %d forgeries sent before the job ended", sent, len(f.script))
	}
	got := c.result(t)
	closeResult(t, got, want)
	if !got.Insecure || !strings.Contains(c.stderr(), "insecure: no job key") {
		t.Errorf("an --insecure run that does not say so: insecure %v in the result\n%s", got.Insecure, c.stderr())
	}
	var wlog strings.Builder
	for _, w := range ws {
		wlog.WriteString(w.stderr())
	}
	for _, logged := range []struct{ log, what string }{
		{c.stderr(), "report rejected"},
		{c.stderr(), "impossible bound: reports asked again"},
		{wlog.String(), "out of order"},
		{wlog.String(), "not from this job's coordinator"},
		{wlog.String(), "undecodable step dropped"},
	} {
		if !strings.Contains(logged.log, logged.what) {
			t.Errorf("no %q logged", logged.what)
		}
	}
	// Each process's warning that it runs --insecure is not a forgery's.
	if n := strings.Count(wlog.String()+c.stderr(), "level=WARN") - strings.Count(wlog.String()+c.stderr(), "insecure: no job key"); n > 12 {
		t.Errorf("%d warnings for %d forgeries:\n%s\n%s", n, len(f.script), c.stderr(), wlog.String())
	}
	t.Logf("coordinator:\n%s", grepLines(c.stderr(), "level=WARN"))
	t.Logf("workers:\n%s", grepLines(wlog.String(), "level=WARN"))
}

// stepSubject is the subject of the job's steps to worker name (under
// f.mu, once f.job is known).
func (f *e2eForger) stepSubject(name string) string {
	return fmt.Sprintf("ddrun.%s.step.%s", f.job, name)
}

// issueForgeries is the issue's forged steps and reports into a job of
// workers w0 and w1, one every iterations: a report with an empty nu, one
// with d = -1e6, a step 1000 iterations ahead, a report with Seq 2^62, a
// Stop, and 3,000 messages of garbage on a step subject.
func issueForgeries(w0, w1 string, every int) []forgery {
	return []forgery{
		{"report with an empty nu", w0, every, func(f *e2eForger, iter int) {
			f.nextReport(w0, iter, func(b map[string]any) { b["nu"] = []byte{} })
		}},
		{"report with d = -1e6", w1, 2 * every, func(f *e2eForger, iter int) {
			f.nextReport(w1, iter, func(b map[string]any) { b["d"] = -1e6 })
		}},
		{"step 1000 iterations ahead", w0, 3 * every, func(f *e2eForger, iter int) {
			last := f.step[w0]
			body := clone(last.body)
			body["i"] = iter + 1000
			f.publish(f.stepSubject(w0), transport.Header{Iter: uint64(iter + 1000), Kind: kindStep, From: "coordinator", Seq: last.h.Seq + seqAhead}, body)
		}},
		{"report with Seq 2^62", w1, 4 * every, func(f *e2eForger, iter int) {
			last := f.report[w1]
			f.publish(fmt.Sprintf("ddrun.%s.report.%s", f.job, w1), transport.Header{Iter: last.h.Iter, Kind: kindReport, From: w1, Seq: 1 << 62}, last.body)
		}},
		{"stop", w1, 5 * every, func(f *e2eForger, iter int) {
			last := f.step[w1]
			f.publish(f.stepSubject(w1), transport.Header{Iter: math.MaxInt32, Kind: kindStep, From: "coordinator", Seq: last.h.Seq + seqAhead}, map[string]any{"stop": true})
		}},
		{"garbage on a step subject", w0, 6 * every, func(f *e2eForger, iter int) {
			rng := rand.New(rand.NewPCG(7, 8))
			for range 3000 {
				b := make([]byte, 1+rng.IntN(100))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				_ = f.nc.Publish(f.stepSubject(w0), b)
			}
		}},
	}
}

func grepLines(log, what string) string {
	var b strings.Builder
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, what) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
