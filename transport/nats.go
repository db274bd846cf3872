package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// NATSOptions configures NewNATS. Only URL is commonly needed; zero fields
// take the defaults.
type NATSOptions struct {
	// URL of the server, or several separated by commas
	// (default nats://127.0.0.1:4222). A tls:// URL requires TLS.
	URL string
	// Name identifies the connection in the server's monitoring.
	Name string

	// Credentials: at most one of User/Password, Token and CredsFile
	// (a JWT/NKey .creds file). They may also ride in the URL.
	User, Password string
	Token          string
	CredsFile      string

	// TLS: TLSCA verifies the server (PEM file); TLSCert and TLSKey
	// present a client certificate. TLSConfig, if set, is used as is
	// instead. Any of them turns TLS on.
	TLSCA, TLSCert, TLSKey string
	TLSConfig              *tls.Config

	// ConnectTimeout bounds the initial connection (default 5s, or
	// earlier if the context given to NewNATS ends first); with RetryFor,
	// each attempt.
	ConnectTimeout time.Duration
	// RetryFor, when positive, keeps trying to connect this long while no
	// server can be reached (refused, unreachable, unknown host, timed
	// out): a server that starts later is found. Attempts are spaced by a
	// backoff from 100ms doubling to 2s. What a server answers (an
	// authorization violation, a TLS failure) is not retried.
	RetryFor time.Duration
	// OnRetry, when not nil, is told of each failed attempt that will be
	// retried after wait.
	OnRetry func(err error, wait time.Duration)
	// NoReconnect turns off reconnecting after a lost connection.
	NoReconnect bool
	// MaxReconnects is the number of attempts per server
	// (default 60; negative: forever).
	MaxReconnects int
	// ReconnectWait is the pause between attempts on one server
	// (default 2s).
	ReconnectWait time.Duration
	// ReconnectBufSize is how many bytes Publish buffers while
	// reconnecting (default 8 MiB); beyond it Publish fails.
	ReconnectBufSize int

	// MaxPayload, if positive and below the server's limit, lowers the
	// frame size at which messages are chunked (tests use ~1 KiB).
	MaxPayload int
	// Reassembly bounds the reassembly of chunked messages, per
	// subscription.
	Reassembly ReassemblyOptions
	// PendingMsgs and PendingBytes bound each subscription's queue of
	// undelivered frames (defaults 65536 and 256 MiB); beyond them NATS
	// drops frames and reports a slow consumer through OnError.
	PendingMsgs, PendingBytes int

	// OnError receives asynchronous errors: slow consumers, dropped or
	// malformed chunks, failed reconnects. Called from the connection's
	// goroutines; nil ignores them.
	OnError func(error)
	// OnDisconnect and OnReconnect tell when the connection is lost and
	// back (subscriptions are restored by the client).
	OnDisconnect func(error)
	OnReconnect  func()
}

// NATS is a Transport over a NATS connection. Messages longer than the
// connection's max payload (or NATSOptions.MaxPayload) are sent as chunk
// frames and reassembled per subscription.
type NATS struct {
	nc   *nats.Conn
	opts NATSOptions
	ids  *idGen

	closed atomic.Bool
	// hmu is read-held while a handler runs and write-held by Close, so
	// that Close returns only when no handler is running.
	hmu  sync.RWMutex
	mu   sync.Mutex
	subs map[*natsSub]struct{}
}

var _ Transport = (*NATS)(nil)

// ConnectError is NewNATS's error when no server could be reached.
type ConnectError struct {
	URL string // the URL(s) tried, passwords redacted
	Err error
	// Retried is how long NewNATS kept trying (NATSOptions.RetryFor, at
	// least); zero after a single attempt.
	Retried time.Duration

	secrets []string // redacted from Err's message
}

func (e *ConnectError) Error() string {
	s := "nats: connect to " + e.URL + ": " + Redact(shortCause(e.Err), e.secrets...)
	if e.Retried > 0 {
		s += " (retried for " + e.Retried.String() + ")"
	}
	return s
}

// retryable says whether a failed connection attempt may succeed later:
// no server answered (refused, unreachable, unknown host, timed out, or
// closed during the handshake, as a starting server may). What a server
// said (authorization, TLS) is final.
func retryable(err error) bool {
	var ce *ConnectError
	if !errors.As(err, &ce) {
		return false
	}
	cause := ce.Err
	if errors.Is(cause, nats.ErrAuthorization) || errors.Is(cause, nats.ErrAuthExpired) || errors.Is(cause, nats.ErrAuthRevoked) ||
		errors.Is(cause, nats.ErrSecureConnRequired) || errors.Is(cause, nats.ErrSecureConnWanted) {
		return false
	}
	if l := strings.ToLower(cause.Error()); strings.Contains(l, "authoriz") || strings.Contains(l, "authenticat") ||
		strings.Contains(l, "tls:") || strings.Contains(l, "x509:") || strings.Contains(l, "certificate") {
		return false
	}
	var oe *net.OpError
	var dns *net.DNSError
	return errors.As(cause, &oe) || errors.As(cause, &dns) || errors.Is(cause, nats.ErrNoServers) ||
		errors.Is(cause, nats.ErrTimeout) || errors.Is(cause, io.EOF) || errors.Is(cause, context.DeadlineExceeded) ||
		errors.Is(cause, os.ErrDeadlineExceeded)
}

