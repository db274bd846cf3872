package indexed

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// sample returns a model with every factor kind: a logic model with
// negations and budgets, plus dense tables (with -Inf) and sequences
// (shared and per-position transitions, with and without emissions).
func sample() *model.Model {
	m := generate.Logic(generate.LogicOptions{Vars: 12, Factors: 10, Couplings: 8, MaxArity: 4, Rho: 1, Seed: 3})
	m.Constant = 0.25
	r := rand.New(rand.NewSource(7))
	table := func(n int) []float64 {
		t := make([]float64, n)
		for i := range t {
			t[i] = r.Float64()*2 - 1
		}
		return t
	}
	dense := table(8)
	dense[3] = math.Inf(-1)
	m.Factors = append(m.Factors,
		model.Factor{Kind: model.Dense, Vars: []int{0, 3, 5}, Table: dense},
		model.Factor{Kind: model.Dense, Vars: []int{7}, Table: table(2)},
		model.Factor{Kind: model.Sequence, Vars: []int{1, 2, 4}, Table: table(4)},
		model.Factor{Kind: model.Sequence, Vars: []int{6, 8}, Table: table(4)}.WithEmission(table(4)),
		model.Factor{Kind: model.Dense, Vars: []int{9, 10, 11, 1, 2, 4, 6}, Table: table(128)},
	)
	for i := range m.Unary {
		m.Unary[i] = r.Float64()
	}
	if err := m.Validate(); err != nil {
		panic(err)
	}
	return m
}

func encode(t testing.TB, m *model.Model, bs int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, m, WriteOptions{BlockSize: bs}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sameScores checks that a and b score random assignments alike.
func sameScores(t *testing.T, a, b *model.Model) {
	t.Helper()
	if len(a.Cards) != len(b.Cards) || len(a.Factors) != len(b.Factors) {
		t.Fatalf("shape: %d vars %d factors, want %d and %d", len(b.Cards), len(b.Factors), len(a.Cards), len(a.Factors))
	}
	r := rand.New(rand.NewSource(1))
	x := make([]int, len(a.Cards))
	for n := 0; n < 200; n++ {
		for i, c := range a.Cards {
			x[i] = r.Intn(c)
		}
		for f := range a.Factors {
			if sa, sb := a.FactorScore(f, x), b.FactorScore(f, x); sa != sb && !(math.IsNaN(sa) && math.IsNaN(sb)) {
				t.Fatalf("factor %d at %v: %v, want %v", f, x, sb, sa)
			}
		}
		if sa, sb := a.Score(x), b.Score(x); sa != sb {
			t.Fatalf("score at %v: %v, want %v", x, sb, sa)
		}
	}
}

// reseal recomputes every checksum of a (mutated) file whose trailer still
// says where its sections lie, so that the fuzzers reach the decoders
// behind the checksums. It leaves other data as it is.
func reseal(data []byte) []byte {
	if len(data) < headerSize+trailerSize || string(data[len(data)-8:]) != trailerMagic {
		return data
	}
	d := append([]byte(nil), data...)
	tb := d[len(d)-trailerSize:]
	le := binary.LittleEndian
	so, sl, io, nb, bs := le.Uint64(tb[16:]), le.Uint64(tb[24:]), le.Uint64(tb[32:]), le.Uint64(tb[40:]), uint64(le.Uint32(tb[72:]))
	n := uint64(len(d))
	if so <= n && sl <= n-so {
		le.PutUint32(tb[64:], crc32.Checksum(d[so:so+sl], castagnoli))
	}
	if bs > 0 && io <= n && nb <= (n-io)/4 {
		for b := uint64(0); b < nb; b++ {
			lo, hi := headerSize+b*bs, headerSize+(b+1)*bs
			hi = min(hi, so)
			if lo < hi && hi <= n {
				le.PutUint32(d[io+4*b:], crc32.Checksum(d[lo:hi], castagnoli))
			}
		}
		le.PutUint32(tb[68:], crc32.Checksum(d[io:io+4*nb], castagnoli))
	}
	le.PutUint32(tb[80:], crc32.Checksum(tb[:80], castagnoli))
	return d
}
