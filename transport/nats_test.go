package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ddrun/ddrun/internal/testcert"
)

func TestEmbeddedDefaults(t *testing.T) {
	e := startServer(t, EmbeddedOptions{})
	if !strings.HasPrefix(e.URL(), "nats://127.0.0.1:") || e.Port() == 0 || e.Port() == 4222 {
		t.Fatalf("URL %s port %d: want loopback and a random port", e.URL(), e.Port())
	}
	// A second server on the same port fails with a clear error.
	_, err := StartEmbedded(EmbeddedOptions{Port: e.Port(), ReadyTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "nats server: ") {
		t.Fatalf("second server on port %d: %v", e.Port(), err)
	}
	t.Logf("second server on the same port: %v", err)
	e.Shutdown()
	e.Shutdown() // idempotent
}

// Publish sends a message above MaxPayload as chunks, and MaxPayload
// says where that starts.
func TestNATSMaxPayload(t *testing.T) {
	e := startServer(t, EmbeddedOptions{})
	tr := connect(t, NATSOptions{URL: e.URL(), MaxPayload: 1024})
	if tr.MaxPayload() != 1024 {
		t.Fatalf("MaxPayload %d", tr.MaxPayload())
	}
	if def := connect(t, NATSOptions{URL: e.URL()}); def.MaxPayload() != int(def.Conn().MaxPayload()) {
		t.Fatalf("default MaxPayload %d, the server's %d", def.MaxPayload(), def.Conn().MaxPayload())
	}
	frames := make(chan []byte, 100)
	raw, err := tr.Conn().Subscribe("a", func(m *nats.Msg) { frames <- m.Data })
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Unsubscribe()
	_ = tr.Flush(context.Background())
	for _, n := range []int{1024, 1025} {
		if err := tr.Publish(context.Background(), "a", make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	_ = tr.Flush(context.Background())
	if fr := <-frames; len(fr) != 1024 || IsChunk(fr) {
		t.Fatalf("a message of MaxPayload bytes went as a %d-byte frame", len(fr))
	}
	if fr := <-frames; !IsChunk(fr) || len(fr) > 1024 {
		t.Fatalf("a message of MaxPayload+1 bytes went as a %d-byte frame", len(fr))
	}
}

// Chunked messages from several connections on one subject interleave at
// the server and are reassembled apart.
func TestNATSChunkedInterleaved(t *testing.T) {
	e := startServer(t, EmbeddedOptions{})
	sub := connect(t, NATSOptions{URL: e.URL()})
	c := newCollector()
	if _, err := sub.Subscribe("ddrun.j.x", c.handle); err != nil {
		t.Fatal(err)
	}
	_ = sub.Flush(context.Background())
	const pubs, per = 3, 5
	want := map[string]bool{}
	var payloads [pubs][per][]byte
	r := mrand.New(mrand.NewPCG(13, 14))
	for p := range pubs {
		for i := range per {
			payloads[p][i] = randBytes(r, 3000+r.IntN(20_000))
			want["ddrun.j.x "+string(payloads[p][i])] = true
		}
	}
	var wg sync.WaitGroup
	for p := range pubs {
		tr := connect(t, NATSOptions{URL: e.URL(), MaxPayload: 1000})
		wg.Go(func() {
			for i := range per {
				if err := tr.Publish(context.Background(), "ddrun.j.x", payloads[p][i]); err != nil {
					t.Error(err)
				}
			}
			_ = tr.Flush(context.Background())
		})
	}
	wg.Wait()
	for _, m := range c.wait(t, pubs*per) {
		if !want[m] {
			t.Fatal("a message arrived that was not sent, or twice")
		}
		delete(want, m)
	}
}

// An incomplete chunked message is dropped after the reassembly timeout
// and reported, even though no further chunk arrives to trigger it.
func TestNATSChunkTimeout(t *testing.T) {
	e := startServer(t, EmbeddedOptions{})
	errs := make(chan error, 10)
	tr := connect(t, NATSOptions{
		URL:        e.URL(),
		Reassembly: ReassemblyOptions{Timeout: 100 * time.Millisecond},
		OnError:    func(err error) { errs <- err },
	})
	delivered := make(chan struct{}, 1)
	if _, err := tr.Subscribe("a", func(string, []byte) { delivered <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	_ = tr.Flush(context.Background())
	frames := split(t, MsgID{7}, make([]byte, 5000), 1024)
	for _, fr := range frames[:len(frames)-1] {
		if err := tr.Conn().Publish("a", fr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Conn().Publish("a", []byte("DDC\x01 garbage")); err != nil { // a malformed frame
		t.Fatal(err)
	}
	var sawBad, sawExpired bool
	deadline := time.After(5 * time.Second)
	for !sawBad || !sawExpired {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrBadChunk) {
				t.Fatalf("unexpected async error %v", err)
			}
			if strings.Contains(err.Error(), "dropped 1 incomplete") {
				sawExpired = true
			} else {
				sawBad = true
			}
		case <-delivered:
			t.Fatal("an incomplete message was delivered")
		case <-deadline:
			t.Fatalf("bad frame reported %v, expiry reported %v", sawBad, sawExpired)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestNATSDeadURL(t *testing.T) {
	url := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	start := time.Now()
	_, err := NewNATS(context.Background(), NATSOptions{URL: url, ConnectTimeout: 2 * time.Second})
	if err == nil {
		t.Fatal("connected to a dead URL")
	}
	if want := "nats: connect to " + url + ": connection refused"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("%v does not wrap ECONNREFUSED", err)
	}
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.URL != url {
		t.Fatalf("not a ConnectError: %#v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
	// A canceled context ends the attempt at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewNATS(ctx, NATSOptions{URL: url}); err == nil {
		t.Fatal("connected with a canceled context")
	}
}

func TestNATSAuth(t *testing.T) {
	e := startServer(t, EmbeddedOptions{User: "ddrun", Password: "s3cret"})
	connect(t, NATSOptions{URL: e.URL(), User: "ddrun", Password: "s3cret"})
	_, err := NewNATS(context.Background(), NATSOptions{URL: e.URL(), User: "ddrun", Password: "wrong", NoReconnect: true})
	if err == nil || err.Error() != "nats: connect to "+e.URL()+": authorization violation" {
		t.Fatalf("wrong password: %v", err)
	}
	// Credentials in the URL work and are not repeated in errors.
	withPass := strings.Replace(e.URL(), "nats://", "nats://ddrun:wrong@", 1)
	_, err = NewNATS(context.Background(), NATSOptions{URL: withPass})
	if err == nil || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("password in URL: %v", err)
	}
	connect(t, NATSOptions{URL: strings.Replace(e.URL(), "nats://", "nats://ddrun:s3cret@", 1)})

	te := startServer(t, EmbeddedOptions{Token: "tok"})
	connect(t, NATSOptions{URL: te.URL(), Token: "tok"})
	if _, err := NewNATS(context.Background(), NATSOptions{URL: te.URL(), Token: "nope"}); err == nil {
		t.Fatal("wrong token accepted")
	}
	if _, err := NewNATS(context.Background(), NATSOptions{URL: te.URL(), Token: "tok", User: "u"}); err == nil {
		t.Fatal("token and user together accepted")
	}
	if _, err := NewNATS(context.Background(), NATSOptions{URL: te.URL(), CredsFile: filepath.Join(t.TempDir(), "none.creds")}); err == nil || !strings.Contains(err.Error(), "creds file") {
		t.Fatalf("missing creds file: %v", err)
	}
}

func TestNATSTLS(t *testing.T) {
	ca := testcert.NewCA(t, "ddrun test CA")
	caFile, cert := ca.WriteCA(t, t.TempDir()), ca.Issue(t, "127.0.0.1")
	e := startServer(t, EmbeddedOptions{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	if !strings.HasPrefix(e.URL(), "tls://") {
		t.Fatalf("URL %s", e.URL())
	}
	tr := connect(t, NATSOptions{URL: e.URL(), TLSCA: caFile})
	c := newCollector()
	if _, err := tr.Subscribe("a", c.handle); err != nil {
		t.Fatal(err)
	}
	_ = tr.Flush(context.Background())
	_ = tr.Publish(context.Background(), "a", []byte("over tls"))
	if got := c.wait(t, 1); got[0] != "a over tls" {
		t.Fatalf("%q", got)
	}
	// Without the CA the server is not trusted.
	if _, err := NewNATS(context.Background(), NATSOptions{URL: e.URL(), NoReconnect: true}); err == nil {
		t.Fatal("connected without trusting the server")
	}
	if _, err := NewNATS(context.Background(), NATSOptions{URL: e.URL(), TLSCert: caFile}); err == nil {
		t.Fatal("a client cert without its key was accepted")
	}
}

// The client reconnects when the server comes back on the same port, and
// the subscription works again.
func TestNATSReconnect(t *testing.T) {
	e, err := StartEmbedded(EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown) // also stopped below; Shutdown is idempotent
	port := e.Port()
	reconnected := make(chan struct{}, 1)
	disconnected := make(chan struct{}, 1)
	tr := connect(t, NATSOptions{
		URL:           e.URL(),
		ReconnectWait: 20 * time.Millisecond,
		MaxReconnects: -1,
		OnDisconnect:  func(error) { disconnected <- struct{}{} },
		OnReconnect:   func() { reconnected <- struct{}{} },
	})
	c := newCollector()
	if _, err := tr.Subscribe("a.b", c.handle); err != nil {
		t.Fatal(err)
	}
	_ = tr.Flush(context.Background())
	_ = tr.Publish(context.Background(), "a.b", []byte("before"))
	c.wait(t, 1)

	e.Shutdown()
	select {
	case <-disconnected:
	case <-time.After(5 * time.Second):
		t.Fatal("no disconnect noticed")
	}
	e2, err := StartEmbedded(EmbeddedOptions{Port: port})
	if err != nil {
		t.Skipf("could not restart the server on port %d: %v", port, err)
	}
	t.Cleanup(e2.Shutdown)
	select {
	case <-reconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("did not reconnect")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Flush(ctx); err != nil { // the restored subscription reached the server
		t.Fatal(err)
	}
	if err := tr.Publish(ctx, "a.b", []byte("after")); err != nil {
		t.Fatal(err)
	}
	if got := c.wait(t, 2); got[1] != "a.b after" {
		t.Fatalf("%q", got)
	}
}

// Close closes the connection (the rest of Close's contract is in the
// conformance suite).
func TestNATSCloseConn(t *testing.T) {
	e := startServer(t, EmbeddedOptions{})
	tr := connect(t, NATSOptions{URL: e.URL()})
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if !tr.Conn().IsClosed() {
		t.Fatal("connection still open")
	}
}

func TestNATSOptionErrors(t *testing.T) {
	for _, o := range []NATSOptions{
		{MaxPayload: -1},
		{MaxPayload: ChunkHeaderLen},
		{User: "u", CredsFile: "x"},
		{TLSKey: "k"},
	} {
		if _, err := NewNATS(context.Background(), o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := StartEmbedded(EmbeddedOptions{Port: 70000}); err == nil {
		t.Error("port 70000 accepted")
	}
}

// With RetryFor, NewNATS waits for a server that starts later, gives up
// on a dead URL after RetryFor with the same error (saying how long it
// tried), and does not retry what a server refuses.
func TestNATSRetry(t *testing.T) {
	cases := []struct {
		name     string
		start    func(port int) *Embedded // at the first retry; nil: never
		server   *EmbeddedOptions         // already running, with these options
		opts     NATSOptions
		retries  func(n int) bool
		wantErr  string
		retryFor time.Duration
	}{
		{name: "server starts later", retryFor: 20 * time.Second, retries: func(n int) bool { return n >= 1 },
			start: func(port int) *Embedded {
				e, err := StartEmbedded(EmbeddedOptions{Host: "127.0.0.1", Port: port})
				if err != nil {
					t.Error(err)
					return nil
				}
				return e
			}},
		{name: "dead url", retryFor: 700 * time.Millisecond, retries: func(n int) bool { return n >= 2 },
			wantErr: ": connection refused (retried for "},
		{name: "refused credentials", retryFor: 20 * time.Second, retries: func(n int) bool { return n == 0 },
			server: &EmbeddedOptions{Host: "127.0.0.1", User: "ddrun", Password: "s3cret"},
			opts:   NATSOptions{User: "ddrun", Password: "wrong"}, wantErr: ": authorization violation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			port := freePort(t)
			if c.server != nil {
				so := *c.server
				so.Port = port
				startServer(t, so)
			}
			var (
				mu      sync.Mutex
				retries int
				started *Embedded
			)
			defer func() {
				if started != nil {
					started.Shutdown()
				}
			}()
			o := c.opts
			o.URL = fmt.Sprintf("nats://127.0.0.1:%d", port)
			o.RetryFor, o.ConnectTimeout = c.retryFor, 2*time.Second
			o.OnRetry = func(err error, wait time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				retries++
				if wait <= 0 || wait > retryMax || !strings.Contains(err.Error(), "connection refused") {
					t.Errorf("retry after %v: %v", wait, err)
				}
				if c.start != nil && started == nil {
					started = c.start(port)
				}
			}
			start := time.Now()
			tr, err := NewNATS(context.Background(), o)
			mu.Lock()
			defer mu.Unlock()
			if !c.retries(retries) {
				t.Errorf("%d retries", retries)
			}
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("not connected: %v", err)
				}
				tr.Close()
				return
			}
			if err == nil {
				tr.Close()
				t.Fatal("connected")
			}
			if want := "nats: connect to " + o.URL + c.wantErr; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q, want %q...", err, want)
			}
			if c.server == nil && time.Since(start) < c.retryFor {
				t.Errorf("gave up after %v, before %v", time.Since(start), c.retryFor)
			}
		})
	}
	// A cancelled context ends the retries.
	ctx, cancel := context.WithCancel(context.Background())
	_, err := NewNATS(ctx, NATSOptions{URL: fmt.Sprintf("nats://127.0.0.1:%d", freePort(t)), RetryFor: time.Minute,
		OnRetry: func(error, time.Duration) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v", err)
	}
}
