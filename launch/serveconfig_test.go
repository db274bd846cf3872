package launch

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultDataDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	if d, err := DefaultDataDir(); err != nil || d != "/state/ddrun" {
		t.Errorf("with XDG_STATE_HOME: %q, %v", d, err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, xdg := range []string{"", "relative/state"} { // the spec ignores a relative one
		t.Setenv("XDG_STATE_HOME", xdg)
		if d, err := DefaultDataDir(); err != nil || d != filepath.Join(home, ".local/state/ddrun") {
			t.Errorf("XDG_STATE_HOME=%q: %q, %v", xdg, d, err)
		}
	}
}

// The tokens come from --token-file, else $DDRUN_API_TOKEN, else a token
// generated once into the data directory, readable by its owner only,
// and the same at the next start; a group- or world-readable one is
// refused.
func TestServeTokens(t *testing.T) {
	dir := t.TempDir()
	c := ServeConfig{Listen: "127.0.0.1:0", DataDir: filepath.Join(dir, "data")}
	t.Setenv(TokenEnv, "")
	os.Unsetenv(TokenEnv)
	open := func() *Listening {
		t.Helper()
		l, err := c.Open()
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		return l
	}
	l := open()
	path := filepath.Join(c.DataDir, TokenFileName)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || l.tokenSource != path || len(l.tokens) != 1 || len(l.tokens[0].Secret) != 64 {
		t.Fatalf("generated token: %v %v, source %q, %d tokens", fi, err, l.tokenSource, len(l.tokens))
	}
	if di, _ := os.Stat(c.DataDir); di.Mode().Perm() != 0o700 {
		t.Errorf("data directory mode %v, want 0700", di.Mode().Perm())
	}
	if l2 := open(); string(l2.tokens[0].Secret) != string(l.tokens[0].Secret) {
		t.Errorf("the generated token changed at the next start")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Errorf("a world-readable token file: %v", err)
	}
	t.Setenv(TokenEnv, "env-token-0123456789")
	if l := open(); l.tokenSource != "$"+TokenEnv || string(l.tokens[0].Secret) != "env-token-0123456789" {
		t.Errorf("from the environment: %q %q", l.tokenSource, l.tokens[0].Secret)
	}
	t.Setenv(TokenEnv, "short")
	var ie *InputError
	if _, err := c.Open(); !errors.As(err, &ie) || !strings.Contains(err.Error(), "$"+TokenEnv+":1: token of 5 bytes") {
		t.Errorf("a short token in the environment: %v", err)
	}
	c.TokenFile = filepath.Join(dir, "tokens")
	if err := os.WriteFile(c.TokenFile, []byte("alice alice-token-0123456789\nbob-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if l := open(); l.tokenSource != c.TokenFile || len(l.tokens) != 2 || l.tokens[0].Name != "alice" {
		t.Errorf("from --token-file: %q %+v", l.tokenSource, l.tokens)
	}
	c.TokenFile = filepath.Join(dir, "none")
	if _, err := c.Open(); !errors.As(err, &ie) || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("a missing --token-file: %v", err)
	}
}

func TestServeConfigCheck(t *testing.T) {
	ok := ServeConfig{MaxJobs: 1, MaxRunning: 1, MaxStarted: 1, MaxClientJobs: 1, MaxUpload: 1, MaxModel: 1}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*ServeConfig)
		says string
	}{
		{func(c *ServeConfig) { c.MaxClientJobs = 0 }, "--max-client-jobs: 0 < 1"},
		{func(c *ServeConfig) { c.MaxModel = 0 }, "--max-model: 0 < 1"},
		{func(c *ServeConfig) { c.MaxStarted = -1 }, "--max-started: -1 < 1"},
		{func(c *ServeConfig) { c.TLSCert = "cert.pem" }, "--tls-cert and --tls-key go together"},
		{func(c *ServeConfig) { c.TLSKey = "key.pem" }, "--tls-cert and --tls-key go together"},
	} {
		bad := ok
		c.edit(&bad)
		if err := bad.Check(); err == nil || err.Error() != c.says {
			t.Errorf("Check: %v, want %q", err, c.says)
		}
	}
	bad := ok
	bad.Listen, bad.DataDir, bad.TLSCert, bad.TLSKey = "127.0.0.1:0", t.TempDir(), "/nonexistent/cert.pem", "/nonexistent/key.pem"
	t.Setenv(TokenEnv, "env-token-0123456789")
	var ie *InputError
	if _, err := bad.Open(); !errors.As(err, &ie) || !strings.Contains(err.Error(), "--tls-cert /nonexistent/cert.pem") {
		t.Errorf("a missing certificate: %v", err)
	}
}

// writeSelfSigned writes a self-signed certificate for name and its key
// as PEM files.
func writeSelfSigned(t *testing.T, certFile, keyFile, name string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A renewed certificate is served without a restart; a renewal that does
// not load keeps the last good one.
func TestServeCertificateRenewal(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, cert, key, "first.example")
	kp := &keyPair{cert: cert, key: key}
	name := func() string {
		t.Helper()
		c, err := kp.get(nil)
		if err != nil {
			t.Fatal(err)
		}
		x, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return x.Subject.CommonName
	}
	if n := name(); n != "first.example" {
		t.Fatalf("served %s", n)
	}
	writeSelfSigned(t, cert, key, "second.example")
	later := time.Now().Add(time.Minute)
	os.Chtimes(cert, later, later)
	if n := name(); n != "second.example" {
		t.Errorf("after a renewal: served %s, want second.example", n)
	}
	os.WriteFile(cert, []byte("not a certificate"), 0o600)
	os.Chtimes(cert, later.Add(time.Minute), later.Add(time.Minute))
	if n := name(); n != "second.example" {
		t.Errorf("after a broken renewal: served %s, want the last good one", n)
	}
	if _, err := (&keyPair{cert: cert, key: key}).get(nil); err == nil || !strings.Contains(err.Error(), "--tls-cert "+cert) {
		t.Errorf("a broken pair at start: %v", err)
	}
}
