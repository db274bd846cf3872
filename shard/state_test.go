package shard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
)

func testState() (*consensus.ShardPartState, StateAt, StateLens) {
	st := &consensus.ShardPartState{PartState: consensus.PartState{Lambda: []float64{1, -2, 3.5}, Mu: []float64{0.25, 0.75}},
		X: []int32{1, 0}, Best: []int32{0, 1}}
	at := StateAt{Job: "job-1", Epoch: 2, Iter: 30, Part: 1, Spec: []byte("spec of part 1")}
	return st, at, StateLens{Lambda: 3, Mu: 2, X: 2}
}

// A state file reads back as written, and its reference round-trips.
func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, best := range []bool{true, false} {
		st, at, lens := testState()
		if !best {
			st.Best = nil
		}
		ref, err := WriteState(dir, at, st)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeStateRef(ref.Encode())
		if err != nil || back != ref {
			t.Fatalf("reference %+v read back as %+v, %v", ref, back, err)
		}
		got, err := ReadState(context.Background(), dir, ref, at, lens)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Lambda, st.Lambda) || !slices.Equal(got.Mu, st.Mu) || len(got.Nu) != 0 ||
			!slices.Equal(got.X, st.X) || !slices.Equal(got.Best, st.Best) || (got.Best == nil) != (st.Best == nil) {
			t.Errorf("best %v: read %+v, wrote %+v", best, got, st)
		}
	}
}

// Damaged, forged or mismatched state files are refused with a one-line
// error saying what is wrong.
func TestStateRejected(t *testing.T) {
	st, at, lens := testState()
	type mutation struct {
		name string
		// change the file's bytes, the reference, what is wanted
		file func(b []byte) []byte
		ref  func(r *StateRef)
		at   func(a *StateAt, l *StateLens)
		want string
	}
	resum := func(b []byte) []byte { // a consistent forgery: the inner checksum redone
		s := sha256.Sum256(b[:len(b)-32])
		return append(b[:len(b)-32], s[:]...)
	}
	cases := []mutation{
		{name: "flipped byte", file: func(b []byte) []byte { b[len(b)-40] ^= 1; return b }, want: "checksum"},
		{name: "truncated", file: func(b []byte) []byte { return b[:len(b)-1] }, want: "bytes"},
		{name: "forged value, inner checksum redone", file: func(b []byte) []byte { b[len(b)-40] ^= 1; return resum(b) }, want: "sha256 differs"},
		{name: "bad magic", file: func(b []byte) []byte { b[0] = 'X'; return resum(b) }, want: "bad magic"},
		{name: "huge length claimed", file: func(b []byte) []byte { b[len(stateMagic)+1+len(at.Job)+52] = 0xff; return resum(b) }, want: "entries"},
		{name: "size in reference", ref: func(r *StateRef) { r.Size++ }, want: "recorded"},
		{name: "name escapes", ref: func(r *StateRef) { r.Name = "../x.ddstate" }, want: "not one a worker writes"},
		{name: "other iteration", at: func(a *StateAt, l *StateLens) { a.Iter = 40 }, want: "iteration"},
		{name: "other part's spec", at: func(a *StateAt, l *StateLens) { a.Spec = []byte("another") }, want: "another part"},
		{name: "other job", at: func(a *StateAt, l *StateLens) { a.Job = "job-2" }, want: "another job"},
		{name: "other lengths", at: func(a *StateAt, l *StateLens) { l.Lambda = 4 }, want: "entries"},
		{name: "missing", ref: func(r *StateRef) { r.Name = "none.ddstate" }, want: "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ref, err := WriteState(dir, at, st)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, ref.Name)
			if c.file != nil {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				b = c.file(b)
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				if c.want != "recorded" && c.want != "sha256 differs" {
					ref.Size = int64(len(b)) // only the content is wrong
				}
			}
			if c.ref != nil {
				c.ref(&ref)
			}
			a, l := at, lens
			if c.at != nil {
				c.at(&a, &l)
			}
			_, err = ReadState(context.Background(), dir, ref, a, l)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line with %q", err, c.want)
			}
		})
	}
}

