package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testParts returns the parts of a checkpoint at iteration it: a master
// blob that changes and worker blobs of which part-0 never changes.
func testParts(it int) []Part {
	return []Part{
		{Role: "master", Data: randomBytes(uint64(100+it), 4000)},
		{Role: "part-0", Data: randomBytes(7, 70<<10)},
		{Role: "part-1", Data: randomBytes(uint64(200+it), 130<<10)},
		{Role: "part-2", Data: nil},
	}
}

func writeCheckpoint(t *testing.T, s Store, job string, it int) Manifest {
	t.Helper()
	m, err := Write(context.Background(), s, Manifest{Job: job, Epoch: 1, Iteration: it, Meta: json.RawMessage(`{"dual":1.5}`)}, testParts(it))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWriteRead(t *testing.T) {
	for _, k := range storeKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			s := k.open(t)
			ctx := context.Background()
			m := writeCheckpoint(t, s, "job", 3)
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			if m.Created.IsZero() || m.Job != "job" || m.Epoch != 1 || m.Iteration != 3 || string(m.Meta) != `{"dual":1.5}` {
				t.Fatalf("manifest header: %+v", m)
			}
			parts := testParts(3)
			if len(m.Blobs) != len(parts) {
				t.Fatalf("%d blobs, want %d", len(m.Blobs), len(parts))
			}
			for i, p := range parts {
				b := m.Blobs[i]
				if b.Role != p.Role || b.Object != objectName(p.Data) || b.Size != int64(len(p.Data)) {
					t.Errorf("blob %d: %+v, want role %s size %d", i, b, p.Role, len(p.Data))
				}
			}
			// The manifest survives JSON, as in a manifest file or a Raft entry.
			back := jsonRoundTrip(t, m)
			got, err := Read(ctx, s, &back)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(parts) {
				t.Fatalf("read %d blobs, want %d", len(got), len(parts))
			}
			for _, p := range parts {
				if !slices.Equal(got[p.Role], p.Data) {
					t.Errorf("role %s: %d bytes differ from the %d written", p.Role, len(got[p.Role]), len(p.Data))
				}
			}
			// A second checkpoint shares the unchanged blob.
			writeCheckpoint(t, s, "job", 4)
			names, err := s.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != 6 {
				t.Errorf("%d objects after two checkpoints, want 6 (part-0 and part-2 shared)", len(names))
			}
		})
	}
}

