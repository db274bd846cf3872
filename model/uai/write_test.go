package uai

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// allKindsModel builds a model with every factor kind, non-zero unaries, a
// constant, a 0-arity factor and hard constraints.
func allKindsModel() *model.Model {
	cards := []int{2, 2, 2, 2, 3, 3, 2, 4}
	m := model.New(cards)
	m.Constant = -3.25
	copy(m.Unaries(0), []float64{0.5, -1})
	copy(m.Unaries(4), []float64{0, math.Inf(-1), 2})
	copy(m.Unaries(7), []float64{1e-3, 0, 0, 7})
	add := func(f model.Factor) { m.Factors = append(m.Factors, f) }
	add(model.Factor{Kind: model.Dense, Vars: []int{4, 7, 1}, Table: seqTable(3*4*2, 0.37)})
	add(model.Factor{Kind: model.Dense, Vars: []int{}, Table: []float64{1.5}})
	add(model.Factor{Kind: model.Dense, Vars: []int{6}, Table: []float64{math.Inf(-1), -0.25}})
	add(model.Factor{Kind: model.Pair, Vars: []int{0, 1}, Weight: 1.75})
	add(model.Factor{Kind: model.Potts, Vars: []int{4, 5}, Weight: -0.6})
	add(model.Factor{Kind: model.XOR, Vars: []int{0, 1, 2}}.WithNegated([]bool{false, false, false}))
	add(model.Factor{Kind: model.AtMostOne, Vars: []int{1, 2, 3}})
	add(model.Factor{Kind: model.OR, Vars: []int{3, 6}}.WithNegated([]bool{true, false}))
	add(model.Factor{Kind: model.OROut, Vars: []int{0, 2, 3}})
	add(model.Factor{Kind: model.ANDOut, Vars: []int{1, 3, 6}}.WithNegated([]bool{false, true, false}))
	add(model.Factor{Kind: model.Budget, Vars: []int{0, 1, 2, 3, 6}}.WithBudget(2))
	add(model.Factor{Kind: model.TruncLinear, Vars: []int{5, 4}, Weight: 0.75, Trunc: 1.5})
	add(model.Factor{Kind: model.TruncQuad, Vars: []int{4, 5}, Weight: -1.25, Trunc: 3})
	return m
}

// seqTable returns n deterministic log-potentials.
func seqTable(n int, step float64) []float64 {
	t := make([]float64, n)
	for i := range t {
		t[i] = math.Sin(float64(i)*step) * 3
	}
	return t
}

