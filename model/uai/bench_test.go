package uai

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// gridModel returns a w x h grid with the given number of labels: one
// arity-1 factor per variable and one pairwise factor per grid edge, with
// random potentials (some zero).
func gridModel(w, h, labels int, seed uint64) *model.Model {
	rng := rand.New(rand.NewPCG(seed, 99))
	cards := make([]int, w*h)
	for i := range cards {
		cards[i] = labels
	}
	m := model.New(cards)
	table := func(n int) []float64 {
		t := make([]float64, n)
		for i := range t {
			t[i] = rng.NormFloat64()
			if rng.IntN(50) == 0 {
				t[i] = math.Inf(-1) // a hard zero
			}
		}
		return t
	}
	for i := range cards {
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{i}, Table: table(labels)})
	}
	for r := 0; r < h; r++ {
		for c := 0; c < w; c++ {
			v := r*w + c
			if c+1 < w {
				m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{v, v + 1}, Table: table(labels * labels)})
			}
			if r+1 < h {
				m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{v, v + w}, Table: table(labels * labels)})
			}
		}
	}
	return m
}

var (
	benchOnce    sync.Once
	benchFile    []byte
	benchEntries int
)

// benchGrid returns the text of a 300x300 4-label grid model and its number
// of table entries.
func benchGrid(b *testing.B) ([]byte, int) {
	benchOnce.Do(func() {
		m := gridModel(300, 300, 4, 1)
		var buf bytes.Buffer
		if err := Write(&buf, m); err != nil {
			b.Fatal(err)
		}
		benchFile = buf.Bytes()
		for _, f := range m.Factors {
			benchEntries += len(f.Table)
		}
	})
	return benchFile, benchEntries
}

// BenchmarkRead parses a 300x300 4-label grid (90,000 unary and 179,400
// pairwise tables, about 3.2 million entries).
func BenchmarkRead(b *testing.B) {
	data, entries := benchGrid(b)
	benchRead(b, data, "grid.uai", len(data), entries)
}

// benchRead times Read on the file named name with contents in, reporting
// size bytes and the time per table entry.
func benchRead(b *testing.B, in []byte, name string, size, entries int) {
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(in), name); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(entries), "ns/entry")
}

// BenchmarkReadGzip is BenchmarkRead on gzip-compressed input (size unknown).
func BenchmarkReadGzip(b *testing.B) {
	data, entries := benchGrid(b)
	benchRead(b, gzipBytes(b, data), "grid.uai.gz", len(data), entries)
}

// BenchmarkWrite writes the same grid.
func BenchmarkWrite(b *testing.B) {
	data, entries := benchGrid(b)
	m, err := Read(bytes.NewReader(data), "grid.uai")
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := Write(&buf, m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(entries), "ns/entry")
}

// BenchmarkStreamScopes reads the grid of BenchmarkRead with StreamScopes
// (what `run` converts a UAI file with): sequentially, and in windows on 2
// and 4 goroutines (ReadOptions.Converters); on a machine of 2 cores the
// windows' gain is their share of the CPU, ns/op the wall.
func BenchmarkStreamScopes(b *testing.B) {
	data, entries := benchGrid(b)
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	for _, converters := range []int{0, 2, 4} {
		b.Run(fmt.Sprintf("converters=%d", converters), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			opts := ReadOptions{Converters: converters}
			for b.Loop() {
				err := StreamScopes(open, "grid.uai", opts, func([]int, int) error { return nil },
					func(int, []int, []float64) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(entries), "ns/entry")
		})
	}
}
