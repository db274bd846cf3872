package indexed

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// The fast paths (decoder.small, checker.small) must decode and accept
// exactly what the general ones do, and leave every error to them: these
// tests run both on the same bytes and compare factors, positions and
// error texts.

// smallModel returns a model of the records the fast paths take (Pair,
// Potts, TruncLinear, TruncQuad and Dense factors over 2 variables) over
// runs of different cardinalities, with a few records they leave to the
// general path.
func smallModel() *model.Model {
	m := model.New([]int{2, 3, 3, 2, 2, 4, 4, 4, 2, 3, 3, 2})
	for i := range m.Unary {
		m.Unary[i] = float64(i%5) - 2
	}
	m.Factors = []model.Factor{
		{Kind: model.Pair, Vars: []int{0, 3}, Weight: 0.5},
		{Kind: model.Potts, Vars: []int{1, 2}, Weight: -1.25},
		{Kind: model.TruncLinear, Vars: []int{5, 6}, Weight: 0.5, Trunc: 2},
		{Kind: model.TruncQuad, Vars: []int{7, 6}, Weight: -1, Trunc: 3},
		{Kind: model.Dense, Vars: []int{0, 1}, Table: []float64{1, 2, 3, 4, 5, math.Inf(-1)}},
		{Kind: model.Potts, Vars: []int{10, 9}, Weight: 2},
		{Kind: model.Dense, Vars: []int{5, 11}, Table: make([]float64, 8)},
		{Kind: model.Pair, Vars: []int{11, 8}, Weight: -3},
		{Kind: model.Dense, Vars: []int{4}, Table: []float64{0, 1}},
		{Kind: model.Sequence, Vars: []int{9, 10}, Table: make([]float64, 9)},
		{Kind: model.Dense, Vars: []int{2, 9, 1}, Table: make([]float64, 27)},
		{Kind: model.XOR, Vars: []int{3, 4}},
	}
	if err := m.Validate(); err != nil {
		panic(err)
	}
	return m
}

// records returns the factor records of an encoded file (its structure
// section after the number of factors).
func records(t testing.TB, data []byte) []byte {
	s := openScan(t, data, ReadOptions{})
	w, err := walk(s)
	if err != nil || len(w.recs) == 0 {
		t.Fatalf("walk: %v, %d records", err, len(w.recs))
	}
	return data[w.recs[0].Pos:s.structEnd()]
}

// rec encodes a record: kind, arity, vars, then words (8 bytes each).
func rec(k model.Kind, vars []uint32, words ...uint64) []byte {
	b := []byte{byte(k)}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(vars)))
	for _, v := range vars {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b
}

// badRecords are records the fast paths must leave to the general ones,
// each of which fails a check.
func badRecords() [][]byte {
	f := math.Float64bits
	return [][]byte{
		rec(model.Potts, []uint32{1, 1}, f(1)),                   // repeated variable
		rec(model.Potts, []uint32{1, 40}, f(1)),                  // out of range
		rec(model.Potts, []uint32{1, 5}, f(1)),                   // cardinalities differ
		rec(model.Pair, []uint32{1, 3}, f(1)),                    // not binary
		rec(model.Potts, []uint32{1, 2}, f(math.NaN())),          // weight
		rec(model.Pair, []uint32{0, 3}, f(math.Inf(1))),          // weight
		rec(model.TruncLinear, []uint32{5, 6}, f(1), f(0)),       // truncation
		rec(model.TruncQuad, []uint32{5, 6}, f(1e300), f(1e300)), // overflow
		rec(model.Dense, []uint32{0, 1}, 0, 5),                   // table size
		rec(model.Dense, []uint32{0, 1}, 8, 6),                   // payload offset
		rec(model.Dense, []uint32{0, 1}, 0, 1<<40),               // capped entries
		rec(model.Potts, []uint32{1, 2, 3}, f(1)),                // arity
		rec(model.Kind(200), []uint32{1, 2}, f(1)),               // kind
		rec(model.Potts, []uint32{1, 2}, f(1))[:15],              // cut short
	}
}

