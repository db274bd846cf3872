package jobstate

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCA is a certificate authority of a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial int64

func newSerial() *big.Int { serial++; return big.NewInt(serial) }

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: newSerial(), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// member writes a certificate for id on 127.0.0.1 signed by ca, its key
// and ca's certificate into dir, and loads them with MutualTLS.
func (ca *testCA) member(t *testing.T, dir, id string) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: newSerial(), Subject: pkix.Name{CommonName: id}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		id + ".crt":    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		id + ".key":    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
		id + "-ca.crt": ca.pem,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := MutualTLS(filepath.Join(dir, id+".crt"), filepath.Join(dir, id+".key"), filepath.Join(dir, id+"-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Three members whose Raft traffic is mutual TLS on loopback elect a
// leader and replicate the job's state.
func TestGroupOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "ddrun raft CA")
	c := newDiskCluster(t, 3)
	c.tls = map[string]*tls.Config{}
	for _, id := range c.ids() {
		c.tls[id] = ca.member(t, dir, id)
	}
	c.openAll()
	l := c.leader(10 * time.Second)
	ctx := ctxFor(t, 10*time.Second)
	if err := l.Start(ctx, "job", object("m"), json.RawMessage(`{"k":"v"}`)); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveCheckpoint(ctx, manifest("job", 0, 3)); err != nil {
		t.Fatal(err)
	}
	c.waitAll("checkpoint 3 over TLS", func(s JobState) bool { return s.Job == "job" && s.Checkpoint != nil && s.Checkpoint.Iteration == 3 })
}

// A member whose certificate another CA signed (and which trusts only
// that CA) cannot join: the two others elect a leader and commit without
// it, it never learns the leader nor the state, and a TLS client with its
// certificate is refused by a member.
func TestGroupTLSRefusesAnotherCA(t *testing.T) {
	dir := t.TempDir()
	ca, other := newTestCA(t, "ddrun raft CA"), newTestCA(t, "another CA")
	c := newDiskCluster(t, 3)
	c.tls = map[string]*tls.Config{"a": ca.member(t, dir, "a"), "b": ca.member(t, dir, "b"), "c": other.member(t, dir, "c")}
	c.openAll()
	deadline := time.Now().Add(15 * time.Second)
	var l *Group
	for l == nil && time.Now().Before(deadline) {
		for _, id := range []string{"a", "b"} {
			if c.groups[id].IsLeader() {
				l = c.groups[id]
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if l == nil {
		t.Fatal("a and b elected no leader")
	}
	ctx := ctxFor(t, 10*time.Second)
	if err := l.Start(ctx, "job", object("m"), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveCheckpoint(ctx, manifest("job", 0, 5)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := c.groups[id].WaitApplied(ctxFor(t, 5*time.Second), func(s JobState) bool { return s.Checkpoint != nil && s.Checkpoint.Iteration == 5 }); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	time.Sleep(500 * time.Millisecond) // heartbeats the leader would send c
	if lid, _ := c.groups["c"].Leader(); lid != "" || c.groups["c"].IsLeader() || c.groups["c"].State().Job != "" {
		t.Errorf("c, of another CA: leader %q, state %+v", lid, c.groups["c"].State())
	}
	// c's certificate, from a client that accepts any server: a refuses
	// it (TLS 1.3: the refusal comes with the first read), where a
	// member's certificate gets a connection that stays open (a read
	// times out, raft waiting for a request).
	read := func(cert []tls.Certificate) error {
		client := &tls.Config{Certificates: cert, InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}
		conn, err := tls.Dial("tcp", c.peers["a"], client)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		_, err = conn.Read(make([]byte, 1))
		return err
	}
	var ne net.Error
	if err := read(c.tls["c"].Certificates); err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("a member accepted a connection with another CA's certificate (%v)", err)
	}
	if err := read(c.tls["b"].Certificates); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("a member's certificate: %v, want a connection left open", err)
	}
}

// MutualTLS needs all three files, and a CA file that holds a certificate.
func TestMutualTLSErrors(t *testing.T) {
	dir := t.TempDir()
	newTestCA(t, "ca").member(t, dir, "a")
	crt, key, ca := filepath.Join(dir, "a.crt"), filepath.Join(dir, "a.key"), filepath.Join(dir, "a-ca.crt")
	for what, files := range map[string][3]string{
		"no CA":        {crt, key, ""},
		"missing CA":   {crt, key, filepath.Join(dir, "none")},
		"key as CA":    {crt, key, key},
		"cert as key":  {crt, crt, ca},
		"missing cert": {filepath.Join(dir, "none"), key, ca},
	} {
		if _, err := MutualTLS(files[0], files[1], files[2]); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
}
