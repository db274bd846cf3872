package transport

import (
	"context"
	"sync"
)

// InProcOptions configures an InProc transport. The zero value is usable.
type InProcOptions struct {
	// Buffer is each subscription's queue length (default 64). A publisher
	// blocks while a matching subscriber's queue is full.
	Buffer int
}

// InProc is a Transport over channels inside one process: what the
// single-process mode and the tests use. Each subscription has a bounded
// queue and one goroutine that calls its handler, so delivery per
// subscription is in publish order and publishers feel back-pressure.
// Publish copies data once and shares the copy among subscribers. Chunking
// is never needed.
type InProc struct {
	buffer int

	mu     sync.RWMutex
	subs   map[*inprocSub]struct{}
	closed bool
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup
}

type inprocMsg struct {
	subject string
	data    []byte
}

type inprocSub struct {
	t       *InProc
	pattern string
	h       Handler
	ch      chan inprocMsg
	once    sync.Once
	stop    chan struct{} // closed by Unsubscribe
}

var _ Transport = (*InProc)(nil)

// NewInProc returns an in-process transport with default options.
func NewInProc() *InProc { return NewInProcWith(InProcOptions{}) }

// NewInProcWith returns an in-process transport with opts.
func NewInProcWith(opts InProcOptions) *InProc {
	if opts.Buffer <= 0 {
		opts.Buffer = 64
	}
	return &InProc{
		buffer: opts.Buffer,
		subs:   make(map[*inprocSub]struct{}),
		done:   make(chan struct{}),
	}
}

// Publish implements Transport. It blocks while a matching subscriber's
// queue is full, until there is room, ctx ends, or the transport closes.
// A subscriber that unsubscribes meanwhile is skipped.
func (t *InProc) Publish(ctx context.Context, subject string, data []byte) error {
	if err := checkSubject(subject, false); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t.mu.RLock()
	if t.closed {
		t.mu.RUnlock()
		return ErrClosed
	}
	var targets []*inprocSub
	for s := range t.subs {
		if matchSubject(s.pattern, subject) {
			targets = append(targets, s)
		}
	}
	t.mu.RUnlock()
	if len(targets) == 0 {
		return nil
	}
	m := inprocMsg{subject: subject, data: append([]byte(nil), data...)}
	for _, s := range targets {
		select {
		case s.ch <- m:
			continue
		default:
		}
		select {
		case s.ch <- m:
		case <-s.stop:
		case <-t.done:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Subscribe implements Transport.
func (t *InProc) Subscribe(subject string, h Handler) (Subscription, error) {
	if err := checkSubject(subject, true); err != nil {
		return nil, err
	}
	if h == nil {
		panic("transport: nil handler")
	}
	s := &inprocSub{
		t:       t,
		pattern: subject,
		h:       h,
		ch:      make(chan inprocMsg, t.buffer),
		stop:    make(chan struct{}),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	t.subs[s] = struct{}{}
	t.wg.Add(1)
	go s.run()
	return s, nil
}

func (s *inprocSub) run() {
	defer s.t.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.t.done:
			return
		case m := <-s.ch:
			// Stopping wins over a queued message.
			select {
			case <-s.stop:
				return
			case <-s.t.done:
				return
			default:
			}
			s.h(m.subject, m.data)
		}
	}
}

// Unsubscribe implements Subscription. Queued messages are dropped.
func (s *inprocSub) Unsubscribe() error {
	s.once.Do(func() {
		close(s.stop)
		s.t.mu.Lock()
		delete(s.t.subs, s)
		s.t.mu.Unlock()
	})
	return nil
}

// Flush implements Transport. Publish hands messages straight to the
// subscribers' queues, so there is nothing to flush.
func (t *InProc) Flush(ctx context.Context) error {
	t.mu.RLock()
	closed := t.closed
	t.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return ctx.Err()
}

// Close implements Transport: queued messages are dropped, blocked
// publishers return ErrClosed, and Close returns once every subscription's
// goroutine has exited.
func (t *InProc) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		t.wg.Wait()
		return nil
	}
	t.closed = true
	close(t.done)
	t.subs = nil
	t.mu.Unlock()
	t.wg.Wait()
	return nil
}
