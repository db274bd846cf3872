package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// Manifests are sealed as blobs are: on a sealed store, Write seals the
// manifest, which reads back after a JSON round trip (a manifest file, a
// Raft entry), and Read refuses as torn (wrapping ErrSeal) a manifest
// whose iteration, epoch, Meta (the best dual and primal), blobs or
// creation time were edited, one without a seal (written without the
// key, naming the job's sealed blobs), one sealed with another key, and
// one with a truncated seal; Latest falls back past a forged newer
// manifest to the intact one. An unsealed store ignores the seal.
func TestSealedManifests(t *testing.T) {
	ctx := context.Background()
	eachSealedStore(t, func(t *testing.T, raw, st Store, old, m Manifest, other *Sealer) {
		if len(m.Seal) != manifestSealLen {
			t.Fatalf("a sealed store's manifest has a seal of %d bytes", len(m.Seal))
		}
		if d, ok := st.(*Dir); ok { // as listed from its manifest file
			ms, err := d.Manifests("job")
			if err != nil || len(ms) != 2 {
				t.Fatalf("manifests: %d, %v", len(ms), err)
			}
			m = ms[0]
		}
		round := jsonRoundTrip(t, m)
		if _, err := Read(ctx, st, &round); err != nil {
			t.Fatalf("a sealed manifest after a JSON round trip: %v", err)
		}
		// The same blobs named by a manifest written without the key.
		unsealed := m
		unsealed.Seal = nil
		edits := []struct {
			what, want string
			m          Manifest
		}{
			{"no seal", "not sealed", unsealed},
			{"a later iteration", "does not open", edited(m, func(f *Manifest) { f.Iteration = 9 })},
			{"another epoch", "does not open", edited(m, func(f *Manifest) { f.Epoch = 7 })},
			{"a better dual in Meta", "does not open", edited(m, func(f *Manifest) { f.Meta = json.RawMessage(`{"dual":1.25}`) })},
			{"another creation time", "does not open", edited(m, func(f *Manifest) { f.Created = f.Created.Add(1) })},
			{"the roles of two blobs swapped", "does not open", edited(m, func(f *Manifest) {
				f.Blobs[1].Role, f.Blobs[2].Role = f.Blobs[2].Role, f.Blobs[1].Role
			})},
			{"an older checkpoint's blob", "does not open", edited(m, func(f *Manifest) { f.Blobs[0] = old.Blobs[0] })},
			{"a truncated seal", "a seal of", edited(m, func(f *Manifest) { f.Seal = f.Seal[:10] })},
			{"another key's seal", "another key", edited(m, func(f *Manifest) { f.Seal = other.sealManifest(f) })},
		}
		for _, e := range edits {
			_, err := Read(ctx, st, &e.m)
			if !errors.Is(err, ErrTorn) || !errors.Is(err, ErrSeal) || !strings.Contains(err.Error(), e.want) {
				t.Errorf("%s: %v, want a torn checkpoint, ErrSeal, %q", e.what, err, e.want)
			}
			back, _, skipped, err := Latest(ctx, st, []Manifest{e.m, old})
			if err != nil || back.Iteration != 1 || len(skipped) != 1 {
				t.Errorf("%s: latest gives iteration %d, skipped %v, %v; want 1 after skipping the forged one", e.what, back.Iteration, skipped, err)
			}
		}
		// An unsealed reader of the same store goes on to the blobs
		// (and is told to use the key there), whatever the seal.
		if _, err := Read(ctx, raw, &unsealed); !errors.Is(err, ErrSeal) || !strings.Contains(err.Error(), "resume with the job's key") {
			t.Errorf("an unsealed reader: %v", err)
		}
	})
}

// edited returns a deep copy of m changed by f.
func edited(m Manifest, f func(*Manifest)) Manifest {
	c := m
	c.Blobs = slices.Clone(m.Blobs)
	c.Meta = slices.Clone(m.Meta)
	c.Seal = slices.Clone(m.Seal)
	f(&c)
	return c
}

// eachSealedStore runs f in a subtest per kind of store, with raw the
// store, st its view sealed by a test key, old and m the checkpoints of
// sealedCheckpoints written through st, and other a sealer of another key.
func eachSealedStore(t *testing.T, f func(t *testing.T, raw, st Store, old, m Manifest, other *Sealer)) {
	key, other := testSealer(t, 1), testSealer(t, 2)
	for _, k := range storeKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			raw := k.open(t)
			st, old, m := sealedCheckpoints(t, raw, key)
			f(t, raw, st, old, m, other)
		})
	}
}

// jsonRoundTrip returns m after a JSON round trip, as a manifest file or
// a Raft entry holds it.
func jsonRoundTrip(t *testing.T, m Manifest) Manifest {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Manifest
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// sealedCheckpoints writes checkpoints of iterations 1 (old) and 2 (m) of
// "job" through a view of raw sealed by key, and saves their manifests
// when the view is a Dir (which checks the sealed objects' sizes).
func sealedCheckpoints(t *testing.T, raw Store, key *Sealer) (st Store, old, m Manifest) {
	t.Helper()
	st = sealedView(t, raw, key)
	old = writeCheckpoint(t, st, "job", 1)
	m = writeCheckpoint(t, st, "job", 2)
	if d, ok := st.(*Dir); ok {
		for _, mm := range []Manifest{old, m} {
			if err := d.SaveManifest(context.Background(), &mm); err != nil {
				t.Fatal(err)
			}
		}
	}
	return st, old, m
}
