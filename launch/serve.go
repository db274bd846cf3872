package launch

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/ddrun/ddrun/metrics"
	"github.com/ddrun/ddrun/service"
	"github.com/ddrun/ddrun/transport"
)

// ServeOptions are the job service's (coordinator serve) as Serve runs
// it: the NATS connection its request/reply API answers on and the job
// transport over it (sealed with the job key, when there is one) that
// distributed jobs run on.
type ServeOptions struct {
	NATS      *transport.NATS
	Transport transport.Transport
	// Wait and StepTimeout are a distributed job's (Target.Wait,
	// Target.StepTimeout).
	Wait, StepTimeout time.Duration
	Logger            *slog.Logger
	// Metrics serves /metrics beside the API.
	Metrics *metrics.Metrics
	// Print prints a line for the user on stderr (msg and args: the same
	// as a record under --log-format json): where the jobs and the token
	// are, then, once the service is up, http=URL.
	Print func(msg, text string, args ...any)
}

// Listening is a ServeConfig opened: its listener (TLS when configured),
// its data directory and its API tokens.
type Listening struct {
	cfg ServeConfig
	*served
}

// Open opens c for Serve: the data directory (the per-user default when
// none is given), the tokens (--token-file, $DDRUN_API_TOKEN, or a token
// generated into the data directory) and the listener. Its errors of the
// user's making are *InputError.
func (c *ServeConfig) Open() (*Listening, error) {
	s, err := c.openServe()
	if err != nil {
		return nil, err
	}
	return &Listening{cfg: *c, served: s}, nil
}

// Close closes the listener (Serve does once it ends).
func (l *Listening) Close() error { return l.ln.Close() }

// Serve runs the job service on l until ctx ends: its HTTP API and its
// NATS twin, jobs run by ServiceRunner, /readyz ready while the worker
// pool (WatchPool) holds at least --workers-min workers.
func Serve(ctx context.Context, l *Listening, o ServeOptions) error {
	defer l.Close()
	c := l.cfg
	pool, err := WatchPool(o.Transport)
	if err != nil {
		return err
	}
	defer pool.Stop()
	so := service.Options{Dir: l.dir, MaxJobs: c.MaxJobs, MaxUpload: c.MaxUpload, MaxModel: c.MaxModel, MaxLocal: c.MaxRunning,
		MaxStarted: c.MaxStarted, MaxClientJobs: c.MaxClientJobs, Tokens: l.tokens, Logger: o.Logger, Params: Params()}
	so.Runner = &ServiceRunner{Transport: o.Transport, Wait: o.Wait, StepTimeout: o.StepTimeout, Logger: o.Logger}
	if kv, err := service.NewKVNonces(ctx, o.NATS.Conn()); err == nil {
		so.Nonces = kv // replayed submits make one job in the whole cluster
	} else {
		o.Logger.Warn("the NATS API's submits are kept from replays per service only (the shared nonce bucket could not be opened)", "err", err)
	}
	so.Ready = func() error {
		if n := pool.Count(); n < c.WorkersMin {
			return fmt.Errorf("%d workers in the pool, --workers-min is %d", n, c.WorkersMin)
		}
		return nil
	}
	svc, err := service.New(so)
	if err != nil {
		return err
	}
	defer svc.Close()
	seal, _ := o.Transport.(service.Sealer) // nil without a job key
	stopNATS, err := svc.ServeNATS(o.NATS.Conn(), seal)
	if err != nil {
		return err
	}
	defer stopNATS()
	if o.Print != nil {
		o.Print("data", "data="+l.dir, "data", l.dir)
		o.Print("token", "token="+l.tokenSource, "token", l.tokenSource)
		o.Print("http", "http="+l.url, "http", l.url)
	}
	if !isLoopback(l.ln.Addr()) && c.TLSCert == "" {
		o.Logger.Warn("the API listens beyond loopback without TLS: its tokens, models and results cross the network in clear (--tls-cert, --tls-key)", "listen", l.ln.Addr().String())
	}
	return svc.Serve(ctx, l.ln, o.Metrics)
}

// isLoopback reports whether a is a loopback address.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
