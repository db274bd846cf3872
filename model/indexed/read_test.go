package indexed

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

func TestRoundTrip(t *testing.T) {
	m := sample()
	for _, bs := range []int{MinBlockSize, DefaultBlockSize} {
		data := encode(t, m, bs)
		got, err := ReadModel(bytes.NewReader(data), int64(len(data)), "m.ddx", ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sameScores(t, m, got)
		if got.Constant != m.Constant {
			t.Fatalf("constant %v, want %v", got.Constant, m.Constant)
		}
		for i := range m.Unary {
			if got.Unary[i] != m.Unary[i] {
				t.Fatalf("unary %d: %v, want %v", i, got.Unary[i], m.Unary[i])
			}
		}
	}
	path := filepath.Join(t.TempDir(), "m.ddx")
	if err := WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameScores(t, m, got)
}

// TestReadFactors reads subsets (any order, repeats) with blocks smaller
// than some tables, so that runs start mid-factor and span several reads.
func TestReadFactors(t *testing.T) {
	m := sample()
	// A table of 2 MiB over 18 new variables makes ReadFactors go through
	// more than one read, and start one mid-factor.
	vars := make([]int, 18)
	for i := range vars {
		vars[i] = len(m.Cards)
		m.Cards = append(m.Cards, 2)
		m.UnaryOff = append(m.UnaryOff, m.UnaryOff[len(m.UnaryOff)-1]+2)
		m.Unary = append(m.Unary, 0, 0)
	}
	big := make([]float64, 1<<18)
	for i := range big {
		big[i] = float64(i)
	}
	m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: vars, Table: big}, m.Factors[len(m.Factors)-2])
	data := encode(t, m, MinBlockSize)
	s, err := ReadStructure(bytes.NewReader(data), int64(len(data)), "m.ddx", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for a, f := range s.Model.Factors {
		if f.Table != nil || f.EmissionScores() != nil {
			t.Fatalf("factor %d: the structure holds a payload", a)
		}
		if s.Payloads[a].Entries() != len(m.Factors[a].Table)+len(m.Factors[a].EmissionScores()) {
			t.Fatalf("factor %d: %d payload entries, want %d", a, s.Payloads[a].Entries(), len(m.Factors[a].Table)+len(m.Factors[a].EmissionScores()))
		}
	}
	n := len(m.Factors)
	for _, ids := range [][]int{nil, {n - 1}, {n - 2, n - 6, n - 2, 0}, {n - 5, n - 4, n - 3}, {n - 1, n - 2, n - 3, n - 4, n - 5, n - 6}} {
		fs, err := ReadFactors(bytes.NewReader(data), s, ids)
		if err != nil {
			t.Fatalf("%v: %v", ids, err)
		}
		for i, a := range ids {
			want, got := m.Factors[a], fs[i]
			if got.Kind != want.Kind || len(got.Table) != len(want.Table) || len(got.EmissionScores()) != len(want.EmissionScores()) {
				t.Fatalf("%v: factor %d: %+v, want %+v", ids, a, got, want)
			}
			for k := range want.Table {
				if got.Table[k] != want.Table[k] {
					t.Fatalf("%v: factor %d entry %d: %v, want %v", ids, a, k, got.Table[k], want.Table[k])
				}
			}
			for k := range want.EmissionScores() {
				if got.EmissionScores()[k] != want.EmissionScores()[k] {
					t.Fatalf("%v: factor %d emission %d: %v, want %v", ids, a, k, got.EmissionScores()[k], want.EmissionScores()[k])
				}
			}
		}
	}
	if _, err := ReadFactors(bytes.NewReader(data), s, []int{n}); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("out of range: %v", err)
	}
}

// TestEveryCorruptionDetected flips each byte of a file and cuts it at
// each length: every such file is an error of one line naming the file.
func TestEveryCorruptionDetected(t *testing.T) {
	m := sample()
	data := encode(t, m, MinBlockSize)
	check := func(what string, d []byte) {
		t.Helper()
		_, err := ReadModel(bytes.NewReader(d), int64(len(d)), "m.ddx", ReadOptions{})
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "indexed: m.ddx: ") {
			t.Fatalf("%s: error %q", what, msg)
		}
	}
	for i := range data {
		d := append([]byte(nil), data...)
		d[i] ^= 0x20
		check("byte "+strconv.Itoa(i), d)
	}
	for n := 0; n < len(data); n++ {
		check("cut at "+strconv.Itoa(n), data[:n])
	}
	check("padded", append(append([]byte(nil), data...), 0))
}

func itoa(i int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0)+string(rune('0'+i%10))) + "@" + string(rune('a'+i/10%26))
}

// TestResealedFaults: a file whose checksums were recomputed after a
// change is still checked for what it declares (the decoders behind the
// checksums), shown on a few hand-made faults.
func TestResealedFaults(t *testing.T) {
	m := sample()
	m.Factors[len(m.Factors)-5].Table[0] = 0
	data := encode(t, m, MinBlockSize)
	s, err := ReadStructure(bytes.NewReader(data), int64(len(data)), "m.ddx", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A NaN in the first dense table's payload.
	off := s.Payloads[len(m.Factors)-5].Off
	d := append([]byte(nil), data...)
	copy(d[off:], []byte{1, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	_, err = ReadModel(bytes.NewReader(reseal(d)), int64(len(d)), "m.ddx", ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "table entry 0 is NaN") {
		t.Fatalf("NaN: %v", err)
	}
	// A limit below the payload's entries.
	_, err = ReadStructure(bytes.NewReader(data), int64(len(data)), "m.ddx", ReadOptions{MaxEntries: 100})
	if err == nil || !strings.Contains(err.Error(), "over the limit of 100") {
		t.Fatalf("limit: %v", err)
	}
	// A cancelled context.
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("signal"))
	_, err = ReadModel(bytes.NewReader(data), int64(len(data)), "m.ddx", ReadOptions{Context: ctx})
	if err == nil || !strings.Contains(err.Error(), "signal") {
		t.Fatalf("context: %v", err)
	}
}

func TestWriterRejects(t *testing.T) {
	m := sample()
	var b bytes.Buffer
	w, err := NewWriter(&b, m, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bad := []model.Factor{
		{Kind: model.Dense, Vars: []int{0, 1}, Table: []float64{1, 2, 3}},
		{Kind: model.Potts, Vars: []int{0, 0}},
		model.Factor{Kind: model.Budget, Vars: []int{0, 1}}.WithBudget(3),
		{Kind: model.Dense, Vars: []int{0}, Table: []float64{0, nan()}},
	}
	for _, f := range bad {
		if err := w.Add(&f); err == nil {
			t.Fatalf("%+v: no error", f)
		}
	}
	if _, err := NewWriter(&b, m, WriteOptions{BlockSize: 100}); err == nil {
		t.Fatal("block size 100: no error")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(&m.Factors[0]); err == nil {
		t.Fatal("Add after Close: no error")
	}
}

func nan() float64 { var z float64; return z / z }
