package elim

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// BenchmarkExactGrid eliminates a 14x14 binary grid (induced width 14).
func BenchmarkExactGrid(b *testing.B) {
	m := grid(rand.New(rand.NewPCG(1, 2)), 14, 2)
	o := DefaultOptions()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Solve(context.Background(), m, nil, o, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessage is the kernel alone: the messages of a 16x16 binary
// grid's elimination (tables allocated once per message, none per entry).
func BenchmarkMessage(b *testing.B) {
	m := grid(rand.New(rand.NewPCG(1, 2)), 16, 2)
	o, p := bestOrder(context.Background(), m, 1e12, 60)
	if p == nil {
		b.Fatal("no order")
	}
	if err := p.build(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(p.work, "entries/op")
	_ = o
	b.ResetTimer()
	for b.Loop() {
		if err := p.compute(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOrder is the greedy orders of a 100x100 grid (abort far away).
func BenchmarkOrder(b *testing.B) {
	m := grid(rand.New(rand.NewPCG(1, 2)), 100, 2)
	for b.Loop() {
		bestOrder(context.Background(), m, 1e18, 200)
	}
}

// BenchmarkSearch is the mini-bucket search of a 20x20 ternary grid
// with mini-buckets of 2^10 entries.
func BenchmarkSearch(b *testing.B) {
	m := grid(rand.New(rand.NewPCG(3, 2)), 20, 3)
	o := DefaultOptions()
	o.IBound, o.PrimalTime, o.MaxNodes = 10, -1, 20000
	for b.Loop() {
		if _, err := Solve(context.Background(), m, nil, o, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// grid is a side x side grid of random pairwise dense tables.
func grid(rng *rand.Rand, side, card int) *model.Model {
	return generate.DenseGrid(rng, side, side, card, 1)
}
