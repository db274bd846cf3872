package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"testing"
)

// testSealer seals with a key of 32 bytes of seed.
func testSealer(t *testing.T, seed byte) *Sealer {
	t.Helper()
	return mustSealer(t, bytes.Repeat([]byte{seed}, 32))
}

// mustSealer is NewSealer(keys) for a test.
func mustSealer(t *testing.T, keys ...[]byte) *Sealer {
	t.Helper()
	s, err := NewSealer(keys)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sealedView returns a store over the same objects as raw, sealed by s:
// a Dir of the same directory (Dir.Seal), or Seal's wrapper.
func sealedView(t *testing.T, raw Store, s *Sealer) Store {
	if d, ok := raw.(*Dir); ok {
		sd, err := OpenDir(d.Path())
		if err != nil {
			t.Fatal(err)
		}
		sd.Seal(s)
		return sd
	}
	return Seal(raw, s)
}

// Checkpoints sealed with the job key read back with it, in every store;
// what the store holds is not the state; a blob that is tampered with,
// moved to another object, written without the key (a foreign, unsealed
// blob) or sealed with another key is refused on resume with an error
// that says so (wrapping ErrSeal and ErrTorn), and Latest falls back past
// it; an unsealed reader of sealed blobs is told to use the key.
func TestSealedCheckpoints(t *testing.T) {
	ctx := context.Background()
	eachSealedStore(t, func(t *testing.T, raw, st Store, old, m Manifest, other *Sealer) {
		got, err := Read(ctx, st, &m)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range testParts(2) {
			if !bytes.Equal(got[p.Role], p.Data) {
				t.Fatalf("%s: read back differs", p.Role)
			}
		}
		master := m.Blobs[0] // changes with the iteration: not shared with old
		stored, err := raw.Get(ctx, master.Object)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(stored, testParts(2)[0].Data[:64]) || !looksSealed(stored) {
			t.Fatal("the store holds the state in clear")
		}
		refused := func(what string, st Store, want string) {
			t.Helper()
			_, err := Read(ctx, st, &m)
			if !errors.Is(err, ErrSeal) || !errors.Is(err, ErrTorn) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want a torn checkpoint, ErrSeal, %q", what, err, want)
			}
		}
		refused("another key", sealedView(t, raw, other), "another key")
		refused("read without the key", raw, "resume with the job's key")
		replace := func(data []byte) {
			t.Helper()
			if err := raw.Delete(ctx, master.Object); err != nil {
				t.Fatal(err)
			}
			if err := raw.Put(ctx, master.Object, data); err != nil {
				t.Fatal(err)
			}
		}
		tampered := slices.Clone(stored)
		tampered[len(tampered)-20] ^= 1
		replace(tampered)
		refused("a flipped bit", st, "does not open")
		moved, err := raw.Get(ctx, m.Blobs[2].Object) // part-1's sealed blob under the master's name
		if err != nil {
			t.Fatal(err)
		}
		replace(moved)
		refused("a blob moved from another object", st, "does not open")
		replace(testParts(2)[0].Data) // what an unsealed job would have written
		refused("a foreign unsealed blob", st, "not sealed")
		// Resume falls back past the refused checkpoint to the intact one.
		back, _, skipped, err := Latest(ctx, st, []Manifest{m, old})
		if err != nil || back.Iteration != 1 || len(skipped) != 1 || !errors.Is(skipped[0], ErrSeal) {
			t.Errorf("latest: iteration %d, skipped %v, %v; want 1 after skipping the refused one", back.Iteration, skipped, err)
		}
	})
}

// A store sealed with rotated keys opens blobs sealed with any of them
// and seals with the first.
func TestSealerRotation(t *testing.T) {
	ctx := context.Background()
	a, b := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	oldKey, both := mustSealer(t, a), mustSealer(t, b, a)
	raw := NewMem()
	m := writeCheckpoint(t, Seal(raw, oldKey), "job", 1)
	if _, err := Read(ctx, Seal(raw, both), &m); err != nil {
		t.Fatalf("the old key's blobs under the rotated keys: %v", err)
	}
	if _, err := NewSealer([][]byte{[]byte("short")}); err == nil {
		t.Error("a 5-byte key accepted")
	}
	if _, err := NewSealer(nil); err == nil {
		t.Error("no key accepted")
	}
}

// Key ids are one byte: two rotated keys share one in 1 of 256 cases, and
// a blob or manifest sealed with the second must still open (every key of
// the id is tried), where a tampered one still does not.
func TestSealKeyIDCollision(t *testing.T) {
	id := func(k []byte) byte { return byte(sha256.Sum256(append([]byte("ddrun checkpoint key id "), k...))[0]) }
	a := bytes.Repeat([]byte{1}, 32)
	var b []byte
	for i := 0; b == nil; i++ {
		k := append(bytes.Repeat([]byte{2}, 28), byte(i), byte(i>>8), byte(i>>16), 0)
		if id(k) == id(a) {
			b = k
		}
	}
	only, both := mustSealer(t, b), mustSealer(t, a, b)
	sealed, err := only.seal("obj", []byte("state"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := both.open("obj", sealed); err != nil || string(got) != "state" {
		t.Fatalf("blob sealed with the second key of a shared id: %q, %v", got, err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := both.open("obj", sealed); err == nil {
		t.Fatal("a tampered blob opened")
	}
	m := &Manifest{Job: "j", Iteration: 3}
	m.Seal = only.sealManifest(m)
	if err := both.openManifest(m); err != nil {
		t.Fatalf("manifest sealed with the second key of a shared id: %v", err)
	}
	m.Iteration = 4
	if err := both.openManifest(m); err == nil {
		t.Fatal("an edited manifest opened")
	}
}
