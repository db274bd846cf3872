package uai

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// putShuffled gives x to w in pieces of random sizes, in a random order,
// each piece a run of consecutive variables or scattered ones.
func putShuffled(t testing.TB, w *MPEWriter, x []int, rng *rand.Rand) error {
	t.Helper()
	perm := rng.Perm(len(x))
	if rng.IntN(2) == 0 { // runs, as the workers' interiors come
		for k := range perm {
			perm[k] = k
		}
		start := rng.IntN(len(x) + 1)
		perm = append(perm[start:], perm[:start]...)
	}
	for len(perm) > 0 {
		n := min(len(perm), 1+rng.IntN(7))
		vars := perm[:n]
		states := make([]int32, n)
		for k, v := range vars {
			states[k] = int32(x[v])
		}
		if err := w.Put(vars, states); err != nil {
			return err
		}
		perm = perm[n:]
	}
	return nil
}

func TestMPEWriterMatchesWriteMPE(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	for _, n := range []int{0, 1, 2, 17, 1000, 70000} {
		x := make([]int, n)
		for v := range x {
			x[v] = rng.IntN(300)
		}
		path := filepath.Join(dir, "x.MPE")
		w, err := CreateMPE(path, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := putShuffled(t, w, x, rng); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		sameAsWriteMPE(t, path, x)
		onlyOutput(t, dir, "x.MPE")
	}
}

// onlyOutput fails unless dir holds just name (no scratch file left).
func onlyOutput(t *testing.T, dir string, names ...string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != len(names) {
		var got []string
		for _, e := range es {
			got = append(got, e.Name())
		}
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
	for k, e := range es {
		if e.Name() != names[k] {
			t.Fatalf("%s holds %s, want %v", dir, e.Name(), names)
		}
	}
}

func TestMPEWriterErrors(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		pieces [][2][]int // vars, states
		want   string
	}{
		{"missing", 3, [][2][]int{{{0, 2}, {1, 1}}}, "variable 1 has no state"},
		{"duplicate in one piece", 3, [][2][]int{{{0, 1, 0}, {1, 1, 1}}}, "variable 0 given twice"},
		{"duplicate across pieces", 3, [][2][]int{{{1, 2}, {0, 0}}, {{0, 1}, {0, 0}}}, "variable 1 given twice"},
		{"negative", 2, [][2][]int{{{0, 1}, {0, -1}}}, "variable 1 in state -1"},
		{"out of range", 2, [][2][]int{{{2}, {0}}}, "variable 2 out of range"},
		{"negative variable", 2, [][2][]int{{{-1}, {0}}}, "variable -1 out of range"},
		{"lengths", 2, [][2][]int{{{0, 1}, {0}}}, "2 variables and 1 states"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.MPE")
			if err := os.WriteFile(path, []byte("before"), 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := CreateMPE(path, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.pieces {
				states := make([]int32, len(p[1]))
				for k, s := range p[1] {
					states[k] = int32(s)
				}
				if err = w.Put(p[0], states); err != nil {
					break
				}
			}
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if b, _ := os.ReadFile(path); string(b) != "before" {
				t.Errorf("the output was touched: %q", b)
			}
			onlyOutput(t, dir, "x.MPE")
		})
	}
}

func TestMPEWriterAbort(t *testing.T) {
	dir := t.TempDir()
	w, err := CreateMPE(filepath.Join(dir, "x.MPE"), 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put([]int{3}, []int32{1}); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	w.Abort()
	onlyOutput(t, dir)
	if err := w.Put([]int{4}, []int32{1}); err == nil {
		t.Error("Put after Abort accepted")
	}
	if _, err := CreateMPE(filepath.Join(dir, "none", "x.MPE"), 1); err == nil {
		t.Error("a writer in a missing directory")
	}
}

// FuzzMPEWriter gives arbitrary pieces: the writer either writes exactly
// the assignment (every variable given once, no negative state) or fails,
// leaving nothing behind.
func FuzzMPEWriter(f *testing.F) {
	f.Add(uint8(3), []byte{0, 1, 1, 0, 2, 2})
	f.Add(uint8(2), []byte{0, 1, 0, 1})
	f.Add(uint8(2), []byte{1, 0xff, 0, 3})
	f.Fuzz(func(t *testing.T, n uint8, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "x.MPE")
		w, err := CreateMPE(path, int(n))
		if err != nil {
			t.Fatal(err)
		}
		x := make([]int, n)
		count := make([]int, n)
		ok := true
		for k := 0; k+1 < len(data); k += 2 {
			v, s := int(data[k])-1, int32(int8(data[k+1]))
			if v >= 0 && v < int(n) && s >= 0 {
				x[v] = int(s)
				count[v]++
			} else {
				ok = false
			}
			if perr := w.Put([]int{v}, []int32{s}); perr != nil {
				ok = false
				break
			}
		}
		for _, c := range count {
			ok = ok && c == 1
		}
		err = w.Close()
		if ok != (err == nil) {
			t.Fatalf("valid=%v, Close: %v", ok, err)
		}
		if !ok {
			onlyOutput(t, dir)
			return
		}
		sameAsWriteMPE(t, path, x)
	})
}

// sameAsWriteMPE fails unless the file at path is WriteMPE's text of x.
func sameAsWriteMPE(t *testing.T, path string, x []int) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	if err := WriteMPE(&want, x); err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Fatalf("%d variables: %q, want %q", len(x), head(string(got)), head(want.String()))
	}
}

