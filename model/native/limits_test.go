package native

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/internal/rusage"
)

// denseDoc is a model over n binary variables with one dense table over all
// of them (2^n entries).
func denseDoc(n int) string {
	cards := strings.TrimSuffix(strings.Repeat("2, ", n), ", ")
	vars := make([]string, n)
	for i := range vars {
		vars[i] = fmt.Sprint(i)
	}
	table := strings.TrimSuffix(strings.Repeat("0, ", 1<<n), ", ")
	return doc(cards, `{"kind": "dense", "vars": [`+strings.Join(vars, ", ")+`], "table": [`+table+`]}`)
}

// ReadOptions.MaxEntries bounds the states and, on its own, the table
// entries, in JSON, msgpack and gzip input alike; a model at the limit is
// read.
func TestReadMaxEntries(t *testing.T) {
	in := denseDoc(4) // 8 states, 16 table entries
	cases := []struct {
		limit      int
		place, msg string // "": read
	}{
		{16, "", ""},
		{15, "factors[0]", "16 entries bring the total number of table entries over the limit of 15"},
		{7, "cards[3]", "cardinality 2 brings the states (unary entries) over the limit of 7"},
	}
	for _, c := range cases {
		for _, f := range []Format{JSON, Msgpack} {
			data := []byte(in)
			if f == Msgpack {
				data = toMsgpack(t, in)
			}
			for _, gz := range []bool{false, true} {
				if gz {
					data = gzipped(data)
				}
				m, err := ReadWith(bytes.NewReader(data), "m", f, ReadOptions{MaxEntries: c.limit})
				if c.msg == "" {
					if err != nil || len(m.Factors) != 1 {
						t.Fatalf("limit %d %v gz=%v: %v", c.limit, f, gz, err)
					}
					continue
				}
				var e *Error
				if err == nil || !errors.As(err, &e) || e.Place != c.place || !strings.Contains(e.Msg, c.msg) {
					t.Fatalf("limit %d %v gz=%v: error %v, want %s: %s", c.limit, f, gz, err, c.place, c.msg)
				}
			}
		}
	}
}

// A gzip bomb stops once the decompressed bytes pass what the entry limit
// allows, without reading (or allocating) the rest.
func TestReadBoundsDecompressedBytes(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(`{"format": "ddrun-model", "version": 1, "cards": [2], "unaries": [[0, 0`))
	zw.Write(bytes.Repeat([]byte(" "), 64<<20)) // 64 MiB of blanks
	zw.Write([]byte(`]]}`))
	zw.Close()
	_, err := ReadWith(bytes.NewReader(b.Bytes()), "bomb.json.gz", JSON, ReadOptions{MaxEntries: 1000})
	if err == nil || !strings.Contains(err.Error(), "more than the entry limit allows") || !strings.HasPrefix(err.Error(), "bomb.json.gz: ") {
		t.Fatalf("err %v", err)
	}
}

// Free variables with explicit unaries are vouched for by the file.
func TestReadFreeVariableWithUnaries(t *testing.T) {
	in := `{"format": "ddrun-model", "version": 1, "cards": [2000000], "unaries": [[` +
		strings.TrimSuffix(strings.Repeat("0,", 2000000), ",") + `]]}`
	m, err := Read(strings.NewReader(in), "u.json", JSON)
	if err != nil || m.NumVars() != 1 {
		t.Fatal(err)
	}
}

func gzipped(data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// ReadOptions.EachPiece makes ReadMsgpackStream bound each cardinality,
// each factor's entries, the number of variables and the bytes of each
// value it keeps by MaxEntries, not the totals: a model whose totals are
// over the limit (6 states, 8 table entries) and whose pieces fit is read,
// plain and gzip, where ReadWith refuses it; a piece over the limit is a
// one-line error naming its place.
func TestStreamEachPiece(t *testing.T) {
	pair := func(u, v int) string {
		return fmt.Sprintf(`{"kind": "dense", "vars": [%d, %d], "table": [0, 1, 2, 3]}`, u, v)
	}
	in := doc("2, 2, 2", pair(0, 1)+", "+pair(1, 2))
	long := strings.TrimSuffix(strings.Repeat("0.5, ", 200000), ", ") // 1.8 MB in msgpack
	cases := []struct {
		in         string
		limit      int
		place, msg string // "": read
	}{
		{in, 5, "", ""},
		{in, 3, "factors[0]", "4 entries, over the limit of 3"},
		{in, 2, "cards", "3 variables, more than the limit of 2"},
		{doc("2, 9", ""), 8, "cards[1]", "cardinality 9 is over the limit of 8"},
		{doc("2, 2", `{"kind": "dense", "vars": [0, 1], "table": [`+long+`]}`), 4, "factors[0]", "a value of more than 1049088 bytes, more than the entry limit allows"},
	}
	if _, err := ReadWith(bytes.NewReader(toMsgpack(t, in)), "m", Msgpack, ReadOptions{MaxEntries: 5, EachPiece: true}); err == nil {
		t.Fatal("ReadWith holds the model: it must check the totals whatever EachPiece says")
	}
	for _, c := range cases {
		data := toMsgpack(t, c.in)
		for _, gz := range []bool{false, true} {
			if gz {
				data = gzipped(data)
			}
			open := func(off int64) (io.ReadCloser, error) {
				var r io.Reader = bytes.NewReader(data)
				if gz {
					zr, err := gzip.NewReader(r)
					if err != nil {
						return nil, err
					}
					r = zr
				}
				_, err := io.CopyN(io.Discard, r, off)
				return io.NopCloser(r), err
			}
			m, err := readStreamFrom(open, "m", ReadOptions{MaxEntries: c.limit, EachPiece: true})
			if c.msg == "" {
				if err != nil || len(m.Factors) != 2 || m.NumVars() != 3 {
					t.Fatalf("limit %d gz=%v: %v", c.limit, gz, err)
				}
				continue
			}
			var e *Error
			if err == nil || !errors.As(err, &e) || e.Place != c.place || !strings.Contains(e.Msg, c.msg) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("limit %d gz=%v: error %v, want %s: %s", c.limit, gz, err, c.place, c.msg)
			}
		}
	}
}

// A kept value filled to exactly the most bytes a value may keep, then the
// first byte of one more item: the bound must still hold for that item (it
// once wrapped below zero, and a bin32 header of 1 GiB behind it was set
// aside before any of its bytes came).
func TestStreamValueBoundAfterFullValue(t *testing.T) {
	const limit = 1
	keepMax := int64(1<<20) + 2*bytesPerEntry*limit // as the stream reader sets it
	doc := []byte{0x81, 0x92, 0xc6}                 // a map of one entry, its key an array of 2, the first a bin32
	fill := uint32(keepMax - 6)                     // the 6 header bytes are kept too
	doc = binary.BigEndian.AppendUint32(doc, fill)
	doc = append(doc, make([]byte, fill)...)
	doc = append(doc, 0xc6) // the second item: a bin32 ...
	doc = binary.BigEndian.AppendUint32(doc, 1<<30)
	var err error
	got := rusage.Allocated(func() {
		err = ReadMsgpackStream(bytesOpener(doc), "m.msgpack", ReadOptions{MaxEntries: limit, EachPiece: true}, Sink{})
	})
	if err == nil || !strings.Contains(err.Error(), "a value of more than") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line on a value over the bound", err)
	}
	if got > 64<<20 {
		t.Fatalf("allocated %d MiB for a %d-byte input", got>>20, len(doc))
	}
}
