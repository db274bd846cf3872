package cfn

import (
	"io"
	"math"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// FuzzRead reads arbitrary bytes: an error is one line naming the input; a
// model is valid, and writing it back and reading that gives the same
// score for sampled assignments (to the precision written). The seeds are
// the hand-written and malformed files of the tests plus the corpus under
// testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	for _, e := range readErrors {
		f.Add([]byte(e.input))
	}
	f.Add([]byte(`{problem: {name: m, mustbe: ">-5.0"}, variables: {v1: [a b], v2: [c d]},
 functions: {c0: {scope: [], costs: [-6.0]}, c1: {scope: [v1], costs: [1.0, 0.5]},
  c12: {scope: [v1, v2], costs: [-1.0, 0.5, -2.0, 5.5]}}}`))
	f.Add([]byte("{ {pb <1000.0}\n [[x y z] 3 2]\n { f {[0 1] 5 [x 2 1.5 z v0 -2]}\n {[x2 1] inf [0 1 0.5]} g {[0 2] f} } }"))
	var prec int // the precision of the model read first
	format := oracle.Format{Ext: "cfn",
		Read: func(r io.Reader, name string, maxEntries int) (*model.Model, error) {
			m, h, err := Read(r, name, ReadOptions{MaxEntries: maxEntries})
			if name != "back.cfn" {
				prec = h.Precision
			}
			return m, err
		},
		Write: Write,
		Same: func(a, b float64) bool {
			return !(math.IsInf(a, -1) != math.IsInf(b, -1) || (!math.IsInf(a, -1) && math.Abs(a-b) > 1e-9*math.Max(1, math.Abs(a))+0.5/pow10[min(prec, MaxWritePrecision)]))
		},
	}
	f.Fuzz(func(t *testing.T, data []byte) { oracle.ReadBack(t, data, format) })
}
