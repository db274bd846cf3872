package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/trace"
)

// run (over NATS with --local workers, and --sharded) writes a --trace of
// one row per iteration that ends on the --json result, and with
// --log-format json every line on its stderr, its workers' included, is
// one JSON object.
func TestRunTraceAndJSONLogs(t *testing.T) {
	coord, _ := binaries(t)
	uaiModel := genModel(t, coord, "potts", "--height", "10", "--width", "10", "--labels", "3", "--rho", "1", ".uai")
	ddx := convertDDX(t, coord, uaiModel)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"local", []string{"run", "--local", "--workers", "2", "--metrics", "127.0.0.1:0", uaiModel}},
		{"sharded", []string{"run", "--sharded", "--local", "--workers", "2", "--metrics", "127.0.0.1:0", ddx}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.csv")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, coord, append(c.args, "--json", "--max-iter", "120", "--trace", path, "--log-format", "json")...)
			cmd.WaitDelay = 5 * time.Second
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			var res struct {
				Iterations        int
				Seconds           float64
				Dual, Primal, Gap *float64
			}
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res.Dual == nil || res.Primal == nil || res.Gap == nil {
				t.Fatalf("result %s: %v", stdout.String(), err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := trace.Read(f)
			f.Close()
			if err != nil || len(rows) != res.Iterations {
				t.Fatalf("%d rows (%v), want one per iteration: %d", len(rows), err, res.Iterations)
			}
			for i, r := range rows {
				if r.Iteration != i+1 {
					t.Fatalf("row %d is iteration %d", i, r.Iteration)
				}
			}
			last := rows[len(rows)-1]
			if last.Seconds != res.Seconds || last.Dual != *res.Dual || last.Primal != *res.Primal || last.Gap != *res.Gap {
				t.Errorf("last row %+v, result %s", last, stdout.String())
			}
			msgs := jsonLogMessages(t, stderr.String())
			for _, want := range []string{"nats", "metrics", "progress", "traffic", "result", "worker connected"} {
				if msgs[want] == 0 {
					t.Errorf("no %q record on stderr: %v", want, msgs)
				}
			}
		})
	}
}

// coordinator serve under --log-format json: every line on its stderr is
// one JSON object, its --local-workers' lines included, and a job's trace
// has one row per iteration ending on its result (as run --trace's).
func TestServeJSONLogs(t *testing.T) {
	coord, _ := binaries(t)
	potts := "../examples/potts-20x20.uai"
	s := startServe(t, t.TempDir(), "--log-format", "json", "--local-workers", "1")
	want := runJSON(t, time.Minute, coord, "solve", "--algo", "admm", "--json", "--quiet", "--max-iter", "80", potts)
	id := s.submit(t, potts, "workers=1&max_iter=80&algo=admm") // run, and the service on workers, choose TRW-S on grids
	got := s.checkJob(t, id, want)
	code, b := s.call(t, "GET", s.url+"/v1/jobs/"+id+"/trace", "", nil)
	rows, err := trace.Read(bytes.NewReader(b))
	if code != 200 || err != nil || len(rows) != got.Iterations {
		t.Errorf("trace: %d, %d rows (%v), want one per iteration: %d", code, len(rows), err, got.Iterations)
	}
	s.stop(t)
	msgs := jsonLogMessages(t, s.stderr())
	for _, want := range []string{"nats", "http", "job queued", "job started", "job finished", "worker connected", "service stopping"} {
		if msgs[want] == 0 {
			t.Errorf("no %q record on stderr: %v", want, msgs)
		}
	}
}

// Under --log-format json the NATS retry warnings and the error after
// --connect-timeout are JSON records too (coordinator and worker), and so
// is the worker's metrics=URL line.
func TestJSONLogsNATSRetry(t *testing.T) {
	coord, worker := binaries(t)
	model := "../examples/potts-20x20.uai"
	dead := []string{"--nats", "nats://127.0.0.1:1", "--connect-timeout", "1", "--log-format", "json"}
	for _, c := range []struct {
		name, bin string
		args      []string
		wantMsgs  []string
	}{
		// --state-dir: the model is converted there before the connection (not beside it, in examples/).
		{"run", coord, append([]string{"run", "--workers", "1", "--metrics", "127.0.0.1:0", "--state-dir", t.TempDir(), model}, dead...), []string{"metrics", "NATS server not reachable yet; retrying"}},
		{"worker", worker, append([]string{"--metrics", "127.0.0.1:0"}, dead...), []string{"metrics", "NATS server not reachable yet; retrying"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stderr, err := runStderr(c.bin, c.args...)
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
				t.Fatalf("err %v, want exit 2: %s", err, stderr)
			}
			recs := jsonLogRecords(t, stderr)
			for _, w := range c.wantMsgs {
				if !slices.ContainsFunc(recs, func(r map[string]any) bool { return r["msg"] == w }) {
					t.Errorf("no record %q in %v", w, recs)
				}
			}
			last := recs[len(recs)-1]
			if msg := fmt.Sprint(last["msg"]); last["level"] != "ERROR" || !strings.Contains(msg, "connection refused (retried for 1s)") {
				t.Errorf("last record %v, want the error after retrying", last)
			}
		})
	}
}

// jsonLogRecords checks that every line of a --log-format json stderr is
// one JSON object and returns them.
func jsonLogRecords(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("stderr line is not JSON: %q", l)
		}
		recs = append(recs, rec)
	}
	return recs
}

// jsonLogMessages counts the records of a --log-format json stderr by
// message ("worker " before the messages of records with a worker field),
// every line of which must be one JSON object.
func jsonLogMessages(t *testing.T, stderr string) map[string]int {
	t.Helper()
	msgs := map[string]int{}
	for _, rec := range jsonLogRecords(t, stderr) {
		msg, _ := rec["msg"].(string)
		if _, ok := rec["worker"]; ok {
			msg = "worker " + msg
		}
		msgs[msg]++
	}
	return msgs
}
