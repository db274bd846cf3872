package shard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ddrun/ddrun/consensus"
)

// Dirs confine a worker's files for sharded parts. What a part's message
// says is never a path the worker writes to: it writes only state files,
// named from the job, epoch, part and iteration (StateName), directly in
// State; and it reads a model file only when the spec's path lies, once
// its symbolic links are resolved, in State or one of Models. A worker
// with no State takes no sharded parts.
//
// Errors that go back to a coordinator name what failed ("the model
// file", "the state file"), never a path or a file's size: a forged spec
// learns nothing of the worker's files.
type Dirs struct {
	// State is the directory the worker writes its parts' state files
	// into (a directory every worker of a job sees: a part taken over by
	// another worker resumes from it), absolute, its links resolved.
	State string
	// Models are the directories, besides State, whose files a spec may
	// name as its model, absolute, their links resolved.
	Models []string
}

// NewDirs makes state (created when missing) and the model roots
// absolute, with their symbolic links resolved, for a worker's options
// (its --state-dir and --model-root flags). An empty state: no sharded
// parts.
func NewDirs(state string, models []string) (Dirs, error) {
	var d Dirs
	if state == "" {
		if len(models) > 0 {
			return d, errors.New("--model-root without --state-dir: a worker takes sharded parts only with a state directory")
		}
		return d, nil
	}
	if err := os.MkdirAll(state, 0o755); err != nil {
		return d, fmt.Errorf("--state-dir: %w", err)
	}
	var err error
	if d.State, err = realDir(state); err != nil {
		return d, fmt.Errorf("--state-dir: %w", err)
	}
	for _, m := range models {
		r, err := realDir(m)
		if err != nil {
			return d, fmt.Errorf("--model-root: %w", err)
		}
		d.Models = append(d.Models, r)
	}
	return d, nil
}

// realDir is dir absolute with its links resolved; it must be a directory.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return real, nil
}

// errNoDirs is a sharded part sent to a worker without a state directory.
var errNoDirs = errors.New("this worker takes no sharded parts: it was started without --state-dir")

// ConfinedPath returns the path of the file name directly in dir: name
// must be one path element of letters, digits, '-', '_' and '.' that does
// not start with a dot (no separator, no "..", nothing absolute), as the
// names a worker makes from a job's id are. It is what a worker's files
// for a job are named by (state files, and parts received whole).
func ConfinedPath(dir, name string) (string, error) {
	if dir == "" {
		return "", errNoDirs
	}
	if !plainName(name) {
		return "", errors.New("shard: a file name that is not one a worker makes")
	}
	return filepath.Join(dir, name), nil
}

// plainName accepts one path element of [A-Za-z0-9_.-], not starting with
// a dot, of at most maxJobLen bytes.
func plainName(name string) bool {
	if name == "" || len(name) > maxJobLen || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// OpenConfined opens the regular file name directly in dir (ConfinedPath)
// for reading, and refuses a symbolic link or anything but a regular file
// there: a link planted in the state directory does not lead out of it.
// Its errors hold no path.
func OpenConfined(dir, name string) (*os.File, int64, error) {
	p, err := ConfinedPath(dir, name)
	if err != nil {
		return nil, 0, err
	}
	return openRegular(p, "shard: the state file")
}

// openRegular opens p, which must be a regular file and not a link (the
// file opened is the one checked), and returns it with its size; errors
// are what's (no path).
func openRegular(p, what string) (*os.File, int64, error) {
	li, err := os.Lstat(p)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", what, pathless(err))
	}
	if !li.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", what)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", what, pathless(err))
	}
	fi, err := f.Stat()
	if err != nil || !os.SameFile(li, fi) {
		f.Close()
		return nil, 0, fmt.Errorf("%s changed while it was opened", what)
	}
	return f, fi.Size(), nil
}

// pathless is err without the path an *fs.PathError or *os.LinkError
// carries.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// ModelPath checks that p, a spec's model path, is one this worker reads:
// absolute, clean (no "..") and, with its links resolved, a regular file
// in State or one of Models. It returns the resolved path.
func (d Dirs) ModelPath(p string) (string, error) {
	if d.State == "" {
		return "", errNoDirs
	}
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsRune(p, 0) {
		return "", errors.New("shard: the part's model path is not an absolute clean path")
	}
	real, err := filepath.EvalSymlinks(p)
	switch {
	case err == nil && d.inside(real):
		return real, nil
	case err != nil && d.inside(p):
		return "", fmt.Errorf("shard: the model file: %w", pathless(err))
	}
	// Missing or outside alike: the answer tells nothing of what exists
	// outside the worker's directories.
	return "", errors.New("shard: the part's model file is outside this worker's --state-dir and --model-root directories")
}

// inside reports whether path p lies in State or one of Models.
func (d Dirs) inside(p string) bool {
	for _, root := range append([]string{d.State}, d.Models...) {
		if rel, err := filepath.Rel(root, p); err == nil && rel != "." && filepath.IsLocal(rel) {
			return true
		}
	}
	return false
}

// LoadSpec builds a worker's part from its spec's wire form: it decodes
// the spec (DecodeSpec), checks its model path (ModelPath) and reads the
// part (LoadFlat). It is a worker's cluster.WorkerOptions.LoadShard.
func (d Dirs) LoadSpec(ctx context.Context, spec []byte) (*consensus.Part, error) {
	sp, err := d.Spec(spec)
	if err != nil {
		return nil, err
	}
	return LoadFlat(ctx, sp)
}

// Spec decodes a spec's wire form (DecodeSpec) and checks its model path
// (ModelPath): the spec returned names the resolved file.
func (d Dirs) Spec(spec []byte) (*Spec, error) {
	sp, err := DecodeSpec(spec)
	if err != nil {
		return nil, err
	}
	if sp.Path, err = d.ModelPath(sp.Path); err != nil {
		return nil, err
	}
	return sp, nil
}
