package shard

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model/indexed"
)

// A grid whose factors are written in random order shares almost every
// variable between the parts of a plan; Reorder brings its boundary within
// 1.5x of the same grid in row order (issue 25's bar), and the reordered
// file is the same model: every assignment scores the same.
func TestReorderShuffledGrid(t *testing.T) {
	const side, workers = 40, 4
	rows := generate.Potts(generate.GridOptions{Height: side, Width: side, Labels: 3, Rho: 0.5, Seed: 7})
	shuffled := *rows
	shuffled.Factors = slices.Clone(rows.Factors)
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(shuffled.Factors), func(i, j int) {
		shuffled.Factors[i], shuffled.Factors[j] = shuffled.Factors[j], shuffled.Factors[i]
	})
	rowPath, shufPath := writeDDX(t, rows), writeDDX(t, &shuffled)
	out := filepath.Join(t.TempDir(), "bfs.ddx")
	calls := 0
	if err := Reorder(shufPath, out, ReorderOptions{Progress: func(done, total int) { calls++ }}); err != nil {
		t.Fatal(err)
	}
	if calls == 0 {
		t.Error("no progress")
	}
	// In windows of about 200 factors (the input read once per window),
	// the same file.
	small := filepath.Join(t.TempDir(), "small.ddx")
	if err := Reorder(shufPath, small, ReorderOptions{Memory: 200 * heldBytes(2, 0)}); err != nil {
		t.Fatal(err)
	}
	if a, b := readAll(t, out), readAll(t, small); !bytes.Equal(a, b) {
		t.Error("reordering in windows wrote another file")
	}
	bnd := func(path string) int {
		l, err := PlanLayout(path, workers, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.BoundaryVars)
	}
	row, shuf, bfs := bnd(rowPath), bnd(shufPath), bnd(out)
	t.Logf("%dx%d grid on %d workers: boundary %d in row order, %d shuffled, %d reordered (%.2fx row order)", side, side, workers, row, shuf, bfs, float64(bfs)/float64(row))
	if float64(bfs) > 1.5*float64(row) || shuf < 3*row {
		t.Errorf("boundary %d reordered, %d shuffled, %d in row order", bfs, shuf, row)
	}
	back, err := indexed.ReadFile(out, indexed.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if back.NumVars() != rows.NumVars() || len(back.Factors) != len(rows.Factors) {
		t.Fatalf("reordered: %d variables, %d factors", back.NumVars(), len(back.Factors))
	}
	x := make([]int, rows.NumVars())
	for k := 0; k < 20; k++ {
		for i := range x {
			x[i] = rng.IntN(rows.Cards[i])
		}
		if a, b := shuffled.Score(x), back.Score(x); !closeRel(a, b, 1e-12) {
			t.Fatalf("assignment %d: %v on the input, %v reordered", k, a, b)
		}
	}
}

func closeRel(a, b, tol float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= tol*max(1, a, -a)
}

// A file that is not an indexed model, or absent, is a one-line error and
// leaves no output.
func TestReorderErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o.ddx")
	if err := os.WriteFile(filepath.Join(dir, "junk.ddx"), []byte("not an indexed model"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{filepath.Join(dir, "absent.ddx"), filepath.Join(dir, "junk.ddx")} {
		if err := Reorder(in, out, ReorderOptions{}); err == nil {
			t.Errorf("%s: no error", in)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: output left behind", in)
		}
	}
}

// BenchmarkReorder rewrites a 300x300 4-label grid written in random
// factor order (179,400 factors); B/op over the factors is what Reorder
// holds per factor, besides the writer's buffers.
func BenchmarkReorder(b *testing.B) {
	m := generate.Potts(generate.GridOptions{Height: 300, Width: 300, Labels: 4, Rho: 0.5, Seed: 1})
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(m.Factors), func(i, j int) { m.Factors[i], m.Factors[j] = m.Factors[j], m.Factors[i] })
	in := writeDDX(b, m)
	out := filepath.Join(b.TempDir(), "o.ddx")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := Reorder(in, out, ReorderOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(m.Factors)), "factors")
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
