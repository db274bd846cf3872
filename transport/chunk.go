package transport

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// ChunkHeaderLen is the length of a chunk frame's header. A message longer
// than a connection's maximum payload travels as numbered chunk frames,
// each at most that long:
//
//	offset size
//	 0      4   "DDC" 0x01: magic and wire version
//	 4      1   flags, 0
//	 5      3   zero
//	 8     16   message id: 8 random bytes per sender + 8-byte counter
//	24      4   index of this chunk, 0 <= index < total     (big-endian)
//	28      4   total number of chunks                       (big-endian)
//	32      4   chunk size: payload bytes of every chunk but the last
//	36      8   size of the whole message                   (big-endian)
//	44      .   payload: bytes [index*chunk size, ...) of the message
//
// The header is redundant on purpose: total must equal
// max(1, ceil(size/chunk size)) and the payload length must be exactly what
// index, chunk size and size imply, so a receiver can check every frame on
// its own and place it without waiting for its predecessors. A Reassembler
// puts the chunks back together; it allocates as the bytes arrive, never
// what a header merely claims. Under a job key (Sealed) the frames are
// the sealed ones' bodies: each is opened before a Reassembler sees it.
const ChunkHeaderLen = 44

// maxChunkedSize bounds the size field so offset arithmetic cannot overflow.
const maxChunkedSize = 1 << 48

var chunkMagic = [4]byte{'D', 'D', 'C', Version}

// MsgID identifies one chunked message among all senders.
type MsgID [16]byte

func (id MsgID) String() string { return fmt.Sprintf("%x", id[:]) }

// IsChunk reports whether data starts like a chunk frame (of any version).
func IsChunk(data []byte) bool {
	return len(data) >= 3 && data[0] == chunkMagic[0] && data[1] == chunkMagic[1] && data[2] == chunkMagic[2]
}

// idGen hands out MsgIDs: a random per-sender prefix and a counter.
type idGen struct {
	prefix [8]byte
	n      atomic.Uint64
}

func newIDGen() *idGen {
	g := new(idGen)
	_, _ = rand.Read(g.prefix[:]) // crypto/rand.Read never fails (Go 1.24+)
	return g
}

func (g *idGen) next() MsgID {
	var id MsgID
	copy(id[:8], g.prefix[:])
	binary.BigEndian.PutUint64(id[8:], g.n.Add(1))
	return id
}

// ChunkCount is the number of frames SplitChunks makes of n bytes.
func ChunkCount(n, maxFrame int) int {
	cs := maxFrame - ChunkHeaderLen
	if cs <= 0 {
		return 0
	}
	return max(1, (n+cs-1)/cs)
}

// SplitChunks cuts data into chunk frames of at most maxFrame bytes, header
// included, and calls fn with each in order, stopping at fn's first error.
// The frame is reused between calls: fn must copy it to keep it.
func SplitChunks(id MsgID, data []byte, maxFrame int, fn func(frame []byte) error) error {
	cs := maxFrame - ChunkHeaderLen
	if cs <= 0 {
		return fmt.Errorf("transport: max frame of %d bytes leaves no room after the %d-byte chunk header", maxFrame, ChunkHeaderLen)
	}
	cs = min(cs, math.MaxInt32)
	if uint64(len(data)) > maxChunkedSize {
		return fmt.Errorf("transport: message of %d bytes is too large to chunk", len(data))
	}
	total := max(1, (len(data)+cs-1)/cs)
	if uint64(total) > math.MaxUint32 {
		return fmt.Errorf("transport: message of %d bytes needs %d chunks", len(data), total)
	}
	frame := make([]byte, ChunkHeaderLen+min(cs, len(data)))
	copy(frame, chunkMagic[:])
	copy(frame[8:24], id[:])
	binary.BigEndian.PutUint32(frame[28:], uint32(total))
	binary.BigEndian.PutUint32(frame[32:], uint32(cs))
	binary.BigEndian.PutUint64(frame[36:], uint64(len(data)))
	for i := range total {
		binary.BigEndian.PutUint32(frame[24:], uint32(i))
		part := data[i*cs : min(len(data), (i+1)*cs)]
		n := copy(frame[ChunkHeaderLen:], part)
		if err := fn(frame[:ChunkHeaderLen+n]); err != nil {
			return err
		}
	}
	return nil
}

