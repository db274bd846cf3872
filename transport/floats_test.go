package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// specialFloats covers the bit patterns a lossy path would mangle.
var specialFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, math.Pi,
	math.Inf(1), math.Inf(-1), math.NaN(),
	math.Float64frombits(0x7ff0000000000001),  // signalling NaN
	math.Float64frombits(0xfff8dead_beef0001), // negative quiet NaN with payload
	math.Float64frombits(0x7ff7ffff_ffffffff), // signalling NaN, all payload bits
	math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.MaxFloat64,
	math.Float64frombits(0x000fffff_ffffffff), // largest subnormal
}

func sameFloats(a, b []float64) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

func randFloats(r *rand.Rand, n int) Floats {
	f := make(Floats, n)
	for i := range f {
		f[i] = math.Float64frombits(r.Uint64()) // every bit pattern, NaNs included
	}
	return f
}

type floatsBox struct {
	F Floats `msgpack:"f"`
	I Int32s `msgpack:"i"`
}

func TestFloatsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := map[string]Floats{
		"nil":     nil,
		"empty":   {},
		"one":     {42},
		"special": specialFloats,
		"31":      randFloats(r, 31),   // bin8
		"8191":    randFloats(r, 8191), // bin16
		"huge":    randFloats(r, 1<<20+3),
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			ints := make(Int32s, len(f))
			for i := range ints {
				ints[i] = int32(r.Uint32())
			}
			if f == nil {
				ints = nil
			}
			in := floatsBox{F: f, I: ints}
			b, err := msgpack.Marshal(&in)
			if err != nil {
				t.Fatal(err)
			}
			var out floatsBox
			if err := msgpack.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if !sameFloats(in.F, out.F) {
				t.Fatalf("floats differ (nil in %v, out %v, len %d/%d)", in.F == nil, out.F == nil, len(in.F), len(out.F))
			}
			if (in.I == nil) != (out.I == nil) || !slices.Equal(in.I, out.I) {
				t.Fatal("int32s differ")
			}
		})
	}
}

// The wire bytes are a bin header and the values little-endian, whichever
// path wrote them.
func TestFloatsWireLayout(t *testing.T) {
	f := Floats{1.5, math.Inf(-1), math.Float64frombits(0x7ff0000000000001)}
	b, err := msgpack.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0xc4, 24}
	for _, v := range f {
		want = binary.LittleEndian.AppendUint64(want, math.Float64bits(v))
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("wire % x, want % x", b, want)
	}
	s := Int32s{-1, 2, math.MinInt32}
	b, err = msgpack.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want = []byte{0xc4, 12}
	for _, v := range s {
		want = binary.LittleEndian.AppendUint32(want, uint32(v))
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("wire % x, want % x", b, want)
	}
	t.Logf("unsafe little-endian fast path: %v", fastPath)
}

// onlyReader hides everything but Read, so the decoder cannot tell how
// much input is left and the portable, piecewise paths run.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

