package learn

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestSequencesRoundTrip(t *testing.T) {
	tr, _, w := gen(t, GenSequence, SeqGenOptions{Labels: 5, Train: 7, Test: 1, Seed: 3})
	got := writeRead(t, tr, WriteSequences, ReadSequences)
	if got.Labels != tr.Labels || got.Features != tr.Features || got.Sentences() != tr.Sentences() || len(got.Y) != len(tr.Y) {
		t.Fatalf("shape %d %d %d %d, want %d %d %d %d", got.Labels, got.Features, got.Sentences(), len(got.Y), tr.Labels, tr.Features, tr.Sentences(), len(tr.Y))
	}
	for i := range tr.X.Idx {
		if got.X.Idx[i] != tr.X.Idx[i] || got.X.Val[i] != tr.X.Val[i] {
			t.Fatalf("feature %d differs", i)
		}
	}
	if w2 := writeRead(t, w, WriteWeights, ReadWeights); w2.SqNorm() != w.SqNorm() || w2.Labels != w.Labels || w2.Features != w.Features {
		t.Fatalf("weights differ after round trip")
	}
}

func TestMultilabelRoundTrip(t *testing.T) {
	tr, _, w := gen(t, GenMultilabel, MLGenOptions{Labels: 6, Train: 9, Test: 1, Seed: 2})
	got := writeRead(t, tr, WriteMultilabel, ReadMultilabel)
	if got.Examples() != tr.Examples() || len(got.Y) != len(tr.Y) || got.Labels != tr.Labels {
		t.Fatalf("shape differs")
	}
	if w2 := writeRead(t, w, WriteWeights, ReadWeights); w2.SqNorm() != w.SqNorm() {
		t.Fatalf("weights differ after round trip")
	}
}

// writeRead writes v with write and reads it back with read.
func writeRead[T any](t *testing.T, v T, write func(io.Writer, T) error, read func(io.Reader) (T, error)) T {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, v); err != nil {
		t.Fatal(err)
	}
	got, err := read(&b)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// checkParseErrors checks that read (named name) fails on each case's input
// with a one-line error that contains the case's want.
// readerOf is read with its result dropped: what checkParseErrors calls.
func readerOf[T any](read func(io.Reader) (T, error)) func(io.Reader) error {
	return func(r io.Reader) error {
		_, err := read(r)
		return err
	}
}

func checkParseErrors(t *testing.T, name string, cases []struct{ in, want string }, read func(io.Reader) error) {
	t.Helper()
	for _, c := range cases {
		err := read(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s(%q) = %v, want a one-line error with %q", name, c.in, err, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	seq := []struct{ in, want string }{
		{"x 1:1\n", "line 1: field 1"},
		{"0 1:1\n0 0:1\n", "line 2: field 2"},
		{"0 1:1\n\n1 2:nan\n", "line 3: field 2"},
		{"0 1:1 2\n", "line 1: field 3"},
		{"# ddrun sequence labels=2 features=5\n3 1:1\n", "header says labels=2"},
		{"# ddrun multilabel labels=2\n", "want sequence"},
		{"# ddrun sequence labels=x\n", "line 1: header field"},
	}
	checkParseErrors(t, "ReadSequences", seq, readerOf(ReadSequences))
	ml := []struct{ in, want string }{
		{"0,x 1:1\n", "line 1: field 1"},
		{"1,1 1:1\n", "repeated"},
		{"0 1:1\n1 5:inf\n", "line 2: field 2"},
		{"0 -1:1\n", "line 1: field 2"},
	}
	checkParseErrors(t, "ReadMultilabel", ml, readerOf(ReadMultilabel))
	wt := []struct{ in, want string }{
		{"", "empty"},
		{"weights\n", "line 1"},
		{"ddrun-weights sequence labels=2 features=2\ne 3 0 1\n", "line 2: e 3 0"},
		{"ddrun-weights sequence labels=2 features=2\np 0 1 1\n", "line 2: field 1"},
		{"ddrun-weights multilabel labels=2 features=2\np 1 0 1\n", "line 2: p 1 0"},
		{"ddrun-weights multilabel labels=2 features=2\ne 1 0 NaN\n", "line 2: field 4"},
		{"ddrun-weights sequence labels=0 features=2\n", "line 1: labels=0"},
		{"ddrun-weights sequence labels=100000 features=100000\n", "line 1"},
	}
	checkParseErrors(t, "ReadWeights", wt, readerOf(ReadWeights))
}

func FuzzReadSequences(f *testing.F) {
	f.Add("# ddrun sequence labels=3 features=4\n0 1:1 2:0.5\n1 3:1\n\n2 4:1\n")
	f.Add("0 1:1\n\n\n1\n")
	f.Add("0 1:1e308 1:1e308\n")
	f.Fuzz(func(t *testing.T, s string) {
		roundTrip(t, s, ReadSequences, WriteSequences, func(d, d2 *SeqData) bool {
			return len(d2.Y) == len(d.Y) && d2.Sentences() == d.Sentences()
		})
	})
}

// roundTrip reads s and, when it reads, writes it and reads it back, which
// must succeed and give data that same accepts.
func roundTrip[T any](t *testing.T, s string, read func(io.Reader) (T, error), write func(io.Writer, T) error, same func(a, b T) bool) {
	d, err := read(strings.NewReader(s))
	if err != nil {
		return
	}
	if d2 := writeRead(t, d, write, read); !same(d, d2) {
		t.Fatalf("round trip changed the data")
	}
}

func FuzzReadMultilabel(f *testing.F) {
	f.Add("# ddrun multilabel labels=3 features=4\n0,2 1:1 2:0.5\n 3:1\n1 4:1\n")
	f.Add("1:1\n0,1,2\n")
	f.Fuzz(func(t *testing.T, s string) {
		roundTrip(t, s, ReadMultilabel, WriteMultilabel, func(d, d2 *MLData) bool {
			return len(d2.Y) == len(d.Y) && d2.Examples() == d.Examples()
		})
	})
}

func FuzzReadWeights(f *testing.F) {
	f.Add("ddrun-weights sequence labels=2 features=3\ne 1 0 1.5\nt 0 1 -2\n")
	f.Add("ddrun-weights multilabel labels=3 features=2\n# c\ne 2 2 1\np 0 2 0.5\n")
	f.Add("ddrun-weights sequence labels=2 features=1\ndict tagging=cut tags=2 feats=1\ntag nn\ntag vb\nfeat w=the\ne 1 0 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		read := func(r io.Reader) (*Weights, error) { return readWeights(r, 1<<16) }
		roundTrip(t, s, read, WriteWeights, func(w, w2 *Weights) bool { return w2.SqNorm() == w.SqNorm() })
	})
}
