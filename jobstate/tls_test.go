package jobstate

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/testcert"
)

// member writes a certificate for id on 127.0.0.1 signed by ca, its key
// and ca's certificate into dir (id.crt, id.key, id-ca.crt), and loads
// them with MutualTLS.
func member(t *testing.T, ca *testcert.CA, dir, id string) *tls.Config {
	t.Helper()
	c := ca.Issue(t, id)
	kb, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		id + ".crt":    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}),
		id + ".key":    pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}),
		id + "-ca.crt": ca.PEM(),
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
	ca := testcert.NewCA(t, "ddrun raft CA")
	c := newDiskCluster(t, 3)
	c.tls = map[string]*tls.Config{}
	for _, id := range c.ids() {
		c.tls[id] = member(t, ca, dir, id)
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
	ca, other := testcert.NewCA(t, "ddrun raft CA"), testcert.NewCA(t, "another CA")
	c := newDiskCluster(t, 3)
	c.tls = map[string]*tls.Config{"a": member(t, ca, dir, "a"), "b": member(t, ca, dir, "b"), "c": member(t, other, dir, "c")}
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
	member(t, testcert.NewCA(t, "ca"), dir, "a")
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
