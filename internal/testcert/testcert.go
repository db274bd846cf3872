// Package testcert makes the certificates that tests of TLS need: a
// certificate authority of the test's own and certificates for 127.0.0.1
// that it signs (ECDSA P-256, valid from an hour before the test to an
// hour after), as a tls.Certificate or as PEM files.
//
// It must not know which servers or clients use them (it imports nothing
// of ddrun, so that the tests of any package, transport's included, may
// use it).
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority of a test.
type CA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	der    []byte
	serial atomic.Int64 // of the last certificate it signed
}

// NewCA returns a new authority whose certificate names name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca := &CA{key: newKey(t)}
	tmpl := ca.template(name)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ca.key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	if ca.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	ca.der = der
	return ca
}

// PEM is the authority's certificate as PEM, what a peer trusts.
func (ca *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.der})
}

// Issue returns a certificate for name on 127.0.0.1, for servers and
// clients alike, signed by ca, with its key.
func (ca *CA) Issue(t testing.TB, name string) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := ca.template(name)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// WriteCA writes the authority's certificate to dir/ca.pem and returns
// its path.
func (ca *CA) WriteCA(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "ca.pem")
	write(t, path, ca.PEM())
	return path
}

// WriteFiles writes, in dir, the authority's certificate (ca.pem) and a
// certificate it issues for name (cert.pem) with its key (key.pem, PKCS
// #8), and returns their paths.
func (ca *CA) WriteFiles(t testing.TB, dir, name string) (caFile, certFile, keyFile string) {
	t.Helper()
	c := ca.Issue(t, name)
	kb, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	write(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}))
	write(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}))
	return ca.WriteCA(t, dir), certFile, keyFile
}

// template is a certificate for name with the next serial number, valid
// from an hour ago to an hour from now.
func (ca *CA) template(name string) *x509.Certificate {
	return &x509.Certificate{SerialNumber: big.NewInt(ca.serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