// Backoff between connection attempts (NATSOptions.RetryFor).
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 2 * time.Second
)

// connectRetrying is NewNATS with opts.RetryFor > 0.
func connectRetrying(ctx context.Context, opts NATSOptions) (*NATS, error) {
	deadline := time.Now().Add(opts.RetryFor)
	perAttempt := opts.ConnectTimeout
	if perAttempt <= 0 {
		perAttempt = 5 * time.Second
	}
	wait := retryFirst
	var prev error // the last attempt's error that the window did not cut short
	for {
		o := opts
		o.RetryFor = 0
		o.ConnectTimeout = max(time.Millisecond, min(perAttempt, time.Until(deadline)))
		t, err := NewNATS(ctx, o)
		if err == nil || !retryable(err) || ctx.Err() != nil {
			return t, err
		}
		cut := o.ConnectTimeout < perAttempt && isTimeout(err)
		if cut && prev != nil {
			// The window's end cut this attempt short: the cause worth
			// reporting is the earlier one (e.g. connection refused).
			err = prev
		} else {
			prev = err
		}
		left := time.Until(deadline)
		if left <= 0 {
			var ce *ConnectError
			errors.As(err, &ce)
			ce.Retried = opts.RetryFor // at least: say the bound, not a clock's reading
			return nil, ce
		}
		w := min(wait, left)
		if opts.OnRetry != nil {
			opts.OnRetry(err, w)
		}
		timer := time.NewTimer(w)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("nats: connect to %s: %w", redactURLs(opts.URL), ctx.Err())
		case <-timer.C:
		}
		wait = min(2*wait, retryMax)
	}
}

func (e *ConnectError) Unwrap() error { return e.Err }

// isTimeout reports whether err is a dial or handshake that ran out of time.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || strings.Contains(err.Error(), "i/o timeout") || errors.Is(err, context.DeadlineExceeded)
}

// shortCause strips the layers that repeat what ConnectError already says:
// "dial tcp 127.0.0.1:4222: connect: connection refused" becomes
// "connection refused", "nats: Authorization Violation" becomes
// "authorization violation".
func shortCause(err error) string {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	s := strings.TrimPrefix(err.Error(), "nats: ")
	if l := strings.ToLower(s); strings.HasPrefix(l, "authorization") || strings.HasPrefix(l, "authentication") ||
		strings.HasPrefix(l, "user authentication") {
		s = l // the server's -ERR strings are capitalised
	}
	return s
}

// dialRecorder dials like the client's default dialer and remembers the
// last failure, which nats.Connect replaces by "no servers available" when
// it is "connection refused".
type dialRecorder struct {
	d   net.Dialer
	mu  sync.Mutex
	err error
}

func (r *dialRecorder) Dial(network, address string) (net.Conn, error) {
	c, err := r.d.Dial(network, address)
	if err != nil {
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
	}
	return c, err
}

func (r *dialRecorder) last() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// connectCause prefers the dial error to the client's generic one.
func connectCause(err error, dial *dialRecorder) error {
	if errors.Is(err, nats.ErrNoServers) {
		if de := dial.last(); de != nil {
			return errors.Join(de, err)
		}
	}
	return err
}

// redactURLs hides passwords and tokens in a comma-separated URL list.
func redactURLs(urls string) string { return Redact(urls) }

