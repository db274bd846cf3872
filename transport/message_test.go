package transport

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// Test bodies, of the shapes a protocol on top sends: a note (names,
// counts, opaque bytes, ids), a vector message (floats, ints, a flag), an
// empty one, and one with a map.
type note struct {
	Name    string `msgpack:"name"`
	Threads int    `msgpack:"threads"`
	Blob    []byte `msgpack:"blob"`
	IDs     Int32s `msgpack:"ids"`
}

type vectors struct {
	Eta    float64 `msgpack:"eta"`
	Lambda Floats  `msgpack:"lambda"`
	Mu     Floats  `msgpack:"mu"`
	X      Int32s  `msgpack:"x"`
	Stop   bool    `msgpack:"stop"`
}

type empty struct{}

type custom struct {
	Note string `msgpack:"note"`
	V    Floats `msgpack:"v"`
	M    map[string]int32
}

func (note) Kind() Kind    { return 1 }
func (vectors) Kind() Kind { return 2 }
func (empty) Kind() Kind   { return 3 }
func (custom) Kind() Kind  { return 200 }

func header(k Kind) Header {
	return Header{Job: "job-7", Epoch: 3, Iter: 1 << 40, Kind: k, From: "worker_1", Seq: math.MaxUint64}
}

// equalBodies compares with Floats by bits, so NaNs compare equal to
// themselves.
func equalBodies(a, b any) bool {
	return reflect.DeepEqual(normalize(reflect.ValueOf(a)), normalize(reflect.ValueOf(b)))
}

func normalize(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return normalize(v.Elem())
	case reflect.Struct:
		out := []any{v.Type().Name()}
		for i := range v.NumField() {
			out = append(out, normalize(v.Field(i)))
		}
		return out
	case reflect.Float64:
		return math.Float64bits(v.Float())
	case reflect.Slice:
		if v.IsNil() {
			return "nil"
		}
		switch v.Type().Elem().Kind() {
		case reflect.Float64:
			bits := make([]uint64, v.Len())
			for i := range bits {
				bits[i] = math.Float64bits(v.Index(i).Float())
			}
			return bits
		case reflect.Int32, reflect.Uint8:
			return v.Interface()
		}
		out := []any{"slice"}
		for i := range v.Len() {
			out = append(out, normalize(v.Index(i)))
		}
		return out
	}
	return v.Interface()
}

func TestMessageRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	big := randFloats(r, 1<<20)
	bigX := make(Int32s, 1<<18)
	for i := range bigX {
		bigX[i] = int32(r.Uint32())
	}
	cases := []struct {
		name string
		body Body
		into func() Body
	}{
		{"note", note{Name: "w-1", Threads: 16, Blob: []byte("opaque \x00\xff"), IDs: Int32s{1, 2, 3}}, func() Body { return new(note) }},
		{"note zero", note{}, func() Body { return new(note) }},
		{"vectors empty", vectors{}, func() Body { return new(vectors) }},
		{"vectors empty slices", vectors{Lambda: Floats{}, Mu: Floats{}, X: Int32s{}}, func() Body { return new(vectors) }},
		{"vectors special", vectors{Eta: math.NaN(), Lambda: specialFloats, Mu: Floats{math.Inf(1)}, X: Int32s{-1, 0, 1}, Stop: true},
			func() Body { return new(vectors) }},
		{"vectors signalling NaN", vectors{Eta: math.Float64frombits(0x7ff0000000000001)}, func() Body { return new(vectors) }},
		{"vectors negative zero", vectors{Eta: math.Copysign(0, -1)}, func() Body { return new(vectors) }},
		{"vectors huge", vectors{Eta: 0.1, Lambda: big, Mu: big[:1000], X: bigX}, func() Body { return new(vectors) }},
		{"empty", empty{}, func() Body { return new(empty) }},
		{"custom", custom{Note: "x", V: Floats{1, 2}, M: map[string]int32{"a": 1}}, func() Body { return new(custom) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := header(0) // kind from the body
			data, err := Encode(h, c.body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(data, []byte("DDM\x01")) {
				t.Fatalf("prefix % x", data[:4])
			}
			gh, raw, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			h.Kind = c.body.Kind()
			if gh != h {
				t.Fatalf("header %+v, want %+v", gh, h)
			}
			out := c.into()
			if err := DecodeBody(raw, out); err != nil {
				t.Fatal(err)
			}
			if !equalBodies(c.body, out) {
				t.Fatalf("body differs:\n got %+v\nwant %+v", out, c.body)
			}
			out2 := c.into()
			if gh2, err := DecodeInto(data, out2); err != nil || gh2 != h || !equalBodies(c.body, out2) {
				t.Fatalf("DecodeInto: %v", err)
			}
			// AppendEncode writes the same bytes after a prefix.
			buf, err := AppendEncode([]byte("xyz"), h, c.body)
			if err != nil || !bytes.Equal(buf[3:], data) || string(buf[:3]) != "xyz" {
				t.Fatalf("AppendEncode differs: %v", err)
			}
		})
	}
}

