package transport

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

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

func TestInProcPubSub(t *testing.T) {
	tr := NewInProc()
	defer tr.Close()
	ctx := context.Background()
	all, reports, step := newCollector(), newCollector(), newCollector()
	for pattern, c := range map[string]*collector{JobWildcard("j"): all, ReportsWildcard("j"): reports, StepSubject("j"): step} {
		if _, err := tr.Subscribe(pattern, c.handle); err != nil {
			t.Fatal(err)
		}
	}
	buf := []byte("s1")
	if err := tr.Publish(ctx, StepSubject("j"), buf); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'X' // Publish copied it
	for _, w := range []string{"a", "b"} {
		if err := tr.Publish(ctx, ReportSubject("j", w), []byte("r-"+w)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Publish(ctx, StepSubject("other"), []byte("nobody")); err != nil {
		t.Fatal(err)
	}
	if got := step.wait(t, 1); len(got) != 1 || got[0] != "ddrun.j.step s1" {
		t.Fatalf("step got %q", got)
	}
	if got := reports.wait(t, 2); len(got) != 2 || got[0] != "ddrun.j.report.a r-a" || got[1] != "ddrun.j.report.b r-b" {
		t.Fatalf("reports got %q", got)
	}
	if got := all.wait(t, 3); len(got) != 3 {
		t.Fatalf("job wildcard got %q", got)
	}
}

// Each publisher's messages arrive in its order, also with several
// publishers and a subscriber slower than they are.
func TestInProcOrdering(t *testing.T) {
	tr := NewInProcWith(InProcOptions{Buffer: 4})
	defer tr.Close()
	const pubs, per = 4, 500
	c := newCollector()
	if _, err := tr.Subscribe("ddrun.j.>", c.handle); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for p := range pubs {
		wg.Go(func() {
			for i := range per {
				if err := tr.Publish(context.Background(), "ddrun.j.p", fmt.Appendf(nil, "%d %d", p, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := c.wait(t, pubs*per)
	next := make([]int, pubs)
	for _, m := range got {
		var p, i int
		if _, err := fmt.Sscanf(m, "ddrun.j.p %d %d", &p, &i); err != nil {
			t.Fatal(err)
		}
		if i != next[p] {
			t.Fatalf("publisher %d: got %d, want %d", p, i, next[p])
		}
		next[p]++
	}
}

func TestInProcBackPressure(t *testing.T) {
	tr := NewInProcWith(InProcOptions{Buffer: 1})
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	if _, err := tr.Subscribe("a", func(string, []byte) { entered <- struct{}{}; <-release }); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_ = tr.Publish(ctx, "a", nil) // taken by the handler, which blocks
	<-entered
	_ = tr.Publish(ctx, "a", nil) // fills the queue
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := tr.Publish(short, "a", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("publish to a full queue: %v", err)
	}
	// A publisher blocked on the full queue is released by Close.
	done := make(chan error, 1)
	go func() { done <- tr.Publish(ctx, "a", nil) }()
	time.Sleep(20 * time.Millisecond)
	closed := make(chan struct{})
	go func() { tr.Close(); close(closed) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("blocked publish after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release a blocked publisher")
	}
	select {
	case <-closed:
		t.Fatal("Close returned while a handler was running")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-closed
}

func TestInProcCloseNoLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	tr := NewInProc()
	var subs []Subscription
	for i := range 50 {
		s, err := tr.Subscribe(fmt.Sprintf("s.%d", i), func(string, []byte) {})
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	for i := range 100 {
		_ = tr.Publish(context.Background(), fmt.Sprintf("s.%d", i%50), []byte("x"))
	}
	_ = subs[0].Unsubscribe()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_ = subs[1].Unsubscribe() // after Close: harmless
	if err := tr.Publish(context.Background(), "s.1", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
	if _, err := tr.Subscribe("s.1", func(string, []byte) {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
	if err := tr.Flush(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
	// Close waited for every subscription goroutine (the unsubscribed one
	// may take a moment longer).
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after Close, %d before", n, before)
	}
}

func TestInProcUnsubscribeFromHandler(t *testing.T) {
	tr := NewInProc()
	defer tr.Close()
	var sub Subscription
	calls := make(chan struct{}, 10)
	var mu sync.Mutex
	mu.Lock()
	sub, err := tr.Subscribe("a", func(string, []byte) {
		mu.Lock()
		defer mu.Unlock()
		_ = sub.Unsubscribe()
		calls <- struct{}{}
	})
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		_ = tr.Publish(context.Background(), "a", nil)
	}
	<-calls
	time.Sleep(20 * time.Millisecond)
	if n := len(calls); n != 0 {
		t.Fatalf("%d calls after Unsubscribe", n)
	}
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestInProcRejectsBadSubjects(t *testing.T) {
	tr := NewInProc()
	defer tr.Close()
	ctx := context.Background()
	for _, s := range []string{"", "a..b", "a.*", "a.>", "a b", ".a", "a.", "a.b*"} {
		if err := tr.Publish(ctx, s, nil); err == nil {
			t.Errorf("Publish(%q) accepted", s)
		}
	}
	for _, s := range []string{"", "a.>.b", "a..b", "a.b>", "a\tb"} {
		if _, err := tr.Subscribe(s, func(string, []byte) {}); err == nil {
			t.Errorf("Subscribe(%q) accepted", s)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := tr.Publish(canceled, "a", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish with a canceled context: %v", err)
	}
}
