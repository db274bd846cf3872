package modelfile

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model/indexed"
)

// ConvertOptions.Report reaches the indexed writer on every path to a
// .ddx (UAI and msgpack streamed, JSON read whole, evidence folded in):
// it is told of every factor the file holds and of the file itself.
func TestConvertReport(t *testing.T) {
	dir := t.TempDir()
	m := generate.Potts(generate.GridOptions{Height: 5, Width: 6, Labels: 3, Rho: 1, Seed: 2})
	evid := filepath.Join(dir, "m.evid")
	if err := os.WriteFile(evid, []byte("1 4 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, evidence string }{
		{"m.uai", ""}, {"m.msgpack", ""}, {"m.json", ""}, {"m.uai", evid}, {"m.json", evid},
	} {
		in := filepath.Join(dir, c.name)
		if err := Save(in, m); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, c.name+".ddx")
		factors, closed := 0, 0
		var w indexed.Written
		rep := indexed.WriteReport{Factor: func(indexed.WrittenFactor) { factors++ }, Closed: func(x indexed.Written) { w = x; closed++ }}
		if err := Convert(context.Background(), in, out, ConvertOptions{Evidence: c.evidence, Report: rep}); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		s, err := indexed.ReadStructure(f, fi.Size(), out, indexed.ReadOptions{})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if closed != 1 || w.Size != fi.Size() || factors != len(s.Model.Factors) || w.NumFactors != factors || w.NumVars != len(s.Model.Cards) {
			t.Fatalf("%s (evidence %q): closed %d times, %d factors reported, written %+v; the file: %d bytes, %d factors, %d variables",
				c.name, c.evidence, closed, factors, w, fi.Size(), len(s.Model.Factors), len(s.Model.Cards))
		}
	}
}
