package service

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ddrun/ddrun/metrics"
)

// Serve serves the HTTP API (Handler) on ln, with met's /metrics beside
// it, until ctx ends or the server fails. The job gauges are read from the
// service at each scrape; the service's own /healthz and /readyz stay
// (they know when it stops). /metrics needs a token as the API does (its
// job counts and transport volumes are the service's business: a
// Prometheus scrape gives it with bearer_token_file); /healthz and /readyz
// stay open for probes and say nothing but ok or not. When ctx ends the server shuts down, waiting
// at most 5 s for the requests under way, and Serve returns nil. The
// server's own complaints go to the service's logger as warnings.
func (s *Service) Serve(ctx context.Context, ln net.Listener, met *metrics.Metrics) error {
	mux := http.NewServeMux()
	metricsHandler := met.Handler()
	mux.Handle("GET /metrics", s.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		met.SetJobs(s.Counts())
		metricsHandler.ServeHTTP(w, r)
	})))
	mux.Handle("/", s.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("HTTP server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}
