// Package instances finds the real MAP instances (third-party UAI models
// with their evidence and reference optima, see the README of that folder)
// that some tests read. The folder is never part of the repository: it is
// named by the environment variable DDRUN_INSTANCES or, without it, is
// ../shared/instances beside the checkout (relative to the module root, so
// a test finds it from any package). Tests that need it skip when it is
// absent.
//
// It must not know what the tests do with the files.
package instances

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Env is the environment variable that names the instances folder.
const Env = "DDRUN_INSTANCES"

// Dir returns the instances folder as an absolute path, or an error saying
// where it looked.
func Dir() (string, error) {
	dir := os.Getenv(Env)
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "..", "shared", "instances")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("instances folder %s (set %s to move it): %w", dir, Env, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("instances folder %s is not a directory", dir)
	}
	return dir, nil
}

// Require returns the instances folder, or skips the test when it is
// absent.
func Require(t testing.TB) string {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Skipf("real instances absent: %v", err)
	}
	return dir
}

// Path returns the path of a file in the instances folder (rel in slash
// form, e.g. "grids/Grids_11.uai"), or skips the test when the folder or
// the file is absent.
func Path(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Require(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("instance absent: %v", err)
	}
	return p
}

// moduleRoot is the nearest folder at or above the working directory that
// holds a go.mod (go test runs a package's tests in its folder).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
