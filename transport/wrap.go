package transport

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// wrapper is what the transports that wrap another (Faulty, Sealed) share:
// they track the subscriptions made through them, so that their Close ends
// those and waits for their handlers while the inner transport, which
// belongs to the caller, stays open.
type wrapper struct {
	inner    Transport
	mu       sync.Mutex // guards closed and subs
	closed   bool
	subs     map[*wrappedSub]struct{}
	handlers sync.WaitGroup // handler calls under way
}

func newWrapper(inner Transport) wrapper {
	return wrapper{inner: inner, subs: make(map[*wrappedSub]struct{})}
}

// subscribe subscribes h to subject on the inner transport; h is not
// called once the wrapper is closed.
func (w *wrapper) subscribe(subject string, h Handler) (Subscription, error) {
	return w.subscribeWith(w.inner.Subscribe, subject, h, nil)
}

// subscribeWith is subscribe through sub (one of the inner transport's
// ways to subscribe); stop, when not nil, runs once when the subscription
// ends.
func (w *wrapper) subscribeWith(sub func(string, Handler) (Subscription, error), subject string, h Handler, stop func()) (Subscription, error) {
	if h == nil {
		panic("transport: nil handler")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	s := &wrappedSub{w: w, stop: stop}
	inner, err := sub(subject, func(subject string, data []byte) {
		if !w.enter() {
			return
		}
		defer w.handlers.Done()
		h(subject, data)
	})
	if err != nil {
		if stop != nil {
			stop()
		}
		return nil, err
	}
	s.inner = inner
	w.subs[s] = struct{}{}
	return s, nil
}

// enter registers a handler call, unless the wrapper is closed.
func (w *wrapper) enter() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.handlers.Add(1)
	return true
}

type wrappedSub struct {
	w     *wrapper
	inner Subscription
	stop  func()
	once  sync.Once
}

// Unsubscribe implements Subscription.
func (s *wrappedSub) Unsubscribe() error {
	s.w.mu.Lock()
	delete(s.w.subs, s)
	s.w.mu.Unlock()
	err := s.inner.Unsubscribe()
	if s.stop != nil {
		s.once.Do(s.stop)
	}
	return err
}

func (w *wrapper) flush(ctx context.Context) error {
	if w.isClosed() {
		return ErrClosed
	}
	return w.inner.Flush(ctx)
}

func (w *wrapper) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// close ends the subscriptions made through w and waits for their
// handlers.
func (w *wrapper) close() {
	w.mu.Lock()
	w.closed = true
	subs := slices.Collect(maps.Keys(w.subs))
	w.mu.Unlock()
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
	w.handlers.Wait()
}
