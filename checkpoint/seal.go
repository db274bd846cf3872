package checkpoint

import (
	"bytes"
	"context"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ddrun/ddrun/transport"
)

// A sealed blob is stored as sealMagic, the id of the key that sealed it
// (a byte of a hash of the key: which of the keys to try), a random
// 12-byte nonce, and the blob's bytes encrypted and authenticated with
// AES-256-GCM under a key derived from the job key (HKDF-SHA256, info
// "ddrun checkpoint blob v1"), with the magic, the key id and the object
// name as additional data: a blob moved to another name, edited, or
// written by someone without the key does not open.
const sealMagic = "DDBSEAL1"

// sealHeader is the length of what precedes the ciphertext.
const sealHeader = len(sealMagic) + 1 + 12

// ErrSeal is wrapped (with ErrCorrupt) by the error of a sealed store's
// Get for a blob that does not open with the job's keys: written without
// a key, with another job's key, or tampered with.
var ErrSeal = errors.New("checkpoint blob not sealed with this job's key")

// minSealKey is the shortest job key a Sealer takes.
const minSealKey = 16

// Sealer seals checkpoint blobs with a job's keys: the first seals, any
// opens (a key being rotated in). Its zero value is not usable; a nil
// *Sealer seals nothing (Seal and Dir.Seal accept it).
type Sealer struct {
	keys []sealerKey
}

type sealerKey struct {
	id   byte
	aead cipher.AEAD
	mac  []byte // the manifests' HMAC key
}

// NewSealer derives the blob keys of the job keys (each at least 16
// bytes).
func NewSealer(keys [][]byte) (*Sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("checkpoint: sealing without a key")
	}
	s := &Sealer{}
	for i, k := range keys {
		if len(k) < minSealKey {
			return nil, fmt.Errorf("checkpoint: key %d has %d bytes, fewer than %d", i+1, len(k), minSealKey)
		}
		a, err := transport.AEAD(k, "ddrun checkpoint blob v1")
		if err != nil {
			return nil, err
		}
		mk, err := hkdf.Key(sha256.New, k, nil, "ddrun checkpoint manifest v1", 32)
		if err != nil {
			return nil, err
		}
		id := sha256.Sum256(append([]byte("ddrun checkpoint key id "), k...))
		s.keys = append(s.keys, sealerKey{id: id[0], aead: a, mac: mk})
	}
	return s, nil
}

func sealAD(id byte, name string) []byte {
	return append(append([]byte(sealMagic), id), name...)
}

// seal returns data sealed for the object name (data itself with a nil s).
func (s *Sealer) seal(name string, data []byte) ([]byte, error) {
	if s == nil {
		return data, nil
	}
	k := s.keys[0]
	out := make([]byte, sealHeader, sealHeader+len(data)+k.aead.Overhead())
	copy(out, sealMagic)
	out[len(sealMagic)] = k.id
	if _, err := rand.Read(out[len(sealMagic)+1 : sealHeader]); err != nil {
		return nil, fmt.Errorf("put %s: sealing: %w", name, err)
	}
	return k.aead.Seal(out, out[len(sealMagic)+1:sealHeader], data, sealAD(k.id, name)), nil
}

// open returns the blob stored under name opened (b itself with a nil s);
// a blob that does not open is an error wrapping ErrSeal and ErrCorrupt.
func (s *Sealer) open(name string, b []byte) ([]byte, error) {
	if s == nil {
		return b, nil
	}
	if len(b) < sealHeader || !bytes.HasPrefix(b, []byte(sealMagic)) {
		return nil, fmt.Errorf("get %s: %w: %w: the blob is not sealed (written without a job key)", name, ErrCorrupt, ErrSeal)
	}
	id := b[len(sealMagic)]
	tried := false // a key of that id was tried: ids are one byte, so every such key is
	for _, k := range s.keys {
		if k.id != id {
			continue
		}
		tried = true
		if plain, err := k.aead.Open(nil, b[len(sealMagic)+1:sealHeader], b[sealHeader:], sealAD(id, name)); err == nil {
			return plain, nil
		}
	}
	if tried {
		return nil, fmt.Errorf("get %s: %w: %w: the blob does not open with the job key (sealed with another key whose 1-byte id is the same, tampered with, or moved from another object)", name, ErrCorrupt, ErrSeal)
	}
	return nil, fmt.Errorf("get %s: %w: %w: the blob was sealed with another key (key id %02x)", name, ErrCorrupt, ErrSeal, id)
}

// overhead is how many bytes sealing adds to a blob (0 with a nil s).
func (s *Sealer) overhead() int64 {
	if s == nil {
		return 0
	}
	return int64(sealHeader + s.keys[0].aead.Overhead())
}

