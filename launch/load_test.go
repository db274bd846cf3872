package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/internal/oracle"
)

// A UAI model's FILE.evid is read when no evidence is given and the front
// end asks for it (Input.Note, which is told); not otherwise, and not
// when --evidence names a file. --out FILE.sol is toulbar2's solution line.
func TestLoadEvidenceBeside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.uai")
	os.WriteFile(path, []byte("MARKOV 2 2 2 1 2 0 1 4 1 2 3 4"), 0o644)
	os.WriteFile(path+".evid", []byte("1 1 0"), 0o644)
	other := filepath.Join(dir, "other.evid")
	os.WriteFile(other, []byte("1 0 1"), 0o644)
	if got := EvidenceBeside(path); got != path+".evid" {
		t.Fatalf("EvidenceBeside: %q", got)
	}
	if got := EvidenceBeside(filepath.Join(dir, "m.wcsp")); got != "" {
		t.Fatalf("EvidenceBeside of a .wcsp: %q", got)
	}
	load := func(in Input) *engine.Job {
		t.Helper()
		j, err := engine.Prepare(engine.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		if err := Load(context.Background(), j, in); err != nil {
			t.Fatal(err)
		}
		return j
	}
	var notes []string
	note := func(key, text string, kv ...any) { notes = append(notes, text) }
	if j := load(Input{Path: path, Note: note}); len(j.Evidence) != 1 || j.Evidence[1] != 0 || len(notes) != 1 || !strings.Contains(notes[0], path+".evid") {
		t.Fatalf("beside: evidence %v, notes %q", j.Evidence, notes)
	}
	if j := load(Input{Path: path}); len(j.Evidence) != 0 {
		t.Fatalf("without Note: evidence %v", j.Evidence)
	}
	notes = nil
	if j := load(Input{Path: path, Evidence: other, Note: note}); len(j.Evidence) != 1 || j.Evidence[0] != 1 || len(notes) != 0 {
		t.Fatalf("--evidence: evidence %v, notes %q", j.Evidence, notes)
	}
	sol, mpe := filepath.Join(dir, "x.sol"), filepath.Join(dir, "x.mpe")
	if err := WriteMPE(sol, []int{1, 0, 2}); err != nil {
		t.Fatal(err)
	}
	if err := WriteMPE(mpe, []int{1, 0, 2}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(sol); string(b) != "1 0 2\n" {
		t.Fatalf(".sol: %q", b)
	}
	if x := oracle.ReadMPE(t, mpe); len(x) != 3 || x[2] != 2 {
		t.Fatalf(".mpe: %v", x)
	}
}