// WriteMPEPieces fills x and the file alike, or x alone without a path,
// and fails on a variable missing or given twice in either case.
func TestWriteMPEPieces(t *testing.T) {
	dir := t.TempDir()
	pieces := func(p ...[]int) func(func([]int, []int32) error) error {
		return func(put func([]int, []int32) error) error {
			for _, vars := range p {
				states := make([]int32, len(vars))
				for k, v := range vars {
					states[k] = int32(v % 3)
				}
				if err := put(vars, states); err != nil {
					return err
				}
			}
			return nil
		}
	}
	for _, path := range []string{"", filepath.Join(dir, "x.MPE")} {
		x := make([]int, 5)
		if err := WriteMPEPieces(path, 5, x, pieces([]int{3, 4}, []int{0, 1, 2})); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(x, []int{0, 1, 2, 0, 1}) {
			t.Errorf("x %v", x)
		}
		if path != "" {
			if b, err := os.ReadFile(path); err != nil || string(b) != "MPE\n5 0 1 2 0 1\n" {
				t.Errorf("file %q, %v", b, err)
			}
			// A .sol path: toulbar2's solution line, the same states.
			sol := filepath.Join(dir, "x.sol")
			if err := WriteMPEPieces(sol, 5, nil, pieces([]int{3, 4}, []int{0, 1, 2})); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(sol); err != nil || string(b) != "0 1 2 0 1\n" {
				t.Errorf(".sol file %q, %v", b, err)
			}
		}
		if err := WriteMPEPieces(path, 5, make([]int, 5), pieces([]int{3, 4}, []int{0, 1})); err == nil || !strings.Contains(err.Error(), "variable 2 has no state") {
			t.Errorf("a missing variable: %v", err)
		}
		if err := WriteMPEPieces(path, 5, make([]int, 5), pieces([]int{0, 1, 2, 3}, []int{4, 1})); err == nil || !strings.Contains(err.Error(), "variable 1 given twice") {
			t.Errorf("a duplicate: %v", err)
		}
	}
	if err := WriteMPEPieces("", 5, nil, pieces([]int{9})); err != nil {
		t.Errorf("nothing to write: %v", err)
	}
	onlyOutput(t, dir, "x.MPE", "x.sol")
}

// BenchmarkMPEWriter writes an assignment of 10^6 variables in pieces of
// 65,536 consecutive variables (a sharded run's fetches), in reverse order.
func BenchmarkMPEWriter(b *testing.B) {
	const n, piece = 1_000_000, 1 << 16
	vars := make([]int, piece)
	states := make([]int32, piece)
	path := filepath.Join(b.TempDir(), "x.MPE")
	for b.Loop() {
		w, err := CreateMPE(path, n)
		if err != nil {
			b.Fatal(err)
		}
		for from := (n - 1) / piece * piece; from >= 0; from -= piece {
			k := min(piece, n-from)
			for i := range k {
				vars[i], states[i] = from+i, int32((from+i)%7)
			}
			if err := w.Put(vars[:k], states[:k]); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
