package indexed

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// truncModel is sample() plus one factor of each truncated kind.
func truncModel() *model.Model {
	m := sample()
	m.Factors = append(m.Factors,
		model.Factor{Kind: model.TruncLinear, Vars: []int{2, 3}, Weight: 0.75, Trunc: 1.5},
		model.Factor{Kind: model.TruncQuad, Vars: []int{8, 5}, Weight: -0.5, Trunc: 3},
	)
	return m
}

// TestTruncatedRoundTrip writes and reads the truncated kinds: their
// weight and truncation come back bit for bit.
func TestTruncatedRoundTrip(t *testing.T) {
	m := truncModel()
	data := encode(t, m, MinBlockSize)
	got, err := ReadModel(bytes.NewReader(data), int64(len(data)), "m.ddx", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameScores(t, m, got)
	for a := len(m.Factors) - 2; a < len(m.Factors); a++ {
		f, g := &m.Factors[a], &got.Factors[a]
		if g.Kind != f.Kind || g.Weight != f.Weight || g.Trunc != f.Trunc {
			t.Fatalf("factor %d: %+v, want %+v", a, g, f)
		}
	}
}

// TestTruncatedRejects checks that bad truncations are refused by the
// writer and by the reader (a file resealed after the change).
func TestTruncatedRejects(t *testing.T) {
	m := sample()
	var b bytes.Buffer
	w, err := NewWriter(&b, m, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []model.Factor{
		{Kind: model.TruncLinear, Vars: []int{0, 1}, Weight: 1, Trunc: 0},
		{Kind: model.TruncQuad, Vars: []int{0, 1}, Weight: 1, Trunc: math.Inf(1)},
		{Kind: model.TruncQuad, Vars: []int{0, 1}, Weight: nan(), Trunc: 1},
		{Kind: model.TruncLinear, Vars: []int{0}, Weight: 1, Trunc: 1},
	} {
		if err := w.Add(&f); err == nil {
			t.Errorf("%+v: no error", f)
		}
	}
	// Corrupt the last factor's truncation, found by its bits (the last
	// occurrence of 3.0 in the file), and reseal the checksums.
	m = truncModel()
	data := encode(t, m, MinBlockSize)
	var tb [8]byte
	bits := math.Float64bits(3)
	for k := range tb {
		tb[k] = byte(bits >> (8 * k))
	}
	at := bytes.LastIndex(data, tb[:])
	if at < 0 {
		t.Fatal("truncation bits not found")
	}
	neg := math.Float64bits(-3)
	for k := range tb {
		data[at+k] = byte(neg >> (8 * k))
	}
	data = reseal(data)
	_, err = ReadModel(bytes.NewReader(data), int64(len(data)), "m.ddx", ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "truncation") {
		t.Fatalf("negative truncation: %v", err)
	}
}
