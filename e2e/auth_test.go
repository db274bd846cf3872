package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/ddrun/ddrun/transport"
)

// authConf is the least-privilege NATS configuration of docs/security.md.
const authConf = "../deploy/nats/ddrun-auth.conf"

const (
	coordPassword  = "coord-secret"
	workerPassword = "worker-secret"
)

// authServer starts an embedded NATS server from authConf, its passwords
// from the environment as the file expects.
func authServer(t *testing.T) *transport.Embedded {
	t.Helper()
	t.Setenv("DDRUN_COORDINATOR_PASSWORD", coordPassword)
	t.Setenv("DDRUN_WORKER_PASSWORD", workerPassword)
	t.Setenv("DDRUN_OTHER_PASSWORD", "other-secret")
	srv, err := transport.StartEmbedded(transport.EmbeddedOptions{ConfigFile: authConf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// keyFile writes a fresh random job key (hex) and returns its path.
func keyFile(t *testing.T) string {
	t.Helper()
	var k [32]byte
	_, _ = rand.Read(k[:])
	p := filepath.Join(t.TempDir(), "job.key")
	if err := os.WriteFile(p, []byte(hex.EncodeToString(k[:])+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitLine waits until p writes a line containing s to stderr, and
// returns it.
func waitLine(t *testing.T, p *proc, s string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line := <-p.lines:
			if strings.Contains(line, s) {
				return line
			}
		case <-p.done:
			t.Fatalf("%s exited before a line with %q\n%s", p.name, s, p.stderr())
		case <-deadline:
			t.Fatalf("%s: no line with %q within %v\n%s", p.name, s, timeout, p.stderr())
		}
	}
}

// With deploy/nats/ddrun-auth.conf and a job key: workers with a wrong
// password or none are refused by the server and exit with a one-line
// error, a worker with the wrong job key is not heard, and the job
// completes on the others with the undisturbed result. On the server, no
// connection is without credentials and only ddrun's users of the right
// role hold subscriptions to the job's subjects; a third user (another
// account) hears nothing and a worker user may not subscribe to ddrun.>.
func TestAuthRefusesWrongCredentials(t *testing.T) {
	coord, worker := binaries(t)
	srv := authServer(t)
	model, flags, want := faultModel(t, coord, faultRounds)
	key := keyFile(t)
	natsAs := func(user, password string) []string {
		return []string{"--nats", srv.URL(), "--nats-user", user, "--nats-password", password}
	}
	startWorker := func(name string, cred []string, extra ...string) *proc {
		args := append(append(cred, "--name", name, "--threads", "1"), extra...)
		return startProc(t, name, worker, args...)
	}
	// w0 has a user of its own (only w0's subjects), w1 the shared one.
	startWorker("w0", natsAs("ddrun-worker-w0", workerPassword), "--job-key-file", key)
	startWorker("w1", natsAs("ddrun-worker", workerPassword), "--job-key-file", key)
	wrongKey := startWorker("wrongkey", natsAs("ddrun-worker", workerPassword), "--job-key-file", keyFile(t))
	refused := []*proc{
		startWorker("badpass", natsAs("ddrun-worker", "guess"), "--job-key-file", key),
		startWorker("nocreds", []string{"--nats", srv.URL()}, "--job-key-file", key),
		startWorker("notw0", natsAs("ddrun-worker-w0", "guess"), "--job-key-file", key),
	}
	for _, p := range refused {
		err := p.wait(t, 20*time.Second)
		var ee interface{ ExitCode() int }
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%s: exit %v, want 2\n%s", p.name, err, p.stderr())
		}
		if lines := strings.Split(strings.TrimSpace(p.stderr()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "authorization violation") {
			t.Errorf("%s: stderr %q, want one line with the authorization violation", p.name, p.stderr())
		}
	}

	// Spies: another account's user on ddrun.>, a worker user on ddrun.>.
	heard := make(chan string, 16)
	other := dial(t, srv.URL(), nats.UserInfo("other", "other-secret"))
	if _, err := other.Subscribe("ddrun.>", func(m *nats.Msg) { heard <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	denied := make(chan error, 4)
	spy := dial(t, srv.URL(), nats.UserInfo("ddrun-worker", workerPassword),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { denied <- err }))
	if _, err := spy.Subscribe("ddrun.>", func(m *nats.Msg) { heard <- "worker user: " + m.Subject }); err != nil {
		t.Fatal(err)
	}
	for _, nc := range []*nats.Conn{other, spy} {
		_ = nc.Flush()
	}
	select {
	case err := <-denied:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("worker user subscribing to ddrun.>: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a worker user subscribed to ddrun.> without a permissions violation")
	}

	// --sharded=false: the parts travel over NATS, sealed with the job key.
	run := startProc(t, "coordinator", coord, append(append(append([]string{"run", "--sharded=false"}, natsAs("ddrun-coordinator", coordPassword)...),
		"--workers", "2", "--job", "auth", "--job-key-file", key), append(flags, model)...)...)
	waitLine(t, run, "iter=", time.Minute)
	// Mid-run, on the server.
	checkSubscribers(t, srv.Server(), map[string][]string{
		"ddrun.auth-e1.assign.w0":    {"ddrun-worker-w0"},
		"ddrun.auth-e1.step.w0":      {"ddrun-worker-w0"},
		"ddrun.auth-e1.assign.w1":    {"ddrun-worker"},
		"ddrun.auth-e1.step.w1":      {"ddrun-worker"},
		"ddrun.auth-e1.report.w0":    {"ddrun-coordinator"},
		"ddrun.auth-e1.heartbeat.w1": {"ddrun-coordinator"},
		"ddrun.control":              {"ddrun-coordinator"},
	})
	if err := run.wait(t, 2*time.Minute); err != nil {
		t.Fatalf("run: %v\n%s", err, run.stderr())
	}
	got := run.result(t)
	sameResult(t, got, want)
	if got.Workers != 2 {
		t.Errorf("result says %d workers", got.Workers)
	}
	if !strings.Contains(run.stderr(), "not authentic") {
		t.Errorf("the coordinator did not warn about the wrong key's messages:\n%s", run.stderr())
	}
	if strings.Contains(wrongKey.stderr(), "job assigned") {
		t.Errorf("the worker with the wrong key was given a part:\n%s", wrongKey.stderr())
	}
	select {
	case s := <-heard:
		t.Errorf("a spy heard %s", s)
	default:
	}
	// And a client without credentials does not get in.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if tr, err := transport.NewNATS(ctx, transport.NATSOptions{URL: srv.URL()}); err == nil {
		tr.Close()
		t.Error("a client without credentials connected")
	}
}

// dial connects a plain NATS client, closed when the test ends.
func dial(t *testing.T, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// checkSubscribers asserts on the server that every connection is
// authenticated and that the subscriptions matching each literal subject
// belong to connections of exactly the users listed.
func checkSubscribers(t *testing.T, srv *server.Server, want map[string][]string) {
	t.Helper()
	cz, err := srv.Connz(&server.ConnzOptions{Username: true, Limit: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	users := map[uint64]string{}
	for _, c := range cz.Conns {
		if c.AuthorizedUser == "" {
			t.Errorf("connection %d (%s) has no user", c.Cid, c.Name)
		}
		users[c.Cid] = c.AuthorizedUser
	}
	for subject, allowed := range want {
		// Only ddrun's account: another account's "ddrun.x" is another
		// subject.
		sz, err := srv.Subsz(&server.SubszOptions{Subscriptions: true, Account: "DDRUN", Test: subject, Limit: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		// Who subscribes, not how many times (a coordinator listens to
		// its reports for claims and for iterations).
		var got []string
		for _, s := range sz.Subs {
			if u := users[s.Cid]; !slices.Contains(got, u) {
				got = append(got, u)
			}
		}
		slices.Sort(got)
		if strings.Join(got, ",") != strings.Join(allowed, ",") {
			t.Errorf("%s: subscribed by %q, want %q", subject, got, allowed)
		}
	}
}

// forgedStep and forgedReport look like the job protocol's step and report
// (cluster/wire.go), as far as a forger can tell.
type forgedStep struct {
	Iter int  `msgpack:"i"`
	Stop bool `msgpack:"stop"`
}

type forgedReport struct {
	Iter int     `msgpack:"i"`
	Dual float64 `msgpack:"d"`
}

type forgedHello struct {
	Name    string `msgpack:"name"`
	Threads int    `msgpack:"threads"`
}

// On an open server shared with an attacker, a job key still keeps the
// model secret and the job's course and result unforgeable: a client
// listening on ddrun.> cannot decode the model parts, and its forged
// Stops, reports and worker announcements, and the sealed messages it
// replays, do not change the result. (Without the key the same forger
// reads every step and sends it back edited to say Stop, with the next
// sequence number: the workers stop and the job never ends.)
func TestJobKeyIgnoresForgeries(t *testing.T) {
	coord, worker := binaries(t)
	srv, err := transport.StartEmbedded(transport.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	model, flags, want := faultModel(t, coord, faultRounds)
	key := keyFile(t)
	for _, name := range []string{"k0", "k1"} {
		startProc(t, name, worker, "--nats", srv.URL(), "--name", name, "--threads", "1", "--quiet", "--job-key-file", key)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr, err := transport.NewNATS(ctx, transport.NATSOptions{URL: srv.URL(), Name: "forger", PendingMsgs: 1 << 20, PendingBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var (
		mu                 sync.Mutex
		assigns, decodable int
		forged, replayed   int
		last               = map[string]time.Time{}
		own                = map[string]bool{} // what the forger wrote, which it hears too
	)
	forge := func(subject string, h transport.Header, body any) {
		data, err := transport.Encode(h, body)
		if err == nil && tr.Publish(context.Background(), subject, data) == nil {
			forged++
			own[string(data)] = true
		}
	}
	_, err = tr.Subscribe("ddrun.>", func(subject string, data []byte) {
		mu.Lock()
		defer mu.Unlock()
		if own[string(data)] {
			return
		}
		h, raw, err := transport.Decode(data)
		if err == nil {
			decodable++
		}
		tok := strings.Split(subject, ".")
		if len(tok) != 4 {
			return
		}
		job, kind, w := tok[1], tok[2], tok[3]
		if kind == "assign" {
			assigns++
			return
		}
		// A message it can read, the forger edits: the step says Stop.
		var body map[string]any
		if err == nil && kind == "step" && transport.DecodeBody(raw, &body) == nil {
			body["stop"] = true
			h.Seq++
			forge(subject, h, body)
		}
		if time.Since(last[subject]) < 20*time.Millisecond {
			return
		}
		last[subject] = time.Now()
		// Replay what was just said, then forge.
		if tr.Publish(context.Background(), subject, data) == nil {
			replayed++
		}
		const big = 1 << 40
		switch kind {
		case "step":
			forge(subject, transport.Header{Job: job, Epoch: 1, Iter: big, Kind: 66, From: "coordinator", Seq: big}, forgedStep{Iter: big, Stop: true})
		case "report":
			forge(subject, transport.Header{Job: job, Epoch: 1, Iter: big, Kind: 67, From: w, Seq: big}, forgedReport{Iter: big, Dual: -1e9})
		case "heartbeat":
			forge("ddrun.control", transport.Header{Kind: 1, From: "ghost", Seq: big}, forgedHello{Name: "ghost", Threads: 1})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// --sharded=false: the parts travel over NATS, where the forger sees them.
	run := startProc(t, "coordinator", coord, append(append([]string{"run", "--sharded=false", "--nats", srv.URL(), "--workers", "2", "--job", "forged",
		"--job-key-file", key, "--quiet"}, flags...), model)...)
	if err := run.wait(t, 2*time.Minute); err != nil {
		t.Fatalf("run: %v\n%s", err, run.stderr())
	}
	got := run.result(t)
	sameResult(t, got, want)
	mu.Lock()
	defer mu.Unlock()
	if assigns < 2 || decodable != 0 {
		t.Errorf("the listener saw %d model parts and decoded %d messages", assigns, decodable)
	}
	if forged < 10 || replayed < 10 {
		t.Errorf("only %d forged and %d replayed messages: the test did not test", forged, replayed)
	}
	if !strings.Contains(run.stderr(), "not authentic") {
		t.Errorf("the coordinator did not warn about the forgeries:\n%s", run.stderr())
	}
	t.Logf("%d model parts unreadable, %d forged and %d replayed messages ignored", assigns, forged, replayed)
}

// Authenticated by default: without a job key (and without --insecure) a
// worker or a run against a NATS server refuses to start, exit 2 with one
// line that says how to get a key; `run --local` draws a key for the
// workers it starts and its result is not insecure; `run --insecure` warns
// at start and says "insecure": true in its result.
func TestNoJobKeyRefused(t *testing.T) {
	coord, worker := binaries(t)
	t.Setenv("DDRUN_JOB_KEY", "")
	srv := startNATS(t, false)
	model := genModel(t, coord, "potts", "--height", "8", "--width", "8", "--labels", "3", "--rho", "1", ".uai")
	for _, c := range []struct {
		bin  string
		args []string
	}{
		{worker, []string{"--nats", srv.URL(), "--name", "nokey"}},
		{coord, []string{"run", "--nats", srv.URL(), "--workers", "1", model}},
		{coord, []string{"run", "--workers", "1", model}}, // an embedded server that outside workers join
	} {
		stderr, err := runStderr(c.bin, c.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || strings.Count(stderr, "no job key") != 1 ||
			!strings.Contains(stderr, "openssl rand -hex 32") || !strings.Contains(stderr, "--insecure") || strings.Contains(stderr, "job assigned") {
			t.Errorf("%s %v without a key: %v\n%s", filepath.Base(c.bin), c.args, err, stderr)
		}
	}
	flags := []string{"--json", "--max-iter", "50", "--workers", "2", "--local", model}
	got := runJSON(t, time.Minute, coord, append([]string{"run"}, flags...)...)
	if got.Insecure || got.Workers != 2 {
		t.Errorf("run --local: insecure %v on %d workers", got.Insecure, got.Workers)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, coord, append([]string{"run", "--insecure"}, flags...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run --insecure: %v\n%s", err, stderr.String())
	}
	var insecure result
	if err := json.Unmarshal([]byte(stdout.String()), &insecure); err != nil {
		t.Fatal(err)
	}
	if !insecure.Insecure || !strings.Contains(stderr.String(), "insecure: no job key") {
		t.Errorf("run --insecure: insecure %v in the result\n%s", insecure.Insecure, stderr.String())
	}
}