type chunkHeader struct {
	id                     MsgID
	index, total, chunkLen uint32
	size                   uint64
}

// ErrBadChunk is wrapped by every error about a malformed or inconsistent
// chunk frame.
var ErrBadChunk = errors.New("bad chunk")

func badChunk(format string, args ...any) error {
	return fmt.Errorf("transport: %w: %s", ErrBadChunk, fmt.Sprintf(format, args...))
}

// parseChunk checks a frame on its own and returns its header and payload.
func parseChunk(frame []byte) (chunkHeader, []byte, error) {
	var h chunkHeader
	if len(frame) < ChunkHeaderLen {
		return h, nil, badChunk("frame of %d bytes is shorter than the header", len(frame))
	}
	if !IsChunk(frame) {
		return h, nil, badChunk("no chunk magic")
	}
	if frame[3] != Version {
		return h, nil, badChunk("wire version %d, want %d", frame[3], Version)
	}
	if frame[4] != 0 || frame[5] != 0 || frame[6] != 0 || frame[7] != 0 {
		return h, nil, badChunk("unknown flags")
	}
	copy(h.id[:], frame[8:24])
	h.index = binary.BigEndian.Uint32(frame[24:])
	h.total = binary.BigEndian.Uint32(frame[28:])
	h.chunkLen = binary.BigEndian.Uint32(frame[32:])
	h.size = binary.BigEndian.Uint64(frame[36:])
	payload := frame[ChunkHeaderLen:]
	switch {
	case h.chunkLen == 0:
		return h, nil, badChunk("zero chunk size")
	case h.size > maxChunkedSize:
		return h, nil, badChunk("message size %d", h.size)
	case h.index >= h.total:
		return h, nil, badChunk("index %d of %d", h.index, h.total)
	}
	cs := uint64(h.chunkLen)
	if want := max(1, (h.size+cs-1)/cs); uint64(h.total) != want {
		return h, nil, badChunk("%d chunks for %d bytes in chunks of %d, want %d", h.total, h.size, cs, want)
	}
	off := uint64(h.index) * cs
	if want := min(cs, h.size-off); uint64(len(payload)) != want {
		return h, nil, badChunk("chunk %d of %d has %d payload bytes, want %d", h.index, h.total, len(payload), want)
	}
	return h, payload, nil
}

// ReassemblyOptions bounds a Reassembler. Zero fields take the defaults.
//
// The byte bounds count what incomplete messages claim (the sizes in their
// headers), so a header cannot reserve more than they allow; the memory
// actually held is what has arrived (an in-order message's buffer grows by
// doubling, up to its size), never more than is claimed.
type ReassemblyOptions struct {
	// Timeout drops an incomplete message when no chunk of it has arrived
	// for this long (default 30s).
	Timeout time.Duration
	// MaxMessageBytes is the largest message accepted (default 512 MiB):
	// a header claiming more is refused.
	MaxMessageBytes int
	// MaxChunks is the most chunks a message may have (default 65536).
	MaxChunks int
	// MaxPendingBytes bounds the bytes claimed by incomplete messages
	// (default 1 GiB); to make room, the least recently active are dropped.
	MaxPendingBytes int
	// MaxPendingBytesPerSender bounds the bytes claimed by one sender's
	// incomplete messages (a sender is the first 8 bytes of the message
	// id, random per sending transport), default MaxPendingBytes/2 but at
	// least MaxMessageBytes; to make room, that sender's least recently
	// active messages are dropped, so one sender's flood does not evict
	// the others' messages while the total stays below MaxPendingBytes.
	MaxPendingBytesPerSender int
	// MaxPendingMessages bounds how many incomplete messages are held
	// (default 1024), with the same eviction.
	MaxPendingMessages int
	// Budget, when not nil, bounds the bytes claimed by the incomplete
	// messages of every Reassembler that shares it (a transport's
	// subscriptions): a new message that does not fit first evicts this
	// Reassembler's least recently active ones, and is refused when that
	// is not enough. NewNATS makes one per connection.
	Budget *ReassemblyBudget
	// Now is the clock (default time.Now); tests set it.
	Now func() time.Time
}

