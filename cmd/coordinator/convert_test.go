package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvert converts UAI to the indexed format and back to JSON, solves
// the .ddx, and turns bad input into one line and exit 2.
func TestConvert(t *testing.T) {
	dir := t.TempDir()
	uai := filepath.Join(dir, "m.uai")
	os.WriteFile(uai, []byte("MARKOV\n3\n2 2 2\n2\n2 0 1\n2 1 2\n4\n1 2 3 4\n4\n4 1 1 4\n"), 0o644)
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
