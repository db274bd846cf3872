// Package jobworker holds what the one-job-at-a-time workers of
// distributed branch and bound (dsearch) and distributed TRW-S
// (dtrws/remote) share: a Sender, which stamps the worker's name and
// sequence on what it publishes and logs the messages it drops at most
// once per reason and interval, and a Loop, which announces the worker
// when it starts, when a coordinator solicits workers, when it is freed of
// a job and at every hello interval (after dropping a job whose
// coordinator fell silent).
//
// It knows the transport and nothing else: not the protocols' subjects,
// messages or jobs, which its callers pass in.
package jobworker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ddrun/ddrun/internal/ratelimit"
	"github.com/ddrun/ddrun/transport"
)

// Sender publishes a worker's messages. Its methods are safe for
// concurrent use.
type Sender struct {
	Tr   transport.Transport
	Name string       // the worker's name: every header's From
	Log  *slog.Logger // never nil

	prefix string // of the log lines: "search: ", "trws: "
	seq    *transport.Sequence
	drop   ratelimit.Repeats[string]
}

// NewSender returns the sender of the worker named name (a
// transport.ValidName) on tr, logging to log (nil: nowhere) with lines
// that start with prefix.
func NewSender(tr transport.Transport, name string, log *slog.Logger, prefix string) (*Sender, error) {
	if err := transport.ValidName(name); err != nil {
		return nil, fmt.Errorf("worker name %q: %w", name, err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sender{Tr: tr, Name: name, Log: log, prefix: prefix, seq: transport.NewSequence(),
		drop: ratelimit.Repeats[string]{Every: 10 * time.Second}}, nil
}

// Encode encodes body under h, with the worker's name and its next
// sequence number.
func (s *Sender) Encode(h transport.Header, body any) ([]byte, error) {
	h.From, h.Seq = s.Name, s.seq.Next()
	return transport.Encode(h, body)
}

// Publish sends body under h (Encode) on subject, and logs a failure
// unless ctx has ended.
func (s *Sender) Publish(ctx context.Context, subject string, h transport.Header, body any) {
	data, err := s.Encode(h, body)
	if err == nil {
		err = s.Tr.Publish(ctx, subject, data)
	}
	if err != nil && ctx.Err() == nil {
		s.Log.Warn(s.prefix+"publishing", "subject", subject, "err", err)
	}
}

// Dropped logs a message dropped for reason, at most once per interval
// per reason, with the number dropped since.
func (s *Sender) Dropped(reason string, args ...any) {
	if n, ok := s.drop.Admit(reason); ok {
		s.Log.Warn(s.prefix+reason, append(args, "dropped", n+1)...)
	}
}

// Loop is a worker's announcement loop.
type Loop struct {
	// Solicit is the subject on which coordinators ask the workers to
	// announce themselves (the content does not matter: an
	// announcement is all it can cause); Solicitations names them in
	// the error of a failed subscription.
	Solicit, Solicitations string
	HelloEvery             time.Duration
	Announce               func(context.Context)
	// Lapse drops a job whose coordinator fell silent; it runs before
	// every periodic announcement.
	Lapse func()
	// Freed, when not nil, signals that the worker dropped its job: it
	// announces itself at once.
	Freed <-chan struct{}
	// Beat, when not nil, runs every BeatEvery (a busy worker's
	// heartbeat).
	Beat      func(context.Context)
	BeatEvery time.Duration
}

// Run announces the worker on tr at once and then as Loop says until ctx
// ends (nil), or returns the error of the solicitations' subscription.
func (l *Loop) Run(ctx context.Context, tr transport.Transport) error {
	solicit, solicits, err := transport.Notify(tr, l.Solicit)
	if err != nil {
		return fmt.Errorf("subscribing for %s: %w", l.Solicitations, err)
	}
	defer solicits.Unsubscribe()
	hello := time.NewTicker(l.HelloEvery)
	defer hello.Stop()
	var beat <-chan time.Time
	if l.Beat != nil {
		t := time.NewTicker(l.BeatEvery)
		defer t.Stop()
		beat = t.C
	}
	l.Announce(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-solicit:
			l.Announce(ctx)
		case <-l.Freed:
			l.Announce(ctx)
		case <-hello.C:
			l.Lapse()
			l.Announce(ctx)
		case <-beat:
			l.Beat(ctx)
		}
	}
}
