package transport

import (
	"sync"
	"testing"
)

func TestFilterPosition(t *testing.T) {
	f := NewFilter("j", FilterOptions{})
	if !f.Advance(2, 10) {
		t.Fatal("Advance forward refused")
	}
	if f.Advance(2, 9) || f.Advance(1, 100) || f.Advance(2, 10) {
		t.Fatal("Advance moved backward or stayed")
	}
	if e, i := f.Position(); e != 2 || i != 10 {
		t.Fatalf("position (%d, %d)", e, i)
	}
	cases := []struct {
		h    Header
		want Verdict
	}{
		{Header{Job: "other", Epoch: 2, Iter: 10}, OtherJob},
		{Header{Job: "j", Epoch: 1, Iter: 50}, Stale}, // older epoch, later iteration
		{Header{Job: "j", Epoch: 2, Iter: 9}, Stale},  // older iteration
		{Header{Job: "j", Epoch: 2, Iter: 10}, Current},
		{Header{Job: "j", Epoch: 2, Iter: 11}, Ahead},
		{Header{Job: "j", Epoch: 3, Iter: 0}, Ahead}, // new epoch restarts iterations
	}
	for _, c := range cases {
		if got := f.Check(c.h); got != c.want {
			t.Errorf("%+v: %v, want %v", c.h, got, c.want)
		}
	}
	f.Advance(3, 0)
	if v := f.Check(Header{Job: "j", Epoch: 2, Iter: 99}); v != Stale || v.Keep() {
		t.Fatalf("old epoch after advancing: %v", v)
	}
	if !Current.Keep() || !Ahead.Keep() || Stale.Keep() || Duplicate.Keep() || OtherJob.Keep() {
		t.Fatal("Keep")
	}
	if NewFilter("", FilterOptions{}).Check(Header{Job: "any"}) != Current {
		t.Fatal("a filter without job dropped a job")
	}
}

func TestFilterDuplicates(t *testing.T) {
	f := NewFilter("j", FilterOptions{Window: 64})
	h := func(from string, seq uint64) Header { return Header{Job: "j", From: from, Seq: seq} }
	steps := []struct {
		h    Header
		want Verdict
	}{
		{h("a", 100), Current},
		{h("a", 100), Duplicate},
		{h("b", 100), Current}, // another sender, same number
		{h("a", 102), Current},
		{h("a", 101), Current}, // late but new: within the window
		{h("a", 101), Duplicate},
		{h("a", 99), Current},   // below the first one seen, within the window
		{h("a", 38), Duplicate}, // beyond the window: cannot tell, dropped
		{h("a", 39), Current},   // 102-39 = 63 < 64
		{h("a", 1000), Current}, // a jump clears the window
		{h("a", 999), Current},
		{h("a", 102), Duplicate},
		{h("a", 0), Current}, // Seq 0: unsequenced, never deduplicated
		{h("a", 0), Current},
	}
	for i, s := range steps {
		if got := f.Check(s.h); got != s.want {
			t.Fatalf("step %d %+v: %v, want %v", i, s.h, got, s.want)
		}
	}
	// A stale message is not recorded: once the position falls back below
	// it (never, by Advance) it would still be new. A duplicate of a kept
	// message stays a duplicate after Advance.
	f.Advance(0, 5)
	if got := f.Check(Header{Job: "j", Iter: 5, From: "a", Seq: 1000}); got != Duplicate {
		t.Fatalf("after Advance: %v", got)
	}
}

// One forged message with a huge Seq does not move the sender's window:
// the real sender's next messages are still new. Two far Seqs close to
// each other (a restarted sender) do move it.
func TestFilterFarSeq(t *testing.T) {
	f := NewFilter("j", FilterOptions{Window: 64})
	h := func(seq uint64) Header { return Header{Job: "j", From: "a", Seq: seq} }
	steps := []struct {
		seq  uint64
		want Verdict
	}{
		{100, Current},
		{101, Current},
		{1 << 62, Current},   // forged: kept, not recorded
		{1 << 62, Duplicate}, // its copy
		{102, Current},       // the real sender goes on
		{103, Current},       //
		{101, Duplicate},     // still deduplicated
		{5000, Current},      // a restarted sender's first message
		{5001, Current},      // confirms: the window moves
		{103, Duplicate},     // now far behind
		{5000, Duplicate},    // both recorded
		{5002, Current},      //
		{1<<62 + 1, Current}, // far from the earlier far Seq: not confirmed
		{5003, Current},      //
	}
	for i, s := range steps {
		if got := f.Check(h(s.seq)); got != s.want {
			t.Fatalf("step %d seq %d: %v, want %v", i, s.seq, got, s.want)
		}
	}
}

