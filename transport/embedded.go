package transport

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedOptions configures StartEmbedded. The zero value gives a quiet
// server on 127.0.0.1 and a free port.
type EmbeddedOptions struct {
	// Host to listen on (default 127.0.0.1). The NATS server's own default
	// would be 0.0.0.0; listening beyond loopback must be asked for.
	Host string
	// Port to listen on (default 0: a free port chosen by the system).
	Port int
	// MaxPayload is the server's largest message in bytes (default the
	// server's, 1 MiB; NATS allows up to 64 MiB).
	MaxPayload int
	// User and Password, or Token, require clients to authenticate.
	User, Password string
	Token          string
	// TLSConfig, if set, makes the server require TLS.
	TLSConfig *tls.Config
	// Logging sends the server's log to stderr; Debug adds debug lines.
	Logging, Debug bool
	// ReadyTimeout bounds the wait for the server to accept connections
	// (default 10s).
	ReadyTimeout time.Duration
	// MaxPending bounds the bytes the server queues for one slow client
	// before it disconnects it (default 1 GiB: a model part of hundreds of
	// megabytes arrives as a burst of chunks; the server's own default,
	// 64 MiB, would cut the receiving worker off).
	MaxPending int64
	// JetStreamDir, when set, enables JetStream with its storage in that
	// directory (for the checkpoint object store of Raft-replicated
	// coordinators).
	JetStreamDir string
	// ConfigFile, when set, is a nats-server configuration file (e.g.
	// deploy/nats/ddrun-auth.conf) for what these options do not cover:
	// accounts, users and their permissions, TLS, limits. The options
	// above still choose where the server listens (Host and Port, with
	// their defaults), its logging and JetStream directory, and override
	// the file's MaxPayload, MaxPending and TLS when set. User, Password
	// and Token cannot be combined with it: put the users in the file.
	ConfigFile string
}

// Embedded is a NATS server running inside this process, for tests and for
// `coordinator run` without an external server. It has no clustering and
// no monitoring port, and JetStream only when asked for (JetStreamDir or
// the config file).
type Embedded struct {
	srv  *server.Server
	url  string
	once sync.Once
}

// StartEmbedded starts a NATS server and waits until it accepts
// connections.
func StartEmbedded(opts EmbeddedOptions) (*Embedded, error) {
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("nats server: port %d out of range", opts.Port)
	}
	if opts.MaxPayload < 0 || opts.MaxPayload > math.MaxInt32 {
		return nil, fmt.Errorf("nats server: max payload %d out of range", opts.MaxPayload)
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 10 * time.Second
	}
	if opts.Token != "" && (opts.User != "" || opts.Password != "") {
		return nil, errors.New("nats server: give either user/password or a token")
	}
	port := opts.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	so, err := serverOptions(opts)
	if err != nil {
		return nil, err
	}
	so.Host, so.Port, so.NoLog, so.NoSigs, so.Debug = opts.Host, port, !opts.Logging, true, opts.Debug
	if opts.JetStreamDir != "" {
		so.JetStream = true
		so.StoreDir = opts.JetStreamDir
	}
	if opts.TLSConfig != nil {
		so.TLS = true
		so.TLSConfig = opts.TLSConfig
		so.TLSTimeout = 2
	}
	srv, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("nats server: %w", err)
	}
	logger := &serverLog{on: opts.Logging}
	srv.SetLogger(logger, opts.Debug, false)
	go srv.Start()
	if !waitReady(srv, logger, opts.ReadyTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		if msg := logger.fatal(); msg != "" {
			return nil, errors.New("nats server: " + msg)
		}
		return nil, fmt.Errorf("nats server: not accepting connections on %s after %v",
			net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port)), opts.ReadyTimeout)
	}
	return &Embedded{srv: srv, url: srv.ClientURL()}, nil
}

// serverOptions are the server's options from opts and opts.ConfigFile,
// without the listening address and logging.
func serverOptions(opts EmbeddedOptions) (*server.Options, error) {
	if opts.ConfigFile == "" {
		return &server.Options{
			ServerName:    "ddrun-embedded",
			MaxPayload:    int32(opts.MaxPayload),
			MaxPending:    cmp.Or(opts.MaxPending, 1<<30),
			Username:      opts.User,
			Password:      opts.Password,
			Authorization: opts.Token,
		}, nil
	}
	if opts.User != "" || opts.Password != "" || opts.Token != "" {
		return nil, errors.New("nats server: give the users in the config file, not as options")
	}
	so, err := server.ProcessConfigFile(opts.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("nats server: %w", err)
	}
	so.ServerName = cmp.Or(so.ServerName, "ddrun-embedded")
	if opts.MaxPayload > 0 {
		so.MaxPayload = int32(opts.MaxPayload)
	}
	// MaxPending as without a file, unless the file sets it or opts do.
	if opts.MaxPending > 0 || so.MaxPending == 0 {
		so.MaxPending = cmp.Or(opts.MaxPending, 1<<30)
	}
	return so, nil
}

// waitReady waits for srv to accept connections, giving up early when it
// has logged a fatal error (a taken port).
func waitReady(srv *server.Server, logger *serverLog, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		step := min(50*time.Millisecond, time.Until(deadline))
		if srv.ReadyForConnections(max(step, time.Millisecond)) {
			return true
		}
		if logger.fatal() != "" || time.Now().After(deadline) {
			return false
		}
	}
}

// URL is the client URL, e.g. nats://127.0.0.1:34567 (tls:// with TLS).
func (e *Embedded) URL() string { return e.url }

// Port is the port the server listens on.
func (e *Embedded) Port() int {
	if a, ok := e.srv.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// Server returns the underlying server.
func (e *Embedded) Server() *server.Server { return e.srv }

// Shutdown stops the server, closing its client connections, and waits
// until it has stopped. It may be called more than once.
func (e *Embedded) Shutdown() {
	e.once.Do(func() {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
	})
}

// serverLog is the embedded server's logger: stderr when asked, nothing
// otherwise. Unlike the server's own logger its Fatalf does not exit the
// process; it records the message for StartEmbedded's error.
type serverLog struct {
	on bool
	mu sync.Mutex
	l  *log.Logger
	fm string
}

func (s *serverLog) printf(level, format string, v ...any) {
	if !s.on {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.l == nil {
		s.l = log.New(os.Stderr, "nats-server: ", log.LstdFlags)
	}
	s.l.Printf(level+format, v...)
}

func (s *serverLog) fatal() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fm
}

func (s *serverLog) Noticef(format string, v ...any) { s.printf("", format, v...) }
func (s *serverLog) Warnf(format string, v ...any)   { s.printf("[WRN] ", format, v...) }
func (s *serverLog) Errorf(format string, v ...any)  { s.printf("[ERR] ", format, v...) }
func (s *serverLog) Debugf(format string, v ...any)  { s.printf("[DBG] ", format, v...) }
func (s *serverLog) Tracef(format string, v ...any)  { s.printf("[TRC] ", format, v...) }
func (s *serverLog) Fatalf(format string, v ...any) {
	s.mu.Lock()
	if s.fm == "" {
		s.fm = fmt.Sprintf(format, v...)
	}
	s.mu.Unlock()
	s.printf("[FTL] ", format, v...)
}
