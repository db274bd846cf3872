package jobstate

import (
	"context"
	"io"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger returns an hclog.Logger, the logger raft and raft-wal take,
// that forwards to l: raft's Debug, Info, Warn and Error become the slog
// levels of the same name, Trace is dropped. Records below what l's
// handler enables cost a level check only.
func newHCLogger(l *slog.Logger) hclog.Logger {
	h := hclog.NewInterceptLogger(&hclog.LoggerOptions{
		Name:   "raft",
		Output: io.Discard,
		Level:  hclog.Off, // the base logger writes nothing; the sink forwards
	})
	h.RegisterSink(slogSink{l: l})
	return h
}

type slogSink struct{ l *slog.Logger }

// Accept implements hclog.SinkAdapter.
func (s slogSink) Accept(name string, level hclog.Level, msg string, args ...any) {
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
	s.l.Log(ctx, lv, msg, append([]any{"component", name}, args...)...)
}
