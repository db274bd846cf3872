package uai

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

// streamTrace reads in with StreamScopes (converters goroutines converting
// the entries; the callback failing at factor failAt, -1: never) and
// writes down every callback and the error.
func streamTrace(in string, converters, failAt int) string {
	var b strings.Builder
	open := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(in)), nil }
	opts := ReadOptions{MaxEntries: 1 << 16, Converters: converters}
	err := StreamScopes(open, "p.uai", opts, func(cards []int, factors int) error {
		fmt.Fprintf(&b, "vars %v %d\n", cards, factors)
		return nil
	}, func(a int, scope []int, t []float64) error {
		fmt.Fprintf(&b, "factor %d %v", a, scope)
		for _, v := range t {
			fmt.Fprintf(&b, " %x", math.Float64bits(v))
		}
		b.WriteByte('\n')
		if a == failAt {
			return errors.New("callback stop")
		}
		return nil
	})
	fmt.Fprintf(&b, "err %v\n", err)
	return b.String()
}

// checkPiped fails unless the piped reading of in (several batch sizes
// and converter counts) gives the sequential reading's callbacks and
// error, also with the callback failing on the way.
func checkPiped(t *testing.T, in string) {
	t.Helper()
	defer func(n int) { batchTokens = n }(batchTokens)
	for _, failAt := range []int{-1, 0, 2} {
		want := streamTrace(in, 0, failAt)
		for _, batch := range []int{1, 3, 1 << 15} {
			batchTokens = batch
			for _, converters := range []int{1, 3} {
				if got := streamTrace(in, converters, failAt); got != want {
					t.Fatalf("%d converters, batches of %d, the callback failing at %d: piped reading\n%s\nsequential\n%s\ninput %q", converters, batch, failAt, got, want, in)
				}
			}
		}
	}
}

// The piped reading (ReadOptions.Converters) gives what the sequential one
// gives on valid models and on every file error of readErrors, bad entries
// and files cut inside a table included.
func TestPipedTablesMatchSequential(t *testing.T) {
	inputs := []string{markovExample, bayesExample,
		"MARKOV 2 2 2 2  0  1 1  1 2.5  2 1 3",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 6 0.5 1 1 1 1 2",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 x 4 5 6 6 0.5 1 1 1 1 2",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 6 0.5 1 1 1 -1 2",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 6 0.5 1 1",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 5 0.5 1 1 1 1",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 6 0.5 1 1 1 1 2 9",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 6 0.5 1 1 1 1 2 \n6\n0 0 0 0 0 0",
	}
	for _, e := range readErrors {
		inputs = append(inputs, e.input)
	}
	for _, in := range inputs {
		checkPiped(t, in)
	}
}

func FuzzPipedTables(f *testing.F) {
	f.Add([]byte(markovExample))
	f.Add([]byte("MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 x 4 5 6 6 0.5 1 1 1 1 2"))
	for _, e := range readErrors {
		f.Add([]byte(e.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPiped(t, string(data))
	})
}
