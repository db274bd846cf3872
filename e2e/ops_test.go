package e2e

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/transport"
)

// scrape gets url and returns the status code and body.
func scrape(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// series parses the Prometheus text format: each sample's name with its
// labels, as written, and its value.
func series(body string) map[string]float64 {
	out := map[string]float64{}
	for _, l := range strings.Split(body, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err == nil {
			out[l[:i]] = v
		}
	}
	return out
}

// metricsURL waits for p's metrics=URL line.
func metricsURL(t *testing.T, p *proc) string {
	t.Helper()
	line := waitLine(t, p, "metrics=http://", time.Minute)
	return strings.TrimSpace(line[strings.Index(line, "metrics=")+len("metrics="):])
}

// A real distributed run scraped while it runs: every series of the
// coordinator and of a worker is there, the iteration moves, the bounds
// are finite, and both processes are ready.
func TestMetricsDuringRun(t *testing.T) {
	coord, worker := binaries(t)
	srv := startNATS(t, false)
	model := genModel(t, coord, "potts", "--height", "60", "--width", "60", "--labels", "8", "--rho", "3", ".uai")
	ws := startWorkerProcs(t, worker, srv.URL(), "met", 2, "--metrics", "127.0.0.1:0", "--quiet")
	wurl := metricsURL(t, ws[0])
	run := startProc(t, "coordinator", coord, "run", "--nats", srv.URL(), "--workers", "2", "--job", "metrics",
		"--metrics", "127.0.0.1:0", "--checkpoint-every", "5", "--checkpoint-interval", "0",
		"--tol", "0", "--max-iter", "1000000", "--json", "--quiet", model)
	curl := metricsURL(t, run)

	// Scrape until the iteration has moved past a first reading taken
	// after the run started.
	var first, last map[string]float64
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-run.done:
			t.Fatalf("the run ended before the scrapes:\n%s", run.stderr())
		default:
		}
		code, body := scrape(t, curl+"/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		s := series(body)
		if first == nil && s["ddrun_coordinator_iteration"] > 0 && s[`ddrun_coordinator_checkpoints_total{result="ok"}`] > 0 {
			first = s
		} else if first != nil && s["ddrun_coordinator_iteration"] > first["ddrun_coordinator_iteration"] {
			last = s
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the iteration did not move within 90s: %v", s["ddrun_coordinator_iteration"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, name := range []string{"ddrun_coordinator_dual_bound", "ddrun_coordinator_primal_score", "ddrun_coordinator_gap",
		"ddrun_coordinator_primal_residual", "ddrun_coordinator_dual_residual", "ddrun_coordinator_eta"} {
		v, ok := last[name]
		if !ok || math.IsInf(v, 0) || math.IsNaN(v) {
			t.Errorf("%s = %v (present %v), want finite", name, v, ok)
		}
	}
	positive := []string{
		`ddrun_coordinator_worker_step_seconds_count{worker="met0"}`, `ddrun_coordinator_worker_step_seconds_count{worker="met1"}`,
		"ddrun_transport_received_bytes_total", "ddrun_transport_sent_bytes_total",
		"ddrun_coordinator_checkpoint_duration_seconds_count", "ddrun_coordinator_leader", "ddrun_ready",
	}
	for _, name := range positive {
		if last[name] <= 0 {
			t.Errorf("%s = %v, want > 0", name, last[name])
		}
	}
	if last["ddrun_coordinator_workers"] != 2 {
		t.Errorf("ddrun_coordinator_workers = %v, want 2", last["ddrun_coordinator_workers"])
	}
	if last["ddrun_transport_received_bytes_total"] <= first["ddrun_transport_received_bytes_total"] {
		t.Errorf("bytes received did not grow: %v then %v", first["ddrun_transport_received_bytes_total"], last["ddrun_transport_received_bytes_total"])
	}
	for _, name := range []string{"ddrun_coordinator_checkpoint_age_seconds", "ddrun_jobs_queued", "ddrun_jobs_running"} {
		if _, ok := last[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := scrape(t, curl+path); code != 200 {
			t.Errorf("coordinator %s: %d %q", path, code, body)
		}
	}
	// The worker's side.
	_, body := scrape(t, wurl+"/metrics")
	w := series(body)
	for _, name := range []string{"ddrun_worker_iterations_total", "ddrun_worker_step_seconds_count",
		"ddrun_transport_received_bytes_total", "ddrun_transport_sent_bytes_total", "ddrun_ready"} {
		if w[name] <= 0 {
			t.Errorf("worker %s = %v, want > 0", name, w[name])
		}
	}
	if w["ddrun_worker_parts"] != 1 {
		t.Errorf("worker holds %v parts mid-run, want 1", w["ddrun_worker_parts"])
	}
	// Ctrl-C ends the run with its result.
	if err := run.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := run.wait(t, time.Minute); err != nil {
		t.Fatalf("run after Ctrl-C: %v\n%s", err, run.stderr())
	}
	if !strings.Contains(run.stdout.String(), `"status": "interrupted"`) && !strings.Contains(run.stdout.String(), `"status":"interrupted"`) {
		t.Errorf("result: %s", run.stdout.String())
	}
}

// A worker started before its NATS server: /healthz answers at once and
// /readyz says 503 while it retries; once the server is up on that port
// the worker connects, is ready and serves a job. When the server goes
// away and comes back the worker reconnects, says so, and serves the
// next job.
func TestWorkerWaitsForNATS(t *testing.T) {
	coord, worker := binaries(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	model := genModel(t, coord, "potts", "--height", "8", "--width", "8", "--labels", "3", "--rho", "1", ".uai")
	want := runJSON(t, time.Minute, coord, "solve", "--algo", "admm", "--json", "--quiet", model)

	w := startProc(t, "early", worker, append([]string{"--nats", url, "--name", "early", "--threads", "1", "--metrics", "127.0.0.1:0", "--connect-timeout", "2m"}, workerDirs(t)...)...)
	murl := metricsURL(t, w)
	waitLine(t, w, "NATS server not reachable yet; retrying", time.Minute)
	if code, body := scrape(t, murl+"/healthz"); code != 200 {
		t.Errorf("/healthz before NATS: %d %q", code, body)
	}
	if code, body := scrape(t, murl+"/readyz"); code != 503 || !strings.Contains(body, "connecting to NATS") {
		t.Errorf("/readyz before NATS: %d %q, want 503 saying it connects", code, body)
	}
	start := func() *transport.Embedded {
		srv, err := transport.StartEmbedded(transport.EmbeddedOptions{Host: "127.0.0.1", Port: port})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start()
	waitLine(t, w, "connected", time.Minute)
	if code, body := scrape(t, murl+"/readyz"); code != 200 {
		t.Errorf("/readyz once connected: %d %q", code, body)
	}
	got := runJSON(t, time.Minute, coord, "run", "--algo", "admm", "--nats", url, "--workers", "1", "--job", "early1", "--json", "--quiet", model)
	sameResult(t, got, want)

	srv.Shutdown()
	waitLine(t, w, "NATS connection lost; reconnecting", time.Minute)
	if code, body := scrape(t, murl+"/readyz"); code != 503 || !strings.Contains(body, "NATS connection lost") {
		t.Errorf("/readyz while disconnected: %d %q", code, body)
	}
	srv = start()
	defer srv.Shutdown()
	waitLine(t, w, "NATS connection back", time.Minute)
	if code, body := scrape(t, murl+"/readyz"); code != 200 {
		t.Errorf("/readyz after reconnecting: %d %q", code, body)
	}
	got = runJSON(t, time.Minute, coord, "run", "--algo", "admm", "--nats", url, "--workers", "1", "--job", "early2", "--json", "--quiet", model)
	sameResult(t, got, want)
}

// raftMetrics checks a Raft group's --metrics: the member that leads says
// so and the others do not, and every member is ready (a leader, or a
// follower that knows its leader).
func raftMetrics(t *testing.T, group []*proc, leader *proc) {
	t.Helper()
	for _, p := range group {
		m := regexp.MustCompile(`metrics=(http://\S+)`).FindStringSubmatch(p.stderr())
		if m == nil {
			t.Errorf("%s printed no metrics=URL", p.name)
			continue
		}
		_, body := scrape(t, m[1]+"/metrics")
		want := 0.0
		if p == leader {
			want = 1
		}
		if s := series(body); s["ddrun_coordinator_leader"] != want || s["ddrun_ready"] != 1 {
			t.Errorf("%s: leader %v ready %v, want leader %v, ready", p.name, s["ddrun_coordinator_leader"], s["ddrun_ready"], want)
		}
		if code, body := scrape(t, m[1]+"/readyz"); code != 200 {
			t.Errorf("%s: /readyz %d %q", p.name, code, body)
		}
	}
}
