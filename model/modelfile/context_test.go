package modelfile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// A read blocked on a pipe that never ends returns promptly once the
// context is cancelled, with the context's cause.
func TestCtxReaderStopsBlockedRead(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("MARKOV\n2\n")) // then nothing, ever
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("interrupted")
	time.AfterFunc(50*time.Millisecond, func() { cancel(stop) })
	start := time.Now()
	_, err := uai.Read(newCtxReader(ctx, pr), "pipe.uai")
	if !errors.Is(err, stop) {
		t.Fatalf("err %v, want the cause", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestCtxReaderReadsAll(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 100_000)
	got, err := io.ReadAll(newCtxReader(context.WithoutCancel(context.Background()), bytes.NewReader(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got, err = io.ReadAll(newCtxReader(ctx, bytes.NewReader(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatal(err)
	}
}

// A FIFO input stops on cancellation, whether no writer ever opens it (the
// open waits) or a writer opens it and never writes the rest.
func TestLoadWithFIFOStops(t *testing.T) {
	for _, writer := range []bool{false, true} {
		for _, name := range []string{"m.uai", "m.json"} {
			p := filepath.Join(t.TempDir(), name)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skip("no FIFOs here:", err)
			}
			if writer {
				go func() {
					w, err := os.OpenFile(p, os.O_WRONLY, 0)
					if err != nil {
						return
					}
					w.Write([]byte("MARKOV\n"))
					time.Sleep(5 * time.Second)
					w.Close()
				}()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			start := time.Now()
			_, err := LoadWith(ctx, p, Options{})
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), name) {
				t.Fatalf("writer %v %s: err %v", writer, name, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("writer %v %s: took %v", writer, name, d)
			}
		}
	}
}

// LoadWith passes the entry limit to both readers.
func TestLoadWithMaxEntries(t *testing.T) {
	dir := t.TempDir()
	u := filepath.Join(dir, "m.uai")
	os.WriteFile(u, []byte("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 2 3 4\n"), 0o644)
	j := filepath.Join(dir, "m.json")
	os.WriteFile(j, []byte(`{"format": "ddrun-model", "version": 1, "cards": [2, 2], "factors": [{"kind": "dense", "vars": [0, 1], "table": [0, 0, 0, 0]}]}`), 0o644)
	for _, p := range []string{u, j} {
		if _, err := LoadWith(context.Background(), p, Options{MaxEntries: 4}); err != nil {
			t.Fatal(err)
		}
		_, err := LoadWith(context.Background(), p, Options{MaxEntries: 3})
		if err == nil || !strings.Contains(err.Error(), "over the limit of 3") || !strings.HasPrefix(err.Error(), p) {
			t.Fatalf("%s: err %v", p, err)
		}
	}
}

// An evidence FIFO stops on cancellation like a model's, and a regular
// evidence file reads as uai.ReadEvidenceFile reads it.
func TestLoadEvidenceWithFIFOStops(t *testing.T) {
	m := model.New([]int{2, 3})
	p := filepath.Join(t.TempDir(), "e.evid")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	start := time.Now()
	_, err := LoadEvidenceWith(ctx, p, m, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "e.evid") {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	file := filepath.Join(t.TempDir(), "f.evid")
	if err := os.WriteFile(file, []byte("1 1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := LoadEvidenceWith(context.Background(), file, m, nil)
	want, werr := uai.ReadEvidenceFile(file, m)
	if err != nil || werr != nil || len(ev) != 1 || ev[1] != 2 || want[1] != 2 {
		t.Fatalf("evidence %v (%v), uai's %v (%v)", ev, err, want, werr)
	}
}
