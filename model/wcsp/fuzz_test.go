package wcsp

import (
	"io"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// FuzzRead reads arbitrary bytes: an error is one line naming the input; a
// model is valid, and writing it back (when its scores are integers, as
// they are) and reading that gives the same score for sampled assignments.
// The seeds are the hand-written and malformed files of the tests plus the
// corpus under testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	for _, e := range readErrors {
		f.Add([]byte(e.input))
	}
	f.Add([]byte("pb 2 3 2 10\n2 3\n1 0 5 1\n1 0\n2 0 1 1 2\n0 2 4\n1 1 0\n"))
	f.Add([]byte("pb 5 2 3 1000\n2 2 2 2 2\n-4 0 1 2 3 1 1\n1 1 1 1 0\n4 1 2 3 4 2 -1\n0 3 1\n-5\n"))
	format := oracle.Format{Ext: "wcsp",
		Read: func(r io.Reader, name string, maxEntries int) (*model.Model, error) {
			return Read(r, name, ReadOptions{MaxEntries: maxEntries})
		},
		Write: Write,
		Same:  func(a, b float64) bool { return a == b },
	}
	f.Fuzz(func(t *testing.T, data []byte) { oracle.ReadBack(t, data, format) })
}
