package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/modelfile"
)

// TestConvert converts UAI to the indexed format and back to JSON, solves
// the .ddx, and turns bad input into one line and exit 2.
func TestConvert(t *testing.T) {
	uai := writeFile(t, "m.uai", "MARKOV\n3\n2 2 2\n2\n2 0 1\n2 1 2\n4\n1 2 3 4\n4\n4 1 1 4\n")
	dir := filepath.Dir(uai)
	ddx, js := filepath.Join(dir, "m.ddx"), filepath.Join(dir, "m.json")
	if code, _, stderr := runCLI(t, "convert", uai, ddx); code != 0 {
		t.Fatalf("uai -> ddx: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "convert", "--quiet", ddx, js); code != 0 || stderr != "" {
		t.Fatalf("ddx -> json: exit %d: %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "solve", ddx); code != 0 {
		t.Fatalf("solve ddx: exit %d: %s", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "bad.uai"), []byte("MARKOV\n2\n2 2\n1\n2 0 1\n3\n1 2 3\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"convert", uai}, "want IN OUT"},
		{[]string{"convert", uai, filepath.Join(dir, "x.txt")}, "unknown model format"},
		{[]string{"convert", filepath.Join(dir, "bad.uai"), filepath.Join(dir, "bad.ddx")}, "bad.uai:6: table of factor 0 has 3 entries, scope needs 4"},
		{[]string{"convert", filepath.Join(dir, "none.uai"), ddx}, "no such file"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.ddx")); !os.IsNotExist(err) {
		t.Errorf("bad.ddx left behind")
	}
}

// TestConvertFoldsUnaryFactors: to .ddx, a UAI file's factors over one
// variable become unaries, unless --keep-unary-factors.
func TestConvertFoldsUnaryFactors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.uai")
	os.WriteFile(in, []byte("MARKOV\n3\n2 2 3\n3\n1 0\n2 0 1\n1 2\n2\n1 2\n4\n4 1 1 4\n3\n1 2 0\n"), 0o644)
	want, err := modelfile.Load(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("m%v.ddx", keep))
		args := []string{"convert", "--quiet", in, out}
		if keep {
			args = append(args, "--keep-unary-factors")
		}
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		got, err := indexed.ReadFile(out, indexed.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(got.Factors); keep && n != 3 || !keep && n != 1 {
			t.Fatalf("keep %v: %d factors", keep, n)
		}
		for x := range 12 {
			a := []int{x & 1, x >> 1 & 1, x >> 2 % 3}
			if sw, sg := want.Score(a), got.Score(a); math.Abs(sw-sg) > 1e-12 && !(math.IsInf(sw, -1) && math.IsInf(sg, -1)) {
				t.Fatalf("keep %v: score at %v: %v, want %v", keep, a, sg, sw)
			}
		}
	}
	if code, _, stderr := runCLI(t, "convert", "-h"); code != 0 || !strings.Contains(stderr, "keep-unary-factors") {
		t.Fatalf("convert -h: exit %d, %q", code, stderr)
	}
}
