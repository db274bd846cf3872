package jobstate

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Raft's repeated errors about a dead peer (a failed heartbeat about three
// times a second) are logged once per interval, with the number
// suppressed; another peer, another message, and state changes are not
// held back by them.
func TestHCLogRateLimitsRepeats(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	now := time.Unix(1000, 0)
	h := newHCLoggerEvery(l, 10*time.Second, func() time.Time { return now })
	dead, alive := raft.ServerAddress("10.0.0.3:7000"), raft.ServerAddress("10.0.0.2:7000")
	beat := func(peer raft.ServerAddress) {
		h.Error("failed to heartbeat to", "peer", peer, "backoff time", 10*time.Millisecond, "error", errors.New("connection refused"))
	}
	lines := func() []string {
		s := strings.TrimSpace(buf.String())
		buf.Reset()
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	beat(dead)
	if got := lines(); len(got) != 1 || strings.Contains(got[0], "suppressed") || !strings.Contains(got[0], "peer=10.0.0.3:7000") {
		t.Fatalf("first record: %q; want it logged as it is", got)
	}
	for range 29 { // 3 a second for nearly 10 s
		now = now.Add(333 * time.Millisecond)
		beat(dead)
	}
	if got := lines(); len(got) != 0 {
		t.Fatalf("repeats within the interval logged: %q", got)
	}
	beat(alive)
	h.Error("failed to appendEntries to", "peer", dead, "error", errors.New("connection refused"))
	h.Info("entering candidate state", "node", "a", "term", 3)
	h.Info("entering candidate state", "node", "a", "term", 4)
	if got := lines(); len(got) != 4 {
		t.Fatalf("another peer, another message and state changes: %d lines, want 4:\n%s", len(got), strings.Join(got, "\n"))
	}
	now = now.Add(400 * time.Millisecond) // 10.06 s after the first
	beat(dead)
	got := lines()
	if len(got) != 1 || !strings.Contains(got[0], "suppressed=29") || !strings.Contains(got[0], `msg="failed to heartbeat to"`) {
		t.Fatalf("after the interval: %q; want one record with suppressed=29", got)
	}
	now = now.Add(time.Second)
	beat(dead)
	if got := lines(); len(got) != 0 {
		t.Fatalf("a repeat 1 s after the last logged: %q", got)
	}
}
