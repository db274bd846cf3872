package transport

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ddrun/ddrun/internal/ratelimit"
)

// A sealed message is
//
//	"DDS" 0x01 | key id (1 byte) | nonce (12 bytes) | AES-256-GCM(body) with its 16-byte tag
//
// The AES key is derived per subject from the shared secret,
// HKDF-SHA256(secret, info "ddrun seal v1 " + subject), and the first 17
// bytes and the subject are the additional data: a message opens only on
// the subject it was sealed for, with a key that knows the secret. The key
// id is the first byte of SHA-256("ddrun key id " + secret); it picks the
// secret among several during a rotation (a collision only costs a second
// attempt).
const (
	sealMagic   = "DDS\x01"
	sealNonce   = 12
	sealHeader  = len(sealMagic) + 1 + sealNonce
	sealTag     = 16
	SealedExtra = sealHeader + sealTag // bytes a sealed message adds

	// MinKeyLen and MaxKeyLen bound a secret's length in bytes.
	MinKeyLen, MaxKeyLen = 16, 64

	// sealCacheMax bounds the derived keys kept per secret: a coordinator
	// uses four subjects per worker and job, a worker four per job.
	sealCacheMax = 4096
)

// ErrNotAuthentic is the error of a message that does not open: not
// sealed, sealed with another secret or for another subject, or altered.
var ErrNotAuthentic = errors.New("transport: message not authentic")

// SealOptions configures Sealed.
type SealOptions struct {
	// Keys are the shared secrets (MinKeyLen to MaxKeyLen random bytes).
	// The first seals what is published; each opens what arrives, so that
	// a secret can be rotated: add the new one second, then first, then
	// drop the old one.
	Keys [][]byte
	// Logger receives a warning when messages are dropped as not
	// authentic, at most one per WarnEvery (default 10s) with the count
	// since the last; nil logs nothing (Stats still counts).
	Logger    *slog.Logger
	WarnEvery time.Duration
}

// SealStats counts a Sealed transport's messages.
type SealStats struct {
	Sealed, Opened, Rejected uint64
}

// Sealed wraps a Transport with authenticated encryption (AES-256-GCM):
// what it publishes can be read and what it receives is accepted only by
// holders of the shared secret. Messages that do not open are dropped and
// counted (Stats), with a rate-limited warning. It keeps message contents
// secret and unforgeable, not the subjects, their sizes or timing, and it
// does not detect a replayed message on the subject it was sealed for (the
// protocol on top drops duplicates and stale messages; see Filter).
//
// Its Close ends what was done through it and leaves the inner transport
// open: that belongs to the caller.
type Sealed struct {
	wrapper
	keys  []*sealKey
	ids   *idGen // ids of the chunked messages it publishes
	log   *slog.Logger
	warns ratelimit.Repeats[struct{}]

	sealed, opened, rejected atomic.Uint64
}

var _ Transport = (*Sealed)(nil)

// IsSealed reports whether tr seals its messages (a job key): what a
// receiver gets from it is authentic.
func IsSealed(tr Transport) bool {
	_, ok := tr.(*Sealed)
	return ok
}

// sealKey is one secret and the AEADs derived from it, per subject.
type sealKey struct {
	secret []byte
	id     byte
	mu     sync.Mutex
	aeads  map[string]cipher.AEAD
}

// NewSealed wraps inner. It fails without a key or with a key of the wrong
// length.
func NewSealed(inner Transport, opts SealOptions) (*Sealed, error) {
	if len(opts.Keys) == 0 {
		return nil, errors.New("transport: sealed: no key")
	}
	s := &Sealed{wrapper: newWrapper(inner), ids: newIDGen(), log: opts.Logger, warns: ratelimit.Repeats[struct{}]{Every: opts.WarnEvery}}
	if s.warns.Every <= 0 {
		s.warns.Every = 10 * time.Second
	}
	for i, k := range opts.Keys {
		if len(k) < MinKeyLen || len(k) > MaxKeyLen {
			return nil, fmt.Errorf("transport: sealed: key %d has %d bytes, not %d to %d", i+1, len(k), MinKeyLen, MaxKeyLen)
		}
		s.keys = append(s.keys, &sealKey{secret: append([]byte(nil), k...), id: KeyID(k), aeads: make(map[string]cipher.AEAD)})
	}
	return s, nil
}

