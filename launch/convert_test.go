package launch

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/shard"
)

// A UAI grid whose factors are listed in random order, converted with
// the breadth-first order, plans with a boundary no larger than the
// plain conversion's, which shares most variables; the temporary file is
// gone, and the breadth-first order is refused for other outputs.
func TestConvertBreadthFirst(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 30, Width: 30, Labels: 3, Rho: 0.5, Seed: 2})
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(m.Factors), func(i, j int) { m.Factors[i], m.Factors[j] = m.Factors[j], m.Factors[i] })
	dir := t.TempDir()
	in := filepath.Join(dir, "m.uai")
	if err := modelfile.Save(in, m); err != nil {
		t.Fatal(err)
	}
	plain, bfs := filepath.Join(dir, "plain.ddx"), filepath.Join(dir, "bfs.ddx")
	ctx := context.Background()
	if err := Convert(ctx, in, plain, modelfile.ConvertOptions{}, false); err != nil {
		t.Fatal(err)
	}
	if err := Convert(ctx, in, bfs, modelfile.ConvertOptions{}, true); err != nil {
		t.Fatal(err)
	}
	var b [2]int
	for k, p := range []string{plain, bfs} {
		l, err := shard.PlanLayout(p, 3, shard.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b[k] = len(l.BoundaryVars)
	}
	t.Logf("30x30 grid in random order on 3 workers: boundary %d as read, %d breadth-first", b[0], b[1])
	if b[1] > 2*30*3/2 || b[0] < 5*b[1] {
		t.Errorf("boundary %d as read, %d breadth-first", b[0], b[1])
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("%d files left in the directory, want 3 (m.uai, plain.ddx, bfs.ddx)", len(ents))
	}
	if err := Convert(ctx, in, filepath.Join(dir, "x.msgpack"), modelfile.ConvertOptions{}, true); err == nil {
		t.Error("breadth-first to msgpack: no error")
	}
}
