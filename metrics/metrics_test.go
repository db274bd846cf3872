package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/solver"
)

func get(t *testing.T, h http.Handler, method, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Code, rec.Body.String()
}

// Every series of a role is exported, with the values last observed; the
// other role's are not.
func TestSeriesByRole(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	cases := []struct {
		role    Role
		feed    func(m *Metrics)
		want    []string // exact lines of the text format
		without []string // series names that must be absent
	}{
		{Coordinator, func(m *Metrics) {
			m.ObserveProgress(solver.Progress{Iteration: 7, Dual: 12.5, Primal: 10, Gap: 2.5, PrimalRes: 0.25, DualRes: 0.125, Eta: 0.1,
				Fields: solver.HasPrimalRes | solver.HasDualRes | solver.HasEta})
			m.ObserveStep("w0", 30*time.Millisecond)
			m.ObserveStep("w1", 2*time.Second)
			m.SetWorkers(2)
			m.SetLeader(true)
			m.SetJobs(3, 1)
			m.ObserveCheckpoint(500*time.Millisecond, nil)
			m.ObserveCheckpoint(time.Second, errors.New("disk full"))
			now = now.Add(4 * time.Second)
			m.SetTraffic(func() (uint64, uint64) { return 100, 250 })
			m.ObserveWorkerStep(time.Second) // a worker's: ignored
		}, []string{
			"ddrun_coordinator_iteration 7", "ddrun_coordinator_dual_bound 12.5", "ddrun_coordinator_primal_score 10",
			"ddrun_coordinator_gap 2.5", "ddrun_coordinator_primal_residual 0.25", "ddrun_coordinator_dual_residual 0.125",
			"ddrun_coordinator_eta 0.1", `ddrun_coordinator_worker_step_seconds_count{worker="w0"} 1`,
			`ddrun_coordinator_worker_step_seconds_count{worker="w1"} 1`, "ddrun_coordinator_workers 2",
			"ddrun_coordinator_leader 1", "ddrun_jobs_queued 3", "ddrun_jobs_running 1",
			`ddrun_coordinator_checkpoints_total{result="ok"} 1`, `ddrun_coordinator_checkpoints_total{result="failed"} 1`,
			"ddrun_coordinator_checkpoint_duration_seconds_sum 0.5", "ddrun_coordinator_checkpoint_age_seconds 4",
			"ddrun_transport_received_bytes_total 100", "ddrun_transport_sent_bytes_total 250", "ddrun_ready 0",
		}, []string{"ddrun_worker_"}},
		{Worker, func(m *Metrics) {
			m.ObserveWorkerStep(250 * time.Millisecond)
			m.ObserveWorkerStep(250 * time.Millisecond)
			m.SetParts(1)
			m.SetReady(true, "")
			m.ObserveProgress(solver.Progress{Iteration: 9}) // a coordinator's: ignored
		}, []string{
			"ddrun_worker_iterations_total 2", "ddrun_worker_step_seconds_sum 0.5", "ddrun_worker_step_seconds_count 2",
			"ddrun_worker_parts 1", "ddrun_transport_received_bytes_total 0", "ddrun_ready 1",
		}, []string{"ddrun_coordinator_", "ddrun_jobs_"}},
	}
	for _, c := range cases {
		t.Run(string(c.role), func(t *testing.T) {
			now = time.Unix(1000, 0)
			m, err := New(Options{Role: c.role, Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			c.feed(m)
			code, body := get(t, m.Handler(), "GET", "/metrics")
			if code != 200 {
				t.Fatalf("/metrics: %d", code)
			}
			lines := strings.Split(body, "\n")
			for _, w := range c.want {
				found := false
				for _, l := range lines {
					found = found || l == w
				}
				if !found {
					t.Errorf("no line %q in\n%s", w, body)
				}
			}
			for _, p := range c.without {
				if strings.Contains(body, "\n"+p) {
					t.Errorf("%s series exported by a %s", p, c.role)
				}
			}
			if !strings.Contains(body, "go_goroutines") || !strings.Contains(body, "process_") {
				t.Error("no Go runtime or process series")
			}
		})
	}
}

// Before any report the bounds are the infinities a run starts from.
func TestCoordinatorStartsUnbounded(t *testing.T) {
	m, err := New(Options{Role: Coordinator})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, m.Handler(), "GET", "/metrics")
	for _, w := range []string{"ddrun_coordinator_dual_bound +Inf", "ddrun_coordinator_primal_score -Inf"} {
		if !strings.Contains(body, w) {
			t.Errorf("no %q", w)
		}
	}
	if !strings.Contains(body, "ddrun_coordinator_leader 0\n") {
		t.Error("a new coordinator leads")
	}
	leads := false
	m.SetLeaderFunc(func() bool { return leads })
	for _, l := range []bool{false, true, false} {
		leads = l
		if _, body := get(t, m.Handler(), "GET", "/metrics"); !strings.Contains(body, fmt.Sprintf("ddrun_coordinator_leader %d\n", int(b2f(l)))) {
			t.Errorf("leader %v not reported", l)
		}
	}
	m.ObserveResult(solver.Result{Iterations: 40, Dual: 3, Primal: 3, Gap: 0})
	_, body = get(t, m.Handler(), "GET", "/metrics")
	if !strings.Contains(body, "ddrun_coordinator_iteration 40\n") || !strings.Contains(body, "ddrun_coordinator_gap 0\n") {
		t.Errorf("the result is not recorded:\n%s", body)
	}
}

// /healthz is always 200; /readyz is 503 with a one-line reason until
// SetReady says ready and every check passes.
func TestHealthAndReadiness(t *testing.T) {
	m, err := New(Options{Role: Worker})
	if err != nil {
		t.Fatal(err)
	}
	connected := false
	steps := []struct {
		name     string
		do       func()
		code     int
		contains string
	}{
		{"new", func() {}, 503, "not ready: starting"},
		{"connecting", func() { m.SetReady(false, "connecting to NATS at nats://x:4222\nsecond line") }, 503, "not ready: connecting to NATS at nats://x:4222\n"},
		{"empty reason", func() { m.SetReady(false, "") }, 503, "not ready: not ready"},
		{"ready", func() { m.SetReady(true, "") }, 200, "ready"},
		{"check fails", func() {
			m.AddReadyCheck(func() error {
				if !connected {
					return errors.New("NATS connection lost")
				}
				return nil
			})
		}, 503, "not ready: NATS connection lost"},
		{"check passes", func() { connected = true }, 200, "ready"},
		{"not ready again", func() { m.SetReady(false, "leadership lost") }, 503, "leadership lost"},
	}
	h := m.Handler()
	for _, s := range steps {
		s.do()
		code, body := get(t, h, "GET", "/readyz")
		if code != s.code || !strings.Contains(body, s.contains) || strings.Count(body, "\n") != 1 {
			t.Errorf("%s: /readyz %d %q, want %d with %q on one line", s.name, code, body, s.code, s.contains)
		}
		if code, _ := get(t, h, "GET", "/healthz"); code != 200 {
			t.Errorf("%s: /healthz %d", s.name, code)
		}
	}
	for _, c := range []struct {
		method, path string
		code         int
	}{{"HEAD", "/healthz", 200}, {"POST", "/metrics", 405}, {"GET", "/nothing", 404}} {
		if code, _ := get(t, h, c.method, c.path); code != c.code {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, code, c.code)
		}
	}
}

