package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ddrun/ddrun/transport"
)

const (
	// tmpPrefix starts the names of files being written; a crash can leave
	// them behind, List and Manifests never return them and Prune removes
	// them once they are older than tmpGrace.
	tmpPrefix = ".tmp-"
	tmpGrace  = time.Hour
)

// Dir is a Store in a local directory, for a single coordinator, and the
// keeper of that coordinator's manifests. Objects live in
// path/objects/<name>, manifests in path/manifests/<job>-<iteration>.json
// with the iteration zero-padded to 12 digits. Every file is written to a
// temporary file in the same directory, fsynced, renamed into place and
// the directory fsynced, so a crash leaves either the whole file or none
// (and perhaps a temporary file, which is ignored).
//
// Dir is safe for concurrent use, except that Prune must not run while a
// Write into the same directory has not yet been followed by its
// SaveManifest: Prune deletes every object that no saved manifest names.
type Dir struct {
	path      string
	objects   string
	manifests string
	seal      *Sealer // nil: blobs stored as they are
}

// OpenDir opens (creating it if needed) the directory store at path.
func OpenDir(path string) (*Dir, error) {
	d := &Dir{
		path:      path,
		objects:   filepath.Join(path, "objects"),
		manifests: filepath.Join(path, "manifests"),
	}
	for _, p := range []string{d.objects, d.manifests} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, fmt.Errorf("checkpoint dir %s: %w", path, err)
		}
	}
	return d, nil
}

// Seal makes the store seal the blobs it puts and open the ones it gets
// with s (see Seal; nil: none). Call it before the store is used. The
// manifests it saves are those Write sealed; they are kept in clear (names,
// sizes and sha256s of blobs, the Meta scalars), and Read refuses one
// whose seal does not open as torn.
func (d *Dir) Seal(s *Sealer) { d.seal = s }

// Path returns the directory the store was opened at.
func (d *Dir) Path() string { return d.path }

// Put implements Store. An existing object of the right size is left
// alone (sealed, if it opens); one of another size (damaged) is replaced.
func (d *Dir) Put(ctx context.Context, name string, data []byte) error {
	if err := checkOp(ctx, "put", name); err != nil {
		return err
	}
	if fi, err := os.Stat(filepath.Join(d.objects, name)); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(data))+d.seal.overhead() {
		if d.seal == nil {
			return nil
		}
		// Content-hashed names come back unchanged: keep the blob when it
		// opens with this key, replace one sealed with another.
		if _, err := d.Get(ctx, name); err == nil {
			return nil
		}
	}
	data, err := d.seal.seal(name, data) // only what is written is sealed
	if err != nil {
		return err
	}
	if err := writeAtomic(d.objects, name, data); err != nil {
		return fmt.Errorf("put %s: %w", name, err)
	}
	return nil
}

// Get implements Store.
func (d *Dir) Get(ctx context.Context, name string) ([]byte, error) {
	if err := checkOp(ctx, "get", name); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(d.objects, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("get %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", name, err)
	}
	return d.seal.open(name, b)
}

