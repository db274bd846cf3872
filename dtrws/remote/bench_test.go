package remote

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/rusage"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/shard"
)

// BenchmarkPartSetUp times what a worker does on an open before its part
// runs, on the first half of issue 26's bar grid (1000x1000, 4 labels,
// couplings of both signs) planned for 2 workers: the piece read from the
// .ddx file (shard.LoadPiece) and its TRW-S link (pieceLink); cpu-ns/op
// is the process's CPU time, steadier than wall time on a shared machine.
func BenchmarkPartSetUp(b *testing.B) {
	m := generate.Potts(generate.GridOptions{Height: 1000, Width: 1000, Labels: 4, Rho: 0.5, Seed: 1})
	path := filepath.Join(b.TempDir(), "g.ddx")
	if err := indexed.WriteFile(path, m); err != nil {
		b.Fatal(err)
	}
	m = nil
	l, err := shard.PlanLayout(path, 2, shard.PlanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	seam := Seam(l)
	copies := make([]int32, len(l.Of[0]))
	for i, j := range l.Of[0] {
		copies[i] = int32(len(seam.Copies[j]))
	}
	b.ReportAllocs()
	c0 := rusage.CPU().Nanoseconds()
	for b.Loop() {
		pc, err := shard.LoadPiece(context.Background(), &l.Specs[0], copies)
		if err == nil {
			_, err = pieceLink(pc)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rusage.CPU().Nanoseconds()-c0)/float64(b.N), "cpu-ns/op")
}
