package jobworker

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/testlog"
	"github.com/ddrun/ddrun/transport"
)

type pingBody struct {
	N int `msgpack:"n"`
}

func (pingBody) Kind() transport.Kind { return 200 }

// A sender refuses an invalid name; what it publishes carries the worker's
// name, the header's job and increasing sequence numbers; a reason for
// dropping is logged once per interval, with the count.
func TestSender(t *testing.T) {
	tr := transport.NewInProc()
	defer tr.Close()
	if _, err := NewSender(tr, "no spaces", nil, "x: "); err == nil || !strings.Contains(err.Error(), "worker name") {
		t.Fatalf("an invalid name: %v", err)
	}
	var logs testlog.Buffer
	s, err := NewSender(tr, "w1", slog.New(slog.NewTextHandler(&logs, nil)), "x: ")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan transport.Header, 2)
	sub, err := tr.Subscribe("sub.a", func(_ string, data []byte) {
		var b pingBody
		h, err := transport.DecodeInto(data, &b)
		if err != nil || b.N != 7 {
			t.Errorf("decoding: %v, body %+v", err, b)
		}
		got <- h
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ctx := context.Background()
	s.Publish(ctx, "sub.a", transport.Header{Job: "j"}, pingBody{N: 7})
	s.Publish(ctx, "sub.a", transport.Header{Job: "j"}, pingBody{N: 7})
	var seq uint64
	for range 2 {
		select {
		case h := <-got:
			if h.From != "w1" || h.Job != "j" || h.Kind != 200 || h.Seq <= seq {
				t.Errorf("header %+v after sequence %d", h, seq)
			}
			seq = h.Seq
		case <-time.After(5 * time.Second):
			t.Fatal("no message")
		}
	}
	for range 3 {
		s.Dropped("forged message dropped", "job", "j")
	}
	if n := strings.Count(logs.String(), "x: forged message dropped"); n != 1 {
		t.Errorf("%d log lines for three drops in an interval, want 1:\n%s", n, logs.String())
	}
}

// A loop announces at once, on a solicitation, when freed and at every
// hello interval after the lapse check; it beats as asked and returns nil
// when ctx ends.
func TestLoop(t *testing.T) {
	tr := transport.NewInProc()
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	announced, lapsed, beats := make(chan struct{}, 64), make(chan struct{}, 64), make(chan struct{}, 64)
	freed := make(chan struct{}, 1)
	// The callbacks never block: a loop blocked in one would not see ctx
	// end, and the test would hang instead of failing.
	signal := func(c chan struct{}) {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	l := Loop{Solicit: "sol", Solicitations: "solicitations", HelloEvery: time.Hour,
		Announce: func(context.Context) { signal(announced) },
		Lapse:    func() { signal(lapsed) },
		Freed:    freed,
		Beat:     func(context.Context) { signal(beats) }, BeatEvery: 5 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, tr) }()
	wait := func(c chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s", what)
		}
	}
	wait(announced, "announcement at start")
	freed <- struct{}{}
	wait(announced, "announcement when freed")
	// The subscription may not be in place at once: solicit until heard.
	heard := false
	for i := 0; i < 100 && !heard; i++ {
		if err := tr.Publish(ctx, "sol", nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-announced:
			heard = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !heard {
		t.Fatal("no announcement when solicited")
	}
	wait(beats, "beat")
	if len(lapsed) != 0 {
		t.Error("a lapse check before the hello interval")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}

	// The hello interval checks for a lapse, then announces.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	l = Loop{Solicit: "sol2", Solicitations: "solicitations", HelloEvery: 5 * time.Millisecond,
		Announce: func(context.Context) { signal(announced) }, Lapse: func() { signal(lapsed) }}
	go func() { done <- l.Run(ctx, tr) }()
	wait(lapsed, "lapse check at the hello interval")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
