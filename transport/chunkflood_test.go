package transport

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// Reassemblers that share a budget stay within it together: a new message
// that does not fit evicts the Reassembler's own oldest, is refused when
// it has none, and a Reassembler cleared gives its bytes back.
func TestReassemblyBudgetShared(t *testing.T) {
	b := NewReassemblyBudget(10_000)
	opts := ReassemblyOptions{Budget: b}
	r1, r2 := NewReassembler(opts), NewReassembler(opts)
	for i := range 3 {
		if _, err := r1.Add(floodFrame(1, uint64(i), 1000, 3000)); err != nil {
			t.Fatal(err)
		}
	}
	if b.Used() != 9000 {
		t.Fatalf("used %d", b.Used())
	}
	if _, err := r2.Add(floodFrame(2, 1, 1000, 3000)); !errors.Is(err, ErrBadChunk) || b.Refused() != 1 {
		t.Fatalf("err %v, refused %d", err, b.Refused())
	}
	if _, err := r1.Add(floodFrame(1, 9, 1000, 3000)); err != nil || r1.Stats().Evicted != 1 || b.Used() != 9000 {
		t.Fatalf("err %v, evicted %d, used %d", err, r1.Stats().Evicted, b.Used())
	}
	if n := r1.Clear(); n != 3 || b.Used() != 0 || b.Peak() != 9000 {
		t.Fatalf("cleared %d, used %d, peak %d", n, b.Used(), b.Peak())
	}
	if _, err := r2.Add(floodFrame(2, 1, 1000, 3000)); err != nil || b.Used() != 3000 {
		t.Fatalf("err %v, used %d", err, b.Used())
	}
}

// floodCase is one chunk flood against a subscriber on NATS.
type floodCase struct {
	name     string
	sealed   bool // the subscriber and the honest publisher hold the job key
	forgeKey bool // so does the forger
	senders  int  // distinct sender prefixes the forger uses
	deliver  bool // the honest messages must get through during the flood
	// peak bounds the bytes the subscriber's reassembly claims at once.
	peak func(real, perSender, total int) int
}

// A flood of incomplete chunk frames on the subject of a subscriber keeps
// the bytes its reassembly claims bounded (the connection's budget counts
// them, and what it holds is at most that), while honest chunked messages
// get through:
//   - sealed, a forger without the key buffers nothing: every forged frame
//     is dropped as not authentic before reassembly;
//   - a forger with the key, or any forger of an insecure subscriber,
//     using one sender prefix, is held to the per-sender bound and evicts
//     only its own messages;
//   - an insecure subscriber flooded from many prefixes stays within the
//     total bound (what an unauthenticated network can do then is in
//     docs/security.md).
func TestChunkFloodBounded(t *testing.T) {
	const (
		maxFrame  = 1024
		perSender = 64 << 10
		total     = 256 << 10
		realSize  = 20 << 10
		claim     = 32 << 10
		flood     = 20_000 // frames, below the subscription's pending limit
		honest    = 8
		subject   = "flood.s"
	)
	for _, c := range []floodCase{
		{name: "sealed-forger-without-key", sealed: true, senders: 1, deliver: true,
			peak: func(real, _, _ int) int { return real }},
		{name: "sealed-forger-with-key", sealed: true, forgeKey: true, senders: 1, deliver: true,
			peak: func(real, perSender, _ int) int { return real + perSender }},
		{name: "insecure-one-sender", senders: 1, deliver: true,
			peak: func(real, perSender, _ int) int { return real + perSender }},
		{name: "insecure-many-senders", senders: 200,
			peak: func(_, _, total int) int { return total }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := startServer(t, EmbeddedOptions{})
			bounds := ReassemblyOptions{MaxMessageBytes: perSender, MaxPendingBytesPerSender: perSender, MaxPendingBytes: total}
			subNATS := connect(t, NATSOptions{URL: e.URL(), Name: "sub", MaxPayload: maxFrame, Reassembly: bounds})
			pubNATS := connect(t, NATSOptions{URL: e.URL(), Name: "pub", MaxPayload: maxFrame})
			forger := connect(t, NATSOptions{URL: e.URL(), Name: "forger", MaxPayload: maxFrame})
			var sub, pub Transport = subNATS, pubNATS
			var sealedSub *Sealed
			if c.sealed {
				sealedSub, pub = sealedOver(t, subNATS), sealedOver(t, pubNATS)
				sub = sealedSub
			}
			got := newCollector()
			subscribe(t, sub, subject, got.handle)
			settle(t, sub)

			payload := maxFrame - ChunkHeaderLen
			var seal func([]byte) []byte
			if c.forgeKey {
				fs := sealedOver(t, forger)
				payload -= SealedExtra
				seal = func(b []byte) []byte {
					m, err := fs.Seal(subject, b)
					if err != nil {
						t.Error(err)
					}
					return m
				}
			}
			var sent atomic.Int64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := range flood {
					select {
					case <-stop:
						return
					default:
					}
					fr := floodFrame(byte(i%c.senders), uint64(i), payload, claim)
					if seal != nil {
						fr = seal(fr)
					}
					if err := forger.Conn().Publish(subject, fr); err != nil {
						t.Error(err)
						return
					}
					if sent.Add(1)%100 == 0 {
						_ = forger.Flush(context.Background())
					}
				}
			}()
			for sent.Load() < 500 {
				time.Sleep(time.Millisecond)
			}
			r := rand.New(rand.NewPCG(3, 4))
			var want []string
			for i := range honest {
				msg := randBytes(r, realSize)
				want = append(want, subject+" "+string(msg))
				publish(t, pub, subject, msg)
				if !c.deliver {
					continue
				}
				if g := got.wait(t, i+1); g[i] != want[i] {
					t.Fatalf("honest message %d arrived altered", i)
				}
			}
			during := sent.Load()
			close(stop)
			<-done
			settle(t, sub)
			b := subNATS.ReassemblyBudget()
			t.Logf("%d forged frames (%d before the last honest message), peak %d bytes claimed, %d refused", sent.Load(), during, b.Peak(), b.Refused())
			if limit := c.peak(realSize, perSender, total); b.Peak() > limit {
				t.Errorf("reassembly claimed %d bytes at its peak, want at most %d", b.Peak(), limit)
			}
			if c.sealed && !c.forgeKey {
				// Every forged frame was dropped as not authentic.
				if rej := sealedSub.Stats().Rejected; rej != uint64(sent.Load()) {
					t.Errorf("%d frames rejected as not authentic, %d forged", rej, sent.Load())
				}
			}
			if c.deliver && during < 600 {
				t.Logf("the flood was mostly over before the honest messages (%d frames)", during)
			}
		})
	}
}

