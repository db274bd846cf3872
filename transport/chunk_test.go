package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

const testFrame = 1024 // the "max payload" of these tests

func split(t testing.TB, id MsgID, data []byte, maxFrame int) [][]byte {
	t.Helper()
	var frames [][]byte
	err := SplitChunks(id, data, maxFrame, func(fr []byte) error {
		if len(fr) > maxFrame {
			t.Fatalf("frame of %d bytes exceeds %d", len(fr), maxFrame)
		}
		frames = append(frames, bytes.Clone(fr))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != ChunkCount(len(data), maxFrame) {
		t.Fatalf("%d frames, ChunkCount says %d", len(frames), ChunkCount(len(data), maxFrame))
	}
	return frames
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// fakeClock is a settable clock for Reassembler tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestChunkRoundTripSizes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	cs := testFrame - ChunkHeaderLen
	sizes := []int{0, 1, cs - 1, cs, cs + 1, testFrame - 1, testFrame, testFrame + 1, 2 * cs, 2*cs + 1, 100 * cs}
	for range 20 {
		sizes = append(sizes, r.IntN(20*testFrame))
	}
	g := newIDGen()
	for _, n := range sizes {
		data := randBytes(r, n)
		frames := split(t, g.next(), data, testFrame)
		r.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
		re := NewReassembler(ReassemblyOptions{})
		var got []byte
		for i, fr := range frames {
			msg, err := re.Add(fr)
			if err != nil {
				t.Fatalf("size %d: %v", n, err)
			}
			if (msg != nil) != (i == len(frames)-1) {
				t.Fatalf("size %d: completed after %d of %d frames", n, i+1, len(frames))
			}
			got = msg
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("size %d: reassembled message differs", n)
		}
		if m, b := re.Pending(); m != 0 || b != 0 {
			t.Fatalf("size %d: %d messages, %d bytes left pending", n, m, b)
		}
	}
}

func TestChunkInterleaved(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	senders := []*idGen{newIDGen(), newIDGen(), newIDGen()}
	want := map[string]bool{}
	var all [][]byte
	for i := range 12 {
		data := randBytes(r, 500+r.IntN(10*testFrame))
		want[string(data)] = true
		all = append(all, split(t, senders[i%3].next(), data, testFrame)...)
	}
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	re := NewReassembler(ReassemblyOptions{})
	for _, fr := range all {
		msg, err := re.Add(fr)
		if err != nil {
			t.Fatal(err)
		}
		if msg != nil {
			if !want[string(msg)] {
				t.Fatal("reassembled a message nobody sent")
			}
			delete(want, string(msg))
		}
	}
	if len(want) != 0 {
		t.Fatalf("%d messages never completed", len(want))
	}
	if s := re.Stats(); s.Completed != 12 || s.Duplicates != 0 || s.Rejected != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestChunkDuplicates(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 500)
	frames := split(t, MsgID{1}, data, testFrame)
	re := NewReassembler(ReassemblyOptions{})
	var done [][]byte
	add := func(fr []byte) {
		msg, err := re.Add(fr)
		if err != nil {
			t.Fatal(err)
		}
		if msg != nil {
			done = append(done, msg)
		}
	}
	add(frames[0])
	add(frames[0]) // duplicate while incomplete
	for _, fr := range frames[1:] {
		add(fr)
		add(fr)
	}
	add(frames[2]) // duplicate after completion: no new partial message
	if len(done) != 1 || !bytes.Equal(done[0], data) {
		t.Fatalf("%d completions", len(done))
	}
	if m, _ := re.Pending(); m != 0 {
		t.Fatalf("a late duplicate opened a partial message")
	}
	if s := re.Stats(); s.Duplicates != uint64(len(frames))+1 || s.Completed != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestChunkMissingTimesOut(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	re := NewReassembler(ReassemblyOptions{Timeout: time.Second, Now: clock.now})
	frames := split(t, MsgID{2}, make([]byte, 5000), testFrame)
	for _, fr := range frames[:len(frames)-1] { // the last one never comes
		if msg, err := re.Add(fr); msg != nil || err != nil {
			t.Fatalf("%v %v", msg, err)
		}
	}
	if m, b := re.Pending(); m != 1 || b != 5000 {
		t.Fatalf("pending %d msgs %d bytes", m, b)
	}
	clock.advance(999 * time.Millisecond)
	if n := re.Expire(); n != 0 {
		t.Fatalf("expired %d before the timeout", n)
	}
	clock.advance(2 * time.Millisecond)
	if n := re.Expire(); n != 1 {
		t.Fatalf("expired %d after the timeout", n)
	}
	if m, b := re.Pending(); m != 0 || b != 0 {
		t.Fatalf("pending %d msgs %d bytes after expiry", m, b)
	}
	// The straggler now starts a new partial message that also expires,
	// this time swept by Add itself.
	if msg, _ := re.Add(frames[len(frames)-1]); msg != nil {
		t.Fatal("completed from a single late chunk")
	}
	clock.advance(2 * time.Second)
	if _, err := re.Add(split(t, MsgID{3}, make([]byte, 3000), testFrame)[0]); err != nil {
		t.Fatal(err)
	}
	if s := re.Stats(); s.Expired != 2 {
		t.Fatalf("stats %+v", s)
	}
	if m, _ := re.Pending(); m != 1 {
		t.Fatalf("pending %d", m)
	}
}

// Activity keeps a message alive: the timeout counts from its last chunk.
func TestChunkTimeoutIsIdleTime(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	re := NewReassembler(ReassemblyOptions{Timeout: time.Second, Now: clock.now})
	data := make([]byte, 10*testFrame)
	frames := split(t, MsgID{4}, data, testFrame)
	var msg []byte
	for _, fr := range frames {
		clock.advance(700 * time.Millisecond)
		var err error
		if msg, err = re.Add(fr); err != nil {
			t.Fatal(err)
		}
	}
	if msg == nil {
		t.Fatal("a slow but steady message was dropped")
	}
}

func TestChunkMemoryBound(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	re := NewReassembler(ReassemblyOptions{MaxPendingBytes: 10_000, MaxPendingMessages: 3, Now: clock.now})
	first := func(id byte, n int) []byte { return split(t, MsgID{id}, make([]byte, n), testFrame)[0] }
	for id, n := range []int{4000, 4000} {
		clock.advance(time.Millisecond)
		if _, err := re.Add(first(byte(id+1), n)); err != nil {
			t.Fatal(err)
		}
	}
	clock.advance(time.Millisecond)
	if _, err := re.Add(first(3, 4000)); err != nil { // 12000 > 10000: evicts message 1
		t.Fatal(err)
	}
	if m, b := re.Pending(); m != 2 || b != 8000 {
		t.Fatalf("pending %d msgs %d bytes", m, b)
	}
	for id := byte(4); id < 7; id++ { // small ones: the count bound evicts
		clock.advance(time.Millisecond)
		if _, err := re.Add(first(id, 2000)); err != nil {
			t.Fatal(err)
		}
	}
	if m, b := re.Pending(); m != 3 || b > 10_000 {
		t.Fatalf("pending %d msgs %d bytes", m, b)
	}
	if s := re.Stats(); s.Evicted != 3 {
		t.Fatalf("stats %+v", s)
	}
	// One message bigger than the whole budget is refused outright.
	if _, err := re.Add(first(9, 20_000)); !errors.Is(err, ErrBadChunk) {
		t.Fatalf("err %v", err)
	}
}

// frame builds a chunk frame with an arbitrary header.
func frame(index, total, chunkLen uint32, size uint64, payload int) []byte {
	b := make([]byte, ChunkHeaderLen+payload)
	copy(b, "DDC\x01")
	b[8] = 0xaa
	binary.BigEndian.PutUint32(b[24:], index)
	binary.BigEndian.PutUint32(b[28:], total)
	binary.BigEndian.PutUint32(b[32:], chunkLen)
	binary.BigEndian.PutUint64(b[36:], size)
	return b
}

func TestChunkRejects(t *testing.T) {
	cases := []struct {
		name string
		fr   []byte
		want string
	}{
		{"short", []byte("DDC\x01"), "shorter than the header"},
		{"not a chunk", append([]byte("DDM\x01"), make([]byte, 60)...), "no chunk magic"},
		{"version", append([]byte("DDC\x07"), make([]byte, 60)...), "wire version 7"},
		{"flags", func() []byte { b := frame(0, 2, 10, 20, 10); b[4] = 1; return b }(), "flags"},
		{"zero chunk size", frame(0, 2, 0, 20, 0), "zero chunk size"},
		{"index beyond total", frame(2, 2, 10, 20, 10), "index 2 of 2"},
		{"absurd total", frame(0, 4_000_000_000, 10, 20, 10), "4000000000 chunks for 20 bytes"},
		{"total too small", frame(0, 1, 10, 20, 10), "1 chunks for 20 bytes"},
		{"absurd size", frame(0, 1, 1<<31, 1<<60, 0), "message size"},
		{"payload too long", frame(0, 2, 10, 15, 11), "has 11 payload bytes, want 10"},
		{"last payload wrong", frame(1, 2, 10, 15, 10), "want 5"},
		{"over max message", frame(0, 100, 1<<20, 100<<20, 1<<20), "exceeds the limit"},
		{"over max chunks", frame(0, 70000, 10, 700000, 10), "in 70000 chunks exceeds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			re := NewReassembler(ReassemblyOptions{MaxMessageBytes: 64 << 20})
			_, err := re.Add(c.fr)
			if !errors.Is(err, ErrBadChunk) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if s := re.Stats(); s.Rejected != 1 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
	// Chunks of one id that disagree on the message's shape.
	re := NewReassembler(ReassemblyOptions{})
	if _, err := re.Add(frame(0, 2, 10, 20, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := re.Add(frame(1, 3, 10, 25, 10)); !errors.Is(err, ErrBadChunk) {
		t.Fatalf("err %v", err)
	}
}

func TestSplitChunksErrors(t *testing.T) {
	if err := SplitChunks(MsgID{}, []byte("x"), ChunkHeaderLen, func([]byte) error { return nil }); err == nil {
		t.Fatal("a frame with no room for payload was accepted")
	}
	stop := errors.New("stop")
	n := 0
	err := SplitChunks(MsgID{}, make([]byte, 5000), testFrame, func([]byte) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("err %v after %d frames", err, n)
	}
	if ChunkCount(0, testFrame) != 1 || ChunkCount(980, testFrame) != 1 || ChunkCount(981, testFrame) != 2 || ChunkCount(1, 10) != 0 {
		t.Fatal("ChunkCount")
	}
}

// floodFrame is the first chunk of a message claiming size bytes in chunks of
// payload bytes, from sender s, message number n.
func floodFrame(s byte, n uint64, payload int, size uint64) []byte {
	total := (size + uint64(payload) - 1) / uint64(payload)
	b := frame(0, uint32(total), uint32(payload), size, payload)
	b[8] = s
	binary.BigEndian.PutUint64(b[16:], n)
	return b
}

// A flood of first chunks that each claim a huge message allocates what
// arrives, not what is claimed: 200 frames of 64 KiB claiming 512 MiB each
// (100 GiB claimed) allocate a few MiB, from one sender or from many.
func TestChunkFloodAllocatesLittle(t *testing.T) {
	const payload, claim, n = 64 << 10, 512 << 20, 200
	for _, senders := range []int{1, n} {
		frames := make([][]byte, n)
		for i := range frames {
			frames[i] = floodFrame(byte(i%senders), uint64(i), payload, claim)
		}
		re := NewReassembler(ReassemblyOptions{})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, fr := range frames {
			if msg, err := re.Add(fr); msg != nil || err != nil {
				t.Fatalf("%v %v", msg != nil, err)
			}
		}
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		// Each frame: its 64 KiB payload and a 1 KiB bitset, plus maps.
		if limit := uint64(n * 2 * payload); alloc > limit {
			t.Errorf("%d senders: %d frames claiming %d MiB allocated %d bytes, want at most %d", senders, n, claim>>20, alloc, limit)
		}
		msgs, claimed := re.Pending()
		if claimed > 1<<30 || msgs > 2 {
			t.Errorf("%d senders: %d messages claiming %d bytes pending", senders, msgs, claimed)
		}
		t.Logf("%d senders: %d frames, %d bytes allocated, %d messages pending, %d evicted", senders, n, alloc, msgs, re.Stats().Evicted)
	}
}

// One sender's messages count against its own budget: its flood evicts its
// own older messages, not another sender's.
func TestChunkPerSenderBound(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	re := NewReassembler(ReassemblyOptions{MaxPendingBytes: 100_000, MaxPendingBytesPerSender: 10_000, Now: clock.now})
	other := floodFrame(1, 1, 1000, 8000)
	if _, err := re.Add(other); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		clock.advance(time.Millisecond)
		if _, err := re.Add(floodFrame(2, uint64(i), 1000, 6000)); err != nil {
			t.Fatal(err)
		}
	}
	if m, b := re.Pending(); m != 2 || b != 14_000 {
		t.Fatalf("pending %d msgs %d bytes, want the other sender's and the flood's last", m, b)
	}
	if s := re.Stats(); s.Evicted != 49 {
		t.Fatalf("stats %+v", s)
	}
	// The other sender's message is still there: its second chunk lands.
	second := frame(1, 8, 1000, 8000, 1000)
	second[8] = 1
	binary.BigEndian.PutUint64(second[16:], 1)
	if _, err := re.Add(second); err != nil {
		t.Fatal(err)
	}
	if s := re.Stats(); s.Duplicates != 0 || s.Evicted != 49 {
		t.Fatalf("stats %+v", s)
	}
	// A message over the per-sender budget is refused outright.
	if _, err := re.Add(floodFrame(3, 1, 1000, 20_000)); !errors.Is(err, ErrBadChunk) || !strings.Contains(err.Error(), "per sender") {
		t.Fatalf("err %v", err)
	}
}

// Chunks that arrive ahead of the in-order prefix wait in their own copies
// and join it when it reaches them.
func TestChunkOutOfOrderJoins(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	data := randBytes(r, 10*testFrame)
	frames := split(t, MsgID{5}, data, testFrame)
	order := []int{3, 1, 2, 0, 5, 4}
	for i := 6; i < len(frames); i++ {
		order = append(order, i)
	}
	re := NewReassembler(ReassemblyOptions{})
	var got []byte
	for _, i := range order {
		msg, err := re.Add(frames[i])
		if err != nil {
			t.Fatal(err)
		}
		got = msg
	}
	if !bytes.Equal(got, data) {
		t.Fatal("reassembled message differs")
	}
}
