// Package natsflags holds the NATS connection flags that the coordinator
// and the worker binaries share: their names, where secrets come from,
// their mapping to transport.NATSOptions, the connection they make (sealed
// with the job key, observed by the metrics), the worker processes a
// coordinator starts on this machine with them (StartWorkers), and the
// session that holds all of these for one command (Session: the metrics
// endpoint, the connection, the local workers, released in order).
//
// A secret (the password, the token) comes from, in this order:
//
//  1. its flag (--nats-password, --nats-token): visible to every user of
//     the machine in ps, so for tests and throw-away servers only;
//  2. its file flag (--nats-password-file, --nats-token-file): the file's
//     first line;
//  3. its environment variable (DDRUN_NATS_PASSWORD, DDRUN_NATS_TOKEN).
//
// Giving both a flag and its file flag is an error. The server URL may
// also come from DDRUN_NATS_URL when --nats is not given (a URL may carry
// user:password@). Credentials files (--nats-creds, a JWT and its NKey
// seed) are read by the NATS client itself.
package natsflags

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/internal/ratelimit"
	"github.com/ddrun/ddrun/transport"
)

// The environment variables that carry secrets (and the URL, which may
// hold them) to a process, and from a coordinator to the workers it
// starts with --local.
const (
	EnvURL      = "DDRUN_NATS_URL"
	EnvUser     = "DDRUN_NATS_USER"
	EnvPassword = "DDRUN_NATS_PASSWORD"
	EnvToken    = "DDRUN_NATS_TOKEN"
)

// Flags are the NATS connection settings of a command line. After
// Resolve, URL, User, Password and Token hold the values in force.
type Flags struct {
	URL            string
	User, Password string
	Token, Creds   string
	CA, Cert, Key  string
	ConnectTimeout time.Duration
	// Retry bounds the attempts to reach the server (--connect-timeout,
	// registered by RegisterRetry); 0: one attempt.
	Retry time.Duration

	PasswordFile, TokenFile string

	// Getenv reads the environment (nil: os.Getenv); tests set it.
	Getenv func(string) string
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.URL, "nats", "", "NATS server `URL`, e.g. nats://127.0.0.1:4222 (default $"+EnvURL+")")
	fs.StringVar(&f.User, "nats-user", "", "NATS user name (default $"+EnvUser+")")
	fs.StringVar(&f.Password, "nats-password", "", "NATS password; visible in ps: prefer --nats-password-file or $"+EnvPassword)
	fs.StringVar(&f.PasswordFile, "nats-password-file", "", "read the NATS password from `FILE` (its first line)")
	fs.StringVar(&f.Token, "nats-token", "", "NATS authentication token; visible in ps: prefer --nats-token-file or $"+EnvToken)
	fs.StringVar(&f.TokenFile, "nats-token-file", "", "read the NATS token from `FILE` (its first line)")
	fs.StringVar(&f.Creds, "nats-creds", "", "NATS credentials `FILE` (JWT and NKey seed)")
	fs.StringVar(&f.CA, "nats-ca", "", "TLS CA certificate `FILE` for the NATS server")
	fs.StringVar(&f.Cert, "nats-cert", "", "TLS client certificate `FILE`")
	fs.StringVar(&f.Key, "nats-key", "", "TLS client key `FILE`")
	fs.Var(cli.Duration(&f.ConnectTimeout, 5*time.Second), "nats-timeout", "NATS connect timeout")
}

// RegisterRetry adds --connect-timeout, whose default differs by command
// (a worker waits longer for NATS than a coordinator run by hand).
func (f *Flags) RegisterRetry(fs *flag.FlagSet, def time.Duration) {
	fs.Var(cli.Duration(&f.Retry, def), "connect-timeout", "keep trying this long to reach the NATS server (a server that starts later is found; refused credentials are not retried); 0: one attempt of --nats-timeout")
}

// RetryLogEvery is the least time between two log lines about the
// attempts to reach the server.
const RetryLogEvery = 5 * time.Second

