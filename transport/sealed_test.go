package transport

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/internal/testlog"
)

// sealedPair is two Sealed transports over one InProc, one with keys a and
// one with keys b, and a collector of what the wire carries on "s.>".
func sealedPair(t *testing.T, a, b [][]byte, log *slog.Logger) (sa, sb *Sealed, wire *collector, inner *InProc) {
	t.Helper()
	inner = NewInProc()
	var err error
	if sa, err = NewSealed(inner, SealOptions{Keys: a, Logger: log}); err != nil {
		t.Fatal(err)
	}
	if sb, err = NewSealed(inner, SealOptions{Keys: b, Logger: log}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sa.Close(); _ = sb.Close(); _ = inner.Close() })
	wire = newCollector()
	subscribe(t, inner, "s.>", wire.handle)
	return sa, sb, wire, inner
}

func key(c byte) []byte { return bytes.Repeat([]byte{c}, 32) }

// What crosses the wire is not the body, and opens only with the key.
func TestSealedHidesAndAuthenticates(t *testing.T) {
	var logs testlog.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	sa, sb, wire, _ := sealedPair(t, [][]byte{key(1)}, [][]byte{key(2)}, log)
	same := newCollector()
	other := newCollector()
	subscribe(t, sa, "s.>", same.handle)
	subscribe(t, sb, "s.>", other.handle)
	secret := []byte("the tables of worker 3")
	publish(t, sa, "s.assign", secret)
	if got := same.wait(t, 1); got[0] != "s.assign "+string(secret) {
		t.Fatalf("same key got %q", got)
	}
	w := wire.wait(t, 1)[0]
	if strings.Contains(w, "tables") || len(w) != len("s.assign ")+len(secret)+SealedExtra {
		t.Fatalf("wire carries %q", w)
	}
	settle(t, sa)
	if got := other.wait(t, 0); len(got) != 0 {
		t.Fatalf("another key opened %q", got)
	}
	if st := sb.Stats(); st.Rejected != 1 || st.Opened != 0 {
		t.Fatalf("other key's stats %+v", st)
	}
	if st := sa.Stats(); st.Sealed != 1 || st.Opened != 1 {
		t.Fatalf("stats %+v", st)
	}
	if !strings.Contains(logs.String(), "not authentic") || !strings.Contains(logs.String(), "unknown key id") {
		t.Fatalf("no warning: %q", logs.String())
	}
}

// A forger without the key, writing on the inner transport, gets nothing
// through: plain messages, altered sealed ones, and sealed ones replayed
// on another subject are all dropped; warnings are rate-limited.
func TestSealedDropsForgeries(t *testing.T) {
	var logs testlog.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	sa, _, wire, inner := sealedPair(t, [][]byte{key(1)}, [][]byte{key(1)}, log)
	got := newCollector()
	subscribe(t, sa, "s.>", got.handle)
	publish(t, sa, "s.step", []byte("stop=false"))
	got.wait(t, 1)
	sealed := []byte(strings.TrimPrefix(wire.wait(t, 1)[0], "s.step "))

	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-20] ^= 1
	otherID := bytes.Clone(sealed)
	otherID[len(sealMagic)] ^= 0xff
	forgeries := []struct{ subject, data string }{
		{"s.step", "stop=true"},           // plain
		{"s.step", ""},                    // empty
		{"s.step", string(flipped)},       // altered body
		{"s.step", string(otherID)},       // altered key id
		{"s.step", string(sealed[:20])},   // truncated
		{"s.report", string(sealed)},      // moved to another subject
		{"s.step", sealMagic + "garbage"}, // a sealed frame's start
	}
	for _, f := range forgeries {
		publish(t, inner, f.subject, []byte(f.data))
	}
	settle(t, sa)
	if msgs := got.wait(t, 0); len(msgs) != 1 {
		t.Fatalf("forgeries got through: %q", msgs)
	}
	if st := sa.Stats(); st.Rejected != uint64(len(forgeries)) {
		t.Fatalf("stats %+v, want %d rejected", st, len(forgeries))
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d warnings, want 1 (rate-limited):\n%s", n, logs.String())
	}
	// A replay on its own subject does open: duplicates are the protocol's
	// to drop (Filter), by sequence number.
	publish(t, inner, "s.step", sealed)
	if msgs := got.wait(t, 2); msgs[1] != "s.step stop=false" {
		t.Fatalf("replay: %q", msgs)
	}
}

// During a rotation a transport with keys [new, old] opens both and seals
// with new; one with only old drops what new sealed.
func TestSealedKeyRotation(t *testing.T) {
	oldK, newK := key(1), key(2)
	rotated, old, _, _ := sealedPair(t, [][]byte{newK, oldK}, [][]byte{oldK}, nil)
	atRotated, atOld := newCollector(), newCollector()
	subscribe(t, rotated, "s.>", atRotated.handle)
	subscribe(t, old, "s.>", atOld.handle)
	publish(t, old, "s.a", []byte("from old"))
	atRotated.wait(t, 1)
	atOld.wait(t, 1)
	publish(t, rotated, "s.b", []byte("from new"))
	got := atRotated.wait(t, 2)
	settle(t, old)
	if !strings.HasSuffix(got[1], "from new") || len(atOld.wait(t, 0)) != 1 {
		t.Fatalf("rotated got %q, old got %q", got, atOld.wait(t, 0))
	}
	if KeyID(oldK) == KeyID(newK) {
		t.Fatal("test keys share an id")
	}
}

func TestNewSealedChecksKeys(t *testing.T) {
	inner := NewInProc()
	defer inner.Close()
	for _, keys := range [][][]byte{nil, {make([]byte, MinKeyLen-1)}, {key(1), make([]byte, MaxKeyLen+1)}} {
		if _, err := NewSealed(inner, SealOptions{Keys: keys}); err == nil {
			t.Errorf("keys of %d bytes accepted", len(keys))
		}
	}
}

func TestParseKeys(t *testing.T) {
	k1, k2 := key(7), []byte("sixteen byte key")
	cases := []struct {
		text string
		want [][]byte
	}{
		{hex.EncodeToString(k1), [][]byte{k1}},
		{hex.EncodeToString(k1) + "\n", [][]byte{k1}},
		{base64.StdEncoding.EncodeToString(k1), [][]byte{k1}},
		{base64.RawURLEncoding.EncodeToString(k2), [][]byte{k2}},
		{hex.EncodeToString(k1) + ", " + base64.StdEncoding.EncodeToString(k2), [][]byte{k1, k2}},
	}
	for _, c := range cases {
		got, err := ParseKeys(c.text)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("ParseKeys(%q) = %v, %v", c.text, got, err)
		}
	}
	for _, bad := range []string{"", " \n", "zz-not-a-key!", hex.EncodeToString(k1[:8]), hex.EncodeToString(k1) + ",%%"} {
		if _, err := ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) accepted", bad)
		}
	}
}

func TestSealOpenErrors(t *testing.T) {
	s := sealedInProc(t)
	msg, err := s.Seal("a.b", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open("a.c", msg); !errors.Is(err, ErrNotAuthentic) {
		t.Fatalf("open on another subject: %v", err)
	}
	if body, err := s.Open("a.b", msg); err != nil || string(body) != "x" {
		t.Fatalf("open: %q %v", body, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(context.Background(), "a.b", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("publish after close: %v", err)
	}
}
