package cfn

import (
	"bytes"
	"math"
	"strings"
	"testing"
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
	f.Fuzz(func(t *testing.T, data []byte) {
		m, h, err := Read(bytes.NewReader(data), "fuzz.cfn", ReadOptions{MaxEntries: 1 << 12})
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, "fuzz.cfn:") {
				t.Fatalf("error is not one line naming the input: %q", msg)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("read an invalid model: %v", err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, m, "back"); err != nil {
			if strings.Contains(err.Error(), "2^53") {
				return // sums of large costs leave float64's exact integers
			}
			t.Fatalf("writing back: %v", err)
		}
		back, _, err := Read(&buf, "back.cfn", ReadOptions{MaxEntries: 1 << 14})
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		x := make([]int, len(m.Cards))
		for it := 0; it < 20; it++ {
			for i, c := range m.Cards {
				x[i] = (it*7 + i*3) % c
			}
			a, b := m.Score(x), back.Score(x)
			if math.IsInf(a, -1) != math.IsInf(b, -1) || (!math.IsInf(a, -1) && math.Abs(a-b) > 1e-9*math.Max(1, math.Abs(a))+0.5/pow10[min(h.Precision, MaxWritePrecision)]) {
				t.Fatalf("%v: score %v, written and read back %v", x, a, b)
			}
		}
	})
}