// looksSealed reports whether b is a sealed blob (for the error of an
// unsealed Read that meets one).
func looksSealed(b []byte) bool {
	return len(b) >= sealHeader && bytes.HasPrefix(b, []byte(sealMagic))
}

// Seal returns st with its blobs sealed by s (st itself with a nil s):
// Put stores them sealed, Get opens them and refuses, with an error
// wrapping ErrSeal and ErrCorrupt, one that does not open. For ObjectStore
// and Mem; a Dir seals with Dir.Seal, keeping its manifests.
func Seal(st Store, s *Sealer) Store {
	if s == nil {
		return st
	}
	return &sealedStore{Store: st, s: s}
}

type sealedStore struct {
	Store
	s *Sealer
}

func (t *sealedStore) Put(ctx context.Context, name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	b, err := t.s.seal(name, data)
	if err != nil {
		return err
	}
	return t.Store.Put(ctx, name, b)
}

func (t *sealedStore) Get(ctx context.Context, name string) ([]byte, error) {
	b, err := t.Store.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return t.s.open(name, b)
}

// A sealed manifest carries in Manifest.Seal the id of the key that
// sealed it and an HMAC-SHA256, under a key derived from the job key
// (HKDF-SHA256, info "ddrun checkpoint manifest v1"), of everything else
// it says (manifestMAC): a manifest whose iteration, epoch, Meta (the
// best dual and primal) or blobs were edited, or that someone without the
// key wrote (naming sealed blobs of older checkpoints, say), does not
// open, and a sealed store's Read refuses it as torn.
const manifestSealLen = 1 + sha256.Size

// sealManifest returns m's seal.
func (s *Sealer) sealManifest(m *Manifest) []byte {
	k := s.keys[0]
	return append([]byte{k.id}, manifestMAC(k.mac, m)...)
}

// openManifest checks m's seal (nil with a nil s); an error wraps ErrSeal.
func (s *Sealer) openManifest(m *Manifest) error {
	if s == nil {
		return nil
	}
	if len(m.Seal) == 0 {
		return fmt.Errorf("manifest %s@%d: %w: the manifest is not sealed (written without a job key)", m.Job, m.Iteration, ErrSeal)
	}
	if len(m.Seal) != manifestSealLen {
		return fmt.Errorf("manifest %s@%d: %w: a seal of %d bytes, want %d", m.Job, m.Iteration, ErrSeal, len(m.Seal), manifestSealLen)
	}
	tried := false // every key of that id is tried (ids are one byte)
	for _, k := range s.keys {
		if k.id != m.Seal[0] {
			continue
		}
		tried = true
		if hmac.Equal(m.Seal[1:], manifestMAC(k.mac, m)) {
			return nil
		}
	}
	if tried {
		return fmt.Errorf("manifest %s@%d: %w: the manifest does not open with the job key (edited, or sealed with another key whose 1-byte id is the same)", m.Job, m.Iteration, ErrSeal)
	}
	return fmt.Errorf("manifest %s@%d: %w: the manifest was sealed with another key (key id %02x)", m.Job, m.Iteration, ErrSeal, m.Seal[0])
}

// manifestMAC is the HMAC under key of m's fields but Seal, each
// length-prefixed: Job, Epoch, Iteration, Created (Unix nanoseconds),
// Meta (compacted, as a JSON round trip leaves it), then each blob's
// role, object and size.
func manifestMAC(key []byte, m *Manifest) []byte {
	h := hmac.New(sha256.New, key)
	var n [8]byte
	num := func(v uint64) {
		binary.BigEndian.PutUint64(n[:], v)
		h.Write(n[:])
	}
	str := func(b []byte) {
		num(uint64(len(b)))
		h.Write(b)
	}
	str([]byte("ddrun checkpoint manifest"))
	str([]byte(m.Job))
	num(m.Epoch)
	num(uint64(int64(m.Iteration)))
	num(uint64(m.Created.UnixNano()))
	meta := []byte(m.Meta)
	var c bytes.Buffer
	if json.Compact(&c, meta) == nil {
		meta = c.Bytes()
	}
	str(meta)
	num(uint64(len(m.Blobs)))
	for _, b := range m.Blobs {
		str([]byte(b.Role))
		str([]byte(b.Object))
		num(uint64(b.Size))
	}
	return h.Sum(nil)
}

// sealerOf returns the Sealer of a sealed store (Seal's, or a Dir's), nil
// for an unsealed one.
func sealerOf(st Store) *Sealer {
	switch s := st.(type) {
	case *sealedStore:
		return s.s
	case *Dir:
		return s.seal
	}
	return nil
}
