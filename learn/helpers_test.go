package learn

import "testing"

// gen draws planted data with generate (GenSequence, GenMultilabel) for a
// test or benchmark: it fails tb on an error.
func gen[O, D any](tb testing.TB, generate func(O) (D, D, *Weights, error), o O) (train, test D, planted *Weights) {
	tb.Helper()
	train, test, planted, err := generate(o)
	if err != nil {
		tb.Fatal(err)
	}
	return train, test, planted
}