// ReassemblyBudget bounds and counts the bytes claimed by the incomplete
// messages of several Reassemblers together (what they hold is at most
// that). It is safe for concurrent use.
type ReassemblyBudget struct {
	max        int64
	used, peak atomic.Int64
	refused    atomic.Uint64
}

// NewReassemblyBudget returns a budget of max bytes (at least 1).
func NewReassemblyBudget(bytes int) *ReassemblyBudget {
	return &ReassemblyBudget{max: int64(max(1, bytes))}
}

// reserve claims n bytes if they fit.
func (b *ReassemblyBudget) reserve(n int) bool {
	for {
		u := b.used.Load()
		if u+int64(n) > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+int64(n)) {
			for p := b.peak.Load(); u+int64(n) > p && !b.peak.CompareAndSwap(p, u+int64(n)); p = b.peak.Load() {
			}
			return true
		}
	}
}

func (b *ReassemblyBudget) release(n int) { b.used.Add(-int64(n)) }

// Max is the bound in bytes.
func (b *ReassemblyBudget) Max() int { return int(b.max) }

// Used is the number of bytes claimed now by incomplete messages.
func (b *ReassemblyBudget) Used() int { return int(b.used.Load()) }

// Peak is the most bytes ever claimed at once.
func (b *ReassemblyBudget) Peak() int { return int(b.peak.Load()) }

// Refused counts the messages refused because the budget was full.
func (b *ReassemblyBudget) Refused() uint64 { return b.refused.Load() }

