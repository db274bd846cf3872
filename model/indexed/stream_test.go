package indexed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/internal/rusage"
	"github.com/ddrun/ddrun/model"
)

// flatGrid is a Potts grid Source that allocates nothing per piece (unlike
// generate.GridStream, whose factors escape), so that what a write
// allocates is the writer's.
type flatGrid struct {
	h, w, labels int
	bad          int // when >= 0, factor bad has a variable out of range
	u            []float64
	f            model.Factor
	vars         [2]int
}

func newFlatGrid(h, w int) *flatGrid {
	return &flatGrid{h: h, w: w, labels: 4, bad: -1, u: make([]float64, 4)}
}

func (g *flatGrid) NumVars() int      { return g.h * g.w }
func (g *flatGrid) Card(int) int      { return g.labels }
func (g *flatGrid) NumFactors() int   { return g.h*(g.w-1) + (g.h-1)*g.w }
func (g *flatGrid) Constant() float64 { return 0.5 }
func (g *flatGrid) EachUnaries(fn func(int, []float64)) {
	for i := range g.NumVars() {
		for s := range g.u {
			g.u[s] = float64((i+s)%7) / 7
		}
		fn(i, g.u)
	}
}
func (g *flatGrid) EachFactor(fn func(int, *model.Factor)) {
	a := 0
	edge := func(u, v int) {
		g.vars = [2]int{u, v}
		if a == g.bad {
			g.vars[1] = g.NumVars()
		}
		g.f = model.Factor{Kind: model.Potts, Vars: g.vars[:], Weight: float64(a%5) - 2}
		fn(a, &g.f)
		a++
	}
	for r := range g.h {
		for c := range g.w {
			if c+1 < g.w {
				edge(r*g.w+c, r*g.w+c+1)
			}
			if r+1 < g.h {
				edge(r*g.w+c, (r+1)*g.w+c)
			}
		}
	}
}

// TestWriteStreamFileBoundedMemory: writing a 600x600 grid (360,000
// variables, 718,800 factors: 30 MB of structure) allocates no more than
// writing a 200x200 one (16 times smaller), give or take 64 KiB, and less
// than 4 MiB in all: the writer's buffers. The in-memory writer of commit
// 8330866 kept a 56-byte record and 8 bytes of scope per factor: 46 MB for
// the larger grid.
func TestWriteStreamFileBoundedMemory(t *testing.T) {
	dir := t.TempDir()
	var got [2]uint64
	for k, side := range []int{200, 600} {
		path := filepath.Join(dir, "g.ddx")
		var err error
		got[k] = rusage.Allocated(func() { err = WriteStreamFile(path, newFlatGrid(side, side), WriteOptions{}, nil) })
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%dx%d grid: %d bytes written, %d bytes allocated", side, side, fi.Size(), got[k])
	}
	if got[1] > got[0]+64<<10 || got[1] > 4<<20 {
		t.Fatalf("writing a 200x200 grid allocated %d bytes, a 600x600 one %d: the writer's memory grows with the model", got[0], got[1])
	}
	// The file is right: what the in-memory writer writes, and readable.
	b, err := os.ReadFile(filepath.Join(dir, "g.ddx"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadModel(strings.NewReader(string(b)), int64(len(b)), "g.ddx", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.NumVars() != 600*600 || len(m.Factors) != newFlatGrid(600, 600).NumFactors() || m.Constant != 0.5 {
		t.Fatalf("read back %d variables, %d factors, constant %v", m.NumVars(), len(m.Factors), m.Constant)
	}
}

// openTemporaries returns the files under dir (the writer's temporary files
// are named .ddx-*) that this process holds open, unlinked or not, by
// /proc/self/fd; ok is false where there is no /proc.
func openTemporaries(dir string) (n int, ok bool) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir) && strings.Contains(target, "/.ddx-") {
			n++
		}
	}
	return n, true
}

// TestWriteStreamFileFailure: a source that fails midway (a factor over a
// variable out of range, after 100,000 good ones) and a cancelled context
// give a one-line error, and leave neither the output nor a temporary
// file, on disk or open.
func TestWriteStreamFileFailure(t *testing.T) {
	dir := t.TempDir()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	bad := newFlatGrid(300, 300)
	bad.bad = 100000
	for _, c := range []struct {
		name string
		src  model.Source
		opts WriteOptions
		want string
	}{
		{"bad factor", bad, WriteOptions{FoldUnary: true}, "indexed: factor 100000 (potts): scope entry 1: variable 90000 out of range [0,90000)"},
		{"cancelled", newFlatGrid(300, 300), WriteOptions{Context: cancelled}, "indexed: write stopped: context canceled"},
		{"bad block size", newFlatGrid(3, 3), WriteOptions{BlockSize: 100}, "indexed: block size 100: want a multiple of 8 in [512, 67108864]"},
	} {
		path := filepath.Join(dir, "out.ddx")
		err := WriteStreamFile(path, c.src, c.opts, nil)
		if err == nil || err.Error() != c.want {
			t.Fatalf("%s: error %v, want %q", c.name, err, c.want)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("%s: left %d files (%s)", c.name, len(left), left[0].Name())
		}
		if n, ok := openTemporaries(dir); ok && n != 0 {
			t.Fatalf("%s: %d temporary files still open", c.name, n)
		}
	}
	// While a write is under way, its temporary files are open and already
	// unlinked: nothing is left behind even if the process dies.
	w, err := os.Create(filepath.Join(dir, "x.ddx"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wr, err := NewStreamWriter(w, 0, WriteOptions{TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Fatalf("%d files in the directory during a write, want the output alone", len(left))
	}
	if n, ok := openTemporaries(dir); ok && n != 3 {
		t.Fatalf("%d temporary files open during a write, want 3", n)
	}
	wr.Abort()
	if n, ok := openTemporaries(dir); ok && n != 0 {
		t.Fatalf("%d temporary files still open after Abort", n)
	}
}