func TestWriteBadParts(t *testing.T) {
	cases := []struct {
		name  string
		parts []Part
		want  string
	}{
		{"no role", []Part{{Role: "a"}, {Data: []byte("x")}}, "no role"},
		{"role twice", []Part{{Role: "a"}, {Role: "a", Data: []byte("x")}}, `role "a" twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewMem()
			_, err := Write(context.Background(), s, Manifest{Job: "j"}, tc.parts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			assertList(t, s)
		})
	}
}

func TestWriteEqualParts(t *testing.T) {
	s := &countingStore{Store: NewMem()}
	data := randomBytes(5, 1000)
	parts := []Part{{"a", data}, {"b", data}, {"c", data}, {"d", randomBytes(6, 10)}}
	m, err := Write(context.Background(), s, Manifest{Job: "j"}, parts)
	if err != nil {
		t.Fatal(err)
	}
	if s.puts.Load() != 2 {
		t.Errorf("%d puts, want 2 (one per distinct object)", s.puts.Load())
	}
	got, err := Read(context.Background(), s, &m)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if !slices.Equal(got[p.Role], p.Data) {
			t.Errorf("role %s differs", p.Role)
		}
	}
}

func TestWritePutError(t *testing.T) {
	boom := errors.New("disk full")
	s := &countingStore{Store: NewMem(), failPut: boom}
	_, err := Write(context.Background(), s, Manifest{Job: "j", Iteration: 9}, testParts(9))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "j@9") || !strings.Contains(err.Error(), "blob ") {
		t.Fatalf("got %v, want the put error naming the checkpoint and blob", err)
	}
}

// TestTorn damages the newest of three checkpoints in each way a store
// can lose a blob and checks that Read reports it and Latest falls back
// to the previous one.
func TestTorn(t *testing.T) {
	type fixture struct {
		s     Store
		mem   *Mem
		dir   *Dir
		blobs map[string]Blob // of the newest manifest, by role
	}
	file := func(f fixture, role string) string {
		return filepath.Join(f.dir.Path(), "objects", f.blobs[role].Object)
	}
	cases := []struct {
		name   string
		kind   string // "mem" or "dir"
		damage func(t *testing.T, f fixture)
		role   string // the blob named by the error
		want   string
	}{
		{"dropped blob", "mem", func(t *testing.T, f fixture) { f.mem.Drop(f.blobs["part-1"].Object) }, "part-1", "not found"},
		{"corrupted blob", "mem", func(t *testing.T, f fixture) { f.mem.Corrupt(f.blobs["master"].Object) }, "master", "does not match"},
		{"deleted file", "dir", func(t *testing.T, f fixture) {
			if err := os.Remove(file(f, "part-1")); err != nil {
				t.Fatal(err)
			}
		}, "part-1", "not found"},
		{"truncated file", "dir", func(t *testing.T, f fixture) {
			if err := os.Truncate(file(f, "part-1"), 1000); err != nil {
				t.Fatal(err)
			}
		}, "part-1", "1000 bytes, manifest says"},
		{"flipped byte in file", "dir", func(t *testing.T, f fixture) {
			p := file(f, "master")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x10
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "master", "does not match"},
		{"bad manifest", "mem", func(t *testing.T, f fixture) {}, "master", "not a sha256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f fixture
			if tc.kind == "mem" {
				f.mem = NewMem()
				f.s = f.mem
			} else {
				f.dir = openDir(t)
				f.s = f.dir
			}
			var ms []Manifest // newest first
			for it := 1; it <= 3; it++ {
				ms = slices.Insert(ms, 0, writeCheckpoint(t, f.s, "job", it))
			}
			if tc.name == "bad manifest" {
				ms[0].Blobs[0].Object = "nothex"
			}
			f.blobs = map[string]Blob{}
			for _, b := range ms[0].Blobs {
				f.blobs[b.Role] = b
			}
			tc.damage(t, f)

			ctx := context.Background()
			_, err := Read(ctx, f.s, &ms[0])
			if !errors.Is(err, ErrTorn) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.role)) {
				t.Fatalf("read: got %v, want ErrTorn naming blob %q with %q", err, tc.role, tc.want)
			}
			m, blobs, skipped, err := Latest(ctx, f.s, ms)
			if err != nil {
				t.Fatal(err)
			}
			if m.Iteration != 2 {
				t.Fatalf("latest: iteration %d, want 2", m.Iteration)
			}
			if len(skipped) != 1 || !errors.Is(skipped[0], ErrTorn) || !strings.Contains(skipped[0].Error(), "job@3") {
				t.Fatalf("skipped %v, want one torn error for job@3", skipped)
			}
			for _, p := range testParts(2) {
				if !slices.Equal(blobs[p.Role], p.Data) {
					t.Errorf("latest: role %s differs from iteration 2's", p.Role)
				}
			}
		})
	}
}

func TestLatest(t *testing.T) {
	ctx := context.Background()
	s := NewMem()
	m1 := writeCheckpoint(t, s, "job", 1)
	m2 := writeCheckpoint(t, s, "job", 2)
	s.Drop(m1.Blobs[0].Object) // only m1 has this master blob
	s.Drop(m2.Blobs[0].Object)

	cases := []struct {
		name    string
		ctx     context.Context
		cands   []Manifest
		want    int // iteration, or -1 for an error
		skipped int
		errIs   error
	}{
		{"newest good", ctx, []Manifest{writeCheckpoint(t, s, "job", 3), m2, m1}, 3, 0, nil},
		{"all torn", ctx, []Manifest{m2, m1}, -1, 2, ErrNoCheckpoint},
		{"no candidates", ctx, nil, -1, 0, ErrNoCheckpoint},
		{"cancelled", cancelled(), []Manifest{m2, m1}, -1, 0, context.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, blobs, skipped, err := Latest(tc.ctx, s, tc.cands)
			if len(skipped) != tc.skipped {
				t.Errorf("skipped %d (%v), want %d", len(skipped), skipped, tc.skipped)
			}
			if tc.want < 0 {
				if !errors.Is(err, tc.errIs) {
					t.Fatalf("got %v, want %v", err, tc.errIs)
				}
				if tc.errIs == context.Canceled && errors.Is(err, ErrTorn) {
					t.Fatalf("a cancelled read is reported torn: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Iteration != tc.want || len(blobs) != len(m.Blobs) {
				t.Fatalf("got iteration %d with %d blobs, want %d", m.Iteration, len(blobs), tc.want)
			}
		})
	}
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
