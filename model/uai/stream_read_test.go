package uai

import (
	"errors"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// TestStreamMatchesRead checks that Stream hands out the structure and the
// tables that ReadWith builds, and stops on a callback's error.
func TestStreamMatchesRead(t *testing.T) {
	const in = "MARKOV\n3\n2 3 2\n3\n1 0\n2 0 1\n2 1 2\n2\n1 2\n6\n1 2 3 4 5 6\n6\n0.5 1 1 1 1 2\n"
	want, err := Read(strings.NewReader(in), "x.uai")
	if err != nil {
		t.Fatal(err)
	}
	var got *model.Model
	err = Stream(strings.NewReader(in), "x.uai", ReadOptions{}, func(m *model.Model) error {
		for a := range m.Factors {
			if m.Factors[a].Table != nil {
				t.Errorf("factor %d: structure carries a table", a)
			}
		}
		got = m
		return nil
	}, func(a int, tab []float64) error {
		got.Factors[a].Table = append([]float64(nil), tab...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	x := []int{1, 2, 1}
	if got.Score(x) != want.Score(x) {
		t.Fatalf("score %v, want %v", got.Score(x), want.Score(x))
	}
	stop := errors.New("stop")
	err = Stream(strings.NewReader(in), "x.uai", ReadOptions{}, func(*model.Model) error { return nil },
		func(a int, _ []float64) error { return stop })
	if err != stop {
		t.Fatalf("callback error: got %v", err)
	}
	err = Stream(strings.NewReader(in+" 7"), "x.uai", ReadOptions{}, func(*model.Model) error { return nil },
		func(int, []float64) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "trailing garbage") {
		t.Fatalf("trailing garbage: got %v", err)
	}
}