// Connect connects with o (Options' result), trying for f.Retry while no
// server answers. It logs on log the attempts (a warning at most every
// RetryLogEvery, with the count left out), and the connection's later
// losses and returns (the client reconnects by itself) unless o has its
// own OnDisconnect and OnReconnect.
func (f *Flags) Connect(ctx context.Context, o transport.NATSOptions, log *slog.Logger) (*transport.NATS, error) {
	url := f.Redact(o.URL)
	o.RetryFor = f.Retry
	limit := ratelimit.Repeats[string]{Every: RetryLogEvery}
	start := time.Now()
	o.OnRetry = func(err error, _ time.Duration) {
		if n, ok := limit.Admit("retry"); ok {
			log.Warn("NATS server not reachable yet; retrying", "nats", url, "err", f.Redact(err.Error()),
				"retries_not_logged", n, "give_up_in", (f.Retry - time.Since(start)).Round(time.Second).String())
		}
	}
	if o.OnDisconnect == nil {
		o.OnDisconnect = func(err error) {
			args := []any{"nats", url}
			if err != nil {
				args = append(args, "err", f.Redact(err.Error()))
			}
			log.Warn("NATS connection lost; reconnecting", args...)
		}
	}
	if o.OnReconnect == nil {
		o.OnReconnect = func() { log.Info("NATS connection back", "nats", url) }
	}
	return transport.NewNATS(ctx, o)
}

// Resolve fills URL, User, Password and Token from their file flags and
// environment variables where no flag gave them (the order is in the
// package comment). Call it once, after parsing.
func (f *Flags) Resolve() error {
	getenv := f.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if f.Retry < 0 {
		return fmt.Errorf("--connect-timeout: %v < 0", f.Retry)
	}
	var err error
	if f.Password, err = secret(f.Password, "--nats-password", f.PasswordFile, getenv(EnvPassword)); err != nil {
		return err
	}
	if f.Token, err = secret(f.Token, "--nats-token", f.TokenFile, getenv(EnvToken)); err != nil {
		return err
	}
	if f.URL == "" {
		f.URL = getenv(EnvURL)
	}
	if f.User == "" {
		f.User = getenv(EnvUser)
	}
	return nil
}

// secret is a flag's value, or its file's first line, or env.
func secret(value, flagName, file, env string) (string, error) {
	switch {
	case value != "" && file != "":
		return "", fmt.Errorf("%s and %s-file: give one", flagName, flagName)
	case value != "":
		return value, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s-file: %w", flagName, err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			return "", errors.New(flagName + "-file " + file + ": empty first line")
		}
		return line, nil
	}
	return env, nil
}

// Options returns the transport options for url (the flag's, or another).
func (f *Flags) Options(url, name string) transport.NATSOptions {
	return transport.NATSOptions{URL: url, Name: name, User: f.User, Password: f.Password, Token: f.Token,
		CredsFile: f.Creds, TLSCA: f.CA, TLSCert: f.Cert, TLSKey: f.Key, ConnectTimeout: f.ConnectTimeout,
		// Model parts arrive as hundreds of chunks at once: a subscriber
		// that lags behind must queue them, not drop them.
		PendingMsgs: 1 << 20, PendingBytes: 2 << 30}
}

// Redact hides the secrets in force (and any URL's password) in s, a
// message about to be printed or logged.
func (f *Flags) Redact(s string) string {
	return transport.Redact(s, f.Password, f.Token)
}

// Child returns the arguments and the environment entries with which a
// child process (a worker that --local starts) connects to url like this
// one: the secrets, and url when it carries user information, travel in
// the environment, never on the command line, which every user can read.
func (f *Flags) Child(url string) (args, env []string) {
	if transport.Redact(url) != url {
		env = append(env, EnvURL+"="+url)
	} else {
		args = append(args, "--nats", url)
	}
	for _, kv := range [...][2]string{{EnvUser, f.User}, {EnvPassword, f.Password}, {EnvToken, f.Token}} {
		if kv[1] != "" {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	for _, kv := range [...][2]string{{"--nats-creds", f.Creds}, {"--nats-ca", f.CA}, {"--nats-cert", f.Cert}, {"--nats-key", f.Key}} {
		if kv[1] != "" {
			args = append(args, kv[0], kv[1])
		}
	}
	return args, env
}
