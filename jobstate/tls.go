package jobstate

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// MutualTLS returns the TLS configuration of a member whose Raft traffic
// is mutual TLS (Config.TLS): it presents the certificate in certFile
// (with the key in keyFile) both when it accepts and when it dials, and
// trusts only certificates that the CA in caFile signed, both ways: a
// member whose certificate another CA signed can neither join nor be
// joined. TLS 1.3 only.
//
// The CA is the group's membership: a certificate it signed is a member,
// whatever names it holds (a dialled member's certificate is not checked
// against the address dialled, so that one certificate can serve every
// member and addresses may be rewritten, as a Service's are). Give the
// group a CA of its own.
//
// The files are read again, at the next handshake after they change (a
// renewed certificate, a CA rotated in; a Secret volume's update), so
// certificates are replaced without a restart; connections already open
// keep the certificates of their handshake. A change that does not load
// (a certificate written before its key) keeps the files read last until
// it does.
func MutualTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, errors.New("raft TLS needs a certificate, its key and the CA (--raft-tls-cert, --raft-tls-key, --raft-tls-ca)")
	}
	f := &tlsFiles{paths: [3]string{certFile, keyFile, caFile}}
	f.stamps = f.stat()
	var err error
	if f.cert, f.pool, err = f.load(); err != nil {
		return nil, err
	}
	base := &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13,
		// The client's check of the member dialled: the chain to the CA,
		// not the name (see above); the server's is ClientAuth's.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, pool := f.current()
			return verifyChain(pool)(cs)
		}}
	cfg := base.Clone()
	cfg.Certificates, cfg.RootCAs, cfg.ClientCAs = []tls.Certificate{f.cert}, f.pool, f.pool
	// Dialling: the certificate of the files as they are now.
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		cert, _ := f.current()
		return &cert, nil
	}
	// Accepting: the certificate and the CA of the files as they are now.
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cert, pool := f.current()
		c := base.Clone()
		c.Certificates, c.RootCAs, c.ClientCAs = []tls.Certificate{cert}, pool, pool
		return c, nil
	}
	return cfg, nil
}

// tlsFiles are a member's certificate, key and CA files and what was last
// loaded from them.
type tlsFiles struct {
	paths  [3]string // certificate, key, CA
	mu     sync.Mutex
	stamps [3]fileStamp // of the files loaded
	cert   tls.Certificate
	pool   *x509.CertPool
}

// fileStamp tells a file's versions apart.
type fileStamp struct {
	mod  int64 // Unix nanoseconds
	size int64
}

func (f *tlsFiles) stat() [3]fileStamp {
	var st [3]fileStamp
	for i, p := range f.paths {
		if fi, err := os.Stat(p); err == nil {
			st[i] = fileStamp{fi.ModTime().UnixNano(), fi.Size()}
		}
	}
	return st
}

// load reads the files.
func (f *tlsFiles) load() (tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(f.paths[0], f.paths[1])
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("--raft-tls-cert/--raft-tls-key: %w", err)
	}
	pem, err := os.ReadFile(f.paths[2])
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("--raft-tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return tls.Certificate{}, nil, fmt.Errorf("--raft-tls-ca %s: no PEM certificate", f.paths[2])
	}
	return cert, pool, nil
}

// current returns the certificate and the CA pool, read again first when
// a file changed since they were loaded and the new files load.
func (f *tlsFiles) current() (tls.Certificate, *x509.CertPool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st := f.stat(); st != f.stamps {
		if cert, pool, err := f.load(); err == nil {
			f.cert, f.pool, f.stamps = cert, pool, st
		}
	}
	return f.cert, f.pool
}

// verifyChain checks that the peer's certificate chains to a CA of pool.
func verifyChain(pool *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("raft TLS: the member presented no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		if err != nil {
			return fmt.Errorf("raft TLS: the member's certificate: %w", err)
		}
		return nil
	}
}

// tlsStream is a raft.StreamLayer of TLS over TCP: the listener's
// connections are TLS servers and Dial's are TLS clients, each checking
// the other's certificate against the group's CA (cfg; MutualTLS).
//
// Accepted connections are handed to raft only once their handshake (the
// check of the peer's certificate) succeeded; handshakes run
// concurrently, each within handshakeTimeout, so that a peer that opens
// a connection and says nothing holds up no other.
type tlsStream struct {
	ln        net.Listener
	advertise net.Addr
	cfg       *tls.Config
	conns     chan net.Conn
	done      chan struct{}
	once      sync.Once
}

// handshakeTimeout bounds an accepted connection's TLS handshake.
const handshakeTimeout = 10 * time.Second

// newTLSStream listens on bind (TCP) for TLS connections; advertise, when
// not nil, is the address the other members reach it at.
func newTLSStream(bind string, advertise net.Addr, cfg *tls.Config) (*tlsStream, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	if a, ok := advertise.(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft TLS: advertise address %v is not routable", advertise)
	}
	s := &tlsStream{ln: ln, advertise: advertise, cfg: cfg, conns: make(chan net.Conn), done: make(chan struct{})}
	go s.accept()
	return s, nil
}

// accept accepts connections until the listener closes, and hands those
// whose handshake succeeds to Accept.
func (s *tlsStream) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			time.Sleep(10 * time.Millisecond) // a transient error (too many files)
			continue
		}
		go func() {
			tc := tls.Server(c, s.cfg)
			_ = tc.SetDeadline(time.Now().Add(handshakeTimeout))
			if err := tc.Handshake(); err != nil {
				tc.Close()
				return
			}
			_ = tc.SetDeadline(time.Time{})
			select {
			case s.conns <- tc:
			case <-s.done:
				tc.Close()
			}
		}()
	}
}

// Accept returns the next connection whose handshake succeeded.
func (s *tlsStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting.
func (s *tlsStream) Close() error {
	err := net.ErrClosed
	s.once.Do(func() {
		close(s.done)
		err = s.ln.Close()
	})
	return err
}

func (s *tlsStream) Addr() net.Addr { return s.advertise }

// Dial opens a TLS connection to address, checking the member's
// certificate there (MutualTLS).
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(address), s.cfg)
}