// A chunked message sealed frame by frame arrives whole, and a frame
// altered on the wire drops that message alone: the next one arrives.
func TestSealedFramesAuthenticated(t *testing.T) {
	e := startServer(t, EmbeddedOptions{})
	pubNATS := connect(t, NATSOptions{URL: e.URL(), MaxPayload: 512})
	subNATS := connect(t, NATSOptions{URL: e.URL(), MaxPayload: 512})
	pub, sub := sealedOver(t, pubNATS), sealedOver(t, subNATS)
	wire := newCollector()
	subscribe(t, subNATS, "s.>", wire.handle) // a raw subscription: frames as sent
	got := newCollector()
	subscribe(t, sub, "s.>", got.handle)
	settle(t, sub)
	msg := bytes.Repeat([]byte("0123456789"), 300)
	publish(t, pub, "s.a", msg)
	if g := got.wait(t, 1); g[0] != "s.a "+string(msg) {
		t.Fatal("chunked sealed message altered")
	}
	// The wire carries sealed frames, each below the max payload, none a
	// chunk frame in the clear.
	n := ChunkCount(len(msg), 512-SealedExtra)
	frames := wire.wait(t, n)
	if n < 2 || len(frames) != n {
		t.Fatalf("%d frames on the wire, want %d (more than 1)", len(frames), n)
	}
	for _, f := range frames {
		if raw := f[len("s.a "):]; len(raw) > 512 || IsChunk([]byte(raw)) || bytes.Contains([]byte(raw), msg[:20]) {
			t.Fatalf("frame of %d bytes in the clear", len(raw))
		}
	}
	// Replay the frames with one byte of the second flipped: nothing opens
	// beyond the frames that are authentic, so nothing is delivered.
	var frs [][]byte
	if err := SplitChunks(MsgID{9}, msg, 512-SealedExtra, func(fr []byte) error {
		m, err := pub.Seal("s.a", fr)
		frs = append(frs, m)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	frs[1][len(frs[1])-1] ^= 1
	for _, fr := range frs {
		if err := pubNATS.Conn().Publish("s.a", fr); err != nil {
			t.Fatal(err)
		}
	}
	publish(t, pub, "s.a", []byte("after"))
	if g := got.wait(t, 2); len(g) != 2 || g[1] != "s.a after" {
		t.Fatalf("got %q", g[1:])
	}
	if st := sub.Stats(); st.Rejected != 1 {
		t.Fatalf("stats %+v", st)
	}
	b := subNATS.ReassemblyBudget()
	if b.Used() != len(msg) {
		t.Fatalf("the incomplete message claims %d bytes, want %d", b.Used(), len(msg))
	}
	// The subscription's end gives its bytes back to the connection.
	if err := sub.Close(); err != nil || b.Used() != 0 {
		t.Fatalf("after Close: %v, %d bytes claimed", err, b.Used())
	}
}
