package consensus

import (
	"runtime"
	"sync/atomic"
	"time"
)

// spinFor is how long a pool goroutine waiting for the next phase, or the
// caller waiting for the last chunks of a phase, polls before it parks.
// Parking is cheap in CPU but waking a parked goroutine is not: on a
// virtual machine whose idle vCPU has halted it took 0.4 ms on average
// (measured on the 2-core test machine), twice per iteration, during which
// only one thread worked. The gaps between the phases of a run are much
// shorter than spinFor, so the goroutines stay awake for the whole run and
// park only when the caller does something long between phases (or stops).
const spinFor = 200 * time.Microsecond

// pool runs a loop body over fixed chunks on persistent goroutines. Chunks
// are claimed dynamically, but every chunk writes only its own outputs, so
// results do not depend on the number of goroutines or on scheduling.
// Starting a phase allocates nothing.
//
// Each goroutine first claims the chunks of its own contiguous range of
// the phase, in order, then helps with the others' ranges. Handing out
// chunks in turn from one counter had each goroutine read the arrays in
// short runs with gaps between them (the other goroutine's chunks), which
// the hardware prefetcher follows worse than one long run: the memory
// bound loops cost 15-30% more CPU time with two threads than with one.
type pool struct {
	threads int
	spin    bool // poll before parking (not when oversubscribed)
	_       [cacheLine]byte
	gen     atomic.Uint64 // phase number: bumped to start a phase
	_       [cacheLine - 8]byte
	pending atomic.Int64 // goroutines still working on the phase
	_       [cacheLine - 8]byte
	ranges  []span // per goroutine: its range of chunks
	chunks  int
	body    func(worker, chunk int)
	quit    bool
	wakes   []*signal // per goroutine (index worker-1)
	done    signal    // the caller's, for the end of a phase
	// yield, when not nil, runs where a goroutine that is delayed between
	// two steps of the handshake can meet a late or early partner: tests
	// set it (before the first run) to stretch those windows.
	yield func()
}

// span is a goroutine's range of chunks in a phase.
type span struct {
	next atomic.Int64 // the next chunk of the range to claim
	end  int64
	_    [cacheLine - 16]byte
}

// signal wakes one waiting goroutine. The waiter polls its condition for
// spinFor, then parks; whoever makes the condition true calls notify.
type signal struct {
	parked atomic.Bool
	ch     chan struct{} // buffered: notify never blocks
	_      [cacheLine]byte
}

func newSignal() signal { return signal{ch: make(chan struct{}, 1)} }

// wait returns once ready() is true. ready must only become true before a
// call to notify.
//
// A token does not mean that ready is true: a notifier can be late, its
// call for an earlier condition (the previous phase) taking the flag that
// this wait set. So a woken waiter checks ready again and parks again when
// it is still false. Returning on a stale token let the caller end a
// phase while goroutines still worked on it, and a pool goroutine start a
// phase that had not begun: its count then ran ahead of the phases and it
// spun through drain for ever while the caller waited for a count of
// pending goroutines that had gone past zero.
func (s *signal) wait(ready func() bool, spin bool) {
	if spin {
		start := time.Now()
		for i := 1; ; i++ {
			if ready() {
				return
			}
			if i%256 == 0 {
				if time.Since(start) > spinFor {
					break
				}
				runtime.Gosched() // let a runnable goroutine have the P
			}
		}
	}
	// Park. A notifier that sees parked takes the flag and sends one token;
	// one that does not made ready true before this load (the atomics are
	// sequentially consistent), so the check below sees it. Each flag
	// taken is one token sent and one token consumed here, so none is left
	// over for the next wait.
	for {
		s.parked.Store(true)
		if ready() {
			if !s.parked.CompareAndSwap(true, false) {
				<-s.ch // a notifier took the flag: consume its token
			}
			return
		}
		<-s.ch
		if ready() {
			return
		}
		// A late notifier's token: park again.
	}
}

// notify wakes the waiter if it parked; call it after making ready true.
func (s *signal) notify() {
	if s.parked.CompareAndSwap(true, false) {
		s.ch <- struct{}{}
	}
}

func newPool(threads int) *pool {
	p := &pool{threads: threads, spin: threads <= runtime.GOMAXPROCS(0), done: newSignal(),
		ranges: make([]span, threads)}
	for w := 1; w < threads; w++ {
		s := newSignal()
		p.wakes = append(p.wakes, &s)
		go p.loop(w, &s)
	}
	return p
}

func (p *pool) loop(w int, wake *signal) {
	seen := uint64(0)
	for {
		wake.wait(func() bool { return p.gen.Load() != seen }, p.spin)
		seen++
		if p.quit {
			return
		}
		p.drain(w)
		if p.pending.Add(-1) == 0 {
			if p.yield != nil {
				p.yield()
			}
			p.done.notify()
		}
	}
}

func (p *pool) drain(w int) {
	for k := range p.ranges {
		r := &p.ranges[(w+k)%len(p.ranges)]
		for {
			c := r.next.Add(1) - 1
			if c >= r.end {
				break
			}
			p.body(w, int(c))
		}
	}
}

// run calls body(worker, c) for every chunk c in [0, chunks) and waits.
// With one chunk (or one thread) the caller runs it alone.
func (p *pool) run(chunks int, body func(worker, chunk int)) {
	if len(p.wakes) == 0 || chunks <= 1 {
		for c := 0; c < chunks; c++ {
			body(0, c)
		}
		return
	}
	p.chunks = chunks
	p.body = body
	n := int64(len(p.ranges))
	for t := range p.ranges {
		p.ranges[t].next.Store(int64(chunks) * int64(t) / n)
		p.ranges[t].end = int64(chunks) * int64(t+1) / n
	}
	p.pending.Store(int64(len(p.wakes)))
	p.gen.Add(1) // publishes chunks, body, next and pending
	for _, s := range p.wakes {
		if p.yield != nil {
			p.yield()
		}
		s.notify()
	}
	p.drain(0)
	p.done.wait(p.finished, p.spin)
	p.body = nil
}

func (p *pool) finished() bool { return p.pending.Load() == 0 }

// close stops the goroutines.
func (p *pool) close() {
	if len(p.wakes) == 0 {
		return
	}
	p.quit = true
	p.pending.Store(int64(len(p.wakes)))
	p.gen.Add(1)
	for _, s := range p.wakes {
		s.notify()
	}
}