// KeyID is the byte that names secret in sealed messages; logs may show
// it to tell keys apart without showing them.
func KeyID(secret []byte) byte {
	h := sha256.Sum256(append([]byte("ddrun key id "), secret...))
	return h[0]
}

// aead returns the AEAD for subject, deriving it on first use.
func (k *sealKey) aead(subject string) (cipher.AEAD, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if a, ok := k.aeads[subject]; ok {
		return a, nil
	}
	a, err := AEAD(k.secret, "ddrun seal v1 "+subject)
	if err != nil {
		return nil, err
	}
	if len(k.aeads) >= sealCacheMax {
		clear(k.aeads)
	}
	k.aeads[subject] = a
	return a, nil
}

// AEAD is AES-256-GCM under the 32-byte key that HKDF-SHA256 (RFC 5869,
// no salt) derives from secret for info: a sealed transport's per subject,
// and a checkpoint blob's per job key.
func AEAD(secret []byte, info string) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, secret, nil, info, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealAD is the additional data, the message's first bytes and its
// subject, written into dst's memory when it is large enough.
func sealAD(dst, prefix []byte, subject string) []byte {
	return append(append(dst[:0], prefix...), subject...)
}

// sealBuf is the memory that sealTo and openTo reuse from one message to
// the next (one goroutine's: a publisher's frames, a subscription's).
type sealBuf struct{ out, ad []byte }

// Seal returns data sealed for subject with the first key.
func (s *Sealed) Seal(subject string, data []byte) ([]byte, error) {
	return s.sealTo(&sealBuf{}, subject, data)
}

// sealTo is Seal writing into b's memory when it is large enough (the
// result is left in b.out for the next call to reuse).
func (s *Sealed) sealTo(b *sealBuf, subject string, data []byte) ([]byte, error) {
	k := s.keys[0]
	a, err := k.aead(subject)
	if err != nil {
		return nil, err
	}
	out := b.out[:0]
	if cap(out) < sealHeader+len(data)+sealTag {
		out = make([]byte, 0, sealHeader+len(data)+sealTag)
	}
	out = out[:sealHeader]
	copy(out, sealMagic)
	out[len(sealMagic)] = k.id
	if _, err := rand.Read(out[len(sealMagic)+1 : sealHeader]); err != nil {
		return nil, err
	}
	b.ad = sealAD(b.ad, out[:sealHeader], subject)
	out = a.Seal(out, out[len(sealMagic)+1:sealHeader], data, b.ad)
	b.out = out
	s.sealed.Add(1)
	return out, nil
}

// Open returns the body of a message sealed for subject, or an error
// wrapping ErrNotAuthentic.
func (s *Sealed) Open(subject string, msg []byte) ([]byte, error) {
	return s.openTo(&sealBuf{}, subject, msg)
}

// openTo is Open writing the body into b.out's memory when it is large
// enough (a caller that reuses the body's memory puts it back in b.out).
func (s *Sealed) openTo(b *sealBuf, subject string, msg []byte) ([]byte, error) {
	if len(msg) < sealHeader+sealTag || string(msg[:len(sealMagic)]) != sealMagic {
		return nil, fmt.Errorf("%w: not sealed", ErrNotAuthentic)
	}
	id := msg[len(sealMagic)]
	known := false
	for _, k := range s.keys {
		if k.id != id {
			continue
		}
		known = true
		a, err := k.aead(subject)
		if err != nil {
			return nil, err
		}
		b.ad = sealAD(b.ad, msg[:sealHeader], subject)
		body, err := a.Open(b.out[:0], msg[len(sealMagic)+1:sealHeader], msg[sealHeader:], b.ad)
		if err == nil {
			s.opened.Add(1)
			return body, nil
		}
	}
	if !known {
		return nil, fmt.Errorf("%w: unknown key id %02x", ErrNotAuthentic, id)
	}
	return nil, fmt.Errorf("%w: does not open with key %02x", ErrNotAuthentic, id)
}

// Publish implements Transport: it publishes data sealed. Over a
// transport that chunks long messages (NATS), a message that would not fit
// its MaxPayload once sealed, or that starts like a chunk frame, is cut
// into chunk frames first and each frame is sealed on its own, so that a
// receiver authenticates every frame before it buffers anything.
func (s *Sealed) Publish(ctx context.Context, subject string, data []byte) error {
	if s.isClosed() {
		return ErrClosed
	}
	if err := checkSubject(subject, false); err != nil {
		return err
	}
	if f, ok := s.inner.(framer); ok {
		if max := f.MaxPayload() - SealedExtra; len(data) > max || IsChunk(data) {
			return s.publishFrames(ctx, subject, data, max)
		}
	}
	msg, err := s.Seal(subject, data)
	if err != nil {
		return err
	}
	return s.inner.Publish(ctx, subject, msg)
}

