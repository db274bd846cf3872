package launch

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ddrun/ddrun/service"
)

// TokenEnv is the environment variable that may hold the job service's
// API token (one; a file holds several), so that it is never on a command
// line.
const TokenEnv = "DDRUN_API_TOKEN"

// TokenFileName is the file under the data directory that holds the token
// the service generates when it is given none.
const TokenFileName = "api-token"

// ServeConfig is coordinator serve's own settings (those of the NATS
// connection and of distributed jobs are the command's): where and how it
// listens, where it keeps the jobs, who may use it and how much.
type ServeConfig struct {
	Listen, DataDir            string
	TokenFile, TLSCert, TLSKey string
	WorkersMin, LocalWorkers   int
	MaxJobs, MaxRunning        int
	MaxStarted, MaxClientJobs  int
	MaxUpload, MaxModel        int64
	Quiet                      bool
}

// Register adds the settings' flags to fs.
func (c *ServeConfig) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "`ADDR` of the HTTP API, loopback unless told otherwise (port 0: any free port; the address is printed on stderr as http=URL)")
	fs.StringVar(&c.DataDir, "data-dir", "", "`DIR` that keeps the jobs (model, state, result, trace) and the generated API token, so that a restarted service lists them (default $XDG_STATE_HOME/ddrun or ~/.local/state/ddrun)")
	fs.StringVar(&c.TokenFile, "token-file", "", "`FILE` of API tokens, one a line (TOKEN or NAME TOKEN); default $"+TokenEnv+", else a token generated into DIR/"+TokenFileName)
	fs.StringVar(&c.TLSCert, "tls-cert", "", "serve HTTPS with the certificate (chain) in PEM `FILE` (with --tls-key)")
	fs.StringVar(&c.TLSKey, "tls-key", "", "private key in PEM `FILE` of --tls-cert")
	fs.IntVar(&c.WorkersMin, "workers-min", 0, "/readyz answers 200 only while at least `N` workers are in the pool")
	fs.IntVar(&c.LocalWorkers, "local-workers", 0, "start `N` worker processes on this machine (the worker binary beside the coordinator, or on PATH) and stop them at the end")
	fs.IntVar(&c.MaxJobs, "max-jobs", 1000, "most jobs kept: a new job evicts the oldest finished one")
	fs.IntVar(&c.MaxRunning, "max-running", 1, "most jobs with workers=0 that run at once in this process (the others wait in the queue)")
	fs.IntVar(&c.MaxStarted, "max-started", 4, "most jobs with workers>0 started at once, each holding its model while it waits for workers (the others wait in the queue, on disk)")
	fs.IntVar(&c.MaxClientJobs, "max-client-jobs", 16, "most unfinished jobs of one client (token); beyond: HTTP 429")
	fs.Int64Var(&c.MaxUpload, "max-upload", 256<<20, "largest model upload in `BYTES` (larger: HTTP 413)")
	fs.Int64Var(&c.MaxModel, "max-model", 256<<20, "largest model in `BYTES` once decompressed (a gzip upload beyond: HTTP 413, found while it is read)")
	fs.BoolVar(&c.Quiet, "quiet", false, "log warnings only")
}

// Check checks the settings' values (a usage error each).
func (c *ServeConfig) Check() error {
	for _, v := range []struct {
		name   string
		v, min int64
	}{{"--workers-min", int64(c.WorkersMin), 0}, {"--local-workers", int64(c.LocalWorkers), 0}, {"--max-jobs", int64(c.MaxJobs), 1},
		{"--max-running", int64(c.MaxRunning), 1}, {"--max-started", int64(c.MaxStarted), 1}, {"--max-client-jobs", int64(c.MaxClientJobs), 1},
		{"--max-upload", c.MaxUpload, 1}, {"--max-model", c.MaxModel, 1}} {
		if v.v < v.min {
			return fmt.Errorf("%s: %d < %d", v.name, v.v, v.min)
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	return nil
}

// DefaultDataDir is the job service's data directory when none is given:
// ddrun under the user's state directory ($XDG_STATE_HOME, else
// ~/.local/state), not the directory the service was started from.
func DefaultDataDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "ddrun"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("--data-dir: none given and no home directory for the default: %w", err)
	}
	return filepath.Join(home, ".local", "state", "ddrun"), nil
}

