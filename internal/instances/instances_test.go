package instances

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestDirFollowsTheVariable(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(Env, dir)
	got, err := Dir()
	if err != nil || got != dir {
		t.Fatalf("Dir() = %q, %v; want %q", got, err, dir)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.uai"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p := Path(t, "a.uai"); p != filepath.Join(dir, "a.uai") {
		t.Errorf("Path = %q", p)
	}
	t.Setenv(Env, filepath.Join(dir, "absent"))
	if _, err := Dir(); err == nil {
		t.Error("an absent folder gave no error")
	}
	t.Setenv(Env, filepath.Join(dir, "a.uai"))
	if _, err := Dir(); err == nil {
		t.Error("a file gave no error")
	}
}

func TestDirDefaultsBesideTheCheckout(t *testing.T) {
	t.Setenv(Env, "")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s has no go.mod", root)
	}
	want := filepath.Join(root, "..", "shared", "instances")
	got, err := Dir()
	if err != nil {
		if _, serr := os.Stat(want); serr == nil {
			t.Fatalf("Dir() failed although %s exists: %v", want, err)
		}
		return // absent here: the error is right
	}
	if got != filepath.Clean(want) {
		t.Errorf("Dir() = %q, want %q", got, want)
	}
}

// Optima parses OPTIMA.tsv's columns.
func TestOptima(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(Env, dir)
	tsv := "file\tvariables\tmax_domain\tbest_known\tproven\tupper_bound\tsource\n" +
		"a.uai\t2\t2\t-1.5\tyes\t-1.5\tx\n" + "b.uai\t3\t2\t2\tno\tinf\ty\n"
	if err := os.WriteFile(filepath.Join(dir, "OPTIMA.tsv"), []byte(tsv), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Optima(t)
	if len(got) != 2 || got[0] != (Optimum{File: "a.uai", Vars: 2, Best: -1.5, Proven: true, Upper: -1.5}) ||
		got[1].File != "b.uai" || got[1].Proven || got[1].Vars != 3 || !math.IsInf(got[1].Upper, 1) {
		t.Fatalf("Optima = %+v", got)
	}
}