// allAssignments calls fn with every assignment of m (small models only).
func allAssignments(m *model.Model, fn func(x []int)) {
	x := make([]int, len(m.Cards))
	for {
		fn(x)
		k := len(x) - 1
		for ; k >= 0; k-- {
			x[k]++
			if x[k] < m.Cards[k] {
				break
			}
			x[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

func TestWriteRoundTripAllKinds(t *testing.T) {
	m := allKindsModel()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, base := range []LogBase{Potentials, Ln, Log10} {
		back := roundTrip(t, m, WriteOptions{Log: base})
		for _, f := range back.Factors {
			// Exactly structured pairwise tables come back structured
			// (model.StructurePairs), everything else dense.
			if f.Kind != model.Dense && !f.Kind.IsStructuredPair() {
				t.Fatalf("%v: read back a %v factor", base, f.Kind)
			}
		}
		// Factors keep their index; unaries and the constant come after.
		if len(back.Factors) < len(m.Factors)+3 {
			t.Errorf("%v: %d factors, want at least %d", base, len(back.Factors), len(m.Factors)+3)
		}
		for a := range m.Factors {
			if !slices.Equal(back.Factors[a].Vars, m.Factors[a].Vars) {
				t.Errorf("%v: factor %d scope %v, want %v", base, a, back.Factors[a].Vars, m.Factors[a].Vars)
			}
		}
		feasible := 0
		allAssignments(m, func(x []int) {
			want, got := m.Score(x), back.Score(x)
			if !close(got, want, 1e-12) {
				t.Fatalf("%v: score of %v = %v, want %v", base, x, got, want)
			}
			if !math.IsInf(want, -1) {
				feasible++
			}
		})
		if feasible == 0 {
			t.Fatalf("test model has no feasible assignment")
		}
	}
}

// TestWriteEntriesExact checks that potentials are printed with enough
// digits to give back the same log-potentials.
func TestWriteEntriesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := model.New([]int{5, 7})
	table := make([]float64, 35)
	for i := range table {
		table[i] = (rng.Float64() - 0.5) * 100
	}
	table[3] = 0
	table[4] = math.Inf(-1)
	table[5] = 1e-9
	table[6] = -699.99
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{1, 0}, Table: table}}
	back := roundTrip(t, m, WriteOptions{})
	if len(back.Factors) != 1 {
		t.Fatalf("%d factors, want 1 (no shift needed)", len(back.Factors))
	}
	for i, want := range table {
		got := back.Factors[0].Table[i]
		if !(got == want || math.Abs(got-want) <= 1e-12*math.Max(1, math.Abs(want))) {
			t.Errorf("entry %d: %v, want %v", i, got, want)
		}
	}
}

// TestWriteWideRange checks log-potentials whose exponentials would
// overflow or underflow float64.
func TestWriteWideRange(t *testing.T) {
	m := wideModel()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "Inf") || strings.Contains(buf.String(), "NaN") {
		t.Fatalf("output holds non-finite potentials:\n%s", buf.String())
	}
	back, err := Read(&buf, "wide.uai")
	if err != nil {
		t.Fatal(err)
	}
	allAssignments(m, func(x []int) {
		want, got := m.Score(x), back.Score(x)
		if !close(got, want, 1e-12) {
			t.Fatalf("score of %v = %v, want %v", x, got, want)
		}
	})
}

func TestWriteRoundTripFiles(t *testing.T) {
	dir := t.TempDir()
	for _, text := range []string{markovExample, bayesExample} {
		m := mustRead(t, text, "example.uai")
		for _, name := range []string{"m.uai", "m.uai.gz", "m.LG", "m.LG.gz"} {
			path := filepath.Join(dir, name)
			if err := WriteFile(path, m); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if gz := len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b; gz != strings.HasSuffix(name, ".gz") {
				t.Errorf("%s: gzip %v", name, gz)
			}
			back, err := ReadFile(path)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			allAssignments(m, func(x []int) {
				if want, got := m.Score(x), back.Score(x); !close(got, want, 1e-12) {
					t.Fatalf("%s: score of %v = %v, want %v", name, x, got, want)
				}
			})
			// Read -> write -> read -> write gives the same text.
			var again bytes.Buffer
			if err := WriteWith(&again, back, WriteOptions{Log: OptionsFor(name).Log}); err != nil {
				t.Fatal(err)
			}
			plain := raw
			if strings.HasSuffix(name, ".gz") {
				b, err := Read(bytes.NewReader(raw), name)
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if err := WriteWith(&buf, b, WriteOptions{Log: OptionsFor(name).Log}); err != nil {
					t.Fatal(err)
				}
				plain = buf.Bytes()
			}
			if !bytes.Equal(plain, again.Bytes()) {
				t.Errorf("%s: second write differs:\n%s\n---\n%s", name, plain, again.Bytes())
			}
		}
	}
}

func TestWriteFormat(t *testing.T) {
	m := model.New([]int{2, 3})
	m.Constant = math.Log(2)
	copy(m.Unaries(0), []float64{0, math.Log(0.5)})
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{1, 0}, Table: []float64{0, math.Log(2), math.Log(0.25), math.Inf(-1), math.Log(4), 0}}}
	var buf bytes.Buffer
	if err := Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	want := "MARKOV\n2\n2 3\n3\n2 1 0\n1 0\n0\n\n6\n1 2\n0.25 0\n4 1\n\n2\n1 0.5\n\n1\n2\n"
	if buf.String() != want {
		t.Errorf("got\n%q\nwant\n%q", buf.String(), want)
	}
}

