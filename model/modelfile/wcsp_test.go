package modelfile

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model/wcsp"
)

// A WCSP file is read plain, gzip- and xz-compressed, under its name's
// format, and converted to UAI and back with the same costs.
func TestLoadWCSP(t *testing.T) {
	dir := t.TempDir()
	const text = "pb 2 3 3 10\n2 3\n1 0 5 1\n1 0\n2 0 1 1 2\n0 2 4\n1 1 12\n0 3 0\n"
	cost := func(x []int) float64 {
		c := 3.0
		if x[0] == 0 {
			c += 5
		}
		switch {
		case x[0] == 0 && x[1] == 2:
			c += 4
		case x[0] == 1 && x[1] == 1:
			return math.Inf(1)
		default:
			c++
		}
		return c
	}
	encoded := writeEncodings(t, dir, "a.wcsp", text)
	xz := encoded[2]
	conv := filepath.Join(dir, "c.uai")
	back := filepath.Join(dir, "back.wcsp.gz")
	if err := Convert(context.Background(), xz, conv, ConvertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Convert(context.Background(), conv, back, ConvertOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(encoded, back) {
		if FormatOf(p) != WCSP {
			t.Fatalf("%s: format %v", p, FormatOf(p))
		}
		m, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		for a := 0; a < 2; a++ {
			for b := 0; b < 3; b++ {
				x := []int{a, b}
				if got := wcsp.Cost(m.Score(x)); math.Abs(got-cost(x)) > 1e-9 && !(math.IsInf(got, 1) && math.IsInf(cost(x), 1)) {
					t.Fatalf("%s %v: cost %v, want %v", filepath.Base(p), x, got, cost(x))
				}
			}
		}
	}
	// A global cost function: one line naming file and line.
	bad := filepath.Join(dir, "g.wcsp")
	os.WriteFile(bad, []byte("pb 2 2 1 10\n2 2\n2 0 1 -1 salldiff var -1\n"), 0o644)
	_, err := LoadWith(context.Background(), bad, Options{})
	if err == nil || err.Error() != bad+":3: not supported: salldiff (global cost function)" {
		t.Fatalf("global: %v", err)
	}
	// A fractional score cannot be written.
	if err := Convert(context.Background(), writeXZ(t, dir, "h.LG.xz", "MARKOV 1 2 1 1 0 2 0.5 0"), filepath.Join(dir, "h.wcsp"), ConvertOptions{}); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("fraction: %v", err)
	}
}
