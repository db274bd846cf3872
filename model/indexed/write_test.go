package indexed

import (
	"bytes"
	"io"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// withUnaryFactors returns the sample model with factors over 0 and 1
// variables of every kind that has them.
func withUnaryFactors() *model.Model {
	m := sample()
	bin := slices.Index(m.Cards, 2)
	m.Factors = append(m.Factors,
		model.Factor{Kind: model.Dense, Vars: []int{}, Table: []float64{0.5}},
		model.Factor{Kind: model.Dense, Vars: []int{3}, Table: []float64{1, math.Inf(-1)}},
		model.Factor{Kind: model.XOR, Vars: []int{bin}},
		model.Factor{Kind: model.OR, Vars: []int{bin + 1}}.WithNegated([]bool{true}),
		model.Factor{Kind: model.AtMostOne, Vars: []int{bin}},
		model.Factor{Kind: model.Budget, Vars: []int{bin + 2}}.WithBudget(0),
		model.Factor{Kind: model.Dense, Vars: []int{3}, Table: []float64{-2, 0.25}},
	)
	if err := m.Validate(); err != nil {
		panic(err)
	}
	return m
}

// closeScores checks that a and b score random assignments alike, up to
// rounding (folding adds in another order).
func closeScores(t *testing.T, a, b *model.Model) {
	t.Helper()
	r := rand.New(rand.NewSource(1))
	x := make([]int, len(a.Cards))
	finite := 0
	for n := 0; n < 2000; n++ {
		for i, c := range a.Cards {
			x[i] = r.Intn(c)
		}
		sa, sb := a.Score(x), b.Score(x)
		if sa != sb && !(math.Abs(sa-sb) <= 1e-12*(1+math.Abs(sa))) {
			t.Fatalf("score at %v: %v, want %v", x, sb, sa)
		}
		if !math.IsInf(sa, -1) {
			finite++
		}
	}
	if finite == 0 {
		t.Fatal("no assignment with a finite score: the test checks little")
	}
}

func TestFoldUnary(t *testing.T) {
	m := withUnaryFactors()
	unary := slices.Clone(m.Unary)
	var b bytes.Buffer
	w, err := NewWriter(&b, m, WriteOptions{FoldUnary: true})
	if err != nil {
		t.Fatal(err)
	}
	for a := range m.Factors {
		if err := w.Add(&m.Factors[a]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Unary, unary) {
		t.Fatal("the writer changed the model's unaries")
	}
	got, err := ReadModel(bytes.NewReader(b.Bytes()), int64(b.Len()), "m.ddx", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	small := 0
	for _, f := range m.Factors {
		if len(f.Vars) < 2 {
			small++
		}
	}
	if w.Folded() != small || w.Factors() != len(m.Factors)-small || len(got.Factors) != w.Factors() {
		t.Fatalf("folded %d, wrote %d (read %d), of %d with %d over < 2 variables", w.Folded(), w.Factors(), len(got.Factors), len(m.Factors), small)
	}
	for a, f := range got.Factors {
		if len(f.Vars) < 2 {
			t.Fatalf("factor %d over %d variables", a, len(f.Vars))
		}
	}
	if got.Constant != m.Constant+0.5 {
		t.Fatalf("constant %v, want %v", got.Constant, m.Constant+0.5)
	}
	closeScores(t, m, got)
}

// TestFoldUnaryKeeps: a factor whose fold would make the constant
// infinite, or a unary NaN or +Inf, is written as it is.
func TestFoldUnaryKeeps(t *testing.T) {
	m := model.New([]int{2, 3})
	m.Unary[0] = math.MaxFloat64
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{}, Table: []float64{math.Inf(-1)}},
		{Kind: model.Dense, Vars: []int{0}, Table: []float64{math.MaxFloat64, 0}},
		{Kind: model.Dense, Vars: []int{1}, Table: []float64{1, math.Inf(-1), 2}},
	}
	var b bytes.Buffer
	if err := Write(&b, m, WriteOptions{FoldUnary: true}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadModel(bytes.NewReader(b.Bytes()), int64(b.Len()), "m.ddx", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Factors) != 2 || len(got.Factors[0].Vars) != 0 || len(got.Factors[1].Vars) != 1 || got.Factors[1].Vars[0] != 0 {
		t.Fatalf("factors %+v, want the first two kept", got.Factors)
	}
	if !slices.Equal(got.Unaries(1), []float64{1, math.Inf(-1), 2}) {
		t.Fatalf("unary %v", got.Unaries(1))
	}
}

// TestWriteStream: a streamed grid is, byte for byte, the built one
// written, and so is a logic model given as a Source, with folding.
func TestWriteStream(t *testing.T) {
	o := generate.GridOptions{Height: 7, Width: 9, Labels: 3, Rho: 1, Seed: 4}
	logic := withUnaryFactors()
	for _, c := range []struct {
		src model.Source
		m   *model.Model
	}{
		{generate.PottsStream(o), generate.Potts(o)},
		{generate.IsingStream(o), generate.Ising(o)},
		{model.SourceOf(logic), logic},
	} {
		for _, fold := range []bool{false, true} {
			opts := WriteOptions{FoldUnary: fold, BlockSize: MinBlockSize}
			var want, got bytes.Buffer
			if err := Write(&want, c.m, opts); err != nil {
				t.Fatal(err)
			}
			var calls int64
			err := WriteStream(&got, c.src, opts, func(done, total int64) {
				calls++
				if done > total || total != int64(len(c.m.Cards)+len(c.m.Factors)) {
					t.Fatalf("progress %d / %d", done, total)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) || calls == 0 {
				t.Fatalf("fold %v: streamed file differs (%d vs %d bytes), %d progress calls", fold, got.Len(), want.Len(), calls)
			}
		}
	}
}

// A Writer that keeps the structure in memory takes at most
// model.MaxTableEntries states in all, as a model in memory may hold; one
// that spills it to temporary files holds nothing per state and takes the
// format's bound, so that a 10^8-variable 4-label grid (4*10^8 states) can
// be written (issue 25's 10^8 run).
func TestWriterStatesBound(t *testing.T) {
	wr, err := NewStreamWriter(io.Discard, 0, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.AddVar(model.MaxTableEntries+1, nil); err == nil || !strings.Contains(err.Error(), "states in all") {
		t.Fatalf("in memory: a variable of %d states: got %v, want refused", model.MaxTableEntries+1, err)
	}
	if got := maxStates(WriteOptions{TempDir: t.TempDir()}); got != MaxSpilledStates || got < 4e8 {
		t.Fatalf("spilled: bound %d, want %d", got, MaxSpilledStates)
	}
}
