package natsflags

import (
	"context"
	"log/slog"

	"github.com/ddrun/ddrun/metrics"
	"github.com/ddrun/ddrun/transport"
)

// Session is a coordinator's side of its workers' NATS, set up by Open and
// released by Close in reverse order: the --metrics endpoint (when
// MetricsAddr is given), the connection to the flags' server or an
// embedded one (Flags.Dial, sealed with Key), the metrics observing it,
// and the worker processes of Local (when Local.N > 0).
type Session struct {
	// Flags and Key are the command's NATS flags and job key; Listen is
	// --nats-listen, Client the connection's name; MetricsAddr is
	// --metrics ("": no endpoint).
	Flags       *Flags
	Key         *JobKey
	Listen      string
	Client      string
	MetricsAddr string
	// Local are the worker processes to start on this machine (N: 0,
	// none); Open fills in their URL, NATS flags and the job key Key
	// loaded (Env, after what Local.Env has).
	Local Workers
	// Log gets the connection's log; Print (a console's Print) the
	// endpoints' addresses (metrics=URL, nats=URL).
	Log   *slog.Logger
	Print func(kind, msg string, kv ...any)

	// NATS is the connection, Transport the job's transport over it
	// (sealed with Key), URL the server's; Metrics, the endpoint's series
	// (nil without MetricsAddr). Open sets them.
	NATS      *transport.NATS
	Transport transport.Transport
	URL       string
	Metrics   *metrics.Metrics
	stops     []func()
}

// Open starts the metrics endpoint, connects (printing an embedded
// server's URL) and starts the local workers. On an error what was set up
// is released; errors the flags caused are *FlagError, no worker binary
// ErrNoWorker.
func (s *Session) Open(ctx context.Context) error {
	if s.MetricsAddr != "" {
		m, stop, err := StartMetrics(ctx, s.MetricsAddr, metrics.Coordinator, s.Print)
		if err != nil {
			return err
		}
		m.SetLeader(true) // a Raft member says otherwise (Metrics.FollowRaft)
		s.Metrics, s.stops = m, append(s.stops, stop)
	}
	started := func(url string) { s.Print("nats", "nats="+url, "nats", url) }
	// Workers this process starts get the key from it: one is drawn
	// when none is given.
	s.Key.Generate = s.Local.N > 0
	nc, tr, url, stopNATS, err := s.Flags.Dial(ctx, s.Listen, s.Client, s.Key, s.Log, started)
	if err != nil {
		s.Close()
		return err
	}
	s.NATS, s.Transport, s.URL, s.stops = nc, tr, url, append(s.stops, stopNATS)
	Observe(s.Metrics, nc)
	if s.Local.N > 0 {
		s.Local.URL, s.Local.NATS = url, *s.Flags
		s.Local.Env = append(s.Local.Env, s.Key.Env()...) // loaded by Dial
		s.Local.Insecure = s.Key.Insecure
		stop, err := StartWorkers(s.Local)
		if err != nil {
			s.Close()
			return err
		}
		s.stops = append(s.stops, stop)
	}
	return nil
}

// Traffic is the bytes in and out of the connection.
func (s *Session) Traffic() (in, out uint64) {
	st := s.NATS.Conn().Stats()
	return st.InBytes, st.OutBytes
}

// Close stops the local workers, the connection (and an embedded server)
// and the metrics endpoint, in this order.
func (s *Session) Close() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	s.stops = nil
}
