package service

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/testlog"
	"github.com/ddrun/ddrun/solver"
)

const (
	aliceToken = "alice-0123456789abcdef"
	bobToken   = "bob-0123456789abcdef01"
)

// gateRunner plans every job on Workers workers, counts the Checks and
// Runs under way (the models they would hold in memory) and their peaks,
// and holds each Run until release is closed or its job is cancelled.
type gateRunner struct {
	workers             int
	release             chan struct{}
	checks, runs        atomic.Int32
	maxChecks, maxRuns  atomic.Int32
	checked, ran, ended atomic.Int32
}

func peak(cur, max *atomic.Int32) {
	n := cur.Add(1)
	for m := max.Load(); n > m && !max.CompareAndSwap(m, n); m = max.Load() {
	}
}

func (g *gateRunner) Check(ctx context.Context, model string, _ map[string]string) (Plan, error) {
	peak(&g.checks, &g.maxChecks)
	defer g.checks.Add(-1)
	time.Sleep(time.Millisecond) // a check takes a while: let them overlap if they may
	if _, err := os.Stat(model); err != nil {
		return Plan{}, err
	}
	g.checked.Add(1)
	return Plan{Workers: g.workers}, nil
}

func (g *gateRunner) Run(ctx context.Context, _, _ string, _ map[string]string, _ func(solver.Progress)) (solver.Result, json.RawMessage, error) {
	peak(&g.runs, &g.maxRuns)
	defer g.runs.Add(-1)
	g.ran.Add(1)
	defer g.ended.Add(1)
	select {
	case <-g.release:
		return solver.Result{Status: solver.Converged}, json.RawMessage(`{}`), nil
	case <-ctx.Done():
		return solver.Result{Status: solver.Interrupted}, json.RawMessage(`{}`), nil
	}
}

func newTestService(t *testing.T, r Runner, o Options) *Service {
	t.Helper()
	o.Runner = r
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	o.Tokens = []Token{{Name: "alice", Secret: []byte(aliceToken)}, {Name: "bob", Secret: []byte(bobToken)}}
	o.Params = []string{"max_iter"}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// do makes one request with token ("" none) and returns the status and
// body.
func do(t *testing.T, method, url, token string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("%s %s: 401 without WWW-Authenticate", method, url)
	}
	return resp.StatusCode, b
}

const tinyModel = "MARKOV\n1\n2\n1\n1\n2\n0 1\n"

