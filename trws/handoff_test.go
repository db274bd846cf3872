package trws

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
)

// TestSignalPingPong: two goroutines hand a token back and forth through
// two signals many times, with every spin from park-at-once to
// spin-always-long-enough; a lost wakeup would hang the test, a
// duplicated one would let a count run ahead.
func TestSignalPingPong(t *testing.T) {
	for _, spin := range []time.Duration{0, time.Microsecond, 50 * time.Microsecond, time.Second} {
		ping, pong := newSignal(), newSignal()
		const rounds = 20000
		shared := 0 // written by each side in turn, under the signals' ordering
		done := make(chan error, 2)
		go func() {
			var seen uint64
			for i := range rounds {
				seen = ping.wait(seen, spin)
				if seen != uint64(i+1) || shared != 2*i+1 {
					done <- fmt.Errorf("spin %v: round %d: %d posts seen, shared %d", spin, i, seen, shared)
					return
				}
				shared++
				pong.post()
			}
			done <- nil
		}()
		go func() {
			var seen uint64
			for i := range rounds {
				shared++
				ping.post()
				seen = pong.wait(seen, spin)
				if seen != uint64(i+1) {
					done <- fmt.Errorf("spin %v: round %d: %d pongs", spin, i, seen)
					return
				}
			}
			done <- nil
		}()
		for range 2 {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("spin %v: a wakeup was lost", spin)
			}
		}
		if shared != 2*rounds {
			t.Fatalf("spin %v: shared %d", spin, shared)
		}
	}
}

// TestThreadsOneProcessor: with fewer processors than threads the runner
// does not spin (it would hold up the goroutine it waits for) and gives
// the results of a run with enough processors.
func TestThreadsOneProcessor(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 20, Width: 20, Labels: 3, Rho: 2, Seed: 9})
	o := testOpts(30)
	o.Threads, o.Tol = 2, 0
	want, err := Solve(bg, m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	g := testGraph(t, m, 2)
	if r := newRun(g, o); r.spin != 0 {
		t.Errorf("GOMAXPROCS 1, 2 threads: spin %v", r.spin)
		r.close()
	} else {
		r.close()
	}
	got, err := Solve(bg, m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Dual != want.Dual || got.Primal != want.Primal || !slices.Equal(got.Assignment, want.Assignment) {
		t.Errorf("GOMAXPROCS 1: dual %v primal %v, with more processors %v %v", got.Dual, got.Primal, want.Dual, want.Primal)
	}
}

// BenchmarkHandoff times an iteration on a 4x4 grid, where the parts take
// well under a microsecond: with 2 threads the difference to 1 is the cost
// of handing the two passes to the worker and waiting for it (about 1 us
// per iteration through a channel and a WaitGroup, about none with the
// spinning signals of handoff.go when a second processor is free).
func BenchmarkHandoff(b *testing.B) {
	m := dense(generate.Potts(generate.GridOptions{Height: 4, Width: 4, Labels: 4, Rho: 1, Seed: 1}))
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			timeIterations(b, runnerFor(b, m, threads))
		})
	}
}
