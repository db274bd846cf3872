package shard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/generate"
)

// noPath fails t when an error that goes back to a coordinator names a
// path or the size of the file under root.
func noPath(t *testing.T, what string, err error, root string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: no error", what)
	case strings.ContainsRune(err.Error(), '/') || strings.Contains(err.Error(), root) || strings.Contains(err.Error(), "12345"):
		t.Errorf("%s: %q names a path or a size", what, err)
	}
}

// A spec's model path is read only inside the worker's directories: a
// model there (directly, or through a link that stays inside) loads; an
// absolute path outside, one through "..", a relative one, and a link
// that leads out are refused alike, with errors that name no path and do
// not tell whether the file outside exists.
func TestModelPathConfined(t *testing.T) {
	root := t.TempDir()
	states, models, outside := filepath.Join(root, "states"), filepath.Join(root, "models"), filepath.Join(root, "outside")
	for _, d := range []string{models, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m := generate.Potts(generate.GridOptions{Height: 4, Width: 5, Labels: 3, Rho: 1, Seed: 1})
	_, src := reducedDDX(t, m)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(models, "m.ddx")
	for _, p := range []string{model, filepath.Join(outside, "m.ddx")} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), make([]byte, 12345), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(model, filepath.Join(models, "in.ddx")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "m.ddx"), filepath.Join(models, "out.ddx")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(models, "dir")); err != nil {
		t.Fatal(err)
	}
	d, err := NewDirs(states, []string{models})
	if err != nil {
		t.Fatal(err)
	}
	l, err := PlanLayout(model, 2, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	load := func(path string) error {
		sp := l.Specs[0]
		sp.Path = path
		b, err := sp.Encode()
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.LoadSpec(context.Background(), b)
		return err
	}
	for _, ok := range []string{model, filepath.Join(models, "in.ddx")} {
		if err := load(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for what, bad := range map[string]string{
		"absolute outside":    filepath.Join(outside, "m.ddx"),
		"dot-dot":             models + "/../outside/m.ddx",
		"relative":            "models/m.ddx",
		"link out":            filepath.Join(models, "out.ddx"),
		"through a dir link":  filepath.Join(models, "dir", "m.ddx"),
		"missing outside":     filepath.Join(outside, "none.ddx"),
		"a file's size probe": filepath.Join(outside, "secret"),
		"the root itself":     models,
	} {
		err := load(bad)
		noPath(t, what, err, root)
		if err != nil && strings.Contains(err.Error(), "no such file") {
			t.Errorf("%s: %q tells whether a file outside exists", what, err)
		}
	}
	if err := load(filepath.Join(models, "none.ddx")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing model inside the roots: %v, want no such file", err)
	}
	if _, err := (Dirs{}).ModelPath(model); err == nil || !strings.Contains(err.Error(), "--state-dir") {
		t.Errorf("a worker without a state directory: %v", err)
	}
}

// A state reference names a file directly in the worker's state
// directory; a link planted there that leads out is not followed, and the
// error says so without a path or a size.
func TestStateFilesConfined(t *testing.T) {
	root := t.TempDir()
	states, outside := filepath.Join(root, "states"), filepath.Join(root, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := NewDirs(states, nil)
	if err != nil {
		t.Fatal(err)
	}
	sf := StateFiles{Dir: d.State}
	st, at, lens := testState()
	enc, err := sf.Save(context.Background(), at, st)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := DecodeStateRef(enc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(context.Background(), d.State, ref, at, lens); err != nil {
		t.Fatalf("the state saved: %v", err)
	}
	// The state moved out and a link left in its place.
	moved := filepath.Join(outside, "moved.ddstate")
	if err := os.Rename(filepath.Join(d.State, ref.Name), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, filepath.Join(d.State, ref.Name)); err != nil {
		t.Fatal(err)
	}
	_, err = ReadState(context.Background(), d.State, ref, at, lens)
	noPath(t, "a link to a state outside", err, root)
	if err != nil && !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a link to a state outside: %v", err)
	}
	for _, name := range []string{"../outside/moved.ddstate", moved, ".hidden.ddstate"} {
		_, err := ConfinedPath(d.State, name)
		noPath(t, name, err, root)
	}
	if _, err := (StateFiles{}).Save(context.Background(), at, st); err == nil {
		t.Error("a worker without a state directory saved a state")
	}
	if _, err := NewDirs("", []string{outside}); err == nil {
		t.Error("model roots without a state directory accepted")
	}
}
