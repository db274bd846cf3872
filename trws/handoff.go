package trws

import (
	"sync/atomic"
	"time"
)

// Handing passes to the worker goroutines (Options.Threads > 1).
//
// A parallel pass hands each worker its part and waits for all of them,
// twice per iteration. Through a channel and a sync.WaitGroup both steps
// park a goroutine, and waking it went through the scheduler and the
// operating system: on a 300x300 4-label dense grid (2 threads, 2 cores)
// a worker started about 110 us after its part was handed out and the
// caller resumed about 17 us after the last part ended, 0.25 ms of a
// 4.4 ms iteration, while the parts themselves are balanced to 1%. A
// signal instead lets the waiting side spin on an atomic counter for up
// to spinFor before it parks, which covers the gaps of a run (the
// separator's turn between the passes, a few tens of microseconds, and
// the parts' difference in length); a longer wait (TRW-S(LP-C)'s cycle
// sweeps, the caller's work between iterations, a descheduled thread)
// parks as before, so an idle run burns at most spinFor of CPU per
// handoff. With fewer processors than threads (GOMAXPROCS) spinning would
// only hold up the goroutine it waits for: runner sets spinFor to 0 then.

// spinFor is how long a waiting goroutine spins before it parks.
const spinFor = 200 * time.Microsecond

// signal is a counter of posts from one goroutine to another that waits
// for them. It fills a cache line of its own, so that the two sides of
// one handoff do not share a line with another's.
type signal struct {
	n      atomic.Uint64 // posts so far
	parked atomic.Bool   // the waiter sleeps on ch
	ch     chan struct{} // capacity 1: a post to a parked waiter
	_      [40]byte
}

func newSignal() signal { return signal{ch: make(chan struct{}, 1)} }

// post adds one post and wakes the waiter when it is parked. Whatever the
// poster wrote before post is visible to the waiter after its wait
// returns (sync/atomic's operations are sequentially consistent).
func (s *signal) post() {
	s.n.Add(1)
	if s.parked.Load() && s.parked.CompareAndSwap(true, false) {
		s.ch <- struct{}{}
	}
}

// wait returns the number of posts once it differs from seen: spinning up
// to spin, then parked on ch. No post is lost: the waiter sets parked
// before its last look at n and the poster adds to n before its look at
// parked, so at least one of them sees the other; the one whose
// CompareAndSwap clears parked decides whether a token goes through ch.
func (s *signal) wait(seen uint64, spin time.Duration) uint64 {
	if spin > 0 {
		var deadline time.Time
		for i := 1; ; i++ {
			if n := s.n.Load(); n != seen {
				return n
			}
			if i%256 == 0 {
				now := time.Now()
				if deadline.IsZero() {
					deadline = now.Add(spin)
				} else if now.After(deadline) {
					break
				}
			}
		}
	}
	s.parked.Store(true)
	if n := s.n.Load(); n != seen {
		if !s.parked.CompareAndSwap(true, false) {
			<-s.ch // the poster cleared parked and sends a token
		}
		return n
	}
	<-s.ch
	return s.n.Load()
}

// workerCtl is the handoff to worker c: start carries pass (0 forward, 1
// backward) or stop, done the worker's end of the pass; seenDone is the
// caller's count of done posts.
type workerCtl struct {
	start    signal
	pass     int
	stop     bool
	seenDone uint64
	_        [48]byte
	done     signal
}

func newWorkerCtl() workerCtl {
	return workerCtl{start: newSignal(), done: newSignal()}
}
