package natsflags

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/ddrun/ddrun/transport"
)

// FlagError is an error that the flags caused: a bad --nats-listen, a
// server that cannot be reached with them, a bad job key.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

func flagErrorf(format string, a ...any) error { return &FlagError{fmt.Errorf(format, a...)} }

// Dial connects to the flags' NATS server (trying for --connect-timeout
// while it is not up) as client, or, without a server URL, starts an
// embedded one on listen (host:port, port 0: any) with the flags'
// credentials and tells started its URL. It returns the connection nc,
// the job's transport over it (sealed with key when one is given: every
// message of the job then sealed), the URL, and close, which releases
// them. The connection logs to log.
func (f *Flags) Dial(ctx context.Context, listen, client string, key *JobKey, log *slog.Logger, started func(url string)) (nc *transport.NATS, tr transport.Transport, url string, close func(), err error) {
	url = f.URL
	var srv *transport.Embedded
	if url == "" {
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, nil, "", nil, flagErrorf("--nats-listen %q: %v", listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, nil, "", nil, flagErrorf("--nats-listen %q: bad port", listen)
		}
		srv, err = transport.StartEmbedded(transport.EmbeddedOptions{Host: host, Port: p, User: f.User, Password: f.Password, Token: f.Token})
		if err != nil {
			return nil, nil, "", nil, fmt.Errorf("embedded NATS server: %w", err)
		}
		url = srv.URL()
		started(url)
	}
	stop := func() {
		if srv != nil {
			srv.Shutdown()
		}
	}
	if nc, err = f.Connect(ctx, f.Options(url, client), log); err != nil {
		stop()
		return nil, nil, "", nil, &FlagError{err}
	}
	closeNATS := func() { nc.Close(); stop() }
	sealed, unseal, err := key.Wrap(nc, log)
	if err != nil {
		closeNATS()
		return nil, nil, "", nil, &FlagError{err}
	}
	return nc, sealed, url, func() { unseal(); closeNATS() }, nil
}
