package native

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"
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
