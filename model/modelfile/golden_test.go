package modelfile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// goldenConverts are the SHA-256 of the .ddx files that Convert of commit
// 8330866 (whose writer held the structure in memory until Close) wrote
// from these UAI files: the spilling writer must write the same bytes
// (with KeepDense, since the pairwise tables were written as tables then).
var goldenConverts = map[string]string{
	"grid.uai.gz keep":     "7b2b686eedef9ef485b257b95b74670de4b9aad2662891f045ef12823a305b74",
	"grid.uai.gz":          "8cb2f0f1a86dba156e9e54a36737f37a4f6eb0a71f0b6aba78e658e19192dece",
	"logic.uai keep":       "bdb71a5eb7cd597b9b7b99b640ca315dca897475835b9527fc67add453711615",
	"logic.uai":            "0cdac530c76eb6051a41587d5383f169524dd4fd5c095196a30cdf7cbdb578df",
	"potts-20x20.uai keep": "1e45fb74e4d012c9826003feaa0f2060948321eab3b628d1ff8694766e98bb94",
	"potts-20x20.uai":      "01c4dd57f53ec94f5e572182445b4d09c5e30f15fe1c0ab2ec6f3d01c9777446",
}

// TestConvertGoldenBytes converts UAI files (the example grid; a logic
// model, whose unary tables lie among the others; a grid given as dense
// tables, many payload blocks) with folding and without, and compares the
// bytes with the previous writer's.
func TestConvertGoldenBytes(t *testing.T) {
	dir := t.TempDir()
	logic := generate.Logic(generate.LogicOptions{Vars: 60, Factors: 50, Couplings: 70, MaxArity: 6, Rho: 1, Seed: 2})
	grid := generate.Potts(generate.GridOptions{Height: 12, Width: 11, Labels: 5, Rho: 1, Seed: 3})
	for name, m := range map[string]*model.Model{"logic.uai": logic, "grid.uai.gz": grid} {
		if err := uai.WriteFile(filepath.Join(dir, name), m); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	for _, in := range []string{"../../examples/potts-20x20.uai", filepath.Join(dir, "logic.uai"), filepath.Join(dir, "grid.uai.gz")} {
		for _, keep := range []bool{false, true} {
			key := filepath.Base(in)
			if keep {
				key += " keep"
			}
			out := filepath.Join(dir, "out.ddx")
			if err := Convert(context.Background(), in, out, ConvertOptions{KeepUnaryFactors: keep, KeepDense: true, BlockSize: 1024}); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			got[key] = fileSHA256(t, out)
			if want, ok := goldenConverts[key]; !ok || want != got[key] {
				t.Errorf("%s: sha256 %s, want %q", key, got[key], want)
			}
		}
	}
	logGolden(t, got)
}

// fileSHA256 is the hex SHA-256 of the file at path.
func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// logGolden logs the hashes got, as Go map entries to paste as the new
// golden values, when the test failed.
func logGolden(t *testing.T, got map[string]string) {
	t.Helper()
	if t.Failed() {
		for k, v := range got {
			t.Logf("%q: %q,", k, v)
		}
	}
}
