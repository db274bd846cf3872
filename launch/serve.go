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
// it: the service's own options, whose Params, Runner and Ready Serve
// fills; the NATS connection its request/reply API answers on and the
// job transport over it (sealed with the job key, when there is one) that
// distributed jobs run on; the workers the pool needs for /readyz.
type ServeOptions struct {
	Service    service.Options
	NATS       *transport.NATS
	Transport  transport.Transport
	WorkersMin int
	// Wait and StepTimeout are a distributed job's (Target.Wait,
	// Target.StepTimeout).
	Wait, StepTimeout time.Duration
	Logger            *slog.Logger
	// Metrics serves /metrics beside the API.
	Metrics *metrics.Metrics
	// Started, when not nil, is called once the service is up, just
	// before it serves (the command prints its address then).
	Started func()
}

// Serve runs the job service on ln until ctx ends: its HTTP API and its
// NATS twin, jobs run by ServiceRunner, /readyz ready while the worker
// pool (WatchPool) holds at least WorkersMin workers.
func Serve(ctx context.Context, ln net.Listener, o ServeOptions) error {
	pool, err := WatchPool(o.Transport)
	if err != nil {
		return err
	}
	defer pool.Stop()
	so := o.Service
	so.Logger, so.Params = o.Logger, Params()
	so.Runner = &ServiceRunner{Transport: o.Transport, Wait: o.Wait, StepTimeout: o.StepTimeout, Logger: o.Logger}
	so.Ready = func() error {
		if n := pool.Count(); n < o.WorkersMin {
			return fmt.Errorf("%d workers in the pool, --workers-min is %d", n, o.WorkersMin)
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
	if o.Started != nil {
		o.Started()
	}
	return svc.Serve(ctx, ln, o.Metrics)
}
