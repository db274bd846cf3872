package transport

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

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

// Close waits for every subscription's goroutine: none is left behind,
// also of a subscription that ended before.
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
	// The unsubscribed one may take a moment longer.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after Close, %d before", n, before)
	}
}
