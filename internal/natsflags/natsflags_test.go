package natsflags

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