func TestWriteErrors(t *testing.T) {
	// Invalid models are refused.
	m := model.New([]int{2})
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0}, Table: []float64{0}}}
	if err := Write(&bytes.Buffer{}, m); err == nil || !strings.Contains(err.Error(), "invalid model") {
		t.Errorf("invalid model: %v", err)
	}
	// A logic factor whose table would not fit.
	cards := make([]int, 30)
	for i := range cards {
		cards[i] = 2
	}
	vars := make([]int, 30)
	for i := range vars {
		vars[i] = i
	}
	m = model.New(cards)
	m.Factors = []model.Factor{{Kind: model.AtMostOne, Vars: vars}}
	err := Write(&bytes.Buffer{}, m)
	if err == nil || !strings.Contains(err.Error(), "factor 0 (atmostone)") || !strings.Contains(err.Error(), "268435456") {
		t.Errorf("huge logic factor: %v", err)
	}
	// A range too wide for potentials, even split.
	m = model.New([]int{2})
	m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0}, Table: []float64{1e300, -1e300}}}
	if err := Write(&bytes.Buffer{}, m); err == nil || !strings.Contains(err.Error(), "too wide") {
		t.Errorf("wide range: %v", err)
	}
	if err := WriteWith(&bytes.Buffer{}, m, WriteOptions{Log: Ln}); err != nil {
		t.Errorf("wide range as LG: %v", err)
	}
	if err := WriteWith(&bytes.Buffer{}, m, WriteOptions{Log: 9}); err == nil {
		t.Errorf("invalid log base accepted")
	}
	// Write errors are reported.
	if err := Write(failingWriter{}, allKindsModel()); err == nil {
		t.Errorf("failing writer: no error")
	}
	// An unwritable path.
	if err := WriteFile(filepath.Join(t.TempDir(), "no", "such", "dir.uai"), allKindsModel()); err == nil {
		t.Errorf("bad path: no error")
	}
}

type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) { return 0, os.ErrClosed }

// TestRoundTripRandom round-trips random grids read from text.
func TestRoundTripRandom(t *testing.T) {
	m := gridModel(12, 9, 3, 5)
	var buf bytes.Buffer
	if err := Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	first, err := Read(bytes.NewReader(buf.Bytes()), "grid.uai")
	if err != nil {
		t.Fatal(err)
	}
	sameScores(t, m, first, 200, 1e-9)
	second := roundTrip(t, first, WriteOptions{})
	sameScores(t, first, second, 200, 1e-9)
}

// ProblemName is the base name up to its first dot, after either kind of
// separator.
func TestProblemName(t *testing.T) {
	for path, want := range map[string]string{
		"dir/grid.wcsp.gz": "grid",
		`C:\data\m.cfn`:    "m",
		"plain":            "plain",
		"/a.b/c":           "c",
		"dir/.hidden":      "",
	} {
		if got := ProblemName(path); got != want {
			t.Errorf("ProblemName(%q) = %q, want %q", path, got, want)
		}
	}
}

// OpenRead hands the reader the file and its path, and names the format in
// the error of a file that does not open.
func TestOpenRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.txt")
	if err := os.WriteFile(path, []byte("MARKOV"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := OpenRead("fmt", path, func(r io.Reader, name string) (string, error) {
		b, err := io.ReadAll(r)
		return name + " " + string(b), err
	})
	if err != nil || got != path+" MARKOV" {
		t.Errorf("read %q, %v", got, err)
	}
	_, err = OpenRead("fmt", path+".missing", func(io.Reader, string) (int, error) { return 1, nil })
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "fmt: ") {
		t.Errorf("a missing file: %v", err)
	}
}
