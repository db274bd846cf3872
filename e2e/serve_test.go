package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ddrun/ddrun/service"
	"github.com/ddrun/ddrun/trace"
)

// serveProc is a running `coordinator serve` process.
type serveProc struct {
	url, nats string
	// token is the API token (the --token-file's first, else the one the
	// service generated into its data directory); client trusts the
	// --tls-cert (self-signed in the tests) when there is one.
	token  string
	client *http.Client
	cmd    *exec.Cmd
	mu     sync.Mutex
	log    bytes.Buffer // its stderr
	done   chan struct{}
}

func (s *serveProc) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// startServe starts `coordinator serve` on a free loopback port with an
// embedded NATS server and waits for its http= line (under --log-format
// json its "http" record); cleanup stops it.
func startServe(t *testing.T, dataDir string, args ...string) *serveProc {
	t.Helper()
	coord, _ := binaries(t)
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir}, args...)
	s := &serveProc{cmd: exec.Command(coord, args...), done: make(chan struct{}), client: &http.Client{Timeout: 30 * time.Second}}
	// The token comes from the data directory or --token-file, not from
	// the environment of the tests.
	s.cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "DDRUN_API_TOKEN=") })
	tokenFile := filepath.Join(dataDir, "api-token")
	if i := slices.Index(args, "--token-file"); i >= 0 {
		tokenFile = args[i+1]
	}
	if i := slices.Index(args, "--tls-cert"); i >= 0 {
		pem, err := os.ReadFile(args[i+1])
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		s.client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			var rec struct{ Msg, NATS, HTTP string }
			if json.Unmarshal([]byte(line), &rec) == nil {
				line = rec.Msg + "=" + rec.NATS + rec.HTTP // nats=URL, http=URL
			}
			if v, ok := strings.CutPrefix(line, "nats="); ok {
				s.nats = v
			}
			if v, ok := strings.CutPrefix(line, "http="); ok && s.url == "" {
				s.url = v
				close(ready)
			}
			s.mu.Unlock()
		}
	}()
	select {
	case <-ready:
	case <-s.done:
		t.Fatalf("serve ended before listening:\n%s", s.stderr())
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		t.Fatalf("serve did not print http= within 30s:\n%s", s.stderr())
	}
	t.Cleanup(func() { s.stop(t) })
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("the API token: %v", err)
	}
	if f := strings.Fields(strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)[0]); len(f) > 0 {
		s.token = f[len(f)-1]
	}
	return s
}

// stop ends the service with SIGTERM (kill after 10 s); it may be called
// twice.
func (s *serveProc) stop(t *testing.T) {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		t.Errorf("serve did not stop within 10s of SIGTERM")
	}
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("serve exit: %v\n%s", err, s.stderr())
	}
}

// call makes one HTTP request with the service's token and returns the
// status code and body.
func (s *serveProc) call(t *testing.T, method, url, ctype string, body []byte) (int, []byte) {
	t.Helper()
	return s.callAs(t, s.token, method, url, ctype, body)
}

// callAs makes one HTTP request with token ("": none).
func (s *serveProc) callAs(t *testing.T, token, method, url, ctype string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
}

// submit posts model with the query and returns the new job's id.
func (s *serveProc) submit(t *testing.T, model, query string) string {
	t.Helper()
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	code, b := s.call(t, "POST", s.url+"/v1/jobs?"+query, "", data)
	if code != http.StatusCreated {
		t.Fatalf("submit %s?%s: %d %s", filepath.Base(model), query, code, b)
	}
	var st service.Status
	decode(t, b, &st)
	return st.ID
}