// publishFrames publishes data as chunk frames of at most maxFrame bytes,
// each sealed (one buffer for all of them: the inner transport does not
// retain what it publishes).
func (s *Sealed) publishFrames(ctx context.Context, subject string, data []byte, maxFrame int) error {
	var buf sealBuf
	return SplitChunks(s.ids.next(), data, maxFrame, func(frame []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		msg, err := s.sealTo(&buf, subject, frame)
		if err != nil {
			return err
		}
		return s.inner.Publish(ctx, subject, msg)
	})
}

// Subscribe implements Transport: h sees the messages that open, opened.
// Over a transport that chunks (NATS), the frames of a chunked message
// are opened one by one as they arrive and only those that open are
// reassembled (NATSOptions.Reassembly bounds them, within the inner
// transport's budget); a frame that does not open costs nothing but its
// decryption attempt.
func (s *Sealed) Subscribe(subject string, h Handler) (Subscription, error) {
	if h == nil {
		panic("transport: nil handler")
	}
	f, ok := s.inner.(framer)
	if !ok {
		return s.subscribe(subject, func(subject string, data []byte) {
			body, err := s.Open(subject, data)
			if err != nil {
				s.reject(subject, err)
				return
			}
			h(subject, body)
		})
	}
	chunks := newReassembly(subject, f.reassemblyOptions(), s.reportChunk)
	var buf sealBuf // the handler's calls are sequential
	return s.subscribeWith(f.subscribeFrames, subject, func(subject string, data []byte) {
		body, err := s.openTo(&buf, subject, data)
		if err != nil {
			s.reject(subject, err)
			return
		}
		if IsChunk(body) {
			buf.out = body // the Reassembler copies what it keeps
			if whole := chunks.add(subject, body); whole != nil {
				h(subject, whole)
			}
			return
		}
		buf.out = nil // body is h's now
		h(subject, body)
	}, chunks.stop)
}

// reportChunk logs a chunk problem of an authentic frame (chunks'
// reports are already rate-limited).
func (s *Sealed) reportChunk(err error) {
	if s.log != nil {
		s.log.Warn("dropped chunk frames", "err", err)
	}
}

// reject counts a message that did not open and warns, at most once per
// WarnEvery.
func (s *Sealed) reject(subject string, err error) {
	s.rejected.Add(1)
	if s.log == nil {
		return
	}
	n, ok := s.warns.Admit(struct{}{})
	if !ok {
		return
	}
	s.log.Warn("dropped messages that are not authentic (wrong or missing job key?)", "dropped", n+1, "subject", subject, "err", err)
}

// Flush implements Transport.
func (s *Sealed) Flush(ctx context.Context) error { return s.flush(ctx) }

// Close ends the subscriptions made through s and waits for their
// handlers; the inner transport stays open.
func (s *Sealed) Close() error {
	s.close()
	return nil
}

// Stats returns the counts so far.
func (s *Sealed) Stats() SealStats {
	return SealStats{Sealed: s.sealed.Load(), Opened: s.opened.Load(), Rejected: s.rejected.Load()}
}

// ParseKeys reads secrets written as text: hex or base64 (standard or URL
// alphabet, padded or not), several separated by commas or white space
// (the first seals, all open: see SealOptions.Keys).
func ParseKeys(text string) ([][]byte, error) {
	fields := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if len(fields) == 0 {
		return nil, errors.New("no key")
	}
	keys := make([][]byte, 0, len(fields))
	for i, f := range fields {
		k, err := parseKey(f)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		if len(k) < MinKeyLen || len(k) > MaxKeyLen {
			return nil, fmt.Errorf("key %d: %d bytes, not %d to %d (e.g. openssl rand -hex 32)", i+1, len(k), MinKeyLen, MaxKeyLen)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func parseKey(f string) ([]byte, error) {
	if k, err := hex.DecodeString(f); err == nil {
		return k, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(f); err == nil {
			return k, nil
		}
	}
	return nil, errors.New("neither hex nor base64")
}