func (o ReassemblyOptions) withDefaults() ReassemblyOptions {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 512 << 20
	}
	if o.MaxChunks <= 0 {
		o.MaxChunks = 1 << 16
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = 1 << 30
	}
	if o.MaxPendingBytesPerSender <= 0 {
		o.MaxPendingBytesPerSender = min(o.MaxPendingBytes, max(o.MaxPendingBytes/2, o.MaxMessageBytes))
	}
	if o.MaxPendingMessages <= 0 {
		o.MaxPendingMessages = 1024
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// ReassemblyStats counts what a Reassembler did with the frames it got.
type ReassemblyStats struct {
	Completed  uint64 // messages put back together
	Duplicates uint64 // frames already seen, ignored
	Rejected   uint64 // malformed, inconsistent or oversized frames
	Expired    uint64 // incomplete messages dropped after Timeout
	Evicted    uint64 // incomplete messages dropped to stay within bounds
}

// Reassembler puts chunked messages back together. Chunks of different
// messages may interleave and arrive in any order; duplicates are ignored,
// also for a while after their message completed. Memory is bounded by
// MaxPendingBytes, MaxPendingBytesPerSender and MaxPendingMessages, and
// incomplete messages are dropped after Timeout of inactivity: by Expire,
// and by Add as it goes. It is safe for concurrent use.
type Reassembler struct {
	opts ReassemblyOptions

	mu        sync.Mutex
	partial   map[MsgID]*partial
	done      map[MsgID]time.Time // recently completed ids, for late duplicates
	pending   int                 // bytes claimed by partial
	bySender  map[sender]int      // bytes claimed by partial, per sender
	lastSweep time.Time
	stats     ReassemblyStats
}

// sender is the per-transport prefix of a MsgID.
type sender [8]byte

func senderOf(id MsgID) sender { return sender(id[:8]) }

// partial is an incomplete message. buf holds its chunks 0..next-1 (the
// in-order prefix) and grows as they come; chunks that arrive ahead of the
// prefix wait in ahead, each in its own copy, until the prefix reaches them.
type partial struct {
	h      chunkHeader
	buf    []byte
	next   uint32            // the first chunk not in buf
	ahead  map[uint32][]byte // chunks past next, received
	got    []uint64          // bitset of received indexes
	have   uint32
	last   time.Time
	sender sender
}

// place stores a chunk's payload, growing buf by doubling (up to the
// message's size) for the in-order prefix.
func (p *partial) place(index uint32, payload []byte) {
	if index != p.next {
		if p.ahead == nil {
			p.ahead = make(map[uint32][]byte)
		}
		p.ahead[index] = bytes.Clone(payload)
		return
	}
	p.appendChunk(payload)
	for {
		b, ok := p.ahead[p.next]
		if !ok {
			return
		}
		delete(p.ahead, p.next)
		p.appendChunk(b)
	}
}

func (p *partial) appendChunk(b []byte) {
	if need := len(p.buf) + len(b); need > cap(p.buf) {
		grown := make([]byte, len(p.buf), min(int(p.h.size), max(2*cap(p.buf), need, 64<<10)))
		copy(grown, p.buf)
		p.buf = grown
	}
	p.buf = append(p.buf, b...)
	p.next++
}

// maxDone bounds the set of recently completed ids.
const maxDone = 4096

// NewReassembler returns a Reassembler with opts.
func NewReassembler(opts ReassemblyOptions) *Reassembler {
	return &Reassembler{
		opts:     opts.withDefaults(),
		partial:  make(map[MsgID]*partial),
		done:     make(map[MsgID]time.Time),
		bySender: make(map[sender]int),
	}
}

// Add takes one chunk frame. It returns the whole message when frame was its
// last missing chunk (non-nil, also when empty), nil otherwise (also for a
// duplicate). Errors wrap ErrBadChunk and leave the other messages alone.
// The returned message is the caller's; frame is not retained.
func (r *Reassembler) Add(frame []byte) ([]byte, error) {
	h, payload, err := parseChunk(frame)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.stats.Rejected++
		return nil, err
	}
	now := r.opts.Now()
	if now.Sub(r.lastSweep) >= r.opts.Timeout/8 {
		r.expireLocked(now)
	}
	if _, ok := r.done[h.id]; ok {
		r.stats.Duplicates++
		return nil, nil
	}
	p := r.partial[h.id]
	if p == nil {
		if err := r.admit(h); err != nil {
			r.stats.Rejected++
			return nil, err
		}
		if h.total == 1 {
			r.stats.Completed++
			r.markDone(h.id, now)
			return append(make([]byte, 0, len(payload)), payload...), nil // non-nil even when empty
		}
		size, from := int(h.size), senderOf(h.id)
		for r.bySender[from]+size > r.opts.MaxPendingBytesPerSender {
			r.evictOldest(&from)
		}
		for len(r.partial) > 0 && (r.pending+size > r.opts.MaxPendingBytes || len(r.partial) >= r.opts.MaxPendingMessages) {
			r.evictOldest(nil)
		}
		if b := r.opts.Budget; b != nil {
			for !b.reserve(size) {
				if len(r.partial) == 0 {
					b.refused.Add(1)
					r.stats.Rejected++
					return nil, badChunk("message %v of %d bytes does not fit the reassembly memory of %d bytes shared by the subscriptions", h.id, size, b.max)
				}
				r.evictOldest(nil)
			}
		}
		p = &partial{h: h, got: make([]uint64, (h.total+63)/64), sender: from}
		r.partial[h.id] = p
		r.pending += size
		r.bySender[from] += size
	} else if p.h.total != h.total || p.h.chunkLen != h.chunkLen || p.h.size != h.size {
		r.stats.Rejected++
		return nil, badChunk("chunk %d of message %v disagrees with earlier chunks on its shape", h.index, h.id)
	}
	if p.got[h.index/64]&(1<<(h.index%64)) != 0 {
		r.stats.Duplicates++
		return nil, nil
	}
	p.got[h.index/64] |= 1 << (h.index % 64)
	p.have++
	p.last = now
	p.place(h.index, payload)
	if p.have < p.h.total {
		return nil, nil
	}
	r.drop(h.id)
	r.stats.Completed++
	r.markDone(h.id, now)
	return p.buf, nil
}

