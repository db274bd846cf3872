package natsflags

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// TestSessionOpenClose: a session without --nats starts an embedded
// server, prints its URL, carries traffic on its transport, and Close
// releases it (a second Close does nothing); a bad --nats-listen is a
// *FlagError, and so is a session without a job key and without
// --insecure (ErrNoKey).
func TestSessionOpenClose(t *testing.T) {
	t.Setenv(JobKeyEnv, "")
	var printed []string
	s := &Session{Flags: &Flags{}, Key: &JobKey{Insecure: true}, Listen: "127.0.0.1:0", Client: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Print: func(kind, msg string, _ ...any) { printed = append(printed, kind+" "+msg) }}
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(printed) != 1 || !strings.HasPrefix(printed[0], "nats nats=nats://") || s.URL == "" || !strings.Contains(printed[0], s.URL) {
		t.Errorf("printed %q, URL %q", printed, s.URL)
	}
	if s.Metrics != nil {
		t.Error("metrics without MetricsAddr")
	}
	if err := s.Transport.Publish(context.Background(), "ddrun.test", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.NATS.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	if _, out := s.Traffic(); out == 0 {
		t.Error("no bytes out after a publish")
	}
	s.Close()
	s.Close()
	if s.NATS.Conn().IsConnected() {
		t.Error("still connected after Close")
	}
	bad := &Session{Flags: &Flags{}, Key: &JobKey{}, Listen: "nohost", Client: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Print: func(string, string, ...any) {}}
	var fe *FlagError
	if err := bad.Open(context.Background()); err == nil || !errors.As(err, &fe) {
		t.Errorf("bad --nats-listen: %v, want a *FlagError", err)
	}
	keyless := &Session{Flags: &Flags{}, Key: &JobKey{}, Listen: "127.0.0.1:0", Client: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Print: func(string, string, ...any) {}}
	if err := keyless.Open(context.Background()); !errors.As(err, &fe) || !errors.Is(err, ErrNoKey) {
		t.Errorf("no key: %v, want ErrNoKey as a *FlagError", err)
	}
}
