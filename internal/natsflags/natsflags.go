// Package natsflags holds the NATS connection flags that the coordinator
// and the worker binaries share. It owns only flag names and their mapping
// to transport.NATSOptions.
package natsflags

import (
	"flag"
	"time"

	"github.com/ddrun/ddrun/transport"
)

// Flags are the NATS connection settings of a command line.
type Flags struct {
	URL            string
	User, Password string
	Token, Creds   string
	CA, Cert, Key  string
	ConnectTimeout time.Duration
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.URL, "nats", "", "NATS server `URL`, e.g. nats://127.0.0.1:4222")
	fs.StringVar(&f.User, "nats-user", "", "NATS user name")
	fs.StringVar(&f.Password, "nats-password", "", "NATS password")
	fs.StringVar(&f.Token, "nats-token", "", "NATS authentication token")
	fs.StringVar(&f.Creds, "nats-creds", "", "NATS credentials `FILE` (JWT and NKey)")
	fs.StringVar(&f.CA, "nats-ca", "", "TLS CA certificate `FILE` for the NATS server")
	fs.StringVar(&f.Cert, "nats-cert", "", "TLS client certificate `FILE`")
	fs.StringVar(&f.Key, "nats-key", "", "TLS client key `FILE`")
	fs.DurationVar(&f.ConnectTimeout, "nats-timeout", 5*time.Second, "NATS connect timeout")
}

// Options returns the transport options for url (the flag's, or another).
func (f *Flags) Options(url, name string) transport.NATSOptions {
	return transport.NATSOptions{URL: url, Name: name, User: f.User, Password: f.Password, Token: f.Token,
		CredsFile: f.Creds, TLSCA: f.CA, TLSCert: f.Cert, TLSKey: f.Key, ConnectTimeout: f.ConnectTimeout,
		// Model parts arrive as hundreds of chunks at once: a subscriber
		// that lags behind must queue them, not drop them.
		PendingMsgs: 1 << 20, PendingBytes: 2 << 30}
}
