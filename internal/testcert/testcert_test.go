package testcert

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
)

// A certificate the authority issues verifies against the authority's
// PEM for 127.0.0.1, as a server's and as a client's, and not against
// another authority; the files load as a key pair.
func TestIssueVerifies(t *testing.T) {
	ca, other := NewCA(t, "test CA"), NewCA(t, "other CA")
	c := ca.Issue(t, "node")
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(ca.PEM()) {
			t.Fatal("the CA's PEM does not parse")
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("usage %v: %v", usage, err)
		}
		foreign := x509.NewCertPool()
		foreign.AppendCertsFromPEM(other.PEM())
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: foreign, KeyUsages: []x509.ExtKeyUsage{usage}}); err == nil {
			t.Errorf("usage %v: verified by another CA", usage)
		}
	}
	if !leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) || leaf.Subject.CommonName != "node" {
		t.Errorf("issued for %v, %q", leaf.IPAddresses, leaf.Subject.CommonName)
	}
	caFile, certFile, keyFile := ca.WriteFiles(t, t.TempDir(), "node")
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Errorf("the written pair does not load: %v", err)
	}
	if b, err := os.ReadFile(caFile); err != nil || !bytes.Equal(b, ca.PEM()) {
		t.Errorf("the CA file holds %q (%v), not the CA's PEM", b, err)
	}
}
