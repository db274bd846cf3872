package indexed

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// goldenWrites are the SHA-256 of the files that the writer of commit
// 8330866 (which held the structure in memory until Close) wrote for these
// models: the spilling writer must write the same bytes.
var goldenWrites = map[string]string{
	"ising-7x9 fold=false bs=0":     "c6548329c614f3e563b619609a1ae849f12f4396c0f4f95b533ec326fedec832",
	"ising-7x9 fold=false bs=512":   "6642e379708a313b4b930c8c738928a91084e1ef971e3cd9540f386139eee288",
	"ising-7x9 fold=true bs=0":      "c6548329c614f3e563b619609a1ae849f12f4396c0f4f95b533ec326fedec832",
	"ising-7x9 fold=true bs=512":    "6642e379708a313b4b930c8c738928a91084e1ef971e3cd9540f386139eee288",
	"logic fold=false bs=0":         "89d90377b742a52632c2fc209f8bb0afa13fac717a2a6d122fcadde4f1eaa57b",
	"logic fold=false bs=512":       "22c96b31b5babc4eb4d4c7ecbc812a9bcf944d5a2b97cdb7f585852983a8e7df",
	"logic fold=true bs=0":          "ba529ce4cb6a703980e12c16d3104eee157916fcb595477cb3cf948954b3049a",
	"logic fold=true bs=512":        "d48ea70c2af242513016464a484288edbf38a3c6b15033e4a87413d78d606c55",
	"potts-40x30 fold=false bs=0":   "1620a16c488236a0ef6ab3d22bce24e3fc8664cbf703f884e2a4631ef01322d4",
	"potts-40x30 fold=false bs=512": "429e47198801bbae5d138587f41d9ddbc104d7703a32e8e13076390eddbb06d5",
	"potts-40x30 fold=true bs=0":    "1620a16c488236a0ef6ab3d22bce24e3fc8664cbf703f884e2a4631ef01322d4",
	"potts-40x30 fold=true bs=512":  "429e47198801bbae5d138587f41d9ddbc104d7703a32e8e13076390eddbb06d5",
	"potts-7x9 fold=false bs=0":     "97717b7adebcf9248e9f52c7ebde2b0a38ebeff79118aa3c768bf0fa3fcfeabe",
	"potts-7x9 fold=false bs=512":   "eef99ef8e7283f86bed2273f8839ef153fb2730b58a28320aba33378041290cc",
	"potts-7x9 fold=true bs=0":      "97717b7adebcf9248e9f52c7ebde2b0a38ebeff79118aa3c768bf0fa3fcfeabe",
	"potts-7x9 fold=true bs=512":    "eef99ef8e7283f86bed2273f8839ef153fb2730b58a28320aba33378041290cc",
	"sample fold=false bs=0":        "f02b12996e45c0a170a870bfc1b5f1868425c9ed4d94bf01fd73deee9e64dbb4",
	"sample fold=false bs=512":      "6ec1b022f03c73b1676bf5428d344b4ac3549bf401b6dc89afb8aad856f49a7c",
	"sample fold=true bs=0":         "75a40ab1742f1f1c0598b513228705929b3f0b7bf0f833ba5be7e428bc163944",
	"sample fold=true bs=512":       "dbd929e7613985342b80b6a03d76bfa446f1d9198ecff65ff39b18f4ca97800b",
	"unary fold=false bs=0":         "76076034a5d965a29b5d3e229d12fb2eb0849c425d4bddaf4f16d93436b4008c",
	"unary fold=false bs=512":       "b7c8b9e47efb103e80ed12b6af37210ebfc3fb62871e4c177769544f1c3f9581",
	"unary fold=true bs=0":          "d92b048b67d10ebf868bc3e72d78553774aecb9e1a86642220b5f5085ea9fc10",
	"unary fold=true bs=512":        "902f51d5cf67b1552a2093b126f38e8876804842b2eb4b121fd213c7a2486afd",
}

// goldenCases returns the models of goldenWrites by name, each with the
// Source it is streamed from.
func goldenCases() map[string]struct {
	m   *model.Model
	src model.Source
} {
	cases := map[string]struct {
		m   *model.Model
		src model.Source
	}{}
	grid := func(name string, o generate.GridOptions, ising bool) {
		if ising {
			cases[name] = struct {
				m   *model.Model
				src model.Source
			}{generate.Ising(o), generate.IsingStream(o)}
			return
		}
		cases[name] = struct {
			m   *model.Model
			src model.Source
		}{generate.Potts(o), generate.PottsStream(o)}
	}
	grid("potts-7x9", generate.GridOptions{Height: 7, Width: 9, Labels: 3, Rho: 1, Seed: 4}, false)
	grid("ising-7x9", generate.GridOptions{Height: 7, Width: 9, Rho: 1, Seed: 4}, true)
	grid("potts-40x30", generate.GridOptions{Height: 40, Width: 30, Labels: 4, Rho: 0.5, Seed: 1}, false)
	for name, m := range map[string]*model.Model{"sample": sample(), "unary": withUnaryFactors(),
		"logic": generate.Logic(generate.LogicOptions{Vars: 60, Factors: 50, Couplings: 70, MaxArity: 6, Rho: 1, Seed: 2})} {
		cases[name] = struct {
			m   *model.Model
			src model.Source
		}{m, model.SourceOf(m)}
	}
	return cases
}

func goldenKey(name string, fold bool, bs int) string {
	return fmt.Sprintf("%s fold=%v bs=%d", name, fold, bs)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestGoldenBytes: Write (in memory), WriteStream (in memory) and
// WriteStreamFile (spilling to temporary files) write, with folding and
// without, with the default and the smallest block, the bytes the
// previous writer wrote.
func TestGoldenBytes(t *testing.T) {
	dir := t.TempDir()
	got := map[string]string{}
	for name, c := range goldenCases() {
		for _, fold := range []bool{false, true} {
			for _, bs := range []int{0, MinBlockSize} {
				key := goldenKey(name, fold, bs)
				opts := WriteOptions{FoldUnary: fold, BlockSize: bs}
				var b bytes.Buffer
				if err := Write(&b, c.m, opts); err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				got[key] = sum(b.Bytes())
				var s bytes.Buffer
				if err := WriteStream(&s, c.src, opts, nil); err != nil {
					t.Fatalf("%s: stream: %v", key, err)
				}
				if sum(s.Bytes()) != got[key] {
					t.Errorf("%s: WriteStream differs from Write", key)
				}
				path := filepath.Join(dir, "m.ddx")
				if err := WriteStreamFile(path, c.src, opts, nil); err != nil {
					t.Fatalf("%s: stream file: %v", key, err)
				}
				f, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if sum(f) != got[key] {
					t.Errorf("%s: WriteStreamFile differs from Write", key)
				}
				if want, ok := goldenWrites[key]; !ok || want != got[key] {
					t.Errorf("%s: sha256 %s, want %q", key, got[key], want)
				}
			}
		}
	}
	if t.Failed() {
		for k, v := range got {
			t.Logf("%q: %q,", k, v)
		}
	}
}
