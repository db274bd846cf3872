package uai

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// wideModel needs shifted and split tables and several constant tables in
// the potential format.
func wideModel() *model.Model {
	m := model.New([]int{3, 3, 2})
	m.Constant = 2500
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{0}, Table: []float64{1000, -1000, 0}},
		{Kind: model.Dense, Vars: []int{0, 1}, Table: []float64{-800, -750, -701, math.Inf(-1), -720, -3000, 0, 1, 2}},
		{Kind: model.Potts, Vars: []int{0, 1}, Weight: -5000},
	}
	copy(m.Unaries(1), []float64{900, 0, -900})
	return m
}

func TestWriteStreamSameBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		m    *model.Model
	}{{"all kinds", allKindsModel()}, {"wide", wideModel()}, {"empty", model.New([]int{2, 3})}} {
		for _, log := range []LogBase{Potentials, Ln, Log10} {
			var want, got bytes.Buffer
			if err := WriteWith(&want, c.m, WriteOptions{Log: log}); err != nil {
				t.Fatal(err)
			}
			var calls int
			var last, total int64
			err := WriteStream(&got, model.SourceOf(c.m), WriteOptions{Log: log}, func(d, n int64) { calls, last, total = calls+1, d, n })
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("%s, %v: streamed\n%s\nwant\n%s", c.name, log, got.String(), want.String())
			}
			if calls == 0 || last != total {
				t.Errorf("%s: progress called %d times, last %d of %d", c.name, calls, last, total)
			}
		}
	}
}

func TestWriteStreamErrors(t *testing.T) {
	bad := model.New([]int{2, 2})
	bad.Factors = []model.Factor{{Kind: model.Potts, Vars: []int{0, 0}, Weight: 1}}
	out := model.New([]int{2})
	out.Factors = []model.Factor{{Kind: model.Pair, Vars: []int{0, 1}, Weight: 1}}
	nan := model.New([]int{2})
	nan.Unary[1] = math.NaN()
	for _, c := range []struct {
		m    *model.Model
		want string
	}{{bad, "factor 0 (potts)"}, {out, "out of range"}, {nan, "variable 0 state 1"}} {
		err := WriteStream(&bytes.Buffer{}, model.SourceOf(c.m), WriteOptions{}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %v, want one line with %q", err, c.want)
		}
	}
}