// served is what openServe prepared: the listener, its URL, the data
// directory and the tokens with where they came from.
type served struct {
	ln          net.Listener
	url, dir    string
	tokens      []service.Token
	tokenSource string
}

// Dir is the service's data directory: its jobs' files (workers of this
// machine read their models there: --model-root).
func (s *served) Dir() string { return s.dir }

// openServe resolves c: the data directory (created), the tokens (the
// token file, else $DDRUN_API_TOKEN, else the data directory's generated
// token, created on first use), and the listener on c.Listen (TLS with
// the certificate when given).
func (c *ServeConfig) openServe() (*served, error) {
	s := &served{dir: c.DataDir}
	if s.dir == "" {
		var err error
		if s.dir, err = DefaultDataDir(); err != nil {
			return nil, &InputError{err}
		}
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, &InputError{fmt.Errorf("--data-dir: %w", err)}
	}
	var err error
	if s.tokens, s.tokenSource, err = c.loadTokens(s.dir); err != nil {
		return nil, err
	}
	var cfg *tls.Config
	if c.TLSCert != "" {
		kp := &keyPair{cert: c.TLSCert, key: c.TLSKey}
		if _, err := kp.get(nil); err != nil {
			return nil, &InputError{err}
		}
		cfg = &tls.Config{GetCertificate: kp.get, MinVersion: tls.VersionTLS12}
	}
	if s.ln, err = net.Listen("tcp", c.Listen); err != nil {
		return nil, &InputError{fmt.Errorf("--listen %q: %w", c.Listen, err)}
	}
	s.url = "http://" + s.ln.Addr().String()
	if cfg != nil {
		s.ln = tls.NewListener(s.ln, cfg)
		s.url = "https://" + s.ln.Addr().String()
	}
	return s, nil
}

// loadTokens reads the tokens from --token-file, else $DDRUN_API_TOKEN,
// else dir's generated token file (made with a new random token, readable
// by its owner only, when there is none), and says where they came from.
func (c *ServeConfig) loadTokens(dir string) ([]service.Token, string, error) {
	if c.TokenFile != "" {
		f, err := os.Open(c.TokenFile)
		if err != nil {
			return nil, "", &InputError{fmt.Errorf("--token-file: %w", err)}
		}
		defer f.Close()
		toks, err := service.ParseTokens(f, c.TokenFile)
		if err != nil {
			return nil, "", &InputError{fmt.Errorf("--token-file: %w", err)}
		}
		return toks, c.TokenFile, nil
	}
	if v, ok := os.LookupEnv(TokenEnv); ok {
		toks, err := service.ParseTokens(strings.NewReader(v), "$"+TokenEnv)
		if err != nil {
			return nil, "", &InputError{err}
		}
		return toks, "$" + TokenEnv, nil
	}
	path := filepath.Join(dir, TokenFileName)
	var b [32]byte
	_, _ = rand.Read(b[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, err = fmt.Fprintln(f, hex.EncodeToString(b[:]))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return nil, "", fmt.Errorf("generating the API token: %w", err)
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, "", fmt.Errorf("generating the API token: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, "", fmt.Errorf("%s: readable by others (mode %v): chmod 600 it, or remove it for a new token", path, fi.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("the API token: %w", err)
	}
	toks, err := service.ParseTokens(strings.NewReader(string(raw)), path)
	return toks, path, err
}

// keyPair is the service's certificate, read again from its files when
// the certificate file changes (a renewed certificate, e.g. a Kubernetes
// Secret updated by cert-manager, is served without a restart). A renewal
// that does not load keeps the last good pair until the files are fixed.
type keyPair struct {
	cert, key string
	mu        sync.Mutex
	loaded    *tls.Certificate
	mod       time.Time
	size      int64
}

// get is tls.Config.GetCertificate.
func (k *keyPair) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	fi, err := os.Stat(k.cert)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.loaded != nil && (err != nil || (fi.ModTime().Equal(k.mod) && fi.Size() == k.size)) {
		return k.loaded, nil
	}
	c, lerr := tls.LoadX509KeyPair(k.cert, k.key)
	if lerr != nil {
		if k.loaded != nil {
			return k.loaded, nil
		}
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", k.cert, k.key, lerr)
	}
	k.loaded = &c
	if err == nil {
		k.mod, k.size = fi.ModTime(), fi.Size()
	}
	return k.loaded, nil
}
