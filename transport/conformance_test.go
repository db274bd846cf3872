package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransportConformance runs the Transport contract (transport.go)
// against every implementation.
func TestTransportConformance(t *testing.T) {
	for _, k := range transportKinds() {
		t.Run(k.name, func(t *testing.T) { testTransportConformance(t, k.open) })
	}
}

// testTransportConformance checks the Transport contract, each case on a
// fresh pair from open.
func testTransportConformance(t *testing.T, open func(t *testing.T) (pub, sub Transport)) {
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, pub, sub Transport)
	}{
		{"subjects and wildcards", func(t *testing.T, pub, sub Transport) {
			lit, star, rest, other := newCollector(), newCollector(), newCollector(), newCollector()
			subscribe(t, sub, "t.a", lit.handle)
			subscribe(t, sub, "t.*", star.handle)
			subscribe(t, sub, "t.>", rest.handle)
			subscribe(t, sub, "u.*", other.handle)
			buf := []byte("1")
			publish(t, pub, "t.a", buf)
			buf[0] = 'X' // Publish did not keep data
			publish(t, pub, "t.b", []byte("2"))
			publish(t, pub, "t.b.c", []byte("3"))
			publish(t, pub, "u.a.b", []byte("4"))
			publish(t, pub, "nobody.listens", []byte("5"))
			// Order across subjects is not promised: compare sorted.
			for _, c := range []struct {
				col  *collector
				want []string
			}{
				{lit, []string{"t.a 1"}},
				{star, []string{"t.a 1", "t.b 2"}},
				{rest, []string{"t.a 1", "t.b 2", "t.b.c 3"}},
			} {
				if got := slices.Sorted(slices.Values(c.col.wait(t, len(c.want)))); !slices.Equal(got, c.want) {
					t.Errorf("got %q, want %q", got, c.want)
				}
			}
			settle(t, pub)
			for _, c := range []struct {
				col *collector
				n   int
			}{{lit, 1}, {star, 2}, {rest, 3}, {other, 0}} {
				if got := c.col.wait(t, 0); len(got) != c.n {
					t.Errorf("got %q, want %d messages", got, c.n)
				}
			}
		}},
		{"order per publisher and subject", func(t *testing.T, pub, sub Transport) {
			const pubs, per = 4, 250
			c := newCollector()
			subscribe(t, sub, "t.>", c.handle)
			pad := bytes.Repeat([]byte{'.'}, 3000) // every tenth message is chunked where chunking happens
			var wg sync.WaitGroup
			for p := range pubs {
				wg.Go(func() {
					for i := range per {
						data := fmt.Appendf(nil, "%d %d ", p, i)
						if i%10 == 0 {
							data = append(data, pad...)
						}
						if err := pub.Publish(ctx, "t.p", data); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			next := make([]int, pubs)
			for _, m := range c.wait(t, pubs*per) {
				var p, i int
				if _, err := fmt.Sscanf(m, "t.p %d %d", &p, &i); err != nil {
					t.Fatal(err)
				}
				if i != next[p] {
					t.Fatalf("publisher %d: got %d, want %d", p, i, next[p])
				}
				next[p]++
			}
		}},
		{"large and chunk-like messages arrive whole and in order", func(t *testing.T, pub, sub Transport) {
			r := rand.New(rand.NewPCG(11, 12))
			big := randBytes(r, 300_000)
			msg := mustEncode(t, Header{Job: "j", Iter: 1, From: "c", Seq: 1}, vectors{Eta: 0.25, Lambda: randFloats(r, 30_000), Mu: specialFloats})
			sent := [][]byte{big, []byte("small"), append([]byte("DDC\x01"), "not really a chunk"...), {}, msg, big}
			got := make(chan []byte, len(sent))
			subscribe(t, sub, "t.big", func(_ string, data []byte) { got <- bytes.Clone(data) })
			for _, d := range sent {
				publish(t, pub, "t.big", d)
			}
			for i, want := range sent {
				select {
				case d := <-got:
					if !bytes.Equal(d, want) {
						t.Fatalf("message %d: %d bytes differ from the %d sent", i, len(d), len(want))
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("message %d never arrived", i)
				}
			}
		}},
		{"one subscription's calls are sequential, different ones concurrent", func(t *testing.T, pub, sub Transport) {
			const n = 50
			var in, calls atomic.Int32
			var overlap atomic.Bool
			done := make(chan struct{})
			subscribe(t, sub, "t.seq", func(string, []byte) {
				if in.Add(1) > 1 {
					overlap.Store(true)
				}
				time.Sleep(100 * time.Microsecond)
				in.Add(-1)
				if calls.Add(1) == n {
					close(done)
				}
			})
			var wg sync.WaitGroup
			for range 5 {
				wg.Go(func() {
					for range n / 5 {
						publish(t, pub, "t.seq", nil)
					}
				})
			}
			wg.Wait()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d of %d calls", calls.Load(), n)
			}
			if overlap.Load() {
				t.Error("calls for one subscription overlapped")
			}
			// The first subscription's handler waits for the second's: it
			// would wait in vain if they ran one after the other.
			second := make(chan struct{})
			ok := make(chan bool, 1)
			subscribe(t, sub, "t.both", func(string, []byte) {
				select {
				case <-second:
					ok <- true
				case <-time.After(5 * time.Second):
					ok <- false
				}
			})
			subscribe(t, sub, "t.both", func(string, []byte) { close(second) })
			publish(t, pub, "t.both", nil)
			if !<-ok {
				t.Error("the handlers of two subscriptions did not run concurrently")
			}
		}},
		{"unsubscribe", func(t *testing.T, pub, sub Transport) {
			var calls atomic.Int32
			entered := make(chan struct{}, 10)
			release := make(chan struct{})
			var once sync.Once
			unblock := func() { once.Do(func() { close(release) }) }
			t.Cleanup(unblock)
			s := subscribe(t, sub, "t.u", func(string, []byte) {
				calls.Add(1)
				entered <- struct{}{}
				<-release
			})
			other := newCollector()
			subscribe(t, sub, "t.u", other.handle)
			published := make(chan struct{})
			go func() { // InProc may block it while the handler does
				defer close(published)
				for range 3 {
					publish(t, pub, "t.u", []byte("before"))
				}
			}()
			<-entered // the first call is under way
			unsubscribed := make(chan error, 1)
			go func() { unsubscribed <- s.Unsubscribe() }()
			select {
			case err := <-unsubscribed:
				unsubscribed <- err
			case <-time.After(50 * time.Millisecond): // it may wait for the handler
			}
			atReturn := calls.Load()
			unblock()
			if err := <-unsubscribed; err != nil {
				t.Fatal(err)
			}
			<-published
			for range 3 {
				publish(t, pub, "t.u", []byte("after"))
			}
			other.wait(t, 6) // another subscription to the subject is unaffected
			settle(t, pub)
			if n := calls.Load(); n > atReturn+1 {
				t.Errorf("%d calls after Unsubscribe returned", n-atReturn)
			}
			if err := s.Unsubscribe(); err != nil {
				t.Errorf("second Unsubscribe: %v", err)
			}
		}},
		{"unsubscribe from the handler", func(t *testing.T, pub, sub Transport) {
			var s Subscription
			var mu sync.Mutex
			calls := make(chan struct{}, 10)
			mu.Lock()
			s = subscribe(t, sub, "t.h", func(string, []byte) {
				mu.Lock()
				defer mu.Unlock()
				_ = s.Unsubscribe()
				calls <- struct{}{}
			})
			mu.Unlock()
			for range 5 {
				publish(t, pub, "t.h", nil)
			}
			<-calls
			settle(t, pub)
			if n := len(calls); n != 0 {
				t.Fatalf("%d calls after Unsubscribe", n)
			}
		}},
		{"bad subjects and ended contexts", func(t *testing.T, pub, sub Transport) {
			for _, s := range []string{"", "a..b", "a.*", "a.>", "a b", ".a", "a.", "a.b*"} {
				if err := pub.Publish(ctx, s, nil); err == nil {
					t.Errorf("Publish(%q) accepted", s)
				}
			}
			for _, s := range []string{"", "a.>.b", "a..b", "a.b>", "a\tb"} {
				if _, err := sub.Subscribe(s, func(string, []byte) {}); err == nil {
					t.Errorf("Subscribe(%q) accepted", s)
				}
			}
			canceled, cancel := context.WithCancel(ctx)
			cancel()
			if err := pub.Publish(canceled, "a", nil); !errors.Is(err, context.Canceled) {
				t.Errorf("Publish with a canceled context: %v", err)
			}
		}},
		{"close", func(t *testing.T, pub, sub Transport) {
			started := make(chan struct{}, 1)
			release := make(chan struct{})
			var once sync.Once
			unblock := func() { once.Do(func() { close(release) }) }
			t.Cleanup(unblock) // before the transports' Close if the test fails early
			s := subscribe(t, sub, "t.c", func(string, []byte) {
				started <- struct{}{}
				<-release
			})
			publish(t, pub, "t.c", nil)
			<-started
			closed := make(chan error, 1)
			go func() { closed <- sub.Close() }()
			select {
			case <-closed:
				t.Fatal("Close returned while a handler was running")
			case <-time.After(50 * time.Millisecond):
			}
			unblock()
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			if err := sub.Publish(ctx, "t.c", nil); !errors.Is(err, ErrClosed) {
				t.Errorf("Publish after Close: %v", err)
			}
			if _, err := sub.Subscribe("t.c", func(string, []byte) {}); !errors.Is(err, ErrClosed) {
				t.Errorf("Subscribe after Close: %v", err)
			}
			if err := sub.Flush(ctx); !errors.Is(err, ErrClosed) {
				t.Errorf("Flush after Close: %v", err)
			}
			if err := s.Unsubscribe(); err != nil {
				t.Errorf("Unsubscribe after Close: %v", err)
			}
			if err := sub.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pub, sub := open(t)
			c.run(t, pub, sub)
		})
	}
}

// subscribe subscribes h and flushes sub, so that the subscription is in
// place (at the server, for NATS) for what is published next.
func subscribe(t *testing.T, sub Transport, subject string, h Handler) Subscription {
	t.Helper()
	s, err := sub.Subscribe(subject, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func publish(t *testing.T, pub Transport, subject string, data []byte) {
	t.Helper()
	if err := pub.Publish(context.Background(), subject, data); err != nil {
		t.Error(err)
	}
}

// settle flushes pub and gives what it published time to be delivered,
// before a test checks that something did not arrive.
func settle(t *testing.T, pub Transport) {
	t.Helper()
	if err := pub.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
}