// chunkReader hands out at most n bytes per Read, so that a decoder's
// buffer ends anywhere in a record.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}

// cardValues are the cardinalities FuzzRecordPaths draws from: valid ones,
// ones the checks reject, and ones whose tables pass or break the limit.
var cardValues = []int{2, 3, 2, 4, 1, 0, -1, math.MaxUint32 + 1, 1 << 14, 1 << 15, 2, 3}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// sameFactor reports whether two decoded factors are the same (weights by
// their bits: NaN is decoded too).
func sameFactor(a, b *model.Factor) bool {
	return a.Kind == b.Kind && slices.Equal(a.Vars, b.Vars) && a.Table == nil && b.Table == nil &&
		math.Float64bits(a.Weight) == math.Float64bits(b.Weight) && math.Float64bits(a.Trunc) == math.Float64bits(b.Trunc) &&
		slices.Equal(a.NegatedInputs(), b.NegatedInputs()) && a.BudgetBound() == b.BudgetBound()
}

// FuzzRecordPaths decodes and checks a stream of records (any bytes) with
// the fast paths on and off, the decoder's buffer filled chunk bytes at a
// time, the cardinalities (from cards) looked up through CardRuns or a
// function: the same factors, payloads, positions and error texts.
func FuzzRecordPaths(f *testing.F) {
	full := records(f, encode(f, smallModel(), 0))
	f.Add(full, uint8(12), uint8(255), []byte{0, 1, 1, 0, 0, 3, 3, 3, 0, 1, 1, 0}, uint8(0))
	f.Add(full, uint8(12), uint8(6), []byte{0, 1, 1, 0, 0, 3, 3, 3, 0, 1, 1, 0}, uint8(1))
	for i, b := range badRecords() {
		f.Add(append(rec(model.Potts, []uint32{1, 2}, math.Float64bits(1)), b...), uint8(12), uint8(i), []byte{0, 1, 1, 0, 0, 3, 3, 3}, uint8(i))
	}
	f.Add(rec(model.Dense, []uint32{0, 1}, 0, 1<<28), uint8(3), uint8(40), []byte{8, 9}, uint8(3))
	f.Add(rec(model.Dense, []uint32{0, 1}, 0, 1<<29), uint8(3), uint8(40), []byte{9, 9}, uint8(3))
	f.Add(rec(model.Potts, []uint32{0, 1}, math.Float64bits(1)), uint8(1), uint8(40), []byte{}, uint8(0))
	f.Fuzz(func(t *testing.T, recs []byte, nv uint8, chunk uint8, cards []byte, mode uint8) {
		n := int(nv)
		var runs CardRuns
		flat := make([]int, n)
		for v := range flat {
			flat[v] = 2
			if len(cards) > 0 {
				flat[v] = cardValues[int(cards[v%len(cards)])%len(cardValues)]
			}
			runs.Append(1, flat[v])
		}
		card := func(v int) int { return flat[v] }
		if mode&1 == 1 {
			card = runs.Card
		}
		newPair := func(general bool) (*decoder, *checker) {
			d := newDecoder(nil, &chunkReader{b: recs, n: int(chunk)%40 + 1}, 0, int64(len(recs)), "f.ddx")
			c := &checker{name: "f.ddx", nvars: n, card: card, limit: 1 << 12, payloadOff: 4096,
				payloadLen: 8 * int64(mode>>2), next: -int64(mode >> 1 & 1), general: general}
			if mode&1 == 1 {
				c.runs = &runs
			}
			d.general = general
			return d, c
		}
		gd, gc := newPair(true)
		fd, fc := newPair(false)
		var gf, ff model.Factor
		for a := 0; a < 1000 && gd.left > 0; a++ {
			goff, gp, gerr := gd.record(&gf, a, n)
			foff, fp, ferr := fd.record(&ff, a, n)
			if errText(gerr) != errText(ferr) || goff != foff || gp != fp || gd.left != fd.left {
				t.Fatalf("record %d: general %v %d %+v (%d left), fast %v %d %+v (%d left)", a, gerr, goff, gp, gd.left, ferr, foff, fp, fd.left)
			}
			if gerr != nil {
				return
			}
			if !sameFactor(&gf, &ff) {
				t.Fatalf("record %d: general %+v, fast %+v", a, gf, ff)
			}
			gerr, ferr = gc.factor(a, &gf, goff, &gp), fc.factor(a, &ff, foff, &fp)
			if errText(gerr) != errText(ferr) || gp != fp || gc.next != fc.next || gc.entries != fc.entries {
				t.Fatalf("factor %d: general %v %+v (next %d), fast %v %+v (next %d)", a, gerr, gp, gc.next, ferr, fp, fc.next)
			}
			if gerr != nil {
				return
			}
		}
	})
}