func TestEncodeNilBodyAndControlHeader(t *testing.T) {
	h := Header{Kind: 9} // no job, no sender: a message outside any job
	data, err := Encode(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	gh, raw, err := Decode(data)
	if err != nil || gh != h || !bytes.Equal(raw, []byte{0xc0}) {
		t.Fatalf("%+v % x %v", gh, raw, err)
	}
}

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		name string
		h    Header
		body any
		want string
	}{
		{"no kind", Header{Job: "j"}, map[string]int{"a": 1}, "no kind"},
		{"kind mismatch", Header{Job: "j", Kind: 1}, vectors{}, "header has kind1 but body transport.vectors is kind2"},
		{"job with dot", Header{Job: "a.b"}, vectors{}, "job id"},
		{"job wildcard", Header{Job: "*"}, vectors{}, "job id"},
		{"long job", Header{Job: strings.Repeat("j", MaxNameLen+1)}, vectors{}, "longer than"},
		{"sender with space", Header{Job: "j", From: "w 1"}, vectors{}, "sender name"},
		{"unencodable", Header{Job: "j", Kind: 64}, make(chan int), "encoding kind64 body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Encode(c.h, c.body)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

func mustEncode(t testing.TB, h Header, body any) []byte {
	t.Helper()
	data, err := Encode(h, body)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// rawMessage builds a message from a hand-made msgpack header and body.
func rawMessage(hdr []any, body []byte) []byte {
	b, err := msgpack.Marshal(hdr)
	if err != nil {
		panic(err)
	}
	return append(append([]byte("DDM\x01"), b...), body...)
}

func nested(depth int) []byte {
	b := bytes.Repeat([]byte{0x91}, depth)
	return append(b, 0x01)
}

func TestDecodeErrors(t *testing.T) {
	good := mustEncode(t, header(0), vectors{Eta: 1, Lambda: Floats{1, 2, 3}})
	okHdr := []any{"j", 1, 2, 3, "w", 4}
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "no ddrun magic"},
		{"garbage", []byte("hello world"), "no ddrun magic"},
		{"magic only", []byte("DDM\x01"), "header"},
		{"future version", append([]byte("DDM\x02"), good[4:]...), "wire version 2"},
		{"chunk frame", append([]byte("DDC\x01"), make([]byte, 60)...), "chunk frame"},
		{"truncated body", good[:len(good)-5], "body"},
		{"truncated header", good[:8], "header"},
		{"trailing bytes", append(append([]byte(nil), good...), 0x01), "trailing"},
		{"no body", rawMessage(okHdr, nil), "truncated"},
		{"header too short", rawMessage([]any{"j", 1, 2, 3, "w"}, []byte{0xc0}), "array of 5"},
		{"header not array", append([]byte("DDM\x01"), 0xc0), "header"},
		{"negative epoch", rawMessage([]any{"j", -1, 2, 3, "w", 4}, []byte{0xc0}), "want unsigned"},
		{"float iter", rawMessage([]any{"j", 1, 2.5, 3, "w", 4}, []byte{0xc0}), "want unsigned"},
		{"kind zero", rawMessage([]any{"j", 1, 2, 0, "w", 4}, []byte{0xc0}), "kind 0"},
		{"kind 256", rawMessage([]any{"j", 1, 2, 256, "w", 4}, []byte{0xc0}), "kind 256"},
		{"job with dot", rawMessage([]any{"a.b", 1, 2, 3, "w", 4}, []byte{0xc0}), "not a letter"},
		{"job as bin", rawMessage([]any{[]byte("j"), 1, 2, 3, "w", 4}, []byte{0xc0}), "short str"},
		{"long job", rawMessage([]any{strings.Repeat("j", 300), 1, 2, 3, "w", 4}, []byte{0xc0}), "short str"},
		{"deep body", rawMessage(okHdr, nested(100)), "nested deeper"},
		{"reserved code", rawMessage(okHdr, []byte{0xc1}), "reserved"},
		{"huge array claim", rawMessage(okHdr, []byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0x01}), "truncated"},
		{"huge bin claim", rawMessage(okHdr, []byte{0xc6, 0xff, 0xff, 0xff, 0xff, 0x01}), "truncated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Decode(c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%v does not wrap ErrMalformed", err)
			}
		})
	}
}