// admit checks the first chunk of a message against the bounds: what its
// header claims must fit them before anything is allocated for it.
func (r *Reassembler) admit(h chunkHeader) error {
	o := &r.opts
	switch {
	case h.size > uint64(o.MaxMessageBytes):
		return badChunk("message %v of %d bytes exceeds the limit of %d", h.id, h.size, o.MaxMessageBytes)
	case uint64(h.total) > uint64(o.MaxChunks):
		return badChunk("message %v in %d chunks exceeds the limit of %d", h.id, h.total, o.MaxChunks)
	case h.size > uint64(o.MaxPendingBytes):
		return badChunk("message %v of %d bytes exceeds the reassembly memory of %d", h.id, h.size, o.MaxPendingBytes)
	case h.size > uint64(o.MaxPendingBytesPerSender):
		return badChunk("message %v of %d bytes exceeds the reassembly memory of %d per sender", h.id, h.size, o.MaxPendingBytesPerSender)
	}
	return nil
}

func (r *Reassembler) markDone(id MsgID, now time.Time) {
	if len(r.done) >= maxDone {
		cut := now.Add(-r.opts.Timeout)
		for k, t := range r.done {
			if t.Before(cut) {
				delete(r.done, k)
			}
		}
		if len(r.done) >= maxDone {
			clear(r.done)
		}
	}
	r.done[id] = now
}

// evictOldest drops the least recently active incomplete message, of the
// sender *from when it is not nil.
func (r *Reassembler) evictOldest(from *sender) {
	var oldest MsgID
	var ot time.Time
	first := true
	for id, p := range r.partial {
		if from != nil && p.sender != *from {
			continue
		}
		if first || p.last.Before(ot) {
			oldest, ot, first = id, p.last, false
		}
	}
	if first {
		return
	}
	r.drop(oldest)
	r.stats.Evicted++
}

func (r *Reassembler) drop(id MsgID) {
	if p, ok := r.partial[id]; ok {
		size := int(p.h.size)
		r.pending -= size
		if r.opts.Budget != nil {
			r.opts.Budget.release(size)
		}
		if r.bySender[p.sender] -= size; r.bySender[p.sender] <= 0 {
			delete(r.bySender, p.sender)
		}
		delete(r.partial, id)
	}
}

// Expire drops the incomplete messages idle for longer than Timeout, and
// forgets completed ones as old. It returns how many messages it dropped.
func (r *Reassembler) Expire() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.expireLocked(r.opts.Now())
}

func (r *Reassembler) expireLocked(now time.Time) int {
	r.lastSweep = now
	cut := now.Add(-r.opts.Timeout)
	n := 0
	for id, p := range r.partial {
		if p.last.Before(cut) {
			r.drop(id)
			n++
		}
	}
	for id, t := range r.done {
		if t.Before(cut) {
			delete(r.done, id)
		}
	}
	r.stats.Expired += uint64(n)
	return n
}

// Clear drops every incomplete message, giving their bytes back to the
// Budget (a subscription that ends calls it), and returns how many.
func (r *Reassembler) Clear() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.partial)
	for id := range r.partial {
		r.drop(id)
	}
	return n
}

// Pending returns the number of incomplete messages and the bytes they
// claim (what they hold is at most that).
func (r *Reassembler) Pending() (msgs, bytes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.partial), r.pending
}

// Stats returns the counters so far.
func (r *Reassembler) Stats() ReassemblyStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}