// A nil *Metrics (no --metrics) takes every call; a bad role is an error.
func TestNilAndBadRole(t *testing.T) {
	var m *Metrics
	m.ObserveProgress(solver.Progress{})
	m.ObserveResult(solver.Result{})
	m.ObserveStep("w", time.Second)
	m.ObserveCheckpoint(time.Second, nil)
	m.ObserveWorkerStep(time.Second)
	m.SetWorkers(1)
	m.SetLeader(true)
	m.SetLeaderFunc(nil)
	m.SetJobs(1, 1)
	m.SetParts(1)
	m.SetReady(true, "")
	m.AddReadyCheck(func() error { return nil })
	m.SetTraffic(nil)
	if m.Ready() != nil {
		t.Error("nil Metrics not ready")
	}
	if _, err := New(Options{Role: "master"}); err == nil {
		t.Error("role master accepted")
	}
}

// Start listens on a free port, announces it, serves, and stops with its
// context; a bad address fails before serving.
func TestStartServesUntilCancelled(t *testing.T) {
	m, err := New(Options{Role: Coordinator})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"nonsense", "127.0.0.1:99999"} {
		if _, err := m.Start(context.Background(), bad, nil); err == nil {
			t.Errorf("address %q accepted", bad)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var announce bytes.Buffer
	s, err := m.Start(ctx, "127.0.0.1:0", &announce)
	if err != nil {
		t.Fatal(err)
	}
	if want := "metrics=" + s.URL() + "\n"; announce.String() != want || !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("announced %q, want %q", announce.String(), want)
	}
	m.ObserveProgress(solver.Progress{Iteration: 3, Dual: 1, Primal: math.Inf(-1), Gap: math.Inf(1)})
	resp, err := http.Get(s.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "ddrun_coordinator_iteration 3\n") ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("scrape: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	cancel()
	<-s.done
	if _, err := http.Get(s.URL() + "/healthz"); err == nil {
		t.Error("still serving after the context ended")
	}
	// Serve returns once its context ends.
	ctx2, cancel2 := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- m.Serve(ctx2, "127.0.0.1:0", nil) }()
	cancel2()
	if err := <-errc; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// An algorithm that fills no residual or eta (TRW-S) exports NaN for
// them, not the 0 that would read as converged.
func TestUnfilledFieldsAreNaN(t *testing.T) {
	m, err := New(Options{Role: Coordinator})
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveProgress(solver.Progress{Iteration: 3, Dual: 5, Primal: 4, Gap: 1, Fields: solver.HasDualRes, DualRes: 0.5})
	_, body := get(t, m.Handler(), "GET", "/metrics")
	for _, w := range []string{"ddrun_coordinator_primal_residual NaN", "ddrun_coordinator_eta NaN", "ddrun_coordinator_dual_residual 0.5"} {
		if !strings.Contains(body, "\n"+w+"\n") {
			t.Errorf("no line %q in\n%s", w, body)
		}
	}
}
