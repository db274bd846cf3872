package indexed

import (
	"bytes"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// Scanner.Score gives the bits model.Model.Score gives on the model the
// file holds (dense tables with -Inf entries, sequences, logic factors,
// Potts), and Card each variable's cardinality;
// assignments that are not the model's are errors.
func TestScannerScore(t *testing.T) {
	potts := generate.Potts(generate.GridOptions{Height: 4, Width: 5, Labels: 3, Rho: 1, Seed: 2})
	potts.Constant = -1.5
	for name, m := range map[string]*model.Model{"logic": sample(), "potts": potts} {
		data := encode(t, m, MinBlockSize)
		s, err := OpenScan(bytes.NewReader(data), int64(len(data)), "m.ddx", ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for v, c := range m.Cards {
			if got, err := s.Card(v); err != nil || got != c {
				t.Fatalf("%s: Card(%d) = %d, %v; want %d", name, v, got, err, c)
			}
		}
		if _, err := s.Card(m.NumVars()); err == nil {
			t.Errorf("%s: Card out of range: no error", name)
		}
		r := rand.New(rand.NewSource(1))
		x := make([]int, m.NumVars())
		inf := 0
		for n := 0; n < 100; n++ {
			for i, c := range m.Cards {
				x[i] = r.Intn(c)
			}
			want := m.Score(x)
			got, err := s.Score(x)
			if err != nil || got != want {
				t.Fatalf("%s: Score(%v) = %v, %v; want %v", name, x, got, err, want)
			}
			if math.IsInf(want, -1) {
				inf++
			}
		}
		if name == "logic" && inf == 0 {
			t.Errorf("no assignment violated a hard constraint: the test proves little")
		}
		x[len(x)-1] = m.Cards[len(x)-1]
		if _, err := s.Score(x); err == nil || !strings.Contains(err.Error(), "state") {
			t.Errorf("%s: a state out of range: %v", name, err)
		}
		if _, err := s.Score(x[1:]); err == nil {
			t.Errorf("%s: a short assignment: no error", name)
		}
	}
}