// NewNATS connects to a NATS server. It fails with a *ConnectError, or
// ctx's error, when no server answers within ConnectTimeout (with
// RetryFor, within RetryFor: see there).
func NewNATS(ctx context.Context, opts NATSOptions) (*NATS, error) {
	if opts.RetryFor > 0 {
		return connectRetrying(ctx, opts)
	}
	if opts.URL == "" {
		opts.URL = nats.DefaultURL
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 5 * time.Second
	}
	if opts.PendingMsgs <= 0 {
		opts.PendingMsgs = 1 << 16
	}
	if opts.PendingBytes <= 0 {
		opts.PendingBytes = 256 << 20
	}
	opts.Reassembly = opts.Reassembly.withDefaults()
	if opts.Reassembly.Budget == nil {
		opts.Reassembly.Budget = NewReassemblyBudget(opts.Reassembly.MaxPendingBytes)
	}
	if opts.MaxPayload < 0 {
		return nil, fmt.Errorf("nats: negative MaxPayload %d", opts.MaxPayload)
	}
	if opts.MaxPayload > 0 && opts.MaxPayload <= ChunkHeaderLen {
		return nil, fmt.Errorf("nats: MaxPayload %d leaves no room after the %d-byte chunk header", opts.MaxPayload, ChunkHeaderLen)
	}
	ncreds := 0
	for _, set := range []bool{opts.User != "" || opts.Password != "", opts.Token != "", opts.CredsFile != ""} {
		if set {
			ncreds++
		}
	}
	if ncreds > 1 {
		return nil, errors.New("nats: give at most one of user/password, token and creds file")
	}
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return nil, errors.New("nats: a TLS client certificate needs both cert and key files")
	}
	t := &NATS{opts: opts, ids: newIDGen(), subs: make(map[*natsSub]struct{})}

	timeout := opts.ConnectTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
		if timeout <= 0 {
			return nil, fmt.Errorf("nats: connect to %s: %w", redactURLs(opts.URL), context.DeadlineExceeded)
		}
	}
	dial := &dialRecorder{d: net.Dialer{Timeout: timeout}}
	o := []nats.Option{
		nats.Timeout(timeout),
		nats.SetCustomDialer(dial),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				err = fmt.Errorf("nats: subscription %s: %w", sub.Subject, err)
			}
			t.asyncError(err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if opts.OnDisconnect != nil && !t.closed.Load() {
				opts.OnDisconnect(err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			if opts.OnReconnect != nil {
				opts.OnReconnect()
			}
		}),
	}
	if opts.Name != "" {
		o = append(o, nats.Name(opts.Name))
	}
	switch {
	case opts.User != "" || opts.Password != "":
		o = append(o, nats.UserInfo(opts.User, opts.Password))
	case opts.Token != "":
		o = append(o, nats.Token(opts.Token))
	case opts.CredsFile != "":
		if _, err := os.Stat(opts.CredsFile); err != nil {
			return nil, fmt.Errorf("nats: creds file: %w", err)
		}
		o = append(o, nats.UserCredentials(opts.CredsFile))
	}
	if opts.TLSConfig != nil {
		o = append(o, nats.Secure(opts.TLSConfig))
	}
	if opts.TLSCA != "" {
		o = append(o, nats.RootCAs(opts.TLSCA))
	}
	if opts.TLSCert != "" {
		o = append(o, nats.ClientCert(opts.TLSCert, opts.TLSKey))
	}
	if opts.NoReconnect {
		o = append(o, nats.NoReconnect())
	} else {
		if opts.MaxReconnects != 0 {
			o = append(o, nats.MaxReconnects(opts.MaxReconnects))
		}
		if opts.ReconnectWait > 0 {
			o = append(o, nats.ReconnectWait(opts.ReconnectWait))
		}
		if opts.ReconnectBufSize > 0 {
			o = append(o, nats.ReconnectBufSize(opts.ReconnectBufSize))
		}
	}

	type result struct {
		nc  *nats.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(opts.URL, o...)
		ch <- result{nc, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, &ConnectError{URL: redactURLs(opts.URL), Err: connectCause(r.err, dial), secrets: []string{opts.Password, opts.Token}}
		}
		t.nc = r.nc
		return t, nil
	case <-ctx.Done():
		go func() { // the attempt ends within timeout; do not leak its connection
			if r := <-ch; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, fmt.Errorf("nats: connect to %s: %w", redactURLs(opts.URL), ctx.Err())
	}
}

func (t *NATS) asyncError(err error) {
	if t.opts.OnError != nil && err != nil {
		t.opts.OnError(redactedError{err, []string{t.opts.Password, t.opts.Token}})
	}
}

// redactedError is err with its message redacted (Redact); errors.Is and
// As still see err.
type redactedError struct {
	err     error
	secrets []string
}

func (e redactedError) Error() string { return Redact(e.err.Error(), e.secrets...) }
func (e redactedError) Unwrap() error { return e.err }

// Conn returns the underlying connection, for what the Transport interface
// does not cover. Closing it closes the transport's connection.
func (t *NATS) Conn() *nats.Conn { return t.nc }

// MaxPayload returns the largest frame Publish sends unchunked: the
// server's limit, lowered by NATSOptions.MaxPayload.
func (t *NATS) MaxPayload() int {
	m := int(t.nc.MaxPayload())
	if t.opts.MaxPayload > 0 && (m <= 0 || t.opts.MaxPayload < m) {
		m = t.opts.MaxPayload
	}
	return m
}

