package indexed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/rusage"
	"github.com/ddrun/ddrun/model"
)

// walked is everything a Walk reported.
type walked struct {
	runs    [][3]int // from, n, card
	cards   []int
	unaries [][]float64
	factors []model.Factor
	recs    []Record
}

func walk(s *Scanner) (*walked, error) {
	w := &walked{}
	err := s.Walk(Visitor{
		Cards: func(from, n, card int) error {
			w.runs = append(w.runs, [3]int{from, n, card})
			for range n {
				w.cards = append(w.cards, card)
			}
			return nil
		},
		Unaries: func(i int, u []float64) error {
			if i != len(w.unaries) {
				return errors.New("unaries out of order")
			}
			w.unaries = append(w.unaries, slices.Clone(u))
			return nil
		},
		Factor: func(a int, rec Record, f *model.Factor) error {
			if a != len(w.factors) {
				return errors.New("factors out of order")
			}
			if f.Table != nil || f.EmissionScores() != nil {
				return errors.New("a walked factor has a payload")
			}
			g := *f
			g.Vars = slices.Clone(f.Vars)
			g.SetNegated(slices.Clone(f.NegatedInputs()))
			w.factors = append(w.factors, g)
			w.recs = append(w.recs, rec)
			return nil
		},
	})
	return w, err
}

// differs says how w differs from st, or returns "".
func (w *walked) differs(st *Structure) string {
	sm := st.Model
	if !slices.Equal(w.cards, sm.Cards) {
		return fmt.Sprintf("cards %v, want %v", w.cards, sm.Cards)
	}
	for k := 1; k < len(w.runs); k++ {
		if w.runs[k][2] == w.runs[k-1][2] || w.runs[k][0] != w.runs[k-1][0]+w.runs[k-1][1] {
			return fmt.Sprintf("runs %v are not maximal and consecutive", w.runs)
		}
	}
	if len(w.unaries) != len(sm.Cards) {
		return fmt.Sprintf("%d unaries for %d variables", len(w.unaries), len(sm.Cards))
	}
	for i := range sm.Cards {
		if !slices.Equal(w.unaries[i], sm.Unaries(i)) {
			return fmt.Sprintf("variable %d: unary %v, want %v", i, w.unaries[i], sm.Unaries(i))
		}
	}
	if len(w.factors) != len(sm.Factors) {
		return fmt.Sprintf("%d factors, want %d", len(w.factors), len(sm.Factors))
	}
	for a := range sm.Factors {
		if !reflect.DeepEqual(w.factors[a], sm.Factors[a]) || w.recs[a].Payload != st.Payloads[a] {
			return fmt.Sprintf("factor %d: %+v %+v, want %+v %+v", a, w.factors[a], w.recs[a], sm.Factors[a], st.Payloads[a])
		}
	}
	return ""
}