// wait polls the job until it is in a final state.
func (s *serveProc) wait(t *testing.T, id string, timeout time.Duration) service.Status {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, b := s.call(t, "GET", s.url+"/v1/jobs/"+id, "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET job %s: %d %s", id, code, b)
		}
		var st service.Status
		decode(t, b, &st)
		switch st.State {
		case "done", "failed", "cancelled":
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after %v:\n%s", id, st.State, timeout, s.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRunning waits until job id runs and has reported an iteration.
func (s *serveProc) waitRunning(t *testing.T, id string, timeout time.Duration) service.Status {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, b := s.call(t, "GET", s.url+"/v1/jobs/"+id, "", nil)
		var st service.Status
		decode(t, b, &st)
		if st.State == "running" && st.Iteration > 0 {
			return st
		}
		if time.Now().After(deadline) || st.State != "queued" && st.State != "running" {
			t.Fatalf("job never ran: %s\n%s", b, s.stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkJob checks a done job: its result equals solve --json's on the same
// model and flags, its status and its trace's last row agree with it, and
// its UAI result holds the assignment.
func (s *serveProc) checkJob(t *testing.T, id string, want result) result {
	t.Helper()
	st := s.wait(t, id, 2*time.Minute)
	if st.State != "done" {
		t.Fatalf("job %s: %s (%s)\n%s", id, st.State, st.Error, s.stderr())
	}
	code, b := s.call(t, "GET", s.url+"/v1/jobs/"+id+"/result", "", nil)
	if code != http.StatusOK {
		t.Fatalf("result: %d %s", code, b)
	}
	var got result
	decode(t, b, &got)
	sameResult(t, got, want)
	if got.Iterations != want.Iterations || st.Iteration != got.Iterations || !sameFloat(st.Dual, got.Dual) || !sameFloat(st.Primal, got.Primal) {
		t.Errorf("status %+v, result %d iterations (solve: %d)", st, got.Iterations, want.Iterations)
	}
	code, b = s.call(t, "GET", s.url+"/v1/jobs/"+id+"/trace", "", nil)
	if code != http.StatusOK {
		t.Fatalf("trace: %d %s", code, b)
	}
	rows, err := trace.Read(bytes.NewReader(b))
	if err != nil || len(rows) == 0 {
		t.Fatalf("trace: %v, %d rows", err, len(rows))
	}
	last := rows[len(rows)-1]
	if last.Iteration != got.Iterations || last.Seconds != got.Seconds || !sameFloat(&last.Dual, got.Dual) || !sameFloat(&last.Primal, got.Primal) {
		t.Errorf("trace ends on %+v, result iterations %d dual %v primal %v", last, got.Iterations, deref(got.Dual), deref(got.Primal))
	}
	code, b = s.call(t, "GET", s.url+"/v1/jobs/"+id+"/result?format=uai", "", nil)
	if code != http.StatusOK || !strings.HasPrefix(string(b), "MPE\n"+fmt.Sprint(len(got.Assignment))+" ") {
		t.Errorf("result?format=uai: %d %.60q", code, b)
	}
	return got
}

func sameFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// The HTTP API end to end on a real service with its embedded NATS: local
// and distributed jobs equal solve's results, traces end on them, bad input
// is a 400, unknown ids 404, a long job is cancelled, the NATS
// request/reply path answers, and a restarted service lists the jobs.
func TestServe(t *testing.T) {
	coord, worker := binaries(t)
	dataDir := t.TempDir()
	// Unsealed (no job key), for the NATS request/reply subtest's plain
	// client: the service and its workers run --insecure.
	t.Setenv("DDRUN_JOB_KEY", "")
	s := startServe(t, dataDir, "--quiet", "--insecure")
	potts := "../examples/potts-20x20.uai"
	logic := "../examples/logic-small.json"
	var done []string

	t.Run("local", func(t *testing.T) {
		for _, c := range []struct {
			model, query string
			flags        []string
		}{
			{potts, "max_iter=200&threads=2", []string{"--max-iter", "200", "--threads", "2"}},
			{logic, "algo=subgradient&max_iter=300", []string{"--algo", "subgradient", "--max-iter", "300"}},
			{potts, "algo=trws&max_iter=50", []string{"--algo", "trws", "--max-iter", "50"}},
		} {
			want := runJSON(t, time.Minute, coord, append(append([]string{"solve", "--json", "--quiet"}, c.flags...), c.model)...)
			id := s.submit(t, c.model, c.query)
			s.checkJob(t, id, want)
			done = append(done, id)
		}
	})

	// Without the token, or with a wrong one, every route but the probes
	// answers 401, over HTTP and NATS, and nothing changes: the jobs and
	// the data directory are as they were. The generated token is the
	// owner's only.
	t.Run("unauthorized", func(t *testing.T) {
		if fi, err := os.Stat(filepath.Join(dataDir, "api-token")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("generated token file: %v, %v; want mode 0600", fi, err)
		}
		if !strings.Contains(s.stderr(), "token="+filepath.Join(dataDir, "api-token")) {
			t.Errorf("serve does not say where its token is:\n%s", s.stderr())
		}
		_, before := s.call(t, "GET", s.url+"/v1/jobs", "", nil)
		ents, _ := os.ReadDir(filepath.Join(dataDir, "jobs"))
		model, _ := os.ReadFile(potts)
		for _, tok := range []string{"", "0123456789abcdef0123456789abcdef", s.token[:len(s.token)-1] + "x"} {
			for _, c := range []struct{ method, path string }{
				{"POST", "/v1/jobs"}, {"GET", "/v1/jobs"}, {"GET", "/v1/jobs/" + done[0]}, {"DELETE", "/v1/jobs/" + done[0]},
				{"GET", "/v1/jobs/" + done[0] + "/result"}, {"GET", "/v1/jobs/" + done[0] + "/trace"}, {"GET", "/metrics"},
			} {
				if code, b := s.callAs(t, tok, c.method, s.url+c.path, "", model); code != http.StatusUnauthorized {
					t.Errorf("%s %s with token %q: %d %.100s, want 401", c.method, c.path, tok, code, b)
				}
			}
		}
		for _, p := range []string{"/healthz", "/readyz"} {
			if code, b := s.callAs(t, "", "GET", s.url+p, "", nil); code != http.StatusOK {
				t.Errorf("GET %s without a token: %d %s", p, code, b)
			}
		}
		nc, err := nats.Connect(s.nats)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		for op, req := range map[string]string{"submit": `{"model":"TUFSS09WCjEKMgoxCjEKMgowIDEK"}`, "cancel": `{"id":"` + done[0] + `"}`, "list": `{"token":"wrong-wrong-wrong-wrong"}`} {
			m, err := nc.Request("ddrun.api.jobs."+op, []byte(req), 30*time.Second)
			var rep service.NATSReply
			if err != nil || json.Unmarshal(m.Data, &rep) != nil || rep.Code != http.StatusUnauthorized || len(rep.Body) != 0 {
				t.Errorf("NATS %s without a valid token: %v %+v, want 401", op, err, rep)
			}
		}
		_, after := s.call(t, "GET", s.url+"/v1/jobs", "", nil)
		ents2, _ := os.ReadDir(filepath.Join(dataDir, "jobs"))
		if !bytes.Equal(before, after) || len(ents) != len(ents2) {
			t.Errorf("refused requests changed the jobs:\n%s\n%s", before, after)
		}
		// threads beyond the machine's CPUs is refused, not run.
		if code, b := s.call(t, "POST", s.url+"/v1/jobs?threads=100000", "", model); code != http.StatusBadRequest || !strings.Contains(string(b), "threads=100000: at most") {
			t.Errorf("threads=100000: %d %s, want 400", code, b)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		code, b := s.call(t, "GET", s.url+"/metrics", "", nil)
		if code != 200 {
			t.Fatalf("GET /metrics: %d %s", code, b)
		}
		for _, series := range []string{"ddrun_jobs_queued 0", "ddrun_jobs_running 0", "ddrun_transport_sent_bytes_total", "ddrun_ready 1"} {
			if !strings.Contains(string(b), series) {
				t.Errorf("/metrics has no %q", series)
			}
		}
	})

	t.Run("distributed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for i := range 2 {
			// They may read the jobs' converted models where the service
			// keeps them (the search's workers read the whole file).
			w := exec.CommandContext(ctx, worker, "--nats", s.nats, "--name", fmt.Sprintf("sw%d", i), "--threads", "1", "--quiet", "--insecure",
				"--state-dir", t.TempDir(), "--model-root", dataDir)
			w.WaitDelay = 5 * time.Second
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				w.Process.Signal(os.Interrupt)
				w.Wait()
			}()
		}
		// A job on workers is sharded, as run's: the service converts the
		// model into the job's directory at submission and holds none of it.
		want := runJSON(t, time.Minute, coord, "solve", "--algo", "admm", "--json", "--quiet", "--max-iter", "300", potts)
		id := s.submit(t, potts, "workers=2&max_iter=300&algo=admm")
		got := s.checkJob(t, id, want)
		if got.Workers != 2 {
			t.Errorf("result says %d workers", got.Workers)
		}
		_, b := s.call(t, "GET", s.url+"/v1/jobs/"+id+"/result", "", nil)
		var shape struct {
			Algo    string          `json:"algo"`
			Sharded json.RawMessage `json:"sharded"`
		}
		decode(t, b, &shape)
		if shape.Algo != "admm" || len(shape.Sharded) == 0 {
			t.Errorf("distributed job: algo %q, sharded %s: want a sharded admm run", shape.Algo, shape.Sharded)
		}
		done = append(done, id)

		// Without an algorithm, the job chooses as run does: TRW-S on
		// parts for a pairwise grid, reaching solve's TRW-S bound.
		trws := runJSON(t, time.Minute, coord, "solve", "--algo", "trws", "--json", "--quiet", "--max-iter", "100", "--tol", "0", potts)
		id = s.submit(t, potts, "workers=2&max_iter=100&tol=0")
		if st := s.wait(t, id, 2*time.Minute); st.State != "done" {
			t.Fatalf("default job on workers %s: %s (%s)\n%s", id, st.State, st.Error, s.stderr())
		}
		_, b = s.call(t, "GET", s.url+"/v1/jobs/"+id+"/result", "", nil)
		var dt struct {
			result
			Algo    string          `json:"algo"`
			Sharded json.RawMessage `json:"sharded"`
		}
		decode(t, b, &dt)
		// Both duals bound the MAP score: the primal is below each, and
		// the parts' bound is near the whole model's.
		if dt.Algo != "trws" || len(dt.Sharded) == 0 || dt.Dual == nil || trws.Dual == nil || dt.Primal == nil || len(dt.Assignment) == 0 ||
			*dt.Primal > *dt.Dual+1e-9*math.Abs(*dt.Dual) || *dt.Primal > *trws.Dual+1e-9*math.Abs(*trws.Dual) ||
			math.Abs(*dt.Dual-*trws.Dual) > 1e-3*math.Abs(*trws.Dual) {
			t.Errorf("default job on workers: algo %q sharded %s dual %v primal %v (%d states); solve --algo trws: dual %v",
				dt.Algo, dt.Sharded, deref(dt.Dual), deref(dt.Primal), len(dt.Assignment), deref(trws.Dual))
		}
		done = append(done, id)

		// A sharded job is cancelled as a local one is: its workers stop,
		// and its result is the best so far (TRW-S on parts, and DD).
		long := genModel(t, coord, "potts", "--height", "30", "--width", "30", "--labels", "4", "--rho", "0.5", ".uai")
		for _, algo := range []string{"trws", "admm"} {
			id := s.submit(t, long, "workers=2&tol=0&max_iter=100000000&time_limit=2m&algo="+algo)
			s.waitRunning(t, id, time.Minute)
			if code, b := s.call(t, "DELETE", s.url+"/v1/jobs/"+id, "", nil); code != http.StatusAccepted {
				t.Fatalf("DELETE: %d %s", code, b)
			}
			if st := s.wait(t, id, 30*time.Second); st.State != "cancelled" {
				t.Fatalf("%s on workers after DELETE: %+v", algo, st)
			}
			code, b := s.call(t, "GET", s.url+"/v1/jobs/"+id+"/result", "", nil)
			var r result
			if code != http.StatusOK || json.Unmarshal(b, &r) != nil || r.Status != "interrupted" || r.Primal == nil || r.Dual == nil || *r.Primal > *r.Dual {
				t.Errorf("result of the cancelled %s job on workers: %d %.300s, want the best so far, status interrupted", algo, code, b)
			}
		}

		// exact=true on workers: branch and bound with the workers
		// searching subtrees (dsearch), certifying what solve --exact does.
		grid := genModel(t, coord, "ising", "--height", "5", "--width", "5", "--rho", "3", "--seed", "4", ".uai")
		want = runJSON(t, time.Minute, coord, "solve", "--exact", "--algo", "admm", "--json", "--quiet", "--max-iter", "100", grid)
		id = s.submit(t, grid, "exact=true&workers=2&algo=admm&max_iter=100")
		if st := s.wait(t, id, 2*time.Minute); st.State != "done" {
			t.Fatalf("exact job %s: %s (%s)\n%s", id, st.State, st.Error, s.stderr())
		}
		code, b := s.call(t, "GET", s.url+"/v1/jobs/"+id+"/result", "", nil)
		if code != http.StatusOK {
			t.Fatalf("exact result: %d %s", code, b)
		}
		got = result{}
		decode(t, b, &got)
		if want.Status != "optimal" || got.Status != "optimal" || got.Primal == nil || want.Primal == nil ||
			math.Abs(*got.Primal-*want.Primal) > 1e-9*math.Max(1, math.Abs(*want.Primal)) || got.Workers < 1 {
			t.Errorf("exact on workers: %s primal %v on %d workers; solve --exact: %s primal %v", got.Status, deref(got.Primal), got.Workers, want.Status, deref(want.Primal))
		}
		done = append(done, id)
	})

	t.Run("bad-input", func(t *testing.T) {
		model, _ := os.ReadFile(potts)
		for _, c := range []struct {
			name, method, path, ctype string
			body                      []byte
			code                      int
			says                      string
		}{
			{"garbage model", "POST", "/v1/jobs", "", []byte("garbage"), 400, "model.uai:1"},
			{"truncated model", "POST", "/v1/jobs", "", model[:len(model)/2], 400, "model.uai"},
			{"json that is not a model", "POST", "/v1/jobs", "application/json", []byte(`{"cards":"x"}`), 400, "model.json"},
			{"empty body", "POST", "/v1/jobs?format=uai", "", nil, 400, "empty"},
			{"bad format", "POST", "/v1/jobs?format=xls", "", model, 400, "format"},
			{"bad number", "POST", "/v1/jobs?max_iter=abc", "", model, 400, "max_iter"},
			{"out of range", "POST", "/v1/jobs?max_iter=-3", "", model, 400, "max_iter"},
			{"unknown algorithm", "POST", "/v1/jobs?algo=magic", "", model, 400, "algo"},
			{"unknown parameter", "POST", "/v1/jobs?iters=3", "", model, 400, "iters"},
			{"repeated parameter", "POST", "/v1/jobs?tol=1&tol=2", "", model, 400, "tol"},
			{"negative workers", "POST", "/v1/jobs?workers=-1", "", model, 400, "workers"},
			{"cmp on workers", "POST", "/v1/jobs?algo=cmp&workers=2", "", model, 400, "cmp"},
			{"bad result format", "GET", "/v1/jobs/" + done[0] + "/result?format=xml", "", nil, 400, "format"},
			{"unknown id", "GET", "/v1/jobs/j0123456789abcdef", "", nil, 404, "no such job"},
			{"malformed id", "GET", "/v1/jobs/..%2f..%2fetc", "", nil, 404, ""},
			{"unknown id result", "GET", "/v1/jobs/j0123456789abcdef/result", "", nil, 404, "no such job"},
			{"unknown id trace", "GET", "/v1/jobs/j0123456789abcdef/trace", "", nil, 404, "no such job"},
			{"unknown id cancel", "DELETE", "/v1/jobs/j0123456789abcdef", "", nil, 404, "no such job"},
			{"unknown route", "GET", "/v2/jobs", "", nil, 404, "no such route"},
		} {
			t.Run(c.name, func(t *testing.T) {
				code, b := s.call(t, c.method, s.url+c.path, c.ctype, c.body)
				var e struct{ Error string }
				if code != c.code || json.Unmarshal(b, &e) != nil || e.Error == "" || !strings.Contains(e.Error, c.says) {
					t.Errorf("%s %s: %d %s, want %d with an error naming %q", c.method, c.path, code, b, c.code, c.says)
				}
			})
		}
	})

	t.Run("cancel", func(t *testing.T) {
		long := genModel(t, coord, "potts", "--height", "30", "--width", "30", "--labels", "4", "--rho", "0.5", ".uai")
		id := s.submit(t, long, "algo=subgradient&tol=0&max_iter=100000000&time_limit=2m&threads=1")
		if st := s.waitRunning(t, id, time.Minute); st.ETA == nil || *st.ETA <= 0 {
			t.Errorf("running job without an estimate: %+v", st)
		}
		if code, b := s.call(t, "GET", s.url+"/v1/jobs/"+id+"/result", "", nil); code != http.StatusConflict {
			t.Errorf("result of a running job: %d %s, want 409", code, b)
		}
		if code, b := s.call(t, "DELETE", s.url+"/v1/jobs/"+id, "", nil); code != http.StatusAccepted {
			t.Fatalf("DELETE: %d %s", code, b)
		}
		st := s.wait(t, id, 30*time.Second)
		if st.State != "cancelled" {
			t.Fatalf("after DELETE: %+v", st)
		}
		code, b := s.call(t, "GET", s.url+"/v1/jobs/"+id+"/result", "", nil)
		var r result
		if code != http.StatusOK || json.Unmarshal(b, &r) != nil || r.Status != "interrupted" {
			t.Errorf("result of the cancelled job: %d %.200s, want the best so far, status interrupted", code, b)
		}
	})

	t.Run("nats", func(t *testing.T) {
		nc, err := nats.Connect(s.nats)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		ask := func(op string, req map[string]any) (int, json.RawMessage, string) {
			if _, ok := req["token"]; !ok {
				req["token"] = s.token
			}
			data, _ := json.Marshal(req)
			m, err := nc.Request("ddrun.api.jobs."+op, data, 30*time.Second)
			if err != nil {
				t.Fatalf("request %s: %v", op, err)
			}
			var rep struct {
				Code  int
				Error string
				Body  json.RawMessage
				Text  string
			}
			decode(t, m.Data, &rep)
			return rep.Code, rep.Body, rep.Error + rep.Text
		}
		model, _ := os.ReadFile(logic)
		code, body, msg := ask("submit", map[string]any{"model": model, "params": map[string]string{"max_iter": "150"}})
		if code != http.StatusCreated {
			t.Fatalf("submit: %d %s", code, msg)
		}
		var st service.Status
		decode(t, body, &st)
		s.wait(t, st.ID, time.Minute)
		want := runJSON(t, time.Minute, coord, "solve", "--json", "--quiet", "--max-iter", "150", logic)
		code, body, msg = ask("result", map[string]any{"id": st.ID})
		var got result
		if code != http.StatusOK {
			t.Fatalf("result: %d %s", code, msg)
		}
		decode(t, body, &got)
		sameResult(t, got, want)
		if code, _, msg = ask("get", map[string]any{"id": "j0123456789abcdef"}); code != 404 || !strings.Contains(msg, "no such job") {
			t.Errorf("get of an unknown id: %d %s", code, msg)
		}
		if code, _, msg = ask("submit", map[string]any{"model": []byte("garbage")}); code != 400 {
			t.Errorf("submit of garbage: %d %s", code, msg)
		}
		if code, _, msg = ask("trace", map[string]any{"id": st.ID}); code != 200 || !strings.HasPrefix(msg, strings.Join(trace.Columns, ",")) {
			t.Errorf("trace: %d %.100s", code, msg)
		}
		done = append(done, st.ID)
	})

	t.Run("restart", func(t *testing.T) {
		s.stop(t)
		s2 := startServe(t, dataDir, "--quiet", "--insecure")
		code, b := s2.call(t, "GET", s2.url+"/v1/jobs", "", nil)
		var list struct{ Jobs []service.Status }
		if code != 200 {
			t.Fatalf("list: %d %s", code, b)
		}
		decode(t, b, &list)
		states := map[string]string{}
		for _, j := range list.Jobs {
			states[j.ID] = string(j.State)
		}
		for _, id := range done {
			if states[id] != "done" {
				t.Errorf("after a restart job %s is %q", id, states[id])
			}
		}
		if code, b := s2.call(t, "GET", s2.url+"/v1/jobs/"+done[0]+"/result", "", nil); code != 200 || !bytes.Contains(b, []byte(`"assignment"`)) {
			t.Errorf("result after a restart: %d %.100s", code, b)
		}
	})
}