// TestSmallRecordsTakeFastPath: the fast paths are not dead code. Every
// record of smallModel over 2 variables of the kinds they take decodes
// and passes through them, the others go to the general paths, and each
// bad record fails both ways with the same error.
func TestSmallRecordsTakeFastPath(t *testing.T) {
	m := smallModel()
	recs := records(t, encode(t, m, 0))
	d := newDecoder(nil, bytes.NewReader(recs), 0, int64(len(recs)), "f.ddx")
	d.fill(len(recs)) // the fast path takes a record the buffer holds whole
	var runs CardRuns
	for _, c := range m.Cards {
		runs.Append(1, c)
	}
	c := &checker{name: "f.ddx", nvars: len(m.Cards), card: runs.Card, runs: &runs, limit: 1 << 20, payloadLen: 1 << 20}
	var f model.Factor
	for a, want := range m.Factors {
		fast := len(want.Vars) == 2 && (want.Kind == model.Dense || want.Kind == model.Pair || want.Kind.IsStructuredPair())
		off, p, ok := d.small(&f, len(m.Cards))
		if ok != fast {
			t.Fatalf("factor %d (%s over %d): fast path %v", a, want.Kind, len(want.Vars), ok)
		}
		if !ok {
			var err error
			if off, p, err = d.anyRecord(&f, a, len(m.Cards)); err != nil {
				t.Fatal(err)
			}
		}
		if got := c.small(&f, &p); got != fast {
			t.Fatalf("factor %d (%s over %d): fast check %v", a, want.Kind, len(want.Vars), got)
		}
		if err := c.factor(a, &f, off, &p); err != nil {
			t.Fatal(err)
		}
		want.Table = nil
		if !reflect.DeepEqual(f, want) {
			t.Fatalf("factor %d: %+v, want %+v", a, f, want)
		}
	}
	for i, b := range badRecords() {
		var errs [2]string
		for k, general := range []bool{false, true} {
			d := newDecoder(nil, bytes.NewReader(b), 0, int64(len(b)), "f.ddx")
			d.general = general
			c := &checker{name: "f.ddx", nvars: len(m.Cards), card: runs.Card, runs: &runs, limit: 1 << 20, payloadLen: 1 << 20, general: general}
			off, p, err := d.record(&f, 0, len(m.Cards))
			if err == nil {
				err = c.factor(0, &f, off, &p)
			}
			errs[k] = errText(err)
		}
		if errs[0] == "" || errs[0] != errs[1] {
			t.Fatalf("bad record %d: fast paths %q, general %q", i, errs[0], errs[1])
		}
	}
}

