package oracle

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ddrun/ddrun/internal/instances"
)

// Instance reads a model with the evidence beside it.
func TestInstance(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(instances.Env, dir)
	uai := "MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 2 3 4\n"
	if err := os.WriteFile(filepath.Join(dir, "a.uai"), []byte(uai), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.uai.evid"), []byte("1 1 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, ev := Instance(t, "a.uai")
	if m.NumVars() != 2 || len(ev) != 1 || ev[1] != 0 {
		t.Fatalf("Instance: %d variables, evidence %v", m.NumVars(), ev)
	}
}
