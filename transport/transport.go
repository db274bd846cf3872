package transport

import (
	"context"
	"errors"
)

// Transport moves opaque byte messages between processes by subject. It
// knows nothing of what the bytes mean; Encode and Decode give them their
// envelope. conformance_test.go holds every implementation to this
// contract.
//
// Delivery is at most once: a message is lost when the receiver is not
// subscribed, too slow (NATS drops for slow consumers), or the connection
// breaks. Messages from one publisher on one subject arrive in the order they
// were published. The protocol on top is expected to retransmit what
// matters and to drop duplicates and stale messages with a Filter.
type Transport interface {
	// Publish sends data to every current subscriber of subject, a literal
	// subject (no wildcards). It may block for back-pressure (InProc) or
	// while handing off a chunked message (NATS), and returns ctx's error if
	// ctx ends first. data is not retained after Publish returns.
	Publish(ctx context.Context, subject string, data []byte) error

	// Subscribe calls h for every message on subject, which may hold the
	// wildcards "*" (one token) and ">" (the rest, last token only). Calls
	// for one subscription are sequential, in arrival order; different
	// subscriptions run concurrently. h must treat data as read-only (it may
	// be shared with other subscribers) and must not call Close. The
	// subscription sees what is published after a Flush of this transport
	// that follows Subscribe (at once for InProc; NATS: once the server
	// has it).
	Subscribe(subject string, h Handler) (Subscription, error)

	// Flush returns once everything published before it has left this
	// process's buffers (NATS: the server has acknowledged it), or ctx ends.
	Flush(ctx context.Context) error

	// Close ends all subscriptions, waits until no handler is running and
	// releases the transport's goroutines and connections. Later calls to
	// Publish and Subscribe return ErrClosed; a second Close returns nil.
	Close() error
}

// Handler receives one message. subject is the literal subject it came on.
type Handler func(subject string, data []byte)

// Subscription is one Subscribe's registration.
type Subscription interface {
	// Unsubscribe stops delivery: after it returns the handler is called at
	// most once more, for a message whose delivery was already under way.
	// Messages still queued are dropped. It may be called from the handler
	// itself, and more than once.
	Unsubscribe() error
}

// ErrClosed is returned by a closed transport.
var ErrClosed = errors.New("transport: closed")