// Without a token, or with a wrong one, every API route answers 401 and
// changes nothing (no job, no file); /healthz and /readyz stay open; the
// NATS twin answers 401 the same way.
func TestTokenRequired(t *testing.T) {
	g := &gateRunner{release: make(chan struct{})}
	close(g.release)
	dir := t.TempDir()
	var logs testlog.Buffer
	s := newTestService(t, g, Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	code, b := do(t, "POST", srv.URL+"/v1/jobs", aliceToken, []byte(tinyModel))
	if code != http.StatusCreated {
		t.Fatalf("submit with a token: %d %s", code, b)
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil || st.Client != "alice" {
		t.Fatalf("submit: %s (%v), want client alice", b, err)
	}
	for _, bad := range []string{"", "alice-0123456789abcdee", aliceToken + "x", "Basic " + aliceToken, strings.ToUpper(aliceToken)} {
		for _, c := range []struct{ method, path string }{
			{"POST", "/v1/jobs"}, {"GET", "/v1/jobs"}, {"GET", "/v1/jobs/" + st.ID}, {"DELETE", "/v1/jobs/" + st.ID},
			{"GET", "/v1/jobs/" + st.ID + "/result"}, {"GET", "/v1/jobs/" + st.ID + "/trace"}, {"GET", "/v2/nothing"},
		} {
			code, b := do(t, c.method, srv.URL+c.path, bad, []byte(tinyModel))
			if code != http.StatusUnauthorized || bytes.Contains(b, []byte(st.ID)) {
				t.Errorf("%s %s with token %q: %d %s, want 401", c.method, c.path, bad, code, b)
			}
		}
		rep := s.natsHandle(SubjectPrefix+"submit", fmt.Appendf(nil, `{"token":%q,"model":"TUFSS09WCjEKMgoxCjEKMgowIDEK"}`, bad), nil)
		if rep.Code != http.StatusUnauthorized {
			t.Errorf("NATS submit with token %q: %+v, want 401", bad, rep)
		}
		rep = s.natsHandle(SubjectPrefix+"cancel", fmt.Appendf(nil, `{"token":%q,"id":%q}`, bad, st.ID), nil)
		if rep.Code != http.StatusUnauthorized {
			t.Errorf("NATS cancel with token %q: %+v, want 401", bad, rep)
		}
	}
	if jobs := s.List(); len(jobs) != 1 || jobs[0].State == Cancelled {
		t.Errorf("after refused requests: %+v, want the one job, not cancelled", jobs)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "jobs")); len(ents) != 1 {
		t.Errorf("after refused requests the data directory holds %d entries, want 1", len(ents))
	}
	// 35 refused HTTP requests from one address and 5 of each NATS
	// operation: a log line for the first of each source, no more.
	if n := strings.Count(logs.String(), "refused"); n != 3 {
		t.Errorf("%d log lines of refused requests, want 3 (one per source):\n%s", n, logs.String())
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, b := do(t, "GET", srv.URL+p, "", nil); code != http.StatusOK {
			t.Errorf("GET %s without a token: %d %s", p, code, b)
		}
	}
	// A good token over NATS, and bob's over HTTP.
	rep := s.natsHandle(SubjectPrefix+"get", fmt.Appendf(nil, `{"token":%q,"id":%q}`, aliceToken, st.ID), nil)
	if rep.Code != http.StatusOK {
		t.Errorf("NATS get with a token: %+v", rep)
	}
	if code, b := do(t, "GET", srv.URL+"/v1/jobs", bobToken, nil); code != http.StatusOK || !bytes.Contains(b, []byte(st.ID)) {
		t.Errorf("list with bob's token: %d %s", code, b)
	}
}

// A service without tokens lets no request in.
func TestNoTokensNoEntry(t *testing.T) {
	s, err := New(Options{Dir: t.TempDir(), Runner: &gateRunner{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, tok := range []string{"", aliceToken} {
		if code, b := do(t, "GET", srv.URL+"/v1/jobs", tok, nil); code != http.StatusUnauthorized {
			t.Errorf("list with token %q on a service without tokens: %d %s", tok, code, b)
		}
	}
}

func TestParseTokens(t *testing.T) {
	toks, err := ParseTokens(strings.NewReader("# tokens\n\nalice "+aliceToken+"\n  "+bobToken+"  \n"), "tokens")
	if err != nil || len(toks) != 2 || toks[0].Name != "alice" || string(toks[0].Secret) != aliceToken ||
		!strings.HasPrefix(toks[1].Name, "client-") || len(toks[1].Name) != 15 || string(toks[1].Secret) != bobToken {
		t.Fatalf("ParseTokens: %+v, %v", toks, err)
	}
	for in, says := range map[string]string{
		"":                          "tokens: no token",
		"# only a comment\n":        "tokens: no token",
		"short\n":                   "tokens:1: token of 5 bytes",
		"\na b c\n":                 "tokens:2: want TOKEN or NAME TOKEN",
		"alice " + aliceToken[:10]:  "tokens:1: token of 10 bytes",
		strings.Repeat("x", 70<<10): "tokens: bufio.Scanner: token too long",
	} {
		_, err := ParseTokens(strings.NewReader(in), "tokens")
		if err == nil || !strings.Contains(err.Error(), says) || strings.Contains(err.Error(), aliceToken[:10]) {
			t.Errorf("ParseTokens(%.20q): %v, want an error saying %q that does not echo the token", in, err, says)
		}
	}
}

// A gzip upload that decompresses beyond MaxModel is refused (413) while
// it is read, whatever its format says, and leaves no job.
func TestGzipBombRefused(t *testing.T) {
	g := &gateRunner{release: make(chan struct{})}
	close(g.release)
	s := newTestService(t, g, Options{MaxModel: 1 << 20})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write([]byte("MARKOV\n1\n2\n1\n1\n2\n"))
	zw.Write(bytes.Repeat([]byte("0 "), 4<<20)) // 8 MiB of text in a few KiB
	zw.Close()
	for _, q := range []string{"", "?format=json", "?format=msgpack"} {
		code, b := do(t, "POST", srv.URL+"/v1/jobs"+q, aliceToken, bomb.Bytes())
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "decompresses to more than 1048576 bytes") {
			t.Errorf("a %d-byte gzip of 8 MiB%s: %d %s, want 413", bomb.Len(), q, code, b)
		}
	}
	if n := g.checked.Load(); n != 0 || len(s.List()) != 0 {
		t.Errorf("after refused bombs: %d checks, %d jobs", n, len(s.List()))
	}
	// Under the bound, a gzip upload is stored as sent.
	var ok bytes.Buffer
	zw = gzip.NewWriter(&ok)
	zw.Write([]byte(tinyModel))
	zw.Close()
	if code, b := do(t, "POST", srv.URL+"/v1/jobs", aliceToken, ok.Bytes()); code != http.StatusCreated {
		t.Errorf("a small gzip: %d %s", code, b)
	}
}

// 100 concurrent submissions of distributed jobs, none of which gets
// workers: all are queued, at most MaxChecks models are checked (held in
// memory) at once, at most MaxStarted jobs are started (holding their
// models while they wait), the rest stay queued on disk; a client past
// MaxClientJobs gets 429; cancelling them all ends them all.
func TestConcurrentSubmissionsBounded(t *testing.T) {
	g := &gateRunner{workers: 2, release: make(chan struct{})}
	s := newTestService(t, g, Options{MaxStarted: 3, MaxChecks: 2, MaxClientJobs: 100})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	var wg sync.WaitGroup
	codes := make([]int, 100)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = do(t, "POST", srv.URL+"/v1/jobs", aliceToken, []byte(tinyModel))
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusCreated {
			t.Fatalf("submission %d: %d", i, c)
		}
	}
	// Let the started ones reach Run.
	for deadline := time.Now().Add(10 * time.Second); g.ran.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	queued, running := s.Counts()
	if queued != 100 || running != 0 || g.ran.Load() != 3 || g.maxRuns.Load() != 3 || g.maxChecks.Load() > 2 || g.checked.Load() != 100 {
		t.Errorf("100 submissions: %d queued, %d running, %d runs started (peak %d, want 3), peak %d checks at once (want <= 2), %d checked",
			queued, running, g.ran.Load(), g.maxRuns.Load(), g.maxChecks.Load(), g.checked.Load())
	}
	// Alice is at her bound of 100 unfinished jobs; bob is not.
	if code, b := do(t, "POST", srv.URL+"/v1/jobs", aliceToken, []byte(tinyModel)); code != http.StatusTooManyRequests || !strings.Contains(string(b), "client alice has 100 unfinished jobs") {
		t.Errorf("alice's 101st job: %d %s, want 429", code, b)
	}
	if code, b := do(t, "POST", srv.URL+"/v1/jobs", bobToken, []byte(tinyModel)); code != http.StatusCreated {
		t.Errorf("bob's first job: %d %s", code, b)
	}
	for _, st := range s.List() {
		if _, err := s.Cancel(st.ID); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		q, r := s.Counts()
		if q+r == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after cancelling all: %d queued, %d running", q, r)
		}
	}
	if g.maxRuns.Load() != 3 {
		t.Errorf("peak runs at once %d, want 3", g.maxRuns.Load())
	}
}

// A job that was running when its service was killed runs again after a
// restart, but not after the maxCrashes-th such end: then it fails.
func TestCrashedJobNotRunForever(t *testing.T) {
	dir := t.TempDir()
	g := &gateRunner{release: make(chan struct{})}
	s := newTestService(t, g, Options{Dir: dir})
	st, err := s.Submit(context.Background(), strings.NewReader(tinyModel), "uai", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// What a kill leaves: the record says running.
	kill := func() {
		p := filepath.Join(dir, "jobs", st.ID, "job.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		r.State = Running
		b, _ = json.Marshal(r)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= maxCrashes; i++ {
		kill()
		s2, err := New(Options{Dir: dir, Runner: g})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := s2.Get(st.ID)
		s2.Close()
		want := i < maxCrashes
		if again := got.State != Failed; again != want {
			t.Errorf("after kill %d: %s (%s), want run again: %v", i, got.State, got.Error, want)
		}
	}
}

// ParseTokens on any input: a token list with every token long enough and
// named, or an error that never holds a line of the input past its name.
func FuzzParseTokens(f *testing.F) {
	for _, s := range []string{"", "#\n", aliceToken, "alice " + aliceToken + "\n" + bobToken, "a b c", "x\r\n" + bobToken + "\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		toks, err := ParseTokens(strings.NewReader(in), "f")
		if err != nil {
			if toks != nil {
				t.Fatalf("tokens %v with error %v", toks, err)
			}
			return
		}
		for _, tok := range toks {
			if len(tok.Secret) < MinTokenLen || tok.Name == "" {
				t.Fatalf("token %+v", tok)
			}
		}
	})
}
