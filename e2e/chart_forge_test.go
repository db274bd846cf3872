package e2e

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ddrun/ddrun/transport"
)

// chartAttack attacks a chart job (chartJobForged). start begins once the
// chart's NATS server is up, given its URL, the workers' names and the
// undisturbed result; the stop it returns ends the attack and checks that
// it attacked. judge, when set, judges the end of the job from its
// coordinators' processes instead of chartJobForged's checks that it ends
// as the undisturbed one.
type chartAttack struct {
	start func(t *testing.T, url string, workers []string, want result) (stop func())
	judge func(t *testing.T, coords []*proc, want result)
}

// Wire numbers of the job protocol's control kinds (cluster/wire.go);
// kindStep and kindReport are forge_test.go's.
const (
	kindHello     transport.Kind = 1
	kindHeartbeat transport.Kind = 5
	kindReady     transport.Kind = 65
	kindClaim     transport.Kind = 68
	kindClaimed   transport.Kind = 69
	kindRelease   transport.Kind = 70
	kindBeat      transport.Kind = 71
	kindEval      transport.Kind = 72
	kindEvaled    transport.Kind = 73
)

// The issue's forgeries at once, from a stranger on the chart's NATS
// server (its default values ask no credentials), into the job the
// default values run (sealed with the job key the chart generates): every
// message of the job replayed once and garbage beside (replayForger), the
// issue's forged steps and reports as forge_test.go sends them, reports
// aimed at the certificate tolerance and the huge-Seq takeover
// (certificateForgeries), claims, releases, hellos, heartbeats, beats,
// ready-with-error, claim refusals, evaluation answers and fetches
// (controlForger), and 64 MiB of incomplete chunked messages
// (floodChunks). The job ends with the undisturbed result: the same
// status, iterations, dual and primal as coordinator solve's.
//
// This is also the test of the default values' job, which it runs with
// every check of chartJob (the probes, the one result on the Deployment's
// workers, the idle wrapper's exit on SIGTERM): the chart's NATS
// (JetStream on, configured by its ConfigMap), one coordinator (a Raft
// group of one with its checkpoints on its volume), no credentials. An
// undisturbed run of the same values asserted nothing more.
func TestChartJobIgnoresForgeries(t *testing.T) {
	chartJobForged(t, &chartAttack{start: func(t *testing.T, url string, workers []string, want result) func() {
		return issueAttack(t, url, workers, want, false)
	}})
}

// The same attack against the chart with auth.insecure=true, where the
// stranger reads the job and its forgeries are plausible messages: the job
// may fail, but it never ends optimal with a wrong value. (The undisturbed
// run is deterministic: a run that ends optimal must end as it does.)
func TestChartInsecureJobNeverCertifiesAForgery(t *testing.T) {
	chartJobForged(t, &chartAttack{start: func(t *testing.T, url string, workers []string, want result) func() {
		return issueAttack(t, url, workers, want, true)
	}, judge: noFalseCertificate},
		"auth.insecure=true", "coordinator.job.waitWorkers=20s")
}

// issueAttack starts every forger of the issue against the chart's NATS
// server at url; stop ends them and checks that each attacked. Against an
// insecure job, the forgeries that hold the pool wait for the job to have
// started (before, they keep an insecure job from starting at all, which
// tells nothing of its certificates).
func issueAttack(t *testing.T, url string, workers []string, want result, insecure bool) (stop func()) {
	if len(workers) != 2 {
		t.Fatalf("the attack forges into a job of 2 workers, the chart runs %d", len(workers))
	}
	const (
		frames  = 1024 // 64 MiB
		payload = 64 << 10
	)
	t0 := time.Now()
	replays := replayForger(t, url)
	nc := dial(t, url)
	script := append(issueForgeries(workers[0], workers[1], 15), certificateForgeries(workers[0], workers[1], want, 100)...)
	f, sniffed := sniffJob(t, nc, script)
	over := make(chan struct{})
	sent, flooded := floodChunks(t, url, frames, payload, 8<<20, over)
	control := controlForger(t, url, workers, want, !insecure)
	return func() {
		t.Logf("the job ended %.1f s after the attack began", time.Since(t0).Seconds())
		close(over)
		sniffed()
		flooded()
		forged := control()
		replayed, garbage := replays()
		f.mu.Lock()
		scripted := f.done
		f.mu.Unlock()
		t.Logf("the stranger replayed %d messages, sent %d of garbage, %d chunk frames (%d MiB), %d scripted forgeries of %d, and forged control messages %v",
			replayed, garbage, sent(), sent()*payload>>20, scripted, len(script), forged)
		if replayed == 0 || garbage == 0 || sent() < frames/2 && !insecure {
			t.Errorf("the stranger replayed %d messages and sent %d of garbage and %d chunk frames: it saw no job", replayed, garbage, sent())
		}
		// An insecure job may fail before it sends a step: the forgeries
		// that wait for one, or for a subject of its, may never come.
		for _, kind := range []string{"hello", "claim", "release", "heartbeat", "beat", "ready", "claimed", "evaled", "report", "eval", "step"} {
			if forged[kind] == 0 && !insecure {
				t.Errorf("no forged %s sent: the attack did not attack", kind)
			}
		}
	}
}

