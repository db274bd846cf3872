package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves GET /metrics, /healthz and /readyz (HEAD too); anything
// else is 404, another method 405.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		text(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := m.Ready(); err != nil {
			text(w, http.StatusServiceUnavailable, "not ready: "+oneLine(err.Error()))
			return
		}
		text(w, http.StatusOK, "ready")
	})
	return mux
}

func text(w http.ResponseWriter, code int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, s+"\n")
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Server is a listening metrics endpoint (Start).
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
	err  error
}

// Start listens on addr (host:port; port 0 picks a free one), writes
// "metrics=http://HOST:PORT" and a newline to announce (when not nil), and
// serves Handler in the background until ctx ends or Close is called. A
// bad or busy address is an error here, before anything is served.
func (m *Metrics) Start(ctx context.Context, addr string, announce io.Writer) (*Server, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("metrics address %q: %w", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	s := &Server{ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}}
	if announce != nil {
		fmt.Fprintf(announce, "metrics=%s\n", s.URL())
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

// URL is the server's base URL, http://HOST:PORT.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server: requests in flight get a second to finish. It
// returns the error that stopped serving, if any.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	return s.err
}

// Serve is Start, then waiting for ctx to end; it returns nil after a
// shutdown by ctx, or the error that stopped it.
func (m *Metrics) Serve(ctx context.Context, addr string, announce io.Writer) error {
	s, err := m.Start(ctx, addr, announce)
	if err != nil {
		return err
	}
	<-s.done
	return s.err
}