func TestFloatsPortablePaths(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 1023, 1024, 1025, 300_000} {
		f := randFloats(r, n)
		s := make(Int32s, n)
		for i := range s {
			s[i] = int32(r.Uint32())
		}
		var fast bytes.Buffer
		if err := msgpack.NewEncoder(&fast).Encode(floatsBox{F: f, I: s}); err != nil {
			t.Fatal(err)
		}
		// Portable writers, through a stack buffer and into an appendBuf.
		var viaStack bytes.Buffer
		if err := writeFloatsPortable(onlyWriter{&viaStack}, f); err != nil {
			t.Fatal(err)
		}
		if err := writeInt32sPortable(onlyWriter{&viaStack}, s); err != nil {
			t.Fatal(err)
		}
		var ab appendBuf
		_ = writeFloatsPortable(&ab, f)
		_ = writeInt32sPortable(&ab, s)
		if !bytes.Equal(viaStack.Bytes(), ab.b) {
			t.Fatalf("n=%d: portable writers disagree", n)
		}
		if !bytes.Contains(fast.Bytes(), ab.b[:8*n]) || !bytes.Contains(fast.Bytes(), ab.b[8*n:]) {
			t.Fatalf("n=%d: portable bytes differ from the encoder's", n)
		}
		// Portable readers, piecewise from a reader that hides its length.
		dec := msgpack.NewDecoder(onlyReader{bytes.NewReader(ab.b)})
		gf, err := readFloatsPortable(dec, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := readInt32sPortable(dec, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !sameFloats(gf, f) || !slices.Equal(gs, s) {
			t.Fatalf("n=%d: portable readers differ", n)
		}
		// And the full decoder on a length-hiding stream.
		var out floatsBox
		if err := msgpack.NewDecoder(onlyReader{bytes.NewReader(fast.Bytes())}).Decode(&out); err != nil {
			t.Fatal(err)
		}
		if !sameFloats(out.F, f) || !slices.Equal(out.I, s) {
			t.Fatalf("n=%d: streamed decode differs", n)
		}
	}
}

func TestFloatsDecodeErrors(t *testing.T) {
	bin32 := func(n uint32, body int) []byte {
		b := []byte{0xc6, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], n)
		return append(b, make([]byte, body)...)
	}
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty input", nil, "EOF"},
		{"not multiple of 8", []byte{0xc4, 7, 1, 2, 3, 4, 5, 6, 7}, "not a multiple of 8"},
		{"array", []byte{0x92, 0x01, 0x02}, "want bin or nil"},
		{"str", []byte{0xa8, 1, 2, 3, 4, 5, 6, 7, 8}, "want bin or nil"},
		{"float", []byte{0xcb, 0, 0, 0, 0, 0, 0, 0, 0}, "want bin or nil"},
		{"truncated", []byte{0xc4, 16, 1, 2, 3, 4, 5, 6, 7, 8}, "only 8 left"},
		{"huge claimed length", bin32(0xfffffff8, 10), "only 10 left"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f Floats
			err := msgpack.Unmarshal(c.in, &f)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Floats: err %v, want %q", err, c.want)
			}
			// The same through a stream that cannot tell its length: the
			// lie costs at most one allocStep.
			err = msgpack.NewDecoder(onlyReader{bytes.NewReader(c.in)}).Decode(&f)
			if err == nil {
				t.Fatal("streamed Floats: no error")
			}
		})
	}
	var s Int32s
	if err := msgpack.Unmarshal([]byte{0xc4, 3, 1, 2, 3}, &s); err == nil || !strings.Contains(err.Error(), "multiple of 4") {
		t.Fatalf("Int32s: err %v", err)
	}
	if err := msgpack.NewDecoder(onlyReader{bytes.NewReader(bin32(0xfffffff0, 100))}).Decode(&s); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("streamed Int32s: err %v, want unexpected EOF", err)
	}
	var f Floats
	if err := msgpack.Unmarshal([]byte{0xc0}, &f); err != nil || f != nil {
		t.Fatalf("nil: %v %v", f, err)
	}
}

func TestFloatsHugeClaimDoesNotAllocate(t *testing.T) {
	in := []byte{0xc6, 0xff, 0xff, 0xff, 0xf8, 1, 2, 3} // claims 4 GiB
	allocs := testing.AllocsPerRun(20, func() {
		var f Floats
		_ = msgpack.Unmarshal(in, &f)
	})
	if allocs > 10 {
		t.Fatalf("%v allocations", allocs)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 5
	for range runs {
		var f Floats
		_ = msgpack.NewDecoder(onlyReader{bytes.NewReader(in)}).Decode(&f)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 4*allocStep {
		t.Fatalf("streamed decode of a 4 GiB claim allocated %d bytes per run", per)
	}
}

// Decoding into a message that already holds large enough slices reuses
// them, like msgpack does for plain slices.
func TestFloatsDecodeReuses(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	in := floatsBox{F: randFloats(r, 1000), I: make(Int32s, 500)}
	b, err := msgpack.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	out := floatsBox{F: make(Floats, 10, 2000), I: make(Int32s, 0, 500)}
	pf, pi := &out.F[:1][0], &out.I[:1][0]
	allocs := testing.AllocsPerRun(10, func() {
		if err := msgpack.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
	})
	if &out.F[0] != pf || &out.I[0] != pi || !sameFloats(out.F, in.F) || !slices.Equal(out.I, in.I) {
		t.Fatal("decoding did not reuse the slices, or got them wrong")
	}
	if allocs > 3 {
		t.Fatalf("%v allocations per decode", allocs)
	}
	// An empty bin decodes to an empty, non-nil slice also into nil.
	var empty floatsBox
	b, _ = msgpack.Marshal(&floatsBox{F: Floats{}, I: Int32s{}})
	if err := msgpack.Unmarshal(b, &empty); err != nil || empty.F == nil || empty.I == nil {
		t.Fatalf("%#v %v", empty, err)
	}
}
