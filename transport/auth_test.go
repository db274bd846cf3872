package transport

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// AuthConfig is the least-privilege configuration that docs/security.md
// documents and the e2e tests use.
const authConfig = "../deploy/nats/ddrun-auth.conf"

// startAuthServer starts an embedded server from authConfig with the
// passwords it reads from the environment.
func startAuthServer(t *testing.T, opts EmbeddedOptions) *Embedded {
	t.Helper()
	opts.ConfigFile = authConfig
	t.Setenv("DDRUN_COORDINATOR_PASSWORD", "coord-secret")
	t.Setenv("DDRUN_WORKER_PASSWORD", "worker-secret")
	t.Setenv("DDRUN_OTHER_PASSWORD", "other-secret")
	return startServer(t, opts)
}

// The users of deploy/nats/ddrun-auth.conf can do what their role needs
// and nothing else; a client without credentials cannot connect.
func TestAuthConfigPermissions(t *testing.T) {
	e := startAuthServer(t, EmbeddedOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, bad := range []NATSOptions{
		{URL: e.URL()},
		{URL: e.URL(), User: "ddrun-worker", Password: "wrong"},
		{URL: e.URL(), User: "nobody", Password: "worker-secret"},
	} {
		if tr, err := NewNATS(ctx, bad); err == nil {
			tr.Close()
			t.Errorf("user %q with password %q connected", bad.User, bad.Password)
		} else if !strings.Contains(err.Error(), "authorization violation") {
			t.Errorf("user %q: %v, want an authorization violation", bad.User, err)
		}
	}

	login := func(user, password string) (*NATS, *errSink) {
		sink := &errSink{}
		return connect(t, NATSOptions{URL: e.URL(), Name: user, User: user, Password: password, OnError: sink.add}), sink
	}
	coord, coordErrs := login("ddrun-coordinator", "coord-secret")
	worker, workerErrs := login("ddrun-worker", "worker-secret")
	w0, w0Errs := login("ddrun-worker-w0", "worker-secret")
	other, otherErrs := login("other", "other-secret")

	// What each role needs goes through.
	atCoord, atWorker, atW0 := newCollector(), newCollector(), newCollector()
	subscribe(t, coord, "ddrun.control", atCoord.handle)
	subscribe(t, coord, "ddrun.*.report.*", atCoord.handle)
	subscribe(t, coord, "ddrun.*.heartbeat.*", atCoord.handle)
	subscribe(t, worker, "ddrun.*.assign.w1", atWorker.handle)
	subscribe(t, worker, "ddrun.j.step.w1", atWorker.handle)
	subscribe(t, w0, "ddrun.*.assign.w0", atW0.handle)
	subscribe(t, w0, "ddrun.j.step.w0", atW0.handle)
	// What no role may: read what is not its own, and anything at all from
	// another account.
	spies := []struct {
		tr      *NATS
		subject string
	}{
		{worker, "ddrun.>"}, {worker, "ddrun.j.report.*"}, {worker, "ddrun.control"},
		{w0, "ddrun.*.assign.w1"}, {w0, "ddrun.*.step.*"},
		{coord, "ddrun.>"}, {coord, "ddrun.*.assign.*"},
	}
	spied := newCollector()
	for _, s := range spies {
		subscribe(t, s.tr, s.subject, spied.handle)
	}
	foreign := newCollector()
	subscribe(t, other, "ddrun.>", foreign.handle)
	subscribe(t, other, ">", foreign.handle)
	for _, tr := range []*NATS{coord, worker, w0, other} {
		settle(t, tr)
	}

	for _, m := range []struct {
		from          *NATS
		subject, data string
	}{
		{worker, "ddrun.control", "hello"},
		{worker, "ddrun.j.report.w1", "report"},
		{worker, "ddrun.j.heartbeat.w1", "beat"},
		{coord, "ddrun.j.assign.w1", "part"},
		{coord, "ddrun.j.step.w1", "step"},
		{coord, "ddrun.j.assign.w0", "part0"},
		{coord, "ddrun.j.step.w0", "step0"},
		// Forgeries: a worker sending a step or a part, a worker posing as
		// another (w0 as w1), another account sending anything.
		{worker, "ddrun.j.step.w1", "forged step"},
		{worker, "ddrun.j.assign.w1", "forged part"},
		{w0, "ddrun.j.report.w1", "forged report"},
		{other, "ddrun.j.report.w1", "foreign report"},
		{other, "ddrun.j.step.w1", "foreign step"},
	} {
		publish(t, m.from, m.subject, []byte(m.data))
	}
	for _, tr := range []*NATS{coord, worker, w0, other} {
		settle(t, tr)
	}
	atCoord.wait(t, 3)
	atWorker.wait(t, 2)
	atW0.wait(t, 2)
	time.Sleep(100 * time.Millisecond)
	for name, c := range map[string]struct {
		col  *collector
		want int
	}{"coordinator": {atCoord, 3}, "worker": {atWorker, 2}, "w0": {atW0, 2}, "spies": {spied, 0}, "other account": {foreign, 4}} {
		if got := c.col.wait(t, 0); len(got) != c.want {
			t.Errorf("%s got %q, want %d messages", name, got, c.want)
		}
	}
	// The other account has a namespace of its own: it hears its own two
	// messages (on two subscriptions), none of ddrun's, and ddrun's
	// users did not hear its.
	for _, m := range foreign.wait(t, 0) {
		if !strings.Contains(m, "foreign") {
			t.Errorf("other account heard %q", m)
		}
	}
	violations := func(s *errSink) int {
		n := 0
		for _, err := range s.get() {
			if errors.Is(err, nats.ErrPermissionViolation) {
				n++
			}
		}
		return n
	}
	// 3 subscriptions and 2 publications of the worker, 2+1 of w0, 2 of
	// the coordinator.
	if n := violations(workerErrs); n != 5 {
		t.Errorf("worker: %d permission violations, want 5: %v", n, workerErrs.get())
	}
	if n := violations(w0Errs); n != 3 {
		t.Errorf("w0: %d permission violations, want 3: %v", n, w0Errs.get())
	}
	if n := violations(coordErrs); n != 2 {
		t.Errorf("coordinator: %d permission violations, want 2: %v", n, coordErrs.get())
	}
	if errs := otherErrs.get(); len(errs) != 0 {
		t.Errorf("other account: %v", errs)
	}

	// On the server: who in ddrun's account reads a step, a model part, a
	// report.
	for _, subject := range []string{"ddrun.j.assign.w1", "ddrun.j.step.w1", "ddrun.j.report.w1"} {
		got := readers(t, e.Server(), subject)
		want := map[string]string{"ddrun.j.assign.w1": "ddrun-worker", "ddrun.j.step.w1": "ddrun-worker", "ddrun.j.report.w1": "ddrun-coordinator"}[subject]
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s is read by %q, want only %s", subject, got, want)
		}
	}
}

