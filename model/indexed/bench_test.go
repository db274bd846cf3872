package indexed

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// gridFile encodes a 300x300 4-label Potts grid (90,000 variables, 179,400
// factors); dense makes its factors Dense 4x4 tables.
func gridFile(b testing.TB, dense bool) []byte {
	m := generate.Potts(generate.GridOptions{Height: 300, Width: 300, Labels: 4, Rho: 1, Seed: 1})
	if dense {
		for a := range m.Factors {
			t := m.DenseTable(a)
			m.Factors[a] = model.Factor{Kind: model.Dense, Vars: m.Factors[a].Vars, Table: t}
		}
	}
	return encode(b, m, 0)
}

func benchReadStructure(b *testing.B, dense bool) {
	data := gridFile(b, dense)
	b.SetBytes(structBytes(data))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadStructure(bytes.NewReader(data), int64(len(data)), "g.ddx", ReadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadStructureGrid reads the structure of the Potts grid.
func BenchmarkReadStructureGrid(b *testing.B) { benchReadStructure(b, false) }

// BenchmarkReadStructureDenseGrid reads the structure of the grid with
// dense tables (the payload is not read).
func BenchmarkReadStructureDenseGrid(b *testing.B) { benchReadStructure(b, true) }

// structBytes returns the length of a file's structure section (what the
// structure readers read), from its trailer.
func structBytes(data []byte) int64 {
	return int64(binary.LittleEndian.Uint64(data[len(data)-trailerSize+24:]))
}

// BenchmarkWriteStreamFile writes a 300x300 Potts grid (4 labels) to a
// file, spilling the structure to temporary files beside it.
func BenchmarkWriteStreamFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "g.ddx")
	g := newFlatGrid(300, 300)
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteStreamFile(path, g, WriteOptions{}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
