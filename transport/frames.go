package transport

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ddrun/ddrun/internal/ratelimit"
)

// framer is a transport that chunks what is longer than its MaxPayload
// (NATS). A wrapper that must check every frame before anything is
// buffered (Sealed) chunks itself, in frames that fit MaxPayload, and
// subscribes with subscribeFrames, which hands it chunk frames as they
// arrive instead of reassembling them; it reassembles what passed its
// check with a reassembly of its own, under the same options and budget.
type framer interface {
	MaxPayload() int
	subscribeFrames(subject string, h Handler) (Subscription, error)
	reassemblyOptions() ReassemblyOptions
}

// chunkWarnEvery is the least time between two chunk warnings of one
// subscription: a flood of bad frames costs one line per interval.
const chunkWarnEvery = 5 * time.Second

// reassembly is one subscription's Reassembler, with the timer that sweeps
// it while it holds incomplete messages and the rate-limited report of its
// problems. add is called from the subscription's handler, one frame at a
// time.
type reassembly struct {
	re      *Reassembler
	subject string
	report  func(error)

	mu      sync.Mutex
	timer   *time.Timer // sweeps re while it holds incomplete messages
	stopped atomic.Bool

	evicted uint64 // re's Evicted count already reported (add's)
	warns   ratelimit.Repeats[struct{}]
}

func newReassembly(subject string, opts ReassemblyOptions, report func(error)) *reassembly {
	return &reassembly{re: NewReassembler(opts), subject: subject, report: report, warns: ratelimit.Repeats[struct{}]{Every: chunkWarnEvery}}
}

// add takes a chunk frame that arrived on subject and returns the whole
// message when it was the last missing piece, nil otherwise.
func (r *reassembly) add(subject string, frame []byte) []byte {
	whole, err := r.re.Add(frame)
	if r.stopped.Load() { // stop ran meanwhile: give back what Add took
		r.re.Clear()
		return nil
	}
	if err != nil {
		r.warn(fmt.Errorf("%s: %w", subject, err))
		return nil
	}
	if ev := r.re.Stats().Evicted; ev != r.evicted {
		r.warn(fmt.Errorf("%s: %w: dropped %d incomplete messages to stay within the reassembly bounds", subject, ErrBadChunk, ev-r.evicted))
		r.evicted = ev
	}
	r.armSweep()
	return whole
}

// warn reports a chunk problem, at most once per chunkWarnEvery; the next
// report says how many were left out.
func (r *reassembly) warn(err error) {
	n, ok := r.warns.Admit(struct{}{})
	if !ok || r.report == nil {
		return
	}
	if n > 0 {
		err = fmt.Errorf("%w (and %d more chunk problems since the last report)", err, n)
	}
	r.report(err)
}

// armSweep schedules Expire while incomplete messages are held, so that
// they are dropped after the timeout even if no further chunk arrives.
func (r *reassembly) armSweep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil || r.stopped.Load() {
		return
	}
	if n, _ := r.re.Pending(); n == 0 {
		return
	}
	r.timer = time.AfterFunc(r.re.opts.Timeout/2, r.sweep)
}

func (r *reassembly) sweep() {
	if n := r.re.Expire(); n > 0 && r.report != nil {
		r.report(fmt.Errorf("%s: %w: dropped %d incomplete messages after %v", r.subject, ErrBadChunk, n, r.re.opts.Timeout))
	}
	r.mu.Lock()
	r.timer = nil
	r.mu.Unlock()
	r.armSweep()
}

// stop ends the sweeping and gives the incomplete messages' bytes back to
// the budget.
func (r *reassembly) stop() {
	r.mu.Lock()
	r.stopped.Store(true)
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.re.Clear()
}
