package natsflags

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, env map[string]string, args ...string) (Flags, error) {
	t.Helper()
	var f Flags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	f.Getenv = func(k string) string { return env[k] }
	return f, f.Resolve()
}

// A secret comes from its flag, else its file's first line, else the
// environment; a flag and its file together are an error.
func TestSecretPrecedence(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("from-file\nignored\n"), 0o600)
	tok := filepath.Join(dir, "tok")
	os.WriteFile(tok, []byte("tok-file\r\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	env := map[string]string{EnvPassword: "from-env", EnvToken: "tok-env", EnvURL: "nats://h:1", EnvUser: "envuser"}
	cases := []struct {
		env                  map[string]string
		args                 []string
		password, token, url string
		user, err            string
	}{
		{env, nil, "from-env", "tok-env", "nats://h:1", "envuser", ""},
		{env, []string{"--nats-password-file", pw, "--nats-token-file", tok}, "from-file", "tok-file", "nats://h:1", "envuser", ""},
		{env, []string{"--nats-password", "from-flag", "--nats", "nats://g:2", "--nats-user", "u"}, "from-flag", "tok-env", "nats://g:2", "u", ""},
		{nil, nil, "", "", "", "", ""},
		{nil, []string{"--nats-password", "a", "--nats-password-file", pw}, "", "", "", "", "--nats-password and --nats-password-file: give one"},
		{nil, []string{"--nats-token-file", filepath.Join(dir, "absent")}, "", "", "", "", "--nats-token-file: open"},
		{nil, []string{"--nats-password-file", empty}, "", "", "", "", "empty first line"},
	}
	for i, c := range cases {
		f, err := parse(t, c.env, c.args...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("case %d: err %v, want %q", i, err, c.err)
			}
			continue
		}
		if err != nil || f.Password != c.password || f.Token != c.token || f.URL != c.url || f.User != c.user {
			t.Errorf("case %d: %v password %q token %q url %q user %q", i, err, f.Password, f.Token, f.URL, f.User)
		}
	}
}

// A child's arguments never hold a secret: they go to its environment, and
// so does a URL with user information.
func TestChildKeepsSecretsOffTheCommandLine(t *testing.T) {
	f := Flags{User: "alice", Password: "pa55word", Token: "t0ken-xyz", Creds: "/c.creds", CA: "/ca.pem"}
	for _, url := range []string{"nats://127.0.0.1:4222", "nats://alice:pa55word@h:4222"} {
		args, env := f.Child(url)
		for _, a := range args {
			if strings.Contains(a, "pa55word") || strings.Contains(a, "t0ken-xyz") {
				t.Fatalf("secret in argv %q", args)
			}
		}
		for _, want := range []string{EnvPassword + "=pa55word", EnvToken + "=t0ken-xyz", EnvUser + "=alice"} {
			if !slices.Contains(env, want) {
				t.Errorf("env %q lacks %s", env, want)
			}
		}
		if hasURLArg := slices.Contains(args, "--nats"); hasURLArg != (url == "nats://127.0.0.1:4222") {
			t.Errorf("url %s: args %q", url, args)
		}
		if url != "nats://127.0.0.1:4222" && !slices.Contains(env, EnvURL+"="+url) {
			t.Errorf("url %s: env %q", url, env)
		}
		if !slices.Contains(args, "/c.creds") || !slices.Contains(args, "/ca.pem") {
			t.Errorf("file flags lost: %q", args)
		}
	}
	if got := f.Redact("auth failed for pa55word at nats://alice:pa55word@h"); strings.Contains(got, "pa55word") {
		t.Fatalf("Redact left the password: %q", got)
	}
}

// Connect retries a dead server for --connect-timeout, logs the retries
// at most once per RetryLogEvery with the password hidden, and then fails
// with the dead URL; a negative --connect-timeout is refused.
func TestConnectRetriesAndLogsSparingly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f, err := parse(t, nil, "--nats", "nats://alice:pa55word@"+addr, "--nats-timeout", "1s")
	if err != nil {
		t.Fatal(err)
	}
	f.Retry = 1200 * time.Millisecond
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	_, err = f.Connect(context.Background(), f.Options(f.URL, "t"), log)
	if err == nil || !strings.Contains(err.Error(), "connection refused (retried for") {
		t.Fatalf("err %v", err)
	}
	if n := strings.Count(logs.String(), "NATS server not reachable yet; retrying"); n != 1 || strings.Contains(logs.String(), "pa55word") {
		t.Errorf("%d retry lines, want 1 without the password:\n%s", n, logs.String())
	}
	for _, c := range []struct {
		args []string
		err  string
	}{{[]string{"--connect-timeout", "-1s"}, "--connect-timeout: -1s < 0"}, {[]string{"--connect-timeout", "0"}, ""}} {
		var g Flags
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		g.Register(fs)
		g.RegisterRetry(fs, 30*time.Second)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		g.Getenv = func(string) string { return "" }
		if err := g.Resolve(); (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("%v: %v, want %q", c.args, err, c.err)
		}
	}
}
