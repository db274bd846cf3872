package jobstate

import (
	"crypto/tls"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/testcert"
)

// A member's certificate and CA files are read again when they change: a
// renewed certificate is the one presented at the next connection, both
// accepting and dialling, without a restart; after the group's CA is
// rotated (new CA file, new certificates), the member accepts the new
// CA's certificates and refuses the old CA's. A certificate written
// without its key yet keeps the last good pair.
func TestMutualTLSReloads(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "ddrun raft CA")
	server := member(t, ca, dir, "a")
	client := member(t, ca, dir, "b")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The server side: the serial of each client certificate it accepted.
	accepted := make(chan *big.Int, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				if tc.Handshake() != nil {
					return
				}
				accepted <- tc.ConnectionState().PeerCertificates[0].SerialNumber
				_, _ = c.Read(make([]byte, 1)) // until the client closes
			}()
		}
	}()
	// dial connects with cfg: the server's serial, the client's as the
	// server saw it, or the error of the handshake or its first read.
	dial := func(cfg *tls.Config) (serverSerial, clientSerial *big.Int, err error) {
		t.Helper()
		conn, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			return nil, nil, err
		}
		defer conn.Close()
		serverSerial = conn.ConnectionState().PeerCertificates[0].SerialNumber
		_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, err = conn.Read(make([]byte, 1)) // TLS 1.3: a refused client certificate shows here
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return nil, nil, err
		}
		select {
		case clientSerial = <-accepted:
		case <-time.After(5 * time.Second):
			return nil, nil, errors.New("the server accepted no connection")
		}
		return serverSerial, clientSerial, nil
	}
	s0, c0, err := dial(client)
	if err != nil {
		t.Fatal(err)
	}
	// Renew both members' certificates (same CA): the next connection
	// presents the new ones. (Distinct modification times: some file
	// systems keep coarse ones.)
	time.Sleep(20 * time.Millisecond)
	member(t, ca, dir, "a")
	member(t, ca, dir, "b")
	s1, c1, err := dial(client)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Cmp(s0) == 0 || c1.Cmp(c0) == 0 {
		t.Errorf("after renewal: server certificate %v (was %v), client %v (was %v): not reloaded", s1, s0, c1, c0)
	}
	// A certificate whose key is not written yet: the last good pair.
	time.Sleep(20 * time.Millisecond)
	half := t.TempDir()
	member(t, ca, half, "a")
	crt, err := os.ReadFile(filepath.Join(half, "a.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.crt"), crt, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, _, err := dial(client); err != nil || s.Cmp(s1) != 0 {
		t.Errorf("a certificate without its key: server certificate %v, %v; want the last good one %v", s, err, s1)
	}
	// Rotate the CA: both members get the new CA and certificates it
	// signed; a holder of the old CA's certificate (which takes any
	// server's) is refused.
	stale := &tls.Config{Certificates: member(t, ca, t.TempDir(), "old").Certificates, InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}
	time.Sleep(20 * time.Millisecond)
	next := testcert.NewCA(t, "ddrun raft CA 2")
	member(t, next, dir, "a")
	member(t, next, dir, "b")
	if _, _, err := dial(client); err != nil {
		t.Errorf("after the CA's rotation: %v", err)
	}
	if _, _, err := dial(stale); err == nil {
		t.Error("after the CA's rotation, a certificate of the old CA is accepted")
	}
}
