package transport

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// FaultOptions configures a Faulty transport. Probabilities are per
// published message.
type FaultOptions struct {
	Seed      uint64
	Drop      float64       // the message is lost
	Duplicate float64       // it is delivered twice
	Delay     float64       // it is held back (so later ones overtake it)
	MaxDelay  time.Duration // how long at most (default 50ms)
	// Disturb selects the subjects to disturb; nil disturbs every subject.
	Disturb func(subject string) bool
}

// FaultStats counts what a Faulty transport did.
type FaultStats struct {
	Published, Dropped, Duplicated, Delayed int
}

// Faulty wraps a Transport and injects seeded message faults on publish:
// drops, duplicates, and delays that reorder messages. It is for tests of
// the protocol's resilience (and soak runs); production uses the inner
// transport directly. With no faults it is a Transport like the others
// (the conformance suite runs on it); its Close ends what was done through
// it but leaves the inner transport open: that belongs to the caller.
type Faulty struct {
	wrapper
	opts  FaultOptions
	mu    sync.Mutex // guards rng and stats
	rng   *rand.Rand
	stats FaultStats
	wg    sync.WaitGroup // delayed publishes
	done  chan struct{}  // closed by Close: held messages are dropped
	once  sync.Once
}

var _ Transport = (*Faulty)(nil)

// NewFaulty wraps inner.
func NewFaulty(inner Transport, opts FaultOptions) *Faulty {
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = 50 * time.Millisecond
	}
	return &Faulty{wrapper: newWrapper(inner), opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, 0x5eed)), done: make(chan struct{})}
}

// Publish implements Transport, with faults.
func (f *Faulty) Publish(ctx context.Context, subject string, data []byte) error {
	if f.isClosed() {
		return ErrClosed
	}
	if f.opts.Disturb != nil && !f.opts.Disturb(subject) {
		return f.inner.Publish(ctx, subject, data)
	}
	f.mu.Lock()
	f.stats.Published++
	drop := f.rng.Float64() < f.opts.Drop
	dup := f.rng.Float64() < f.opts.Duplicate
	delay := time.Duration(0)
	if f.rng.Float64() < f.opts.Delay {
		delay = time.Duration(f.rng.Int64N(int64(f.opts.MaxDelay)) + 1)
	}
	switch {
	case drop:
		f.stats.Dropped++
	case delay > 0:
		f.stats.Delayed++
	}
	if dup && !drop {
		f.stats.Duplicated++
	}
	f.mu.Unlock()
	if drop {
		return nil
	}
	copies := 1
	if dup {
		copies = 2
	}
	if delay == 0 {
		for i := 0; i < copies; i++ {
			if err := f.inner.Publish(ctx, subject, data); err != nil {
				return err
			}
		}
		return nil
	}
	held := append([]byte(nil), data...)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		select {
		case <-time.After(delay):
		case <-f.done:
			return
		}
		for i := 0; i < copies; i++ {
			_ = f.inner.Publish(context.Background(), subject, held)
		}
	}()
	return nil
}

// Subscribe implements Transport: it subscribes to the inner transport,
// undisturbed.
func (f *Faulty) Subscribe(subject string, h Handler) (Subscription, error) {
	return f.subscribe(subject, h)
}

// Flush implements Transport.
func (f *Faulty) Flush(ctx context.Context) error { return f.flush(ctx) }

// Close drops the messages still held back, ends the subscriptions made
// through f and waits for their handlers; the inner transport stays open.
func (f *Faulty) Close() error {
	f.once.Do(func() { close(f.done) })
	f.close()
	f.wg.Wait()
	return nil
}

// Stats returns what was done so far.
func (f *Faulty) Stats() FaultStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}
