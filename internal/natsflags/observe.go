package natsflags

import (
	"errors"

	"github.com/ddrun/ddrun/metrics"
	"github.com/ddrun/ddrun/transport"
)

// Observe makes m report tr's traffic and hold the process not ready
// while tr's connection is down (the client reconnecting), and marks it
// ready otherwise (other checks, like a Raft group's, may still hold it).
// A nil m is left alone.
func Observe(m *metrics.Metrics, tr *transport.NATS) {
	if m == nil {
		return
	}
	m.SetTraffic(func() (in, out uint64) {
		st := tr.Conn().Stats()
		return st.InBytes, st.OutBytes
	})
	m.AddReadyCheck(func() error {
		if !tr.Conn().IsConnected() {
			return errors.New("NATS connection lost; reconnecting")
		}
		return nil
	})
	m.SetReady(true, "")
}
