package jobstate

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ddrun/ddrun/internal/ratelimit"
)

// repeatEvery is how often a repeated raft record is logged (see
// slogSink): a dead peer costs raft's replication a failed heartbeat about
// three times a second, which would otherwise be as many log lines.
const repeatEvery = 10 * time.Second

// newHCLogger returns an hclog.Logger, the logger raft and raft-wal take,
// that forwards to l: raft's Debug, Info, Warn and Error become the slog
// levels of the same name, Trace is dropped. Records below what l's
// handler enables cost a level check only. Repeated records are
// rate-limited (see slogSink).
func newHCLogger(l *slog.Logger) hclog.Logger {
	return newHCLoggerEvery(l, repeatEvery, time.Now)
}

// newHCLoggerEvery is newHCLogger logging a repeated record at most once
// per every, by the clock now.
func newHCLoggerEvery(l *slog.Logger, every time.Duration, now func() time.Time) hclog.Logger {
	h := hclog.NewInterceptLogger(&hclog.LoggerOptions{
		Name:   "raft",
		Output: io.Discard,
		Level:  hclog.Off, // the base logger writes nothing; the sink forwards
	})
	h.RegisterSink(&slogSink{l: l, limit: ratelimit.Repeats[repeatKey]{Every: every, Now: now}})
	return h
}

// slogSink forwards raft's records to a slog.Logger. Records about a peer
// (with a "peer" argument) and warnings and errors are rate-limited: a
// record repeats an earlier one when it has the same level, component,
// message and peer; the first is logged, then at most one per every, with
// "suppressed", the number dropped since the last one logged. Its other
// arguments (the error, a backoff) may differ. Other records (raft's
// state changes: entering leader state, ...) are all logged.
type slogSink struct {
	l     *slog.Logger
	limit ratelimit.Repeats[repeatKey]
}

type repeatKey struct {
	level           hclog.Level
	name, msg, peer string
}

// Accept implements hclog.SinkAdapter.
func (s *slogSink) Accept(name string, level hclog.Level, msg string, args ...any) {
	var lv slog.Level
	switch level {
	case hclog.Debug:
		lv = slog.LevelDebug
	case hclog.Info:
		lv = slog.LevelInfo
	case hclog.Warn:
		lv = slog.LevelWarn
	case hclog.Error:
		lv = slog.LevelError
	default: // Trace, NoLevel, Off
		return
	}
	ctx := context.Background()
	if !s.l.Enabled(ctx, lv) {
		return
	}
	suppressed := 0
	if peer, ok := peerOf(args); ok || level >= hclog.Warn {
		if suppressed, ok = s.limit.Admit(repeatKey{level: level, name: name, msg: msg, peer: peer}); !ok {
			return
		}
	}
	attrs := append([]any{"component", name}, args...)
	if suppressed > 0 {
		attrs = append(attrs, "suppressed", suppressed)
	}
	s.l.Log(ctx, lv, msg, attrs...)
}

// peerOf returns the value of the "peer" argument of a record's key-value
// args, if it has one.
func peerOf(args []any) (string, bool) {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == "peer" {
			return fmt.Sprint(args[i+1]), true
		}
	}
	return "", false
}
