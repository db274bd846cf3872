package service

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ddrun/ddrun/transport"
)

// sealedNATSService is a service answering the NATS API on an embedded
// server with requests sealed under a job key, a client connection, and
// the sealer both ends use.
func sealedNATSService(t *testing.T) (*Service, *nats.Conn, *transport.Sealed) {
	t.Helper()
	g := &gateRunner{release: make(chan struct{})}
	close(g.release)
	s := newTestService(t, g, Options{})
	nc := connect(t, embeddedNATS(t, transport.EmbeddedOptions{}))
	seal := testSealer(t)
	stop, err := s.ServeNATS(nc, seal)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return s, nc, seal
}

// embeddedNATS starts an embedded NATS server with o, shut down with the
// test.
func embeddedNATS(t *testing.T, o transport.EmbeddedOptions) *transport.Embedded {
	t.Helper()
	e, err := transport.StartEmbedded(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	return e
}

// connect is a client connection to e, closed with the test.
func connect(t *testing.T, e *transport.Embedded) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(e.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// testSealer seals and opens the tests' requests and replies under one
// fixed job key.
func testSealer(t *testing.T) *transport.Sealed {
	t.Helper()
	inproc := transport.NewInProc()
	t.Cleanup(func() { _ = inproc.Close() })
	seal, err := transport.NewSealed(inproc, transport.SealOptions{Keys: [][]byte{[]byte("0123456789abcdef0123456789abcdef")}})
	if err != nil {
		t.Fatal(err)
	}
	return seal
}

// ask sends the sealed request msg on op's subject and opens the reply.
func ask(t *testing.T, nc *nats.Conn, seal *transport.Sealed, op string, msg []byte) NATSReply {
	t.Helper()
	subject := SubjectPrefix + op
	m, err := nc.Request(subject, msg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	body, err := seal.Open(subject+".reply", m.Data)
	if err != nil {
		t.Fatal(err)
	}
	var rep NATSReply
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func sealedSubmit(t *testing.T, seal *transport.Sealed, req NATSRequest) []byte {
	t.Helper()
	req.Token, req.Model = aliceToken, []byte(tinyModel)
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := seal.Seal(SubjectPrefix+"submit", b)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// A recorded sealed submit replayed 20 times used to create 20 jobs: with
// its nonce, the copies get the first one's job (200), and the service
// holds one job. A sealed submit without a nonce, or sent longer ago than
// NonceWindow, is refused and creates none.
func TestSealedNATSSubmitReplayed(t *testing.T) {
	s, nc, seal := sealedNATSService(t)
	msg := sealedSubmit(t, seal, NATSRequest{Nonce: "0123456789abcdef0123", Sent: time.Now().UnixMilli()})
	first := ask(t, nc, seal, "submit", msg)
	if first.Code != http.StatusCreated {
		t.Fatalf("submit: %+v", first)
	}
	var st Status
	if err := json.Unmarshal(first.Body, &st); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		rep := ask(t, nc, seal, "submit", msg)
		var again Status
		if rep.Code != http.StatusOK || json.Unmarshal(rep.Body, &again) != nil || again.ID != st.ID {
			t.Fatalf("replay %d: %d %s %s, want 200 and job %s", i, rep.Code, rep.Body, rep.Error, st.ID)
		}
	}
	for _, c := range []struct {
		name string
		req  NATSRequest
		want string
	}{
		{"no nonce", NATSRequest{Sent: time.Now().UnixMilli()}, "needs a nonce"},
		{"short nonce", NATSRequest{Nonce: "abc", Sent: time.Now().UnixMilli()}, "needs a nonce"},
		{"stale", NATSRequest{Nonce: "fedcba9876543210fedc", Sent: time.Now().Add(-NonceWindow - time.Minute).UnixMilli()}, "within 5m0s"},
		{"from the future", NATSRequest{Nonce: "fedcba9876543210fedd", Sent: time.Now().Add(NonceWindow + time.Minute).UnixMilli()}, "within 5m0s"},
	} {
		if rep := ask(t, nc, seal, "submit", sealedSubmit(t, seal, c.req)); rep.Code != http.StatusBadRequest || !strings.Contains(rep.Error, c.want) {
			t.Errorf("%s: %d %q, want 400 %q", c.name, rep.Code, rep.Error, c.want)
		}
	}
	if jobs := s.List(); len(jobs) != 1 || jobs[0].ID != st.ID {
		t.Errorf("%d jobs after 20 replays and 4 refused submits, want the one", len(jobs))
	}
	// Another nonce is another job.
	if rep := ask(t, nc, seal, "submit", sealedSubmit(t, seal, NATSRequest{Nonce: "0123456789abcdef0124", Sent: time.Now().UnixMilli()})); rep.Code != http.StatusCreated {
		t.Errorf("a second submit: %+v", rep)
	}
	if jobs := s.List(); len(jobs) != 2 {
		t.Errorf("%d jobs, want 2", len(jobs))
	}
}

// A nonce is remembered per client, forgotten when its submit failed (the
// same request may be retried), and its record expires after the window.
func TestNonces(t *testing.T) {
	var n nonces
	now := time.Unix(1_000_000, 0)
	sent := now.UnixMilli()
	const nonce = "0123456789abcdef"
	if id, err := n.claim("alice", nonce, sent, now); id != "" || err != nil {
		t.Fatalf("%q %v", id, err)
	}
	if _, err := n.claim("alice", nonce, sent, now); code(err) != http.StatusConflict {
		t.Fatalf("while being handled: %v", err)
	}
	if id, err := n.claim("bob", nonce, sent, now); id != "" || err != nil {
		t.Fatalf("bob: %q %v", id, err)
	}
	n.done("bob", nonce, "") // bob's submit failed: he may try again
	if id, err := n.claim("bob", nonce, sent, now); id != "" || err != nil {
		t.Fatalf("bob again: %q %v", id, err)
	}
	n.done("alice", nonce, "j1")
	if id, err := n.claim("alice", nonce, sent, now.Add(NonceWindow)); id != "j1" || err != nil {
		t.Fatalf("a copy within the window: %q %v", id, err)
	}
	if _, err := n.claim("alice", nonce, sent, now.Add(NonceWindow+time.Millisecond)); code(err) != http.StatusBadRequest {
		t.Fatalf("a copy after the window: %v", err)
	}
}
