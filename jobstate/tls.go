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
func MutualTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, errors.New("raft TLS needs a certificate, its key and the CA (--raft-tls-cert, --raft-tls-key, --raft-tls-ca)")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--raft-tls-cert/--raft-tls-key: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--raft-tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--raft-tls-ca %s: no PEM certificate", caFile)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13,
		// The client's check of the member dialled: the chain to the CA,
		// not the name (see above); the server's is ClientAuth's.
		InsecureSkipVerify: true, VerifyConnection: verifyChain(pool)}, nil
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
