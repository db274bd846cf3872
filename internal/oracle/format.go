package oracle

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// Format is a model file format under a read fuzz test: Read reads a
// model of at most maxEntries table entries from r, naming the input name
// in its errors; Write writes m; Same says whether a score read back
// matches the model's, a.
type Format struct {
	Ext   string // the file name's extension, without the dot: "wcsp"
	Read  func(r io.Reader, name string, maxEntries int) (*model.Model, error)
	Write func(w io.Writer, m *model.Model, name string) error
	Same  func(a, b float64) bool
}

// ReadBack is the body of a format's read fuzz test (FuzzRead): reading
// data fails with one line naming the input ("fuzz.EXT:"), or gives a
// valid model that, written (unless the writer refuses sums beyond
// float64's exact integers, 2^53) and read back, scores 20 sampled
// assignments as the model does (f.Same). Anything else fails t.
func ReadBack(t *testing.T, data []byte, f Format) {
	t.Helper()
	in := "fuzz." + f.Ext
	m, err := f.Read(bytes.NewReader(data), in, 1<<12)
	if err != nil {
		msg := err.Error()
		if strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, in+":") {
			t.Fatalf("error is not one line naming the input: %q", msg)
		}
		return
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("read an invalid model: %v", err)
	}
	var buf bytes.Buffer
	if err := f.Write(&buf, m, "back"); err != nil {
		if strings.Contains(err.Error(), "2^53") {
			return // sums of large costs leave float64's exact integers
		}
		t.Fatalf("writing back: %v", err)
	}
	back, err := f.Read(&buf, "back."+f.Ext, 1<<14)
	if err != nil {
		t.Fatalf("reading back: %v", err)
	}
	x := make([]int, len(m.Cards))
	for it := 0; it < 20; it++ {
		for i, c := range m.Cards {
			x[i] = (it*7 + i*3) % c
		}
		if a, b := m.Score(x), back.Score(x); !f.Same(a, b) {
			t.Fatalf("%v: score %v, written and read back %v", x, a, b)
		}
	}
}
