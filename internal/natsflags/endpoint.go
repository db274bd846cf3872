package natsflags

import (
	"context"

	"github.com/ddrun/ddrun/metrics"
	"github.com/ddrun/ddrun/transport"
)

// StartMetrics starts a process's --metrics endpoint on addr with role's
// series, not ready until NATS is reached, and prints its address through
// print (a console's Print) as metrics=URL. stop closes it. An address it
// cannot listen on is a *FlagError naming --metrics.
func StartMetrics(ctx context.Context, addr string, role metrics.Role, print func(kind, msg string, kv ...any)) (m *metrics.Metrics, stop func(), err error) {
	if m, err = metrics.New(metrics.Options{Role: role}); err != nil {
		return nil, nil, err
	}
	srv, err := m.Start(ctx, addr, nil)
	if err != nil {
		return nil, nil, flagErrorf("--metrics: %v", err)
	}
	print("metrics", "metrics="+srv.URL(), "metrics", srv.URL())
	m.SetReady(false, "connecting to NATS")
	return m, func() { _ = srv.Close() }, nil
}

// Redact hides the passwords of URLs in s (transport.Redact), for what is
// printed before or without the flags' own secrets (Flags.Redact).
func Redact(s string) string { return transport.Redact(s) }

// ValidJob checks a job ID, which namespaces the job's NATS subjects
// (transport.ValidName).
func ValidJob(id string) error { return transport.ValidName(id) }
