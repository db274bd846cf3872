package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrTorn is wrapped by the errors of Read (and reported by Latest) for a
// checkpoint that cannot be used: a blob is missing, has the wrong size or
// does not hash to its name, or the manifest itself is inconsistent.
var ErrTorn = errors.New("torn checkpoint")

// ErrNoCheckpoint is wrapped by the error of Latest when no candidate
// verifies.
var ErrNoCheckpoint = errors.New("no usable checkpoint")

// ioConcurrency bounds the blobs that Write puts and Read gets at once.
const ioConcurrency = 4

// Part is one piece of the state to checkpoint, for example the master's
// state (Role "master") or one worker's ("part-3").
type Part struct {
	Role string
	Data []byte
}

// Write stores each part as a content-hashed blob (skipping objects
// already present) and returns the manifest naming them; it does not
// record the manifest anywhere. The caller fills m's Job, Epoch, Iteration
// and Meta; m.Blobs is replaced (one blob per part, in the order of
// parts), a zero m.Created is set to the current time, and on a sealed
// store m.Seal is set: the manifest must not be edited afterwards. Roles must be
// non-empty and distinct. The blobs are hashed and put concurrently, at
// most 4 at a time; parts with equal content are stored once.
//
// Write must finish before its manifest is recorded (in a manifest file
// or a Raft entry): a manifest recorded earlier may name missing blobs.
func Write(ctx context.Context, s Store, m Manifest, parts []Part) (Manifest, error) {
	seen := make(map[string]bool, len(parts))
	for i, p := range parts {
		switch {
		case p.Role == "":
			return Manifest{}, fmt.Errorf("write checkpoint %s@%d: part %d has no role", m.Job, m.Iteration, i)
		case seen[p.Role]:
			return Manifest{}, fmt.Errorf("write checkpoint %s@%d: role %q twice", m.Job, m.Iteration, p.Role)
		}
		seen[p.Role] = true
	}
	if m.Created.IsZero() {
		m.Created = time.Now().UTC()
	}
	m.Blobs = make([]Blob, len(parts))
	err := forEach(ctx, len(parts), func(_ context.Context, i int) error {
		sum := sha256.Sum256(parts[i].Data)
		m.Blobs[i] = Blob{Role: parts[i].Role, Object: hex.EncodeToString(sum[:]), Size: int64(len(parts[i].Data))}
		return nil
	})
	if err != nil {
		return Manifest{}, fmt.Errorf("write checkpoint %s@%d: %w", m.Job, m.Iteration, err)
	}
	// One Put per distinct object: equal parts must not race on one name.
	var unique []int
	have := map[string]bool{}
	for i, b := range m.Blobs {
		if !have[b.Object] {
			have[b.Object] = true
			unique = append(unique, i)
		}
	}
	err = forEach(ctx, len(unique), func(ctx context.Context, k int) error {
		i := unique[k]
		if err := s.Put(ctx, m.Blobs[i].Object, parts[i].Data); err != nil {
			return fmt.Errorf("blob %q: %w", parts[i].Role, err)
		}
		return nil
	})
	if err != nil {
		return Manifest{}, fmt.Errorf("write checkpoint %s@%d: %w", m.Job, m.Iteration, err)
	}
	m.Seal = nil
	if sl := sealerOf(s); sl != nil {
		m.Seal = sl.sealManifest(&m)
	}
	return m, nil
}

// Read fetches every blob of m, checks its size and sha256, and returns
// them by role; a missing or corrupt blob gives an error wrapping ErrTorn
// naming the blob. An inconsistent manifest (see Manifest.Validate) is
// torn too, and so, on a sealed store, is a manifest whose Seal does not
// open with the job's keys (the error wraps ErrSeal). Other errors (a cancelled ctx, an unreachable store) do not
// wrap ErrTorn: they say nothing about the checkpoint. The blobs are
// fetched concurrently, at most 4 at a time.
func Read(ctx context.Context, s Store, m *Manifest) (map[string][]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("read checkpoint: %w: %w", ErrTorn, err)
	}
	if err := sealerOf(s).openManifest(m); err != nil {
		return nil, fmt.Errorf("read checkpoint: %w: %w", ErrTorn, err)
	}
	data := make([][]byte, len(m.Blobs))
	err := forEach(ctx, len(m.Blobs), func(ctx context.Context, i int) error {
		b := &m.Blobs[i]
		got, err := s.Get(ctx, b.Object)
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("blob %q (object %.12s): %w: %w", b.Role, b.Object, ErrTorn, err)
		}
		if err != nil {
			return fmt.Errorf("blob %q: %w", b.Role, err)
		}
		if int64(len(got)) != b.Size {
			if looksSealed(got) {
				return fmt.Errorf("blob %q (object %.12s): %w: %w: the blob is sealed with a job key: resume with the job's key", b.Role, b.Object, ErrTorn, ErrSeal)
			}
			return fmt.Errorf("blob %q (object %.12s): %w: %d bytes, manifest says %d", b.Role, b.Object, ErrTorn, len(got), b.Size)
		}
		sum := sha256.Sum256(got)
		if hex.EncodeToString(sum[:]) != b.Object {
			return fmt.Errorf("blob %q (object %.12s): %w: content does not match its sha256", b.Role, b.Object, ErrTorn)
		}
		data[i] = got
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s@%d: %w", m.Job, m.Iteration, err)
	}
	out := make(map[string][]byte, len(m.Blobs))
	for i, b := range m.Blobs {
		out[b.Role] = data[i]
	}
	return out, nil
}

// Latest returns the first of candidates (give them newest first, as
// Dir.Manifests does) whose blobs all verify, with its blobs by role.
// Torn candidates are skipped; skipped holds one error (wrapping ErrTorn,
// naming the checkpoint and the blob) per candidate skipped, in order, so
// the caller can log them. When no candidate verifies, err wraps
// ErrNoCheckpoint. An error that says nothing about a checkpoint (a
// cancelled ctx, an unreachable store) ends the search: Latest returns it
// rather than fall back to an older checkpoint.
func Latest(ctx context.Context, s Store, candidates []Manifest) (m Manifest, blobs map[string][]byte, skipped []error, err error) {
	for i := range candidates {
		got, rerr := Read(ctx, s, &candidates[i])
		if rerr == nil {
			return candidates[i], got, skipped, nil
		}
		if !errors.Is(rerr, ErrTorn) {
			return Manifest{}, nil, skipped, fmt.Errorf("latest checkpoint: %w", rerr)
		}
		skipped = append(skipped, rerr)
	}
	return Manifest{}, nil, skipped, fmt.Errorf("%w: %d candidates, %d torn", ErrNoCheckpoint, len(candidates), len(skipped))
}

// forEach calls f(ctx, i) for i in [0, n) on at most ioConcurrency
// goroutines and returns the first error; that error cancels the ctx
// passed to the other calls and stops the ones not yet started. A
// cancelled parent ctx gives its error.
func forEach(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(ioConcurrency, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}