// certificateForgeries are the issue's false certificate against a job
// of workers w0 and w1 after iteration at: first two reports of each with
// a huge Seq (once took the coordinator's sequence window over, "a second
// Seq confirms"), then one report of each with the next Seq, plausible in
// every field, whose duals add up to a hair below want's primal (within
// the honest certificate's tolerance).
func certificateForgeries(w0, w1 string, want result, at int) []forgery {
	target := *want.Primal - 1e-9*math.Abs(*want.Primal)
	var out []forgery
	for i, w := range []string{w0, w1} {
		out = append(out, forgery{"huge-Seq takeover and a report aimed at the certificate tolerance", w, at + 10*i, func(f *e2eForger, iter int) {
			last := f.report[w]
			subject := fmt.Sprintf("ddrun.%s.report.%s", f.job, w)
			for k := range uint64(2) {
				f.publish(subject, transport.Header{Iter: last.h.Iter, Kind: kindReport, From: w, Seq: 1<<62 + k}, last.body)
			}
			body := clone(last.body)
			body["i"], body["d"] = iter+1, target/2
			f.publish(subject, transport.Header{Iter: uint64(iter + 1), Kind: kindReport, From: w, Seq: 1<<62 + 2}, body)
		}})
	}
	return out
}

// controlForger connects to the NATS server at url as a stranger and,
// three times on each subject of ddrun's it sees (at least 100 ms apart),
// publishes unsealed messages of the protocol's shape there (the job's
// epoch taken from the subject, Seqs above 2^62 sent twice, to take a
// sequence window over):
//
//   - on ddrun.control: a ghost worker's hello, and hellos in the workers'
//     names saying they serve and are claimed by a ghost job;
//   - on a worker's assign subject: a ghost job's claim of it for an
//     hour, and a release in the name of the job's coordinator;
//   - on a report subject: a ready with an error (the part refused), a
//     claim refusal, an evaluation answer, a report aimed at the
//     certificate tolerance;
//   - on a heartbeat subject: heartbeats in the worker's name;
//   - on a step subject: a fetch of the worker's assignment and a Stop;
//   - on the beat subject: a beat in the coordinator's name.
//
// Without poolFirst the hellos and claims, which hold the pool, wait
// until the job has sent a step. stop ends it and says how many of each
// kind it sent.
func controlForger(t *testing.T, url string, workers []string, want result, poolFirst bool) (stop func() map[string]int) {
	t.Helper()
	nc := dial(t, url)
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		done    bool
		rounds  = map[string]int{}
		last    = map[string]time.Time{}
		sent    = map[string]int{}
		seq     = uint64(1 << 62)
		own     = map[string]bool{}
		stepped bool
	)
	target := *want.Primal - 1e-9*math.Abs(*want.Primal)
	// publish sends body as kind from from on subject, twice with
	// consecutive Seqs (under mu).
	publish := func(subject, name string, h transport.Header, body any) {
		for range 2 {
			h.Seq = seq
			seq++
			data, err := transport.Encode(h, body)
			if err != nil {
				t.Errorf("forging a %s: %v", name, err)
				return
			}
			own[string(data)] = true
			if nc.Publish(subject, data) == nil {
				sent[name]++
			}
		}
	}
	forge := func(subject string) {
		tok := strings.Split(subject, ".")
		if subject == "ddrun.control" {
			publish(subject, "hello", transport.Header{Kind: kindHello, From: "ghost"}, map[string]any{"name": "ghost", "threads": 64})
			for _, w := range workers {
				publish(subject, "hello", transport.Header{Kind: kindHello, From: w}, map[string]any{"name": w, "threads": 1, "job": "ghost-e1", "iter": 1 << 20, "claimed": "ghost-e1"})
			}
			return
		}
		if len(tok) < 4 || tok[0] != "ddrun" || tok[1] == "api" {
			if len(tok) == 3 && tok[2] == "beat" {
				publish(subject, "beat", transport.Header{Job: tok[1], Epoch: 1, Kind: kindBeat, From: "coordinator"}, map[string]any{})
			}
			return
		}
		job, kind, w := tok[1], tok[2], tok[3]
		h := transport.Header{Job: job, Epoch: 1, Iter: 1, From: w}
		switch kind {
		case "assign":
			publish(fmt.Sprintf("ddrun.ghost-e1.assign.%s", w), "claim", transport.Header{Job: "ghost-e1", Epoch: 1, Kind: kindClaim, From: "coordinator"},
				map[string]any{"base": "ghost", "epoch": 1, "release_ms": int64(time.Hour / time.Millisecond)})
			h.Kind, h.From = kindRelease, "coordinator"
			publish(subject, "release", h, map[string]any{})
		case "report":
			h.Kind = kindReady
			publish(subject, "ready", h, map[string]any{"recv": true, "err": "forged: the part does not fit"})
			h.Kind = kindClaimed
			publish(subject, "claimed", h, map[string]any{"granted": false, "busy": "ghost-e1"})
			h.Kind = kindEvaled
			publish(subject, "evaled", h, map[string]any{"seq": 1, "b": 1e9, "a": 1e9, "x": []int32{}, "last": true})
			h.Kind = kindReport
			publish(subject, "report", h, map[string]any{"i": 1 << 20, "d": target / 2, "r": target / 2, "x": []int32{}})
		case "heartbeat":
			h.Kind = kindHeartbeat
			publish(subject, "heartbeat", h, map[string]any{})
		case "step":
			h.Kind, h.From = kindEval, "coordinator"
			publish(subject, "eval", h, map[string]any{"seq": 1, "op": 1, "x": []int32{}})
			h.Kind = kindStep
			publish(subject, "step", h, map[string]any{"i": 1 << 20, "stop": true})
		}
	}
	sub, err := nc.Subscribe("ddrun.>", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		stepped = stepped || strings.Contains(m.Subject, ".step.")
		pool := m.Subject == "ddrun.control" || strings.Contains(m.Subject, ".assign.")
		if done || own[string(m.Data)] || rounds[m.Subject] >= 3 || time.Since(last[m.Subject]) < 100*time.Millisecond || pool && !poolFirst && !stepped {
			return
		}
		rounds[m.Subject]++
		last[m.Subject] = time.Now()
		subject := m.Subject
		wg.Go(func() {
			mu.Lock()
			defer mu.Unlock()
			if !done {
				forge(subject)
			}
		})
	})
	if err != nil {
		t.Fatalf("the forger: %v", err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("the forger: %v", err)
	}
	return func() map[string]int {
		_ = sub.Unsubscribe()
		mu.Lock()
		done = true
		mu.Unlock()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return sent
	}
}