// readers are the users of the server's connections that hold a
// subscription in ddrun's account matching the literal subject.
func readers(t *testing.T, srv *server.Server, subject string) []string {
	t.Helper()
	users := map[uint64]string{}
	cz, err := srv.Connz(&server.ConnzOptions{Username: true, Limit: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cz.Conns {
		users[c.Cid] = c.AuthorizedUser
	}
	var got []string
	sz, err := srv.Subsz(&server.SubszOptions{Subscriptions: true, Account: "DDRUN", Test: subject, Limit: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sz.Subs {
		got = append(got, users[s.Cid])
	}
	return got
}

// The coordinator's permissions cover a JetStream object store (a Raft
// group's checkpoint blobs); a worker's do not.
func TestAuthConfigObjectStore(t *testing.T) {
	e := startAuthServer(t, EmbeddedOptions{JetStreamDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	store := func(user, password string) (jetstream.ObjectStore, error) {
		tr := connect(t, NATSOptions{URL: e.URL(), User: user, Password: password})
		js, err := jetstream.New(tr.Conn())
		if err != nil {
			return nil, err
		}
		return js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "ddrun-ckpt-j", Storage: jetstream.MemoryStorage})
	}
	obs, err := store("ddrun-coordinator", "coord-secret")
	if err != nil {
		t.Fatal(err)
	}
	blob := make([]byte, 300<<10) // several object store chunks
	for i := range blob {
		blob[i] = byte(i)
	}
	if _, err := obs.PutBytes(ctx, "part-0", blob); err != nil {
		t.Fatal(err)
	}
	got, err := obs.GetBytes(ctx, "part-0")
	if err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("get: %d bytes, %v", len(got), err)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	tr := connect(t, NATSOptions{URL: e.URL(), User: "ddrun-worker", Password: "worker-secret"})
	js, err := jetstream.New(tr.Conn())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.ObjectStore(short, "ddrun-ckpt-j"); err == nil {
		t.Fatal("a worker opened the checkpoint bucket")
	}
}
