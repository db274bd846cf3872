package native

import (
	"bytes"
	"io"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/vmihailenco/msgpack/v5"
)

// bytesOpener opens data at an offset.
func bytesOpener(data []byte) Opener {
	return func(off int64) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data[min(off, int64(len(data))):])), nil
	}
}

// readStream reads data with ReadMsgpackStream into a whole model.
func readStream(data []byte, name string, opts ReadOptions) (*model.Model, error) {
	return readStreamFrom(bytesOpener(data), name, opts)
}

// readStreamFrom reads what open gives with ReadMsgpackStream into a whole
// model.
func readStreamFrom(open Opener, name string, opts ReadOptions) (*model.Model, error) {
	var m *model.Model
	var cards []int
	var unary []float64
	sink := Sink{
		Begin: func(c float64, n int) error {
			m = &model.Model{Constant: c}
			return nil
		},
		Var: func(i, card int, u []float64) error {
			cards = append(cards, card)
			if u == nil {
				u = make([]float64, card)
			}
			unary = append(unary, u...)
			return nil
		},
		Factor: func(a int, f *model.Factor) error {
			g := *f
			g.Vars = slices.Clone(f.Vars)
			g.Table = slices.Clone(f.Table)
			if e := f.EmissionScores(); e != nil {
				g.SetEmission(slices.Clone(e))
			}
			if neg := f.NegatedInputs(); neg != nil {
				g.SetNegated(slices.Clone(neg))
			}
			m.Factors = append(m.Factors, g)
			return nil
		},
	}
	if err := ReadMsgpackStream(open, name, opts, sink); err != nil {
		return nil, err
	}
	w := model.New(cards)
	copy(w.Unary, unary)
	w.Constant, w.Factors = m.Constant, m.Factors
	return w, w.Validate()
}

// TestStreamMatchesRead: the streamed pieces of every seed model are the
// model Read returns, also with the fields in another order (the
// factors first, so that the reader skips them in its first pass) and
// gzip-compressed through a reopening opener.
func TestStreamMatchesRead(t *testing.T) {
	for i, m := range seedModels() {
		var b bytes.Buffer
		if err := Write(&b, m, Msgpack); err != nil {
			t.Fatal(err)
		}
		for _, data := range [][]byte{b.Bytes(), factorsFirst(t, b.Bytes())} {
			want, err := Read(bytes.NewReader(data), "m.msgpack", Msgpack)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readStream(data, "m.msgpack", ReadOptions{})
			if err != nil {
				t.Fatalf("model %d: %v", i, err)
			}
			if d := diffModels(want, got); d != "" {
				t.Fatalf("model %d: the stream differs in the %s", i, d)
			}
		}
	}
}

// A model of several buffers' worth (a 120x120 grid: values straddle the
// reader's 64 KiB buffer, and its refills) streams to the model Read
// returns, also when the file arrives a byte at a time (a value never
// whole in the buffer: the byte-at-a-time path).
func TestStreamMatchesReadLarge(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 120, Width: 120, Labels: 3, Rho: 0.5, Seed: 2})
	var b bytes.Buffer
	if err := Write(&b, m, Msgpack); err != nil {
		t.Fatal(err)
	}
	if b.Len() < 4<<16 {
		t.Fatalf("the model is %d bytes, under four buffers: the test tests nothing", b.Len())
	}
	data := b.Bytes()
	want, err := Read(bytes.NewReader(data), "m.msgpack", Msgpack)
	if err != nil {
		t.Fatal(err)
	}
	oneByte := func(off int64) (io.ReadCloser, error) {
		return io.NopCloser(iotest.OneByteReader(bytes.NewReader(data[min(off, int64(len(data))):]))), nil
	}
	for name, open := range map[string]Opener{"whole reads": bytesOpener(data), "one byte a read": oneByte} {
		got, err := readStreamFrom(open, "m.msgpack", ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := diffModels(want, got); d != "" {
			t.Fatalf("%s: the stream differs in the %s", name, d)
		}
	}
}

// factorsFirst re-encodes a document with "factors" as its first field.
func factorsFirst(t *testing.T, data []byte) []byte {
	var doc map[string]any
	if err := msgpack.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := msgpack.NewEncoder(&b)
	keys := []string{"factors", "format", "version", "cards", "constant", "unaries"}
	n := 0
	for _, k := range keys {
		if _, ok := doc[k]; ok {
			n++
		}
	}
	if err := enc.EncodeMapLen(n); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if v, ok := doc[k]; ok {
			enc.EncodeString(k)
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b.Bytes()
}

// TestStreamRejectsWhatReadRejects: every error case of the whole reader
// is an error of the streaming one, one line, naming the file.
func TestStreamRejectsWhatReadRejects(t *testing.T) {
	for _, c := range errCases {
		if c.jsonOnly {
			continue
		}
		data := toMsgpack(t, c.json)
		if _, err := ReadWith(bytes.NewReader(data), "bad.msgpack", Msgpack, fuzzLimits); err == nil {
			continue // a JSON-only problem after all
		}
		_, err := readStream(data, "bad.msgpack", fuzzLimits)
		if err == nil {
			t.Errorf("%s: the stream accepted it", c.name)
			continue
		}
		checkRejected(t, err, "bad.msgpack")
	}
}

// FuzzReadMsgpackStream: the streaming reader accepts exactly what Read
// accepts, with the same model.
func FuzzReadMsgpackStream(f *testing.F) {
	addMsgpackSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := ReadWith(bytes.NewReader(data), "fuzz.msgpack", Msgpack, fuzzLimits)
		got, err := readStream(data, "fuzz.msgpack", fuzzLimits)
		switch {
		case err != nil && werr != nil:
			checkRejected(t, err, "fuzz.msgpack")
		case err != nil:
			t.Fatalf("Read accepts, the stream says %v", err)
		case werr != nil:
			t.Fatalf("the stream accepts, Read says %v", werr)
		default:
			if d := diffModels(want, got); d != "" {
				t.Fatalf("the stream differs in the %s", d)
			}
		}
		checkEachPiece(t, data, want)
	})
}

// checkEachPiece reads data with ReadMsgpackStream under fuzzLimits
// checked piece by piece (EachPiece), which only weakens the totals'
// checks: where ReadWith read m, the stream reads m too; where it did
// not (m nil), the stream's error, if any, is one line naming the file
// (its pieces are not kept: what the totals refused may be large).
func checkEachPiece(t *testing.T, data []byte, m *model.Model) {
	opts := fuzzLimits
	opts.EachPiece = true
	if m != nil {
		got, err := readStream(data, "fuzz.msgpack", opts)
		if err != nil {
			t.Fatalf("ReadWith read it, the stream piece by piece did not: %v", err)
		}
		if d := diffModels(m, got); d != "" {
			t.Fatalf("the stream piece by piece differs in the %s", d)
		}
		return
	}
	nop := Sink{Begin: func(float64, int) error { return nil }, Var: func(int, int, []float64) error { return nil },
		Factor: func(int, *model.Factor) error { return nil }}
	if err := ReadMsgpackStream(bytesOpener(data), "fuzz.msgpack", opts, nop); err != nil {
		checkRejected(t, err, "fuzz.msgpack")
	}
}