// Publish implements Transport. A message longer than MaxPayload, or one
// that itself starts like a chunk frame, goes as chunk frames; ctx is
// checked between them. Publish only hands data to the client's buffers;
// use Flush to wait for the server.
func (t *NATS) Publish(ctx context.Context, subject string, data []byte) error {
	if err := checkSubject(subject, false); err != nil {
		return err
	}
	if t.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	max := t.MaxPayload()
	if len(data) <= max && !IsChunk(data) {
		if err := t.nc.Publish(subject, data); err != nil {
			return t.publishError(subject, err)
		}
		return nil
	}
	return SplitChunks(t.ids.next(), data, max, func(frame []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := t.nc.Publish(subject, frame); err != nil {
			return t.publishError(subject, err)
		}
		return nil
	})
}

func (t *NATS) publishError(subject string, err error) error {
	if errors.Is(err, nats.ErrConnectionClosed) && t.closed.Load() {
		return ErrClosed
	}
	return fmt.Errorf("nats: publish to %s: %w", subject, err)
}

type natsSub struct {
	t       *NATS
	subject string
	sub     *nats.Subscription
	h       Handler
	chunks  *reassembly // nil: frames are handed over as they are (subscribeFrames)
	stopped atomic.Bool
}

// Subscribe implements Transport. Chunk frames are reassembled before h
// sees the message; bad or expired chunks are reported through OnError.
func (t *NATS) Subscribe(subject string, h Handler) (Subscription, error) {
	return t.subscribe(subject, h, true)
}

// subscribeFrames implements framer: h gets chunk frames as they arrive.
func (t *NATS) subscribeFrames(subject string, h Handler) (Subscription, error) {
	return t.subscribe(subject, h, false)
}

func (t *NATS) reassemblyOptions() ReassemblyOptions { return t.opts.Reassembly }

// ReassemblyBudget is the bound on the bytes of incomplete chunked
// messages shared by all subscriptions of t (and of a Sealed over t), and
// their count: NATSOptions.Reassembly.Budget, or one of
// Reassembly.MaxPendingBytes.
func (t *NATS) ReassemblyBudget() *ReassemblyBudget { return t.opts.Reassembly.Budget }

func (t *NATS) subscribe(subject string, h Handler, reassemble bool) (Subscription, error) {
	if err := checkSubject(subject, true); err != nil {
		return nil, err
	}
	if h == nil {
		panic("transport: nil handler")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return nil, ErrClosed
	}
	s := &natsSub{t: t, subject: subject, h: h}
	if reassemble {
		s.chunks = newReassembly(subject, t.opts.Reassembly, func(err error) { t.asyncError(fmt.Errorf("nats: %w", err)) })
	}
	sub, err := t.nc.Subscribe(subject, s.deliver)
	if err != nil {
		return nil, fmt.Errorf("nats: subscribe to %s: %w", subject, err)
	}
	if err := sub.SetPendingLimits(t.opts.PendingMsgs, t.opts.PendingBytes); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("nats: subscribe to %s: %w", subject, err)
	}
	s.sub = sub
	t.subs[s] = struct{}{}
	return s, nil
}

// deliver runs on the subscription's goroutine, one message at a time.
func (s *natsSub) deliver(m *nats.Msg) {
	t := s.t
	t.hmu.RLock()
	defer t.hmu.RUnlock()
	if t.closed.Load() || s.stopped.Load() {
		return
	}
	data := m.Data
	if s.chunks != nil && IsChunk(data) {
		if data = s.chunks.add(m.Subject, data); data == nil {
			return
		}
	}
	s.h(m.Subject, data)
}

// Unsubscribe implements Subscription.
func (s *natsSub) Unsubscribe() error {
	if s.stopped.Swap(true) {
		return nil
	}
	if s.chunks != nil {
		s.chunks.stop()
	}
	s.t.mu.Lock()
	delete(s.t.subs, s)
	s.t.mu.Unlock()
	if err := s.sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
		return fmt.Errorf("nats: unsubscribe from %s: %w", s.subject, err)
	}
	return nil
}

// Flush implements Transport: it waits for the server to acknowledge
// everything published so far.
func (t *NATS) Flush(ctx context.Context) error {
	if t.closed.Load() {
		return ErrClosed
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	if err := t.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("nats: flush: %w", err)
	}
	return nil
}

// Close implements Transport. It closes the connection without draining:
// frames not yet flushed may be lost (Flush first to avoid that).
func (t *NATS) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	t.mu.Lock()
	subs := make([]*natsSub, 0, len(t.subs))
	for s := range t.subs {
		subs = append(subs, s)
	}
	t.mu.Unlock()
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
	t.nc.Close()
	t.hmu.Lock() // wait for running handlers
	t.hmu.Unlock()
	return nil
}
