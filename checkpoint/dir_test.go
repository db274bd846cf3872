package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// saveCheckpoint writes and saves a checkpoint of job at iteration it.
func saveCheckpoint(t *testing.T, d *Dir, job string, it int) Manifest {
	t.Helper()
	m := writeCheckpoint(t, d, job, it)
	if err := d.SaveManifest(context.Background(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func iterations(ms []Manifest) []int {
	var its []int
	for _, m := range ms {
		its = append(its, m.Iteration)
	}
	return its
}

func TestDirManifests(t *testing.T) {
	d := openDir(t)
	for _, it := range []int{5, 100, 20, 1_000_000_000_000} {
		saveCheckpoint(t, d, "job", it)
	}
	saveCheckpoint(t, d, "job-b", 7) // another job whose id extends this one's
	saveCheckpoint(t, d, "b", 8)
	// Files that are not manifests of "job" are ignored.
	junk := map[string]string{
		"job-000000000007.json":      "{not json",
		"job-000000000009.json":      `{"job":"job","iteration":8,"blobs":[]}`, // name and content disagree
		"job-000000000010.json":      `{"job":"other","iteration":10,"blobs":[]}`,
		"job-000000000011.json":      `{"job":"job","iteration":11,"blobs":[{"role":"","object":"x"}]}`,
		"job-12.json":                `{"job":"job","iteration":12,"blobs":[]}`,
		".tmp-job-000000000013.json": `{"job":"job","iteration":13,"blobs":[]}`,
		"job-000000000014.json.bak":  `{"job":"job","iteration":14,"blobs":[]}`,
	}
	for name, content := range junk {
		if err := os.WriteFile(filepath.Join(d.Path(), "manifests", name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(d.Path(), "manifests", "job-000000000015.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		job  string
		want []int
	}{
		{"job", []int{1_000_000_000_000, 100, 20, 5}},
		{"job-b", []int{7}},
		{"b", []int{8}},
		{"none", nil},
	}
	for _, tc := range cases {
		t.Run(tc.job, func(t *testing.T) {
			ms, err := d.Manifests(tc.job)
			if err != nil {
				t.Fatal(err)
			}
			if got := iterations(ms); !slices.Equal(got, tc.want) {
				t.Fatalf("iterations %v, want %v", got, tc.want)
			}
			for _, m := range ms {
				if m.Job != tc.job || len(m.Blobs) != 4 || string(m.Meta) != `{"dual":1.5}` {
					t.Errorf("manifest %+v", m)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(d.Path(), "manifests", "job-000000000005.json")); err != nil {
		t.Errorf("manifest file name: %v", err)
	}
	// Latest over the saved manifests reads the newest.
	ms, _ := d.Manifests("job")
	m, _, skipped, err := Latest(context.Background(), d, ms)
	if err != nil || m.Iteration != 1_000_000_000_000 || len(skipped) != 0 {
		t.Fatalf("latest: iteration %d, skipped %v, %v", m.Iteration, skipped, err)
	}
}

func TestDirManifestsOrderTies(t *testing.T) {
	d := openDir(t)
	// The same iteration saved again (by a later epoch) replaces the file.
	m := saveCheckpoint(t, d, "job", 4)
	m.Epoch = 2
	if err := d.SaveManifest(context.Background(), &m); err != nil {
		t.Fatal(err)
	}
	ms, err := d.Manifests("job")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Epoch != 2 {
		t.Fatalf("got %+v, want one manifest of epoch 2", ms)
	}
	a, b := Manifest{Iteration: 1, Epoch: 3}, Manifest{Iteration: 1, Epoch: 2, Created: time.Now()}
	if !newer(&a, &b) || newer(&b, &a) {
		t.Error("a higher epoch is not newer at the same iteration")
	}
}

func TestDirSaveManifestErrors(t *testing.T) {
	d := openDir(t)
	ctx := context.Background()
	good := writeCheckpoint(t, d, "job", 1)
	missing := writeCheckpoint(t, NewMem(), "job", 2) // blobs elsewhere
	wrongSize := good
	wrongSize.Blobs = slices.Clone(good.Blobs)
	wrongSize.Blobs[0].Size++
	cases := []struct {
		name string
		m    Manifest
		want string
	}{
		{"missing blob", missing, "no such file"},
		{"wrong size", wrongSize, "manifest says"},
		{"no job", Manifest{}, "job id: empty"},
		{"bad job", Manifest{Job: "../x"}, "not a letter"},
		{"negative iteration", Manifest{Job: "j", Iteration: -1}, "negative iteration"},
		{"invalid", Manifest{Job: "j", Blobs: []Blob{{Role: "a", Object: "zz"}}}, "not a sha256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := d.SaveManifest(ctx, &tc.m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	if ms, err := d.Manifests("job"); err != nil || len(ms) != 0 {
		t.Fatalf("manifests after failed saves: %v, %v", ms, err)
	}
	if _, err := d.Manifests("a/b"); err == nil {
		t.Error("manifests of a bad job id: no error")
	}
}

func TestDirPrune(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		keep int
		want []int // iterations of job "a" left
	}{
		{"keep 2", 2, []int{4, 3}},
		{"keep all", 10, []int{4, 3, 2, 1}},
		{"keep 0", 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := openDir(t)
			for it := 1; it <= 4; it++ {
				saveCheckpoint(t, d, "a", it)
			}
			other := saveCheckpoint(t, d, "b", 1)
			orphan := randomBytes(99, 500) // written, never named by a manifest
			mustPut(t, d, orphan)
			objects := filepath.Join(d.Path(), "objects")
			stale := filepath.Join(objects, tmpPrefix+"stale")
			fresh := filepath.Join(objects, tmpPrefix+"fresh")
			for _, p := range []string{stale, fresh} {
				if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			old := time.Now().Add(-2 * tmpGrace)
			if err := os.Chtimes(stale, old, old); err != nil {
				t.Fatal(err)
			}

			if err := d.Prune(ctx, "a", tc.keep); err != nil {
				t.Fatal(err)
			}
			ms, err := d.Manifests("a")
			if err != nil {
				t.Fatal(err)
			}
			if got := iterations(ms); !slices.Equal(got, tc.want) {
				t.Fatalf("left %v, want %v", got, tc.want)
			}
			// Exactly the objects of the remaining manifests are left.
			var want []string
			for _, m := range append(ms, other) {
				for _, b := range m.Blobs {
					if !slices.Contains(want, b.Object) {
						want = append(want, b.Object)
					}
				}
			}
			assertList(t, d, want...)
			for _, m := range append(ms, other) {
				if _, err := Read(ctx, d, &m); err != nil {
					t.Errorf("after prune: %v", err)
				}
			}
			if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("stale temporary file: %v, want removed", err)
			}
			if _, err := os.Stat(fresh); err != nil {
				t.Errorf("fresh temporary file (a write in progress?): %v, want kept", err)
			}
		})
	}
	d := openDir(t)
	if err := d.Prune(ctx, "a", -1); err == nil {
		t.Error("prune keep -1: no error")
	}
	if err := d.Prune(ctx, "", 1); err == nil {
		t.Error("prune of an empty job id: no error")
	}
}

// TestDirCrashLeftovers checks that what a crash in the middle of Put
// leaves behind (a temporary file) is no object: List ignores it, Get does
// not find it, and a later Put stores the object whole.
func TestDirCrashLeftovers(t *testing.T) {
	ctx := context.Background()
	d := openDir(t)
	data := randomBytes(3, 100<<10)
	name := objectName(data)
	objects := filepath.Join(d.Path(), "objects")
	leftover := filepath.Join(objects, tmpPrefix+name+"-123456")
	if err := os.WriteFile(leftover, data[:4096], 0o600); err != nil {
		t.Fatal(err)
	}
	assertList(t, d)
	if _, err := d.Get(ctx, name); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get: %v, want ErrNotFound", err)
	}
	mustPut(t, d, data)
	assertList(t, d, name)
	mustGet(t, d, data, "get after put")
	// Put leaves no temporary file of its own.
	ents, err := os.ReadDir(objects)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 {
		t.Errorf("objects dir holds %d entries, want the object and the old leftover", len(ents))
	}
}

// TestDirPutRepairs checks that Put replaces a damaged (truncated) object
// instead of taking it for the stored one.
func TestDirPutRepairs(t *testing.T) {
	d := openDir(t)
	data := randomBytes(4, 10000)
	mustPut(t, d, data)
	if err := os.Truncate(filepath.Join(d.Path(), "objects", objectName(data)), 10); err != nil {
		t.Fatal(err)
	}
	mustPut(t, d, data)
	mustGet(t, d, data, "get")
}

func TestOpenDirError(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(f); err == nil {
		t.Fatal("open a dir store under a file: no error")
	}
}
