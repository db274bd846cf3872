package modelfile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
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

// FoldUnary reads a UAI file's unary tables into the unaries and says how
// many it folded; the native format, which holds unaries as unaries, reads
// as it is.
func TestLoadWithFoldUnary(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.uai")
	// x0 in {0,1}, x1 in {0,1,2}: a pair, a unary table on x1, an empty scope.
	text := "MARKOV 2 2 3 3 2 0 1 1 1 0  6 1 2 3 4 5 6  3 1 2 4  1 3"
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	plain, err := LoadWith(context.Background(), in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	folded := -1
	m, err := LoadWith(context.Background(), in, Options{FoldUnary: true, Folded: &folded})
	if err != nil {
		t.Fatal(err)
	}
	if folded != 2 || len(m.Factors) != 1 || len(plain.Factors) != 3 {
		t.Fatalf("%d folded, %d factors left; plain read %d factors", folded, len(m.Factors), len(plain.Factors))
	}
	for x0 := range 2 {
		for x1 := range 3 {
			x := []int{x0, x1}
			if a, b := m.Score(x), plain.Score(x); math.Abs(a-b) > 1e-12 {
				t.Errorf("score of %v: %v folded, %v plain", x, a, b)
			}
		}
	}
	out := filepath.Join(dir, "m.json")
	if err := Save(out, plain); err != nil {
		t.Fatal(err)
	}
	folded = -1
	n, err := LoadWith(context.Background(), out, Options{FoldUnary: true, Folded: &folded})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Factors) != 3 || folded != -1 {
		t.Errorf("native read with FoldUnary: %d factors, folded %d; want 3 and untouched", len(n.Factors), folded)
	}
}