// noFalseCertificate judges an attacked --insecure chart job: each
// coordinator either exits (the job failed: allowed) or ends the job and
// idles; a result it printed says insecure, and when it says optimal, it
// is the undisturbed result (the same dual and primal: the undisturbed
// run is deterministic, so an optimum that differs is a false one).
func noFalseCertificate(t *testing.T, coords []*proc, want result) {
	for _, p := range coords {
		deadline := time.After(90 * time.Second)
	wait:
		for {
			select {
			case line := <-p.lines:
				if strings.Contains(line, "the job is over") {
					break wait
				}
			case <-p.done:
				break wait
			case <-deadline:
				t.Fatalf("%s: neither ended the job nor exited within 90 s\n%s", p.name, p.stderr())
			}
		}
		select {
		case <-p.done:
			t.Logf("%s exited: %v\n%s", p.name, p.err, lastLines(p.stderr(), 5))
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			if err := p.wait(t, 10*time.Second); err != nil {
				t.Errorf("%s: SIGTERM while idle: %v, want exit 0", p.name, err)
			}
		}
		if p.stdout.Len() == 0 {
			continue
		}
		got := p.result(t)
		t.Logf("%s: %s after %d, dual %v primal %v; undisturbed: %s after %d, dual %v primal %v",
			p.name, got.Status, got.Iterations, deref(got.Dual), deref(got.Primal), want.Status, want.Iterations, deref(want.Dual), deref(want.Primal))
		if !got.Insecure {
			t.Errorf("%s: an --insecure job's result does not say insecure", p.name)
		}
		if got.Status == "optimal" {
			sameResult(t, got, want)
		}
	}
}