// Old states of a part are pruned but the newest three.
func TestStatePrune(t *testing.T) {
	dir := t.TempDir()
	st, at, _ := testState()
	for _, it := range []int{10, 20, 30, 40, 50} {
		at.Iter = it
		if _, err := (StateFiles{Dir: dir}).Save(context.Background(), at, st); err != nil {
			t.Fatal(err)
		}
	}
	other := at
	other.Part = 0
	if _, err := WriteState(dir, other, st); err != nil {
		t.Fatal(err)
	}
	got := stateNames(dir)
	want := "job-1-e2-p0-i50.ddstate job-1-e2-p1-i30.ddstate job-1-e2-p1-i40.ddstate job-1-e2-p1-i50.ddstate"
	if strings.Join(got, " ") != want {
		t.Errorf("kept %v, want %s", got, want)
	}
}

// FuzzStateFile: decoding any bytes as a state file fails cleanly or
// gives arrays of the lengths asked for; the seeds are a valid file and
// damaged copies.
func FuzzStateFile(f *testing.F) {
	st, at, lens := testState()
	var buf bytes.Buffer
	if err := encodeState(&buf, at, st); err != nil {
		f.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	good := append(buf.Bytes(), sum[:]...)
	f.Add(good)
	f.Add(good[:len(good)-5])
	f.Add([]byte(stateMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeState(bytes.NewReader(data), int64(len(data)), at, lens)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if len(got.Lambda) != lens.Lambda || len(got.Mu) != lens.Mu || len(got.Nu) != lens.Nu || len(got.X) != lens.X ||
			got.Best != nil && len(got.Best) != lens.X {
			t.Fatalf("decoded lengths %d/%d/%d/%d/%d, want %+v", len(got.Lambda), len(got.Nu), len(got.Mu), len(got.X), len(got.Best), lens)
		}
	})
}

// FuzzStateRef: any bytes decode as a reference with a safe name, or fail.
func FuzzStateRef(f *testing.F) {
	f.Add(StateRef{Name: "j-e1-p0-i10.ddstate", Size: 100, Iter: 10}.Encode())
	f.Add([]byte(stateRefMagic + "\x03../"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeStateRef(data)
		if err == nil && (strings.ContainsAny(r.Name, "/\\") || strings.HasPrefix(r.Name, ".")) {
			t.Fatalf("unsafe name %q accepted", r.Name)
		}
	})
}

// The files of an earlier run of the same job in the same directory (it
// ended at later iterations, and its files are older) go first: a new
// run's files are kept as it writes them.
func TestStatePruneStaleRun(t *testing.T) {
	dir := t.TempDir()
	st, at, _ := testState()
	old := time.Now().Add(-time.Hour)
	for _, it := range []int{400, 500, 600} {
		at.Iter = it
		ref, err := WriteState(dir, at, st)
		if err != nil {
			t.Fatal(err)
		}
		os.Chtimes(filepath.Join(dir, ref.Name), old, old)
	}
	for _, it := range []int{100, 200} {
		at.Iter = it
		if _, err := (StateFiles{Dir: dir}).Save(context.Background(), at, st); err != nil {
			t.Fatal(err)
		}
	}
	got := stateNames(dir)
	want := "job-1-e2-p1-i100.ddstate job-1-e2-p1-i200.ddstate job-1-e2-p1-i600.ddstate"
	if strings.Join(got, " ") != want {
		t.Errorf("kept %v, want %s", got, want)
	}
}

// stateNames lists the state files dir keeps, by name.
func stateNames(dir string) []string {
	names, _ := filepath.Glob(filepath.Join(dir, "*.ddstate"))
	var got []string
	for _, n := range names {
		got = append(got, filepath.Base(n))
	}
	return got
}