// Delete implements Store. The removal is not fsynced: an object that
// comes back after a crash is only garbage for the next Prune.
func (d *Dir) Delete(ctx context.Context, name string) error {
	if err := checkOp(ctx, "delete", name); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(d.objects, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}

// List implements Store; the names come sorted. Temporary files left by
// a crash are not objects and are not listed.
func (d *Dir) List(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	ents, err := os.ReadDir(d.objects)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && validObject(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// SaveManifest records m as the manifest file of its job and iteration,
// replacing one of the same iteration. Call it only after every blob of m
// is stored (after Write): it checks that each blob is present with its
// size, not its hash, and fails otherwise.
func (d *Dir) SaveManifest(ctx context.Context, m *Manifest) error {
	if err := checkJob(m.Job); err != nil {
		return fmt.Errorf("save manifest: %w", err)
	}
	if m.Iteration < 0 {
		return fmt.Errorf("save manifest %s@%d: negative iteration", m.Job, m.Iteration)
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("save manifest: %w", err)
	}
	for _, b := range m.Blobs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("save manifest %s@%d: %w", m.Job, m.Iteration, err)
		}
		fi, err := os.Stat(filepath.Join(d.objects, b.Object))
		if err != nil {
			return fmt.Errorf("save manifest %s@%d: blob %q: %w", m.Job, m.Iteration, b.Role, err)
		}
		if fi.Size() != b.Size+d.seal.overhead() {
			return fmt.Errorf("save manifest %s@%d: blob %q: stored object has %d bytes, manifest says %d", m.Job, m.Iteration, b.Role, fi.Size(), b.Size)
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("save manifest %s@%d: %w", m.Job, m.Iteration, err)
	}
	if err := writeAtomic(d.manifests, manifestFile(m.Job, m.Iteration), append(data, '\n')); err != nil {
		return fmt.Errorf("save manifest %s@%d: %w", m.Job, m.Iteration, err)
	}
	return nil
}

// Manifests returns the saved manifests of job, newest first (by
// Iteration, then Epoch, then Created). A file that cannot be parsed,
// fails Validate, or whose content does not match its name (another job
// or iteration) is not a manifest and is ignored: manifest files are
// written atomically, so such a file is damage from outside, and the
// checkpoints that remain are still usable (see Latest).
func (d *Dir) Manifests(job string) ([]Manifest, error) {
	if err := checkJob(job); err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	files, err := d.manifestFiles(job)
	if err != nil {
		return nil, err
	}
	ms := make([]Manifest, len(files))
	for i, f := range files {
		ms[i] = f.m
	}
	return ms, nil
}

// Prune deletes all but the newest keep manifests of job, then every
// object that no remaining manifest (of any job) names, and temporary
// files older than an hour. Only the files Manifests would return protect
// objects: a damaged manifest file cannot be used to restore anyway. It
// must not run between a Write and the SaveManifest of its manifest (see
// Dir).
func (d *Dir) Prune(ctx context.Context, job string, keep int) error {
	if err := checkJob(job); err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	if keep < 0 {
		return fmt.Errorf("prune %s: keep %d < 0", job, keep)
	}
	files, err := d.manifestFiles(job)
	if err != nil {
		return fmt.Errorf("prune %s: %w", job, err)
	}
	for _, f := range files[min(keep, len(files)):] {
		if err := os.Remove(filepath.Join(d.manifests, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("prune %s: %w", job, err)
		}
	}
	if err := syncDir(d.manifests); err != nil {
		return fmt.Errorf("prune %s: %w", job, err)
	}
	// Only after the manifests are gone for good may their objects go.
	all, err := d.manifestFiles("")
	if err != nil {
		return fmt.Errorf("prune %s: %w", job, err)
	}
	used := map[string]bool{}
	for _, f := range all {
		for _, b := range f.m.Blobs {
			used[b.Object] = true
		}
	}
	names, err := d.List(ctx)
	if err != nil {
		return fmt.Errorf("prune %s: %w", job, err)
	}
	for _, name := range names {
		if !used[name] {
			if err := d.Delete(ctx, name); err != nil {
				return fmt.Errorf("prune %s: %w", job, err)
			}
		}
	}
	for _, dir := range []string{d.objects, d.manifests} {
		if err := removeStaleTemps(dir, time.Now().Add(-tmpGrace)); err != nil {
			return fmt.Errorf("prune %s: %w", job, err)
		}
	}
	return nil
}

type manifestFileEntry struct {
	name string
	m    Manifest
}

// manifestFiles reads the manifest files of job (of every job for ""),
// newest first, ignoring the ones that are not manifests.
func (d *Dir) manifestFiles(job string) ([]manifestFileEntry, error) {
	ents, err := os.ReadDir(d.manifests)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	var out []manifestFileEntry
	for _, e := range ents {
		fjob, _, ok := parseManifestFile(e.Name())
		if !ok || !e.Type().IsRegular() || job != "" && fjob != job {
			continue
		}
		data, err := os.ReadFile(filepath.Join(d.manifests, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // pruned meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("manifests: %w", err)
		}
		var m Manifest
		if json.Unmarshal(data, &m) != nil || m.Validate() != nil || m.Iteration < 0 || manifestFile(m.Job, m.Iteration) != e.Name() {
			continue
		}
		out = append(out, manifestFileEntry{name: e.Name(), m: m})
	}
	sort.SliceStable(out, func(i, j int) bool { return newer(&out[i].m, &out[j].m) })
	return out, nil
}

// newer orders manifests newest first: by Iteration, Epoch, Created.
func newer(a, b *Manifest) bool {
	if a.Iteration != b.Iteration {
		return a.Iteration > b.Iteration
	}
	if a.Epoch != b.Epoch {
		return a.Epoch > b.Epoch
	}
	return a.Created.After(b.Created)
}

func manifestFile(job string, iteration int) string {
	return fmt.Sprintf("%s-%012d.json", job, iteration)
}

// parseManifestFile splits "<job>-<iteration>.json", the iteration being
// at least 12 digits.
func parseManifestFile(name string) (job string, iteration int, ok bool) {
	base, found := strings.CutSuffix(name, ".json")
	if !found {
		return "", 0, false
	}
	i := strings.LastIndexByte(base, '-')
	if i < 0 {
		return "", 0, false
	}
	job, digits := base[:i], base[i+1:]
	if len(digits) < 12 || checkJob(job) != nil {
		return "", 0, false
	}
	for j := 0; j < len(digits); j++ {
		if digits[j] < '0' || digits[j] > '9' {
			return "", 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return "", 0, false
	}
	return job, n, true
}

// checkJob accepts the job ids the rest of ddrun accepts
// (transport.ValidName: letters, digits, '-' and '_'), which are also safe
// file names.
func checkJob(job string) error {
	if err := transport.ValidName(job); err != nil {
		return fmt.Errorf("job id: %w", err)
	}
	return nil
}

// writeAtomic writes data to dir/name crash-safely: temporary file in dir,
// fsync, rename, fsync of dir.
func writeAtomic(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, tmpPrefix+name+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// removeStaleTemps removes the temporary files in dir last modified before
// cutoff (left by a crash; younger ones may belong to a write in
// progress).
func removeStaleTemps(dir string, cutoff time.Time) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tmpPrefix) || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
