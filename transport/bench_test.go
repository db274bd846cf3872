package transport

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

const benchFloats = 1 << 20

type plainBox struct {
	L []float64 `msgpack:"l"`
}

type plainIntBox struct {
	L []int32 `msgpack:"l"`
}

// BenchmarkVectors compares Floats and Int32s with msgpack's reflective
// encoding of []float64 and []int32 (1M values).
func BenchmarkVectors(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	f := randFloats(r, benchFloats)
	ints := make([]int32, benchFloats)
	for i := range ints {
		ints[i] = int32(r.Uint32())
	}
	cases := []struct {
		name  string
		bytes int
		in    any
		out   func() any
	}{
		{"Floats", 8 * benchFloats, &floatsBox{F: f}, func() any { return new(floatsBox) }},
		{"msgpack-float64", 8 * benchFloats, &plainBox{L: f}, func() any { return new(plainBox) }},
		{"Int32s", 4 * benchFloats, &floatsBox{I: ints}, func() any { return new(floatsBox) }},
		{"msgpack-int32", 4 * benchFloats, &plainIntBox{L: ints}, func() any { return new(plainIntBox) }},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		b.Run("Encode/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(c.bytes))
			for b.Loop() {
				buf.Reset()
				if err := enc.Encode(c.in); err != nil {
					b.Fatal(err)
				}
			}
		})
		data := bytes.Clone(buf.Bytes())
		b.Run("Decode/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(c.bytes))
			for b.Loop() {
				if err := msgpack.Unmarshal(data, c.out()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStep encodes and decodes a whole message with 1M floats, the
// shape of a step of the job protocol.
func BenchmarkStep(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	step := vectors{Eta: 0.1, Lambda: randFloats(r, benchFloats), X: make(Int32s, 1000)}
	h := Header{Job: "bench", Epoch: 1, Iter: 1, From: "coordinator", Seq: 1}
	data := mustEncode(b, h, step)
	b.Run("Encode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := Encode(h, step); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendEncode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = AppendEncode(buf[:0], h, step); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var s vectors
			if _, err := DecodeInto(data, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeReuse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		var s vectors
		for b.Loop() {
			if _, err := DecodeInto(data, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchPair(b *testing.B, maxPayload int) (pub, sub *NATS) {
	e, err := StartEmbedded(EmbeddedOptions{MaxPayload: maxPayload})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Shutdown)
	ctx := context.Background()
	for _, p := range []**NATS{&pub, &sub} {
		tr, err := NewNATS(ctx, NATSOptions{URL: e.URL()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = tr.Close() })
		*p = tr
	}
	return pub, sub
}

var natsSizes = []struct {
	name       string
	size       int
	maxPayload int // server max payload; 0: NATS's default 1 MiB
}{
	{"8KiB", 8 << 10, 0},
	{"8MiB-chunked", 8 << 20, 0},         // 9 frames of at most 1 MiB
	{"8MiB-unchunked", 8 << 20, 9 << 20}, // server allows the whole message
}

// BenchmarkNATSRoundTrip: ping on one connection, echo from another, over an
// embedded server on loopback. ns/op is the round-trip latency; MB/s
// counts both directions.
func BenchmarkNATSRoundTrip(b *testing.B) {
	for _, sz := range natsSizes {
		b.Run(sz.name, func(b *testing.B) {
			a, echo := benchPair(b, sz.maxPayload)
			ctx := context.Background()
			if _, err := echo.Subscribe("bench.ping", func(_ string, data []byte) {
				_ = echo.Publish(ctx, "bench.pong", data)
			}); err != nil {
				b.Fatal(err)
			}
			pong := make(chan int, 1)
			if _, err := a.Subscribe("bench.pong", func(_ string, data []byte) { pong <- len(data) }); err != nil {
				b.Fatal(err)
			}
			_ = echo.Flush(ctx)
			_ = a.Flush(ctx)
			msg := make([]byte, sz.size)
			b.SetBytes(2 * int64(sz.size))
			for b.Loop() {
				if err := a.Publish(ctx, "bench.ping", msg); err != nil {
					b.Fatal(err)
				}
				select {
				case n := <-pong:
					if n != sz.size {
						b.Fatalf("echo of %d bytes", n)
					}
				case <-time.After(10 * time.Second):
					b.Fatal("no echo")
				}
			}
		})
	}
}

// BenchmarkNATSThroughput: one publisher streams to one subscriber with a
// window of messages in flight (NATS itself has no flow control).
func BenchmarkNATSThroughput(b *testing.B) {
	for _, sz := range natsSizes {
		b.Run(sz.name, func(b *testing.B) {
			pub, sub := benchPair(b, sz.maxPayload)
			window := max(2, (32<<20)/sz.size)
			credits := make(chan struct{}, window)
			if _, err := sub.Subscribe("bench.tp", func(string, []byte) { <-credits }); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			_ = sub.Flush(ctx)
			msg := make([]byte, sz.size)
			b.SetBytes(int64(sz.size))
			for b.Loop() {
				select {
				case credits <- struct{}{}:
				case <-time.After(10 * time.Second):
					b.Fatal("subscriber stalled (slow consumer?)")
				}
				if err := pub.Publish(ctx, "bench.tp", msg); err != nil {
					b.Fatal(err)
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(credits) > 0 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Microsecond)
			}
			if len(credits) > 0 {
				b.Fatalf("%d messages never arrived", len(credits))
			}
		})
	}
}

// BenchmarkSeal is the cost of the job key (Sealed) per message: sealing
// at the publisher and opening at the subscriber, by message size (a
// heartbeat, a small step or report, a large one, a model part's chunk).
func BenchmarkSeal(b *testing.B) {
	s := sealedInProc(b)
	const subject = "ddrun.bench-e1.step.w1"
	for _, size := range []int{64, 4 << 10, 64 << 10, 1 << 20, 8 << 20} {
		data := make([]byte, size)
		name := fmt.Sprintf("%dB", size)
		b.Run("Seal/"+name, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := s.Seal(subject, data); err != nil {
					b.Fatal(err)
				}
			}
		})
		msg, err := s.Seal(subject, data)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("Open/"+name, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := s.Open(subject, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChunkSealed is the cost of a chunked message under the job key,
// publisher and subscriber together (split, seal, open, reassemble), by
// frame size: "seal-then-chunk" is the former wire (the whole message
// sealed, then cut; reassembled before it is opened), "chunk-then-seal"
// the present one (every frame sealed and opened on its own, reassembled
// after). ns/frame is the time per frame.
func BenchmarkChunkSealed(b *testing.B) {
	s := sealedInProc(b)
	const subject = "ddrun.bench-e1.part.w1"
	data := make([]byte, 1<<20)
	for _, maxFrame := range []int{1 << 10, 64 << 10, 1 << 20} {
		frames := float64(ChunkCount(len(data)+SealedExtra, maxFrame))
		b.Run(fmt.Sprintf("seal-then-chunk/%dB", maxFrame), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			re := NewReassembler(ReassemblyOptions{})
			ids := newIDGen()
			for b.Loop() {
				msg, err := s.Seal(subject, data)
				if err != nil {
					b.Fatal(err)
				}
				var whole []byte
				if err := SplitChunks(ids.next(), msg, maxFrame, func(fr []byte) error {
					whole, err = re.Add(fr)
					return err
				}); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Open(subject, whole); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/frames, "ns/frame")
		})
		frames = float64(ChunkCount(len(data), maxFrame-SealedExtra))
		b.Run(fmt.Sprintf("chunk-then-seal/%dB", maxFrame), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			re := NewReassembler(ReassemblyOptions{})
			ids := newIDGen()
			var sealBuf, openBuf sealBuf
			for b.Loop() {
				var whole []byte
				if err := SplitChunks(ids.next(), data, maxFrame-SealedExtra, func(fr []byte) error {
					msg, err := s.sealTo(&sealBuf, subject, fr)
					if err != nil {
						return err
					}
					body, err := s.openTo(&openBuf, subject, msg)
					if err != nil {
						return err
					}
					openBuf.out = body
					whole, err = re.Add(body)
					return err
				}); err != nil || whole == nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/frames, "ns/frame")
		})
	}
}
