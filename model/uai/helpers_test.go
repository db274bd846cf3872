package uai

import (
	"bytes"
	"compress/gzip"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// markovExample is the Markov network of the format description.
const markovExample = `MARKOV
3
2 2 3
2
2 0 1
3 0 1 2

4
 4.000 2.400
 1.000 0.000

12
 2.2500 3.2500 3.7500
 0.0000 0.0000 10.0000
 1.8750 4.0000 3.3330
 2.0000 2.0000 3.4000
`

// bayesExample is the Bayesian network of the format description.
const bayesExample = `BAYES
3
2 2 3
3
1 0
2 0 1
2 1 2

2
 0.436 0.564

4
 0.128 0.872
 0.920 0.080

6
 0.210 0.333 0.457
 0.811 0.000 0.189
`

// mustRead reads a model from a string or fails the test.
func mustRead(t testing.TB, text, name string) *model.Model {
	t.Helper()
	m, err := Read(strings.NewReader(text), name)
	if err != nil {
		t.Fatalf("Read(%s): %v", name, err)
	}
	return m
}

// gzipBytes compresses b.
func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// close reports whether two scores agree to within tol (relative for large
// magnitudes); equal infinities agree.
func close(a, b, tol float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// randomAssignment draws a uniform assignment of m's variables.
func randomAssignment(m *model.Model, rng *rand.Rand) []int {
	x := make([]int, len(m.Cards))
	for i, c := range m.Cards {
		x[i] = rng.IntN(c)
	}
	return x
}

// sameScores checks that a and b have the same variables and the same score
// on trials random assignments (and on the all-zero one).
func sameScores(t testing.TB, a, b *model.Model, trials int, tol float64) {
	t.Helper()
	if len(a.Cards) != len(b.Cards) {
		t.Fatalf("%d variables, want %d", len(b.Cards), len(a.Cards))
	}
	for i := range a.Cards {
		if a.Cards[i] != b.Cards[i] {
			t.Fatalf("variable %d: cardinality %d, want %d", i, b.Cards[i], a.Cards[i])
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for k := 0; k <= trials; k++ {
		x := make([]int, len(a.Cards))
		if k > 0 {
			x = randomAssignment(a, rng)
		}
		sa, sb := a.Score(x), b.Score(x)
		if !close(sa, sb, tol) {
			t.Fatalf("score of %v: %v, want %v", x, sb, sa)
		}
	}
}

// roundTrip writes m with opts and reads it back.
func roundTrip(t testing.TB, m *model.Model, opts WriteOptions) *model.Model {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteWith(&buf, m, opts); err != nil {
		t.Fatalf("WriteWith(%v): %v", opts.Log, err)
	}
	back, err := ReadWith(bytes.NewReader(buf.Bytes()), "roundtrip.uai", ReadOptions{Log: opts.Log})
	if err != nil {
		t.Fatalf("reading back (%v): %v\n%s", opts.Log, err, head(buf.String()))
	}
	return back
}

// head returns the start of a long text, for failure messages.
func head(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}
