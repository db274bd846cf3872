package native

import (
	"bytes"
	"io"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// benchModels are 300x300 grids of 4-label variables, with a Potts factor or
// a dense 4x4 table on each of the 179,400 edges.
func benchModels() []struct {
	name string
	m    *model.Model
} {
	return []struct {
		name string
		m    *model.Model
	}{
		{"potts", gridModel(300, 300, 4, false)},
		{"dense", gridModel(300, 300, 4, true)},
	}
}

func BenchmarkRead(b *testing.B) {
	for _, bm := range benchModels() {
		for _, f := range []Format{Msgpack, JSON} {
			var buf bytes.Buffer
			if err := Write(&buf, bm.m, f); err != nil {
				b.Fatal(err)
			}
			data := buf.Bytes()
			b.Run(f.String()+"/"+bm.name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Read(bytes.NewReader(data), "bench", f); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	for _, bm := range benchModels() {
		for _, f := range []Format{Msgpack, JSON} {
			var buf bytes.Buffer
			if err := Write(&buf, bm.m, f); err != nil {
				b.Fatal(err)
			}
			b.Run(f.String()+"/"+bm.name, func(b *testing.B) {
				b.SetBytes(int64(buf.Len()))
				b.ReportAllocs()
				for b.Loop() {
					if err := Write(io.Discard, bm.m, f); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
