package shard

import (
	"os"
	"path/filepath"
	"testing"
)

// Confinement is what the confinement tests of the workers that read
// parts (cluster, dtrws/remote) attack, laid out under a test's temporary
// directory Root: a model root Models, a directory Outside the worker's
// directories holding Secret (outside/secret.ddx, 12,345 bytes, the size a
// refusal must not tell), a link Models/link.ddx that leads to it, and Dirs
// with Root/states as the state directory and Models as the one model root.
type Confinement struct {
	Root, States, Models, Outside, Secret string
	Dirs                                  Dirs
}

// NewConfinement lays out a Confinement; an error fails t.
func NewConfinement(t testing.TB) Confinement {
	t.Helper()
	root := t.TempDir()
	c := Confinement{Root: root, States: filepath.Join(root, "states"), Models: filepath.Join(root, "models"), Outside: filepath.Join(root, "outside")}
	for _, d := range []string{c.Models, c.Outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.Secret = filepath.Join(c.Outside, "secret.ddx")
	if err := os.WriteFile(c.Secret, make([]byte, 12345), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(c.Secret, filepath.Join(c.Models, "link.ddx")); err != nil {
		t.Fatal(err)
	}
	dirs, err := NewDirs(c.States, []string{c.Models})
	if err != nil {
		t.Fatal(err)
	}
	c.Dirs = dirs
	return c
}