func openScan(t testing.TB, data []byte, opts ReadOptions) *Scanner {
	t.Helper()
	s, err := OpenScan(bytes.NewReader(data), int64(len(data)), "m.ddx", opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mixedCards returns a model whose cardinalities change from variable to
// variable, one of whose unaries is bigger than a read (maxRead), with
// dense, Potts and sequence factors and a scope above maxPairwise.
func mixedCards() *model.Model {
	cards := make([]int, 70)
	for i := range cards {
		cards[i] = 2 + i%3
	}
	cards[5] = 140000
	m := model.New(cards)
	r := rand.New(rand.NewSource(4))
	for i := range m.Unary {
		m.Unary[i] = r.NormFloat64()
	}
	m.Unary[7] = math.Inf(-1)
	var big []int
	for v := 10; len(big) < 20; v++ {
		if cards[v] == 2 {
			big = append(big, v)
		}
	}
	m.Factors = append(m.Factors,
		model.Factor{Kind: model.Potts, Vars: []int{0, 3}, Weight: 0.5},
		model.Factor{Kind: model.Dense, Vars: big[:10], Table: make([]float64, 1<<10)},
		model.Factor{Kind: model.XOR, Vars: big[2:]}.WithNegated(make([]bool, len(big)-2)),
		model.Factor{Kind: model.Sequence, Vars: []int{1, 4, 7, 10}, Table: make([]float64, 9)},
		model.Factor{Kind: model.Dense, Vars: []int{2}, Table: []float64{1, 2, 3, 4}},
	)
	if err := m.Validate(); err != nil {
		panic(err)
	}
	return m
}

// testModels are the models that the scanner tests read.
func testModels() map[string]*model.Model {
	grid := generate.Potts(generate.GridOptions{Height: 20, Width: 30, Labels: 3, Rho: 1, Seed: 2})
	return map[string]*model.Model{
		"sample": sample(), "empty": model.New(nil), "no factors": model.New([]int{3, 1, 2}),
		"grid": grid, "mixed": mixedCards(),
	}
}

// TestWalkMatchesReadStructure: Walk reports what ReadStructure reads,
// and the cardinalities as maximal runs.
func TestWalkMatchesReadStructure(t *testing.T) {
	for name, m := range testModels() {
		data := encode(t, m, MinBlockSize)
		st, err := ReadStructure(bytes.NewReader(data), int64(len(data)), "m.ddx", ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := openScan(t, data, ReadOptions{})
		w, err := walk(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sm := st.Model
		if s.NumVars() != len(sm.Cards) || s.NumFactors() != len(sm.Factors) || s.Constant() != sm.Constant || s.Size() != int64(len(data)) {
			t.Fatalf("%s: %d vars, %d factors, constant %v, size %d", name, s.NumVars(), s.NumFactors(), s.Constant(), s.Size())
		}
		if s.StructureCRC() != binary32(data[len(data)-trailerSize+64:]) || s.StructureSize() != structBytes(data) || s.BlockSize() != MinBlockSize {
			t.Fatalf("%s: structure crc %x size %d", name, s.StructureCRC(), s.StructureSize())
		}
		if msg := w.differs(st); msg != "" {
			t.Fatalf("%s: %s", name, msg)
		}
	}
	// A uniform grid's cardinalities are one run.
	data := encode(t, generate.Potts(generate.GridOptions{Height: 30, Width: 30, Labels: 4, Rho: 1, Seed: 1}), 0)
	if w, err := walk(openScan(t, data, ReadOptions{})); err != nil || len(w.runs) != 1 || w.runs[0] != [3]int{0, 900, 4} {
		t.Fatalf("grid: runs %v, %v", w.runs, err)
	}
}

func binary32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// readRange reads factors [from, to) with ReadRecords.
func readRange(s *Scanner, recs []Record, from, to int, card func(int) int) ([]model.Factor, error) {
	var out []model.Factor
	pos := s.recordsFrom()
	if from < len(recs) {
		pos = recs[from].Pos
	}
	err := s.ReadRecords(pos, from, to, card, func(a int, f *model.Factor) error {
		if a != from+len(out) {
			return errors.New("factors out of order")
		}
		out = append(out, *f)
		return nil
	})
	return out, err
}

// TestReadRecordsEveryRange reads every range of factors of the sample
// models by their Walk positions: the factors of ReadModel.
func TestReadRecordsEveryRange(t *testing.T) {
	for name, m := range testModels() {
		if name == "grid" {
			continue // many ranges; the dense grid below reads it whole
		}
		data := encode(t, m, MinBlockSize)
		full, err := ReadModel(bytes.NewReader(data), int64(len(data)), "m.ddx", ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := openScan(t, data, ReadOptions{})
		w, err := walk(s)
		if err != nil {
			t.Fatal(err)
		}
		var runs CardRuns
		for _, r := range w.runs {
			runs.Append(r[1], r[2])
		}
		nf := len(m.Factors)
		for from := 0; from <= nf; from++ {
			for to := from; to <= nf; to++ {
				card := runs.Card
				if (from+to)%3 == 0 {
					card = nil // ReadRecords reads them
				}
				got, err := readRange(s, w.recs, from, to, card)
				if err != nil {
					t.Fatalf("%s: [%d,%d): %v", name, from, to, err)
				}
				if len(got) != to-from {
					t.Fatalf("%s: [%d,%d): %d factors", name, from, to, len(got))
				}
				for k, f := range got {
					if !reflect.DeepEqual(f, full.Factors[from+k]) {
						t.Fatalf("%s: [%d,%d): factor %d: %+v, want %+v", name, from, to, from+k, f, full.Factors[from+k])
					}
				}
			}
		}
	}
}

// denseGrid is a Potts grid whose factors are dense tables: several
// ReadRecords batches, by count and by bytes.
func denseGrid(h, w int) *model.Model {
	m := generate.Potts(generate.GridOptions{Height: h, Width: w, Labels: 4, Rho: 1, Seed: 3})
	for a := range m.Factors {
		m.Factors[a] = model.Factor{Kind: model.Dense, Vars: m.Factors[a].Vars, Table: m.DenseTable(a)}
	}
	return m
}

// TestReadRecordsBatches reads a dense grid (19,800 factors, 2.5 MB of
// tables) whole and in a few ranges, keeping every factor: tables of
// earlier batches stay intact.
func TestReadRecordsBatches(t *testing.T) {
	m := denseGrid(100, 100)
	data := encode(t, m, 0)
	s := openScan(t, data, ReadOptions{})
	w, err := walk(s)
	if err != nil {
		t.Fatal(err)
	}
	nf := len(m.Factors)
	for _, r := range [][2]int{{0, nf}, {1, nf}, {4095, 9000}, {nf - 1, nf}} {
		got, err := readRange(s, w.recs, r[0], r[1], nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, f := range got {
			if !reflect.DeepEqual(f, m.Factors[r[0]+k]) {
				t.Fatalf("%v: factor %d differs", r, r[0]+k)
			}
		}
	}
}

func TestReadRecordsErrors(t *testing.T) {
	m := sample()
	data := encode(t, m, MinBlockSize)
	s := openScan(t, data, ReadOptions{})
	w, err := walk(s)
	if err != nil {
		t.Fatal(err)
	}
	nf := len(m.Factors)
	nop := func(int, *model.Factor) error { return nil }
	for _, c := range []struct {
		pos      int64
		from, to int
		want     string
	}{
		{w.recs[0].Pos, -1, 2, "out of range"},
		{w.recs[0].Pos, 2, 1, "out of range"},
		{w.recs[0].Pos, 0, nf + 1, "out of range"},
		{0, 0, 1, "record position"},
		{s.structEnd(), 0, 1, "record position"},
		{w.recs[1].Pos, 0, nf, "structure ends early"}, // one record short
	} {
		err := s.ReadRecords(c.pos, c.from, c.to, nil, nop)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: %v", c, err)
		}
		checkErrName(t, err)
	}
	// A callback's error comes back as it is.
	stop := errors.New("stop")
	if err := s.ReadRecords(w.recs[0].Pos, 0, nf, nil, func(int, *model.Factor) error { return stop }); err != stop {
		t.Fatalf("callback: %v", err)
	}
	// A wrong cardinality is an error.
	err = s.ReadRecords(w.recs[0].Pos, 0, nf, func(int) int { return 0 }, nop)
	if err == nil || !strings.Contains(err.Error(), "cardinality 0") {
		t.Fatalf("card 0: %v", err)
	}
	// The limit applies to the range's payload.
	s = openScan(t, data, ReadOptions{MaxEntries: 100})
	if err := s.ReadRecords(w.recs[nf-1].Pos, nf-1, nf, nil, nop); err == nil || !strings.Contains(err.Error(), "limit of 100") {
		t.Fatalf("limit: %v", err)
	}
}

func checkErrName(t *testing.T, err error) {
	t.Helper()
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "indexed: m.ddx: ") {
		t.Fatalf("error %q", msg)
	}
}

// TestScanDetectsCorruption flips each byte of a file: OpenScan fails
// (header, trailer, index), or Walk does (the structure, all by its
// checksum), or, for a payload byte, ReadRecords of the factor that holds
// it does (its block's checksum), while Walk, which reads no payload,
// succeeds. Every cut of the file fails OpenScan.
func TestScanDetectsCorruption(t *testing.T) {
	m := sample()
	data := encode(t, m, MinBlockSize)
	clean := openScan(t, data, ReadOptions{})
	w, err := walk(clean)
	if err != nil {
		t.Fatal(err)
	}
	structOff, structEnd := clean.structOff(), clean.structEnd()
	for i := range data {
		d := append([]byte(nil), data...)
		d[i] ^= 0x20
		s, err := OpenScan(bytes.NewReader(d), int64(len(d)), "m.ddx", ReadOptions{})
		if err != nil {
			checkErrName(t, err)
			if int64(i) >= headerSize && int64(i) < structOff {
				t.Fatalf("byte %d (payload): OpenScan: %v", i, err)
			}
			continue
		}
		_, err = walk(s)
		inStruct := int64(i) >= structOff && int64(i) < structEnd
		if inStruct {
			if err == nil || !strings.Contains(err.Error(), "(corrupt file)") {
				t.Fatalf("byte %d (structure): Walk: %v", i, err)
			}
			checkErrName(t, err)
			continue
		}
		if err != nil || int64(i) < headerSize {
			t.Fatalf("byte %d: Walk: %v", i, err)
		}
		// A payload byte: the factor that holds it.
		a := slices.IndexFunc(w.recs, func(r Record) bool {
			return r.Payload.Entries() > 0 && int64(i) >= r.Payload.Off && int64(i) < r.Payload.Off+8*int64(r.Payload.Entries())
		})
		if a < 0 {
			t.Fatalf("byte %d: in no payload", i)
		}
		_, err = readRange(s, w.recs, a, a+1, nil)
		if err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
			t.Fatalf("byte %d (factor %d's payload): ReadRecords: %v", i, a, err)
		}
		checkErrName(t, err)
	}
	for n := 0; n < len(data); n++ {
		if _, err := OpenScan(bytes.NewReader(data[:n]), int64(n), "m.ddx", ReadOptions{}); err == nil {
			t.Fatalf("cut at %d: no error", n)
		}
	}
}

// TestWalkResealedFaults: a structure whose checksum was recomputed after
// a change is still checked for what it declares.
func TestWalkResealedFaults(t *testing.T) {
	m := sample()
	m.Unary[3] = 7
	data := encode(t, m, MinBlockSize)
	s := openScan(t, data, ReadOptions{})
	// The unary 7 becomes +Inf.
	i := bytes.Index(data[s.structOff():], []byte{0, 0, 0, 0, 0, 0, 0x1c, 0x40}) + int(s.structOff())
	d := append([]byte(nil), data...)
	copy(d[i:], []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f})
	d = reseal(d)
	_, err := walk(openScan(t, d, ReadOptions{}))
	if err == nil || !strings.Contains(err.Error(), "unary entry 3 is +Inf") {
		t.Fatalf("+Inf: %v", err)
	}
	// A limit below the states.
	if _, err := walk(openScan(t, data, ReadOptions{MaxEntries: 10})); err == nil || !strings.Contains(err.Error(), "limit of 10") {
		t.Fatalf("limit: %v", err)
	}
	// A cancelled context.
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("signal"))
	_, err = walk(openScan(t, data, ReadOptions{Context: ctx}))
	if err == nil || err.Error() != "indexed: m.ddx: reading stopped: signal" {
		t.Fatalf("context: %v", err)
	}
	// A callback's error comes back as it is.
	stop := errors.New("stop")
	for _, v := range []Visitor{
		{Cards: func(int, int, int) error { return stop }},
		{Unaries: func(int, []float64) error { return stop }},
		{Factor: func(int, Record, *model.Factor) error { return stop }},
	} {
		if err := s.Walk(v); err != stop {
			t.Fatalf("callback: %v", err)
		}
	}
}

// TestReadVars reads random sorted subsets of the variables.
func TestReadVars(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	big := model.New(slices.Repeat([]int{4}, 20000))
	for i := range big.Unary {
		big.Unary[i] = float64(i)
	}
	models := testModels()
	models["big"] = big
	for name, m := range models {
		data := encode(t, m, 0)
		s := openScan(t, data, ReadOptions{})
		n := len(m.Cards)
		for trial := 0; trial < 30; trial++ {
			var vars []int
			p := r.Float64()
			for v := range n {
				if r.Float64() < p*p {
					vars = append(vars, v)
				}
			}
			cards, unary, err := s.ReadVars(vars)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var want []float64
			for k, v := range vars {
				if cards[k] != m.Cards[v] {
					t.Fatalf("%s: variable %d: card %d, want %d", name, v, cards[k], m.Cards[v])
				}
				want = append(want, m.Unaries(v)...)
			}
			if !slices.Equal(unary, want) || len(cards) != len(vars) {
				t.Fatalf("%s: %v: unaries differ", name, vars)
			}
		}
	}
	s := openScan(t, encode(t, sample(), 0), ReadOptions{})
	for _, vars := range [][]int{{3, 2}, {1, 1}, {-1}, {12}} {
		if _, _, err := s.ReadVars(vars); err == nil {
			t.Fatalf("%v: no error", vars)
		}
	}
}

// TestReadCards: runs of the cardinalities, one for a uniform model.
func TestReadCards(t *testing.T) {
	for name, m := range testModels() {
		c, err := openScan(t, encode(t, m, 0), ReadOptions{}).ReadCards()
		if err != nil {
			t.Fatal(err)
		}
		if c.NumVars() != len(m.Cards) {
			t.Fatalf("%s: %d variables", name, c.NumVars())
		}
		for v, card := range m.Cards {
			if c.Card(v) != card {
				t.Fatalf("%s: variable %d: %d, want %d", name, v, c.Card(v), card)
			}
		}
		if c.Card(-1) != 0 || c.Card(len(m.Cards)) != 0 {
			t.Fatalf("%s: out of range", name)
		}
		if name == "grid" && c.Runs() != 1 {
			t.Fatalf("grid: %d runs", c.Runs())
		}
	}
	var none *CardRuns
	if none.Card(0) != 0 || none.NumVars() != 0 || none.Runs() != 0 {
		t.Fatal("nil CardRuns")
	}
}

// TestWalkAllocsDoNotGrow: Walk's allocations do not grow with the model.
func TestWalkAllocsDoNotGrow(t *testing.T) {
	var allocs []float64
	for _, side := range []int{30, 120} {
		data := encode(t, generate.Potts(generate.GridOptions{Height: side, Width: side, Labels: 4, Rho: 1, Seed: 1}), 0)
		s := openScan(t, data, ReadOptions{})
		v := visitAll()
		allocs = append(allocs, testing.AllocsPerRun(5, func() {
			if err := s.Walk(v); err != nil {
				t.Fatal(err)
			}
		}))
	}
	if allocs[1] > allocs[0] {
		t.Fatalf("allocations per Walk: %v for a 30x30 grid, %v for 120x120", allocs[0], allocs[1])
	}
}

// visitAll is a Visitor with every callback, keeping nothing.
func visitAll() Visitor {
	var sum float64
	return Visitor{
		Cards:   func(from, n, card int) error { return nil },
		Unaries: func(i int, u []float64) error { sum += u[0]; return nil },
		Factor:  func(a int, rec Record, f *model.Factor) error { sum += f.Weight; return nil },
	}
}

// BenchmarkWalkGrid walks a 300x300 4-label Potts grid's structure with
// every callback set (and a 150x150 one: allocs/op are the same).
func BenchmarkWalkGrid(b *testing.B) {
	for _, side := range []int{150, 300} {
		b.Run(strconv.Itoa(side), func(b *testing.B) {
			benchWalk(b, generate.Potts(generate.GridOptions{Height: side, Width: side, Labels: 4, Rho: 1, Seed: 1}))
		})
	}
}

// BenchmarkWalkLogic walks the structure of a logic model (negated inputs,
// budgets): its records carry what model.Factor keeps behind its pointer,
// so allocs/op counts what decoding them costs.
func BenchmarkWalkLogic(b *testing.B) {
	benchWalk(b, generate.Logic(generate.LogicOptions{Vars: 2000, Factors: 5000, Couplings: 2000, MaxArity: 6, Rho: 1, Seed: 1}))
}

// benchWalk walks m's encoded structure with every callback set.
func benchWalk(b *testing.B, m *model.Model) {
	data := encode(b, m, 0)
	s := openScan(b, data, ReadOptions{})
	v := visitAll()
	b.SetBytes(s.StructureSize())
	b.ReportAllocs()
	cpu := rusage.CPU()
	for b.Loop() {
		if err := s.Walk(v); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// reportCPU reports the process's CPU time per op since cpu: steadier than
// the wall time when other work shares the machine.
func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(rusage.CPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkReadRecordsDenseGrid reads all the factors of a 300x300 grid of
// dense 4x4 tables (what a worker does with its range), keeping them.
func BenchmarkReadRecordsDenseGrid(b *testing.B) { benchReadRecords(b, gridFile(b, true)) }

// BenchmarkReadRecordsGrid reads all the factors of a 300x300 Potts grid
// (what the plan's owner walks and a worker do with a range), keeping
// them.
func BenchmarkReadRecordsGrid(b *testing.B) { benchReadRecords(b, gridFile(b, false)) }

// benchReadRecords reads all the factors of data with ReadRecords, the
// cardinalities from ReadCards.
func benchReadRecords(b *testing.B, data []byte) {
	s := openScan(b, data, ReadOptions{})
	var pos int64
	if err := s.Walk(Visitor{Factor: func(a int, rec Record, _ *model.Factor) error {
		if a == 0 {
			pos = rec.Pos
		}
		return nil
	}}); err != nil {
		b.Fatal(err)
	}
	cards, err := s.ReadCards()
	if err != nil {
		b.Fatal(err)
	}
	keep := make([]model.Factor, s.NumFactors())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu := rusage.CPU()
	for b.Loop() {
		if err := s.ReadRecords(pos, 0, s.NumFactors(), cards.Card, func(a int, f *model.Factor) error {
			keep[a] = *f
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}
