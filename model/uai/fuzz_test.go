package uai

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// checkOneLine fails unless err's message is one line starting with name.
func checkOneLine(t *testing.T, err error, name string) {
	t.Helper()
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("error is not one line: %q", msg)
	}
	if !strings.HasPrefix(msg, name+":") {
		t.Fatalf("error does not start with %q: %q", name+":", msg)
	}
}

func FuzzRead(f *testing.F) {
	seeds := []string{
		markovExample,
		bayesExample,
		"MARKOV 2 2 2 2  0  1 1  1 2.5  2 1 3",
		"MARKOV 0 0",
		"MARKOV 1 5 1 1 0 5 1e-400 1e400 4e-310 0.0e5 1.5E-3",
		"c comment\nMARKOV\n1\n3\n1\n1 0\n3\n0.5 -0 7\n",
		"BAYES\n2\n2 2\n2\n1 0\n2 0 1\n2\n0.5 0.5\n4\n1 0 0 1\n",
		"MARKOV\r\n2\r\n2 3\r\n1\r\n2 1 0\r\n6\r\n1 2 3\r\n4 5 6\r\n",
	}
	for _, e := range readErrors {
		seeds = append(seeds, e.input)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add(gzipBytes(f, []byte(markovExample)))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Read(bytes.NewReader(data), "fuzz.uai")
		checkEachPiece(t, data, m)
		if err != nil {
			checkOneLine(t, err, "fuzz.uai")
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("read an invalid model: %v", err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, m); err != nil {
			t.Fatalf("writing back: %v", err)
		}
		back, err := Read(&buf, "back.uai")
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		sameScores(t, m, back, 20, 1e-9)
		// Folding the unary tables keeps the scores and counts every factor.
		var folded int
		fm, err := ReadWith(bytes.NewReader(data), "fuzz.uai", ReadOptions{FoldUnary: true, Folded: &folded})
		if err != nil {
			t.Fatalf("read with FoldUnary: %v (plain read: ok)", err)
		}
		if len(fm.Factors)+folded != len(m.Factors) {
			t.Fatalf("FoldUnary: %d factors + %d folded, plain read %d", len(fm.Factors), folded, len(m.Factors))
		}
		sameScores(t, m, fm, 20, 1e-9)
	})
}

func FuzzReadEvidence(f *testing.F) {
	for _, s := range []string{"", "0", "1 0", "1 3 4", "2\n 1 2\n 3 0\n", "1\n2 1 2 3 0\n", "2 1 2 1 2",
		"3\n0 1\n1 0\n2", "2\n3 1\n3 2\n", "1\n1 3\n", "two 1 1", "1\n1 1.0\n", "c x\n1 0 1"} {
		f.Add([]byte(s))
	}
	m := evidenceModel()
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := ReadEvidence(bytes.NewReader(data), "fuzz.evid", m)
		if err != nil {
			checkOneLine(t, err, "fuzz.evid")
			return
		}
		if err := ev.Check(m); err != nil {
			t.Fatalf("evidence does not fit the model: %v", err)
		}
		// Written in the 2014 layout, it reads back the same.
		var b strings.Builder
		fmt.Fprint(&b, len(ev))
		for _, v := range slices.Sorted(maps.Keys(ev)) {
			fmt.Fprintf(&b, " %d %d", v, ev[v])
		}
		back, err := ReadEvidence(strings.NewReader(b.String()), "back.evid", m)
		if err != nil || !maps.Equal(back, ev) {
			t.Fatalf("round trip of %v via %q: %v, %v", ev, b.String(), back, err)
		}
	})
}

func FuzzReadMPE(f *testing.F) {
	for _, s := range []string{"MPE\n3 0 1 0\n", "MPE\n1\n3 0 1 0\n", "3 0 1 0", "MPE\n3 0 1 0\n-BEGIN-\n1\n3 1 1 1\n", "MPE\n2 0 x\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := ReadMPE(bytes.NewReader(data), "fuzz.MPE")
		if err != nil {
			checkOneLine(t, err, "fuzz.MPE")
			return
		}
		var buf bytes.Buffer
		if err := WriteMPE(&buf, x); err != nil {
			t.Fatal(err)
		}
		back, err := ReadMPE(&buf, "back.MPE")
		if err != nil || !slices.Equal(back, x) {
			t.Fatalf("round trip of %v: %v, %v", x, back, err)
		}
	})
}

// checkEachPiece reads data with StreamScopes checked piece by piece
// (ReadOptions.EachPiece), which only weakens the totals' checks: where
// Read read m, the stream reads a model of the same scores; where it did
// not (m nil), the stream's error, if any, is one line naming the file
// (its pieces are not kept: what the totals refused may be large).
func checkEachPiece(t *testing.T, data []byte, m *model.Model) {
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	opts := ReadOptions{EachPiece: true}
	if m != nil {
		got, err := streamScopesWith(open, "fuzz.uai", opts)
		if err != nil {
			t.Fatalf("Read read it, StreamScopes piece by piece did not: %v", err)
		}
		sameScores(t, m, got, 20, 1e-9)
		return
	}
	err := StreamScopes(open, "fuzz.uai", opts, func([]int, int) error { return nil }, func(int, []int, []float64) error { return nil })
	if err != nil && (strings.ContainsAny(err.Error(), "\n\r") || !strings.Contains(err.Error(), "fuzz.uai")) {
		t.Fatalf("error is not one line naming the file: %q", err)
	}
}
