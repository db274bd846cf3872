package natsflags

import (
	"slices"
	"strings"
	"testing"
)

// --local's workers get the NATS secrets in their environment, never on
// their command line (which ps shows to every user), and the parent's
// DDRUN_NATS_ variables do not leak past the resolved ones.
func TestLocalWorkerArgsHoldNoSecret(t *testing.T) {
	nf := Flags{User: "alice", Password: "pa55word", Token: "", Creds: "", CA: "/ca.pem"}
	environ := []string{"PATH=/bin", EnvPassword + "=stale", EnvToken + "=stale-token"}
	for _, url := range []string{"nats://127.0.0.1:4222", "nats://alice:pa55word@127.0.0.1:4222"} {
		c := workerCmd("/bin/worker", url, "job-w0", 2, nf, true, environ)
		if argv := strings.Join(c.Args, " "); strings.Contains(argv, "pa55word") || strings.Contains(argv, "stale") {
			t.Fatalf("secret on the worker's command line: %q", argv)
		}
		for _, want := range []string{"PATH=/bin", EnvPassword + "=pa55word", EnvUser + "=alice"} {
			if !slices.Contains(c.Env, want) {
				t.Errorf("env %q lacks %q", c.Env, want)
			}
		}
		for _, kv := range c.Env {
			if strings.Contains(kv, "stale") {
				t.Errorf("the parent's %q reached the worker", kv)
			}
		}
		if !slices.Contains(c.Args, "--quiet") || !slices.Contains(c.Args, "/ca.pem") {
			t.Errorf("args %q", c.Args)
		}
	}
}