func TestDecodeBodyErrors(t *testing.T) {
	data := mustEncode(t, header(0), note{Name: "w", Threads: 2})
	_, raw, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var s vectors
	// A note decodes into vectors only where the keys agree; wrong kinds
	// are caught by DecodeInto.
	if _, err := DecodeInto(data, &s); err == nil || !strings.Contains(err.Error(), "got a kind1 message, want kind2") {
		t.Fatalf("DecodeInto: %v", err)
	}
	for name, body := range map[string][]byte{
		"trailing":   append(append([]byte(nil), raw...), 0xc0),
		"deep":       nested(40),
		"lambda str": mustMarshal(map[string]any{"lambda": "abc"}),
		"lambda odd": mustMarshal(map[string]any{"lambda": []byte{1, 2, 3}}),
		"eta string": mustMarshal(map[string]any{"eta": "x"}),
		"not a map":  mustMarshal([]int{1, 2}),
	} {
		if err := DecodeBody(body, &s); err == nil || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

func mustMarshal(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Bodies may grow fields: an old receiver skips keys it does not know, and
// a new receiver leaves fields the sender lacked at their zero value.
func TestBodyEvolution(t *testing.T) {
	type stepV2 struct {
		Eta    float64        `msgpack:"eta"`
		Lambda Floats         `msgpack:"lambda"`
		Extra  map[string]any `msgpack:"extra"`
		More   []Floats       `msgpack:"more"`
	}
	data := mustEncode(t, header(vectors{}.Kind()), stepV2{Eta: 2, Lambda: Floats{1}, Extra: map[string]any{"a": []any{1, "b"}}, More: []Floats{{1}, nil}})
	var s vectors
	if _, err := DecodeInto(data, &s); err != nil {
		t.Fatal(err)
	}
	if s.Eta != 2 || len(s.Lambda) != 1 || s.Mu != nil || s.Stop {
		t.Fatalf("%+v", s)
	}
}

func TestCheckMsgpackAgreesWithLibrary(t *testing.T) {
	values := []any{
		nil, true, false, 0, -1, 127, 128, -33, 1 << 20, -1 << 40, uint64(math.MaxUint64), 1.5, float32(2.5),
		"", "short", strings.Repeat("s", 40), strings.Repeat("s", 300), strings.Repeat("s", 70000),
		[]byte{}, bytes.Repeat([]byte{1}, 300), bytes.Repeat([]byte{1}, 70000),
		[]int{}, make([]int, 20), make([]int, 70000), map[string]int{}, map[string]int{"a": 1},
		map[int][]string{1: {"x"}, 2: nil}, vectors{Lambda: Floats{1}}, msgpack.RawMessage{0xd4, 1, 2},
		msgpack.RawMessage{0xd8, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		msgpack.RawMessage{0xc7, 2, 5, 1, 2}, msgpack.RawMessage{0xc8, 0, 1, 5, 1},
		msgpack.RawMessage{0xc9, 0, 0, 0, 1, 5, 1}, msgpack.RawMessage{0xd5, 1, 2, 3},
		msgpack.RawMessage{0xd6, 1, 1, 2, 3, 4}, msgpack.RawMessage{0xd7, 1, 1, 2, 3, 4, 5, 6, 7, 8},
	}
	for i, v := range values {
		b := mustMarshal(v)
		if err := checkMsgpack(b); err != nil {
			t.Errorf("value %d (%T): %v", i, v, err)
			continue
		}
		for cut := range min(len(b), 50) {
			if checkMsgpack(b[:cut]) == nil {
				t.Errorf("value %d (%T) cut to %d bytes passes", i, v, cut)
			}
		}
		if checkMsgpack(append(b, 0)) == nil {
			t.Errorf("value %d with a trailing byte passes", i)
		}
	}
	if err := checkMsgpack(nested(maxDepth)); err != nil {
		t.Errorf("depth %d: %v", maxDepth, err)
	}
	if checkMsgpack(nested(maxDepth+1)) == nil {
		t.Errorf("depth %d passes", maxDepth+1)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{1: "kind1", 64: "kind64", 255: "kind255"} {
		if k.String() != want {
			t.Errorf("%d: %q", k, k.String())
		}
	}
}
