package indexed

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// TestWriteReport: what WriteOptions.Report is told as a file is written
// (each factor's record position and payload entries, the structure's
// checksum, the cardinalities, the first -Inf unary after the folds) is
// what a Walk of the written file reads, for every golden model, folded
// or not, in memory and spilled; and the bytes are those written without
// a report.
func TestWriteReport(t *testing.T) {
	for name, c := range goldenCases() {
		for _, fold := range []bool{false, true} {
			for _, dir := range []string{"", t.TempDir()} {
				type seen struct {
					rel     int64
					entries int
					kind    model.Kind
					vars    []int
					cost    int
				}
				var got []seen
				var w Written
				closed := 0
				rep := WriteReport{
					Factor: func(f WrittenFactor) {
						if f.A != len(got) {
							t.Fatalf("%s: factor %d reported as %d", name, len(got), f.A)
						}
						cost := 0
						for _, v := range f.Factor.Vars {
							cost += f.Cards.Card(v)
						}
						got = append(got, seen{f.Rel, f.Entries, f.Factor.Kind, slices.Clone(f.Factor.Vars), cost})
					},
					Closed: func(x Written) { w = x; closed++ },
				}
				var b bytes.Buffer
				if err := Write(&b, c.m, WriteOptions{FoldUnary: fold, TempDir: dir, Report: rep}); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b.Bytes(), encodeFold(t, c.m, fold)) {
					t.Fatalf("%s fold=%v: a report changed the bytes", name, fold)
				}
				if closed != 1 {
					t.Fatalf("%s: Closed called %d times", name, closed)
				}
				sc, err := OpenScan(bytes.NewReader(b.Bytes()), int64(b.Len()), name, ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if w.Size != int64(b.Len()) || w.StructureCRC != sc.StructureCRC() || w.NumVars != sc.NumVars() ||
					w.NumFactors != sc.NumFactors() || w.NumFactors != len(got) {
					t.Fatalf("%s fold=%v: written %+v, file: size %d crc %x, %d vars, %d factors (%d reported)", name, fold,
						w, b.Len(), sc.StructureCRC(), sc.NumVars(), sc.NumFactors(), len(got))
				}
				fv, fs := -1, -1
				var runs CardRuns
				err = sc.Walk(Visitor{
					Cards: func(_, n, card int) error { runs.Append(n, card); return nil },
					Unaries: func(i int, u []float64) error {
						for k, x := range u {
							if math.IsInf(x, -1) && fv < 0 {
								fv, fs = i, k
							}
						}
						return nil
					},
					Factor: func(a int, rec Record, f *model.Factor) error {
						g := got[a]
						if rec.Pos != w.Records+g.rel || rec.Payload.Entries() != g.entries || f.Kind != g.kind || !slices.Equal(f.Vars, g.vars) {
							t.Fatalf("%s fold=%v: factor %d at %d with %d entries (%v %v), reported at %d+%d with %d (%v %v)", name, fold,
								a, rec.Pos, rec.Payload.Entries(), f.Kind, f.Vars, w.Records, g.rel, g.entries, g.kind, g.vars)
						}
						cost := 0
						for _, v := range f.Vars {
							cost += runs.Card(v)
						}
						if cost != g.cost {
							t.Fatalf("%s: factor %d: scope states %d, reported cards give %d", name, a, cost, g.cost)
						}
						return nil
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				if fv != w.ForbiddenVar || fs != w.ForbiddenState {
					t.Fatalf("%s fold=%v: first -Inf unary (%d, %d), reported (%d, %d)", name, fold, fv, fs, w.ForbiddenVar, w.ForbiddenState)
				}
				if runs.Runs() != w.Cards.Runs() || runs.NumVars() != w.Cards.NumVars() {
					t.Fatalf("%s: %d runs over %d variables, reported %d over %d", name, runs.Runs(), runs.NumVars(), w.Cards.Runs(), w.Cards.NumVars())
				}
				for v := range w.NumVars {
					if runs.Card(v) != w.Cards.Card(v) {
						t.Fatalf("%s: variable %d: cardinality %d, reported %d", name, v, runs.Card(v), w.Cards.Card(v))
					}
				}
			}
		}
	}
}

// TestWriteReportForbiddenByFold: a -Inf that a fold brings to an earlier
// variable than AddVar's first is the one reported.
func TestWriteReportForbiddenByFold(t *testing.T) {
	m := model.New([]int{2, 3, 3})
	m.Unary[m.UnaryOff[2]+2] = math.Inf(-1)
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{0, 1}, Table: make([]float64, 6)},
		{Kind: model.Dense, Vars: []int{1}, Table: []float64{0, 1, math.Inf(-1)}},
		{Kind: model.Dense, Vars: []int{1}, Table: []float64{0, math.Inf(-1), 2}},
	}
	for _, c := range []struct {
		fold              bool
		v, state, factors int
	}{{true, 1, 1, 1}, {false, 2, 2, 3}} { // unfolded: the unaries' own -Inf
		var w Written
		if err := Write(&bytes.Buffer{}, m, WriteOptions{FoldUnary: c.fold, Report: WriteReport{Closed: func(x Written) { w = x }}}); err != nil {
			t.Fatal(err)
		}
		if w.ForbiddenVar != c.v || w.ForbiddenState != c.state || w.NumFactors != c.factors {
			t.Fatalf("fold %v: reported (%d, %d) of %d factors, want (%d, %d) of %d", c.fold, w.ForbiddenVar, w.ForbiddenState, w.NumFactors, c.v, c.state, c.factors)
		}
	}
}

// encodeFold writes m in memory with the default block, folded or not.
func encodeFold(t *testing.T, m *model.Model, fold bool) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, m, WriteOptions{FoldUnary: fold}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
