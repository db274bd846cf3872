package modelfile

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/native"
)

// everyKind is a native model with a factor of every kind, logic factors
// with and without negations, a Budget of 0, Sequences with and without
// emissions and with shared and per-position transitions.
const everyKind = `{
  "format": "ddrun-model",
  "version": 1,
  "cards": [2, 2, 2, 2, 2, 2, 3, 3, 3],
  "constant": 0.5,
  "unaries": [[0, 0.5], [0, 0.2], [0.1, -0.3], [0, 1], [0, 0.4], [0.3, 0], [0, 1, 2], [0.5, 0, -1], [0, 0, 0.25]],
  "factors": [
    {"kind": "dense", "vars": [3, 6], "table": [0, 0.5, "-inf", 0.75, 1, -2]},
    {"kind": "pair", "vars": [0, 1], "weight": 1.5},
    {"kind": "potts", "vars": [6, 7], "weight": -0.5},
    {"kind": "xor", "vars": [0, 1, 2]},
    {"kind": "xor", "vars": [3, 4], "negated": [true, false]},
    {"kind": "atmostone", "vars": [2, 3, 5], "negated": [false, false, true]},
    {"kind": "or", "vars": [4, 5], "negated": [false, true]},
    {"kind": "orout", "vars": [0, 3, 4]},
    {"kind": "andout", "vars": [1, 5, 2], "negated": [true, false, false]},
    {"kind": "budget", "vars": [0, 2, 4, 5], "budget": 2},
    {"kind": "budget", "vars": [1, 3], "negated": [false, true], "budget": 0},
    {"kind": "sequence", "vars": [6, 7, 8], "table": [0, 1, 2, 3, 4, 5, 6, 7, "-inf"], "emission": [1, 0, 0, 0, 1, 0, 0.5, 0.25, -1]},
    {"kind": "sequence", "vars": [0, 6, 1], "table": [1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5]},
    {"kind": "trunclinear", "vars": [6, 8], "weight": 1.25, "trunc": 1.5},
    {"kind": "truncquad", "vars": [7, 8], "weight": -0.75, "trunc": 3}
  ]
}`

// goldenKinds are the SHA-256 of what Save wrote from everyKind before
// model.Factor moved its rare fields behind a pointer (commit 8b46f51), by
// extension (Convert writes the same bytes as Save): the formats must stay
// byte for byte the same.
var goldenKinds = map[string]string{
	".json":    "67531a2ef9779bc50e95089bf6ac3f5c3c35664c93d0cfab9729ace08b1c49af",
	".msgpack": "dd29b2ed9d27c249a7daaa9e8b6dca3dbe548d53495d3e94313f06733e93b3cd",
	".ddx":     "4002f647e86f783d932b3970bbf2bc38d1a5954050a98dfc2ae14a0075573880",
	".uai":     "48442e45f511f8ac58eef8468505235b38b5df43689bb44559387c5d111771b7",
}

// TestEveryKindGoldenBytes writes a factor of every kind in every format,
// compares the bytes with the golden ones and reads each file back: the
// native and indexed formats give back the same factors, UAI the same
// scores.
func TestEveryKindGoldenBytes(t *testing.T) {
	m, err := native.Read(strings.NewReader(everyKind), "everyKind", native.JSON)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	got := map[string]string{}
	// m.* are written from the model in memory, c.* converted (streamed)
	// from m.ddx, d.ddx from m.msgpack.
	for _, name := range []string{"m.json", "m.msgpack", "m.ddx", "m.uai", "c.json", "c.msgpack", "c.uai", "d.ddx"} {
		path := filepath.Join(dir, name)
		var err error
		switch name[0] {
		case 'm':
			err = Save(path, m)
		case 'c':
			err = Convert(context.Background(), filepath.Join(dir, "m.ddx"), path, ConvertOptions{})
		default:
			err = Convert(context.Background(), filepath.Join(dir, "m.msgpack"), path, ConvertOptions{KeepUnaryFactors: true})
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name] = fileSHA256(t, path)
		if want := goldenKinds[filepath.Ext(name)]; want != got[name] {
			t.Errorf("%s: sha256 %s, want %q", name, got[name], want)
		}
		back, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.HasSuffix(name, ".uai") && !reflect.DeepEqual(back.Factors, m.Factors) {
			t.Errorf("%s: factors read back differ:\n%+v\nwant\n%+v", name, back.Factors, m.Factors)
		}
		allScores(t, name, m, back)
	}
	logGolden(t, got)
}

// allScores compares the scores of a and b at every assignment.
func allScores(t *testing.T, name string, a, b *model.Model) {
	t.Helper()
	if !reflect.DeepEqual(a.Cards, b.Cards) {
		t.Fatalf("%s: cards %v, want %v", name, b.Cards, a.Cards)
	}
	for x := range oracle.Assignments(a.Cards) {
		if sa, sb := a.Score(x), b.Score(x); sa != sb && !(sa-sb < 1e-9 && sb-sa < 1e-9) {
			t.Fatalf("%s: score at %v: %v, want %v", name, x, sb, sa)
		}
	}
}
