package wcsp

import (
	"bytes"
	"strings"
	"testing"
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
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Read(bytes.NewReader(data), "fuzz.wcsp", ReadOptions{MaxEntries: 1 << 12})
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, "fuzz.wcsp:") {
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
		back, err := Read(&buf, "back.wcsp", ReadOptions{MaxEntries: 1 << 14})
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		x := make([]int, len(m.Cards))
		for it := 0; it < 20; it++ {
			for i, c := range m.Cards {
				x[i] = (it*7 + i*3) % c
			}
			if a, b := m.Score(x), back.Score(x); a != b {
				t.Fatalf("%v: score %v, written and read back %v", x, a, b)
			}
		}
	})
}