// FuzzWalkPaths walks any bytes (resealed), reads two thirds of the
// variables with ReadVars and a range of records from an arbitrary
// position with the fast paths on and off: the same callbacks, factors,
// variables and error texts.
func FuzzWalkPaths(f *testing.F) {
	for i, s := range seeds(f) {
		f.Add(s, uint32(i*4099))
	}
	small := smallModel()
	f.Add(encode(f, small, 0), uint32(0))
	f.Add(encode(f, small, MinBlockSize), uint32(3*256+6))
	f.Fuzz(func(t *testing.T, data []byte, at uint32) {
		data = reseal(data)
		opts := ReadOptions{MaxEntries: 1 << 16}
		r := bytes.NewReader(data)
		fs, err := OpenScan(r, int64(len(data)), "f.ddx", opts)
		if err != nil {
			return
		}
		gs, err := OpenScan(r, int64(len(data)), "f.ddx", opts)
		if err != nil {
			t.Fatal(err)
		}
		gs.general = true
		gw, gerr := walk(gs)
		fw, ferr := walk(fs)
		if errText(gerr) != errText(ferr) || !reflect.DeepEqual(gw, fw) {
			t.Fatalf("Walk: general %v, fast %v (or what they reported differs)", gerr, ferr)
		}
		var vars []int
		for v := range fs.NumVars() {
			if (v+int(at))%3 != 0 {
				vars = append(vars, v)
			}
		}
		gc, gu, gerr := gs.ReadVars(vars)
		fc, fu, ferr := fs.ReadVars(vars)
		if errText(gerr) != errText(ferr) || !slices.Equal(gc, fc) || !slices.Equal(gu, fu) {
			t.Fatalf("ReadVars: general %v, fast %v (or what they read differs)", gerr, ferr)
		}
		nf := fs.NumFactors()
		if nf == 0 {
			return
		}
		pos := fs.recordsFrom() + int64(at>>8)%max(1, fs.structEnd()-fs.recordsFrom())
		if gerr == nil && int(at)%3 == 0 {
			pos = fw.recs[int(at)%nf].Pos
		}
		var runs CardRuns
		for _, r := range fw.runs {
			runs.Append(r[1], r[2])
		}
		for _, card := range []func(int) int{nil, runs.Card} {
			var got [2][]model.Factor
			var errs [2]string
			for k, s := range []*Scanner{gs, fs} {
				errs[k] = errText(s.ReadRecords(pos, int(at)%nf, nf, card, func(_ int, f *model.Factor) error {
					got[k] = append(got[k], *f)
					return nil
				}))
			}
			if errs[0] != errs[1] || !reflect.DeepEqual(got[0], got[1]) {
				t.Fatalf("ReadRecords from %d at %d: general %q, fast %q (or the factors differ)", int(at)%nf, pos, errs[0], errs[1])
			}
		}
	})
}

// TestCardsPaths: a cardinality below 1 or over the limit, at the first
// variable, inside a run or at a run's start, fails the fast paths of
// readCards and ReadVars (cardinalities read straight from the buffer) as
// it fails the general ones, through Walk, ReadCards and ReadVars (of all
// the variables and of the last one).
func TestCardsPaths(t *testing.T) {
	data := encode(t, smallModel(), 0)
	at := openScan(t, data, ReadOptions{}).structOff() + structHead
	for _, v := range []int{0, 2, 5, 6, 11} {
		for _, c := range []uint32{0, 1 << 31, 5} {
			bad := slices.Clone(data)
			binary.LittleEndian.PutUint32(bad[at+4*int64(v):], c)
			bad = reseal(bad)
			var errs [2][4]string
			for k, general := range []bool{false, true} {
				s := openScan(t, bad, ReadOptions{MaxEntries: 1 << 20})
				s.general = general
				_, err := walk(s)
				errs[k][0] = errText(err)
				_, err = s.ReadCards()
				errs[k][1] = errText(err)
				_, _, err = s.ReadVars([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
				errs[k][2] = errText(err)
				_, _, err = s.ReadVars([]int{11})
				errs[k][3] = errText(err)
			}
			if errs[0] != errs[1] || (c != 5) != (errs[0][1] != "") {
				t.Fatalf("variable %d, cardinality %d: fast paths %q, general %q", v, c, errs[0], errs[1])
			}
		}
	}
}
