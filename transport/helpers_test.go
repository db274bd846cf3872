package transport

import (
	"context"
	"sync"
	"testing"
	"time"
)

// transportKind opens a pair of connected transports of one
// implementation: pub and sub see each other's messages (they may be one
// transport). Both are closed when the test ends.
type transportKind struct {
	name string
	open func(t *testing.T) (pub, sub Transport)
}

// transportKinds lists every Transport implementation, in the
// configurations the conformance suite runs on.
func transportKinds() []transportKind {
	inproc := func(opts InProcOptions) func(t *testing.T) (Transport, Transport) {
		return func(t *testing.T) (Transport, Transport) {
			tr := NewInProcWith(opts)
			t.Cleanup(func() { _ = tr.Close() })
			return tr, tr
		}
	}
	// Two connections to one embedded server; an asynchronous error (a bad
	// or expired chunk, a slow consumer) fails the test.
	nats := func(maxPayload int) func(t *testing.T) (Transport, Transport) {
		return func(t *testing.T) (Transport, Transport) {
			e := startServer(t, EmbeddedOptions{})
			sink := &errSink{}
			t.Cleanup(func() { // after the transports' Close
				if errs := sink.get(); len(errs) > 0 {
					t.Errorf("asynchronous errors: %v", errs)
				}
			})
			pub := connect(t, NATSOptions{URL: e.URL(), Name: "pub", MaxPayload: maxPayload, OnError: sink.add})
			sub := connect(t, NATSOptions{URL: e.URL(), Name: "sub", MaxPayload: maxPayload, OnError: sink.add})
			return pub, sub
		}
	}
	return []transportKind{
		{"inproc", inproc(InProcOptions{})},
		// A queue of one: publishers wait for the subscribers all the time.
		{"inproc-buffer-1", inproc(InProcOptions{Buffer: 1})},
		{"nats", nats(0)},
		// Every message above 1 KiB crosses as chunks.
		{"nats-chunked", nats(1024)},
		// Sealed over both: over NATS its messages are chunked.
		{"sealed", func(t *testing.T) (Transport, Transport) {
			s := sealedInProc(t)
			return s, s
		}},
		{"sealed-nats-chunked", func(t *testing.T) (Transport, Transport) {
			pub, sub := nats(1024)(t)
			ps, ss := sealedOver(t, pub), sealedOver(t, sub)
			t.Cleanup(func() { _ = ps.Close(); _ = ss.Close() })
			return ps, ss
		}},
		{"faulty-no-faults", func(t *testing.T) (Transport, Transport) {
			inner := NewInProc()
			f := NewFaulty(inner, FaultOptions{Seed: 1})
			t.Cleanup(func() { _ = f.Close(); _ = inner.Close() })
			return f, f
		}},
	}
}

// testKey is a fixed secret for sealed transports in tests.
var testKey = []byte("0123456789abcdef0123456789abcdef")

// sealedOver wraps inner with testKey.
func sealedOver(t testing.TB, inner Transport) *Sealed {
	t.Helper()
	s, err := NewSealed(inner, SealOptions{Keys: [][]byte{testKey}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sealedInProc is a transport sealed with testKey over a new in-process
// one, both closed when the test ends.
func sealedInProc(t testing.TB) *Sealed {
	t.Helper()
	inner := NewInProc()
	s := sealedOver(t, inner)
	t.Cleanup(func() { _ = s.Close(); _ = inner.Close() })
	return s
}

// startServer starts an embedded server on a free loopback port and stops
// it when the test ends.
func startServer(t testing.TB, opts EmbeddedOptions) *Embedded {
	t.Helper()
	e, err := StartEmbedded(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	return e
}

// connect opens a NATS transport, closed when the test ends.
func connect(t testing.TB, opts NATSOptions) *NATS {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr, err := NewNATS(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// collector gathers messages delivered to a handler.
type collector struct {
	mu   sync.Mutex
	msgs []string // "subject data"
	ch   chan struct{}
}

func newCollector() *collector { return &collector{ch: make(chan struct{}, 1<<16)} }

func (c *collector) handle(subject string, data []byte) {
	c.mu.Lock()
	c.msgs = append(c.msgs, subject+" "+string(data))
	c.mu.Unlock()
	c.ch <- struct{}{}
}

// wait blocks until n messages arrived in total, or fails after 10 s.
func (c *collector) wait(t testing.TB, n int) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		got := len(c.msgs)
		c.mu.Unlock()
		if got >= n {
			break
		}
		select {
		case <-c.ch:
		case <-deadline:
			t.Fatalf("got %d of %d messages", got, n)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

// errSink collects asynchronous errors.
type errSink struct {
	mu   sync.Mutex
	errs []error
}

func (s *errSink) add(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

func (s *errSink) get() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}