// Within the window, any arrival order keeps each Seq exactly once.
func TestFilterWindowOrders(t *testing.T) {
	f := NewFilter("", FilterOptions{Window: 128})
	kept := 0
	for round := range 2 {
		for _, seq := range []uint64{5, 1, 100, 64, 2, 127, 3, 126, 4, 128} {
			if f.Check(Header{From: "w", Seq: seq}).Keep() {
				kept++
			}
		}
		if round == 0 && kept != 10 {
			t.Fatalf("kept %d of 10", kept)
		}
	}
	if kept != 10 {
		t.Fatalf("replays kept: %d", kept)
	}
}

func TestFilterSenderBound(t *testing.T) {
	f := NewFilter("", FilterOptions{MaxSenders: 2})
	f.Check(Header{From: "a", Seq: 1})
	f.Check(Header{From: "b", Seq: 1})
	f.Check(Header{From: "a", Seq: 2}) // b is now least recently heard
	f.Check(Header{From: "c", Seq: 1}) // evicts b
	if got := f.Check(Header{From: "a", Seq: 2}); got != Duplicate {
		t.Fatalf("a forgotten: %v", got)
	}
	if got := f.Check(Header{From: "b", Seq: 1}); got != Current {
		t.Fatalf("b remembered beyond the bound: %v", got)
	}
	if len(f.senders) > 2 {
		t.Fatalf("%d senders", len(f.senders))
	}
}

func TestFilterConcurrent(t *testing.T) {
	f := NewFilter("j", FilterOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	kept := 0
	for g := range 4 {
		wg.Go(func() {
			n := 0
			for seq := uint64(1); seq <= 2000; seq++ {
				if f.Check(Header{Job: "j", From: "w", Seq: seq}).Keep() { // all goroutines race on one sender
					n++
				}
				if g == 0 && seq%100 == 0 {
					f.Advance(0, 0) // no-op, exercises the lock
				}
			}
			mu.Lock()
			kept += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if kept != 2000 {
		t.Fatalf("kept %d, want each of 2000 sequence numbers once", kept)
	}
}

func TestSequence(t *testing.T) {
	a := NewSequence()
	x, y := a.Next(), a.Next()
	if x == 0 || y <= x {
		t.Fatalf("%d %d", x, y)
	}
	if b := NewSequence(); b.Next() <= x { // a later incarnation continues above
		t.Fatal("a new sequence started below an older one")
	}
	for v := range []Verdict{Current, Ahead, Stale, Duplicate, OtherJob, 99} {
		_ = Verdict(v).String()
	}
}

// The huge-Seq takeover of issue 30: two forged messages with huge Seqs
// close to each other (what a restarted sender sends) used to move the
// sender's only window there, so that every real message after them was a
// "duplicate". Now they open a window of their own: the real sender goes on
// in its window, still deduplicated, also after many such pairs.
func TestFilterHugeSeqTakeover(t *testing.T) {
	f := NewFilter("j", FilterOptions{Window: 64})
	check := func(seq uint64, want Verdict) {
		t.Helper()
		if got := f.Check(Header{Job: "j", From: "a", Seq: seq}); got != want {
			t.Fatalf("seq %d: %v, want %v", seq, got, want)
		}
	}
	check(100, Current)
	check(101, Current)
	real := uint64(102)
	for pair := range uint64(10) {
		base := 1<<62 + pair<<20
		check(base, Current)   // kept, not recorded
		check(base+1, Current) // confirms: a window of its own
		check(base+1, Duplicate)
		for range 3 {
			check(real, Current) // the real sender goes on
			check(real, Duplicate)
			real++
		}
	}
	check(101, Duplicate)
}

// Newest admits a sender's numbers only upwards, each sender apart, and
// refuses new senders past Max.
func TestNewest(t *testing.T) {
	n := Newest{Max: 2}
	for _, c := range []struct {
		from string
		seq  uint64
		want bool
	}{
		{"a", 5, true}, {"a", 5, false}, {"a", 4, false}, {"a", 6, true},
		{"b", 1, true}, {"a", 5, false}, // a replay of a's older hello
		{"c", 9, false}, // a third sender, past Max
		{"b", 2, true},
	} {
		if got := n.Admit(c.from, c.seq); got != c.want {
			t.Errorf("Admit(%s, %d) = %v, want %v", c.from, c.seq, got, c.want)
		}
	}
}
