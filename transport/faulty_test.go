package transport

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// faultyPair is a Faulty over an InProc and a collector subscribed to
// "f.>" on the inner transport, so that what the faults let through is seen
// as it reaches the wire.
func faultyPair(t *testing.T, opts FaultOptions) (*Faulty, *collector) {
	t.Helper()
	inner := NewInProc()
	f := NewFaulty(inner, opts)
	t.Cleanup(func() { _ = f.Close(); _ = inner.Close() })
	c := newCollector()
	if _, err := inner.Subscribe("f.>", c.handle); err != nil {
		t.Fatal(err)
	}
	return f, c
}

func publishN(t *testing.T, tr Transport, subject string, n int) {
	t.Helper()
	for i := range n {
		if err := tr.Publish(context.Background(), subject, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFaultyDropDuplicate(t *testing.T) {
	f, c := faultyPair(t, FaultOptions{Seed: 1, Drop: 1})
	publishN(t, f, "f.a", 20)
	settle(t, f)
	if got := c.wait(t, 0); len(got) != 0 {
		t.Fatalf("dropped messages arrived: %q", got)
	}
	if st := f.Stats(); st != (FaultStats{Published: 20, Dropped: 20}) {
		t.Fatalf("stats %+v", st)
	}

	f, c = faultyPair(t, FaultOptions{Seed: 1, Duplicate: 1})
	publishN(t, f, "f.a", 20)
	got := c.wait(t, 40)
	for i := range 20 {
		want := fmt.Sprintf("f.a %d", i)
		if got[2*i] != want || got[2*i+1] != want {
			t.Fatalf("messages %d and %d: %q, %q; want %q twice", 2*i, 2*i+1, got[2*i], got[2*i+1], want)
		}
	}
	if st := f.Stats(); st != (FaultStats{Published: 20, Duplicated: 20}) {
		t.Fatalf("stats %+v", st)
	}
}

// Delayed messages arrive late and out of order; Close drops those still
// held back.
func TestFaultyDelay(t *testing.T) {
	f, c := faultyPair(t, FaultOptions{Seed: 2, Delay: 0.5, MaxDelay: 20 * time.Millisecond})
	publishN(t, f, "f.a", 200)
	got := c.wait(t, 200)
	inOrder := true
	for i, m := range got {
		inOrder = inOrder && m == fmt.Sprintf("f.a %d", i)
	}
	if st := f.Stats(); inOrder || st.Delayed == 0 || st.Published != 200 {
		t.Fatalf("in order %v, stats %+v", inOrder, st)
	}

	f, c = faultyPair(t, FaultOptions{Seed: 2, Delay: 1, MaxDelay: time.Hour})
	publishN(t, f, "f.a", 10)
	start := time.Now()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close waited %v for held messages", d)
	}
	if got := c.wait(t, 0); len(got) != 0 {
		t.Fatalf("held messages arrived after Close: %q", got)
	}
}

// Disturb limits the faults to some subjects, and a seed gives the same
// faults every time.
func TestFaultyDisturbAndSeed(t *testing.T) {
	opts := FaultOptions{Seed: 3, Drop: 0.5, Disturb: func(s string) bool { return strings.HasSuffix(s, ".noisy") }}
	var runs [2][]string
	for r := range runs {
		f, c := faultyPair(t, opts)
		publishN(t, f, "f.quiet", 50)
		publishN(t, f, "f.noisy", 50)
		settle(t, f)
		runs[r] = c.wait(t, 0)
		quiet := 0
		for _, m := range runs[r] {
			if strings.HasPrefix(m, "f.quiet ") {
				quiet++
			}
		}
		if st := f.Stats(); quiet != 50 || st.Published != 50 || st.Dropped == 0 || st.Dropped == 50 {
			t.Fatalf("%d of 50 undisturbed messages arrived, stats %+v", quiet, st)
		}
	}
	if fmt.Sprint(runs[0]) != fmt.Sprint(runs[1]) {
		t.Fatal("the same seed dropped different messages")
	}
}
