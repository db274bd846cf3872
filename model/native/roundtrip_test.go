package native

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
	"github.com/vmihailenco/msgpack/v5"
)

func TestRoundTrip(t *testing.T) {
	m := allKinds()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Format{JSON, Msgpack} {
		t.Run(f.String(), func(t *testing.T) {
			m2 := roundTrip(t, m, f)
			if d := diffModels(m, m2); d != "" {
				t.Fatalf("round trip changed the %s", d)
			}
			// And once more, from what was read.
			if d := diffModels(m, roundTrip(t, m2, f)); d != "" {
				t.Fatalf("second round trip changed the %s", d)
			}
		})
	}
}

func TestRoundTripZeroUnaries(t *testing.T) {
	m := model.New([]int{2, 2})
	m.Factors = []model.Factor{{Kind: model.Potts, Vars: []int{0, 1}, Weight: 1}}
	for _, f := range []Format{JSON, Msgpack} {
		if d := diffModels(m, roundTrip(t, m, f)); d != "" {
			t.Fatalf("%v: round trip changed the %s", f, d)
		}
	}
	empty := model.New(nil)
	for _, f := range []Format{JSON, Msgpack} {
		if d := diffModels(empty, roundTrip(t, empty, f)); d != "" {
			t.Fatalf("%v: empty model: round trip changed the %s", f, d)
		}
	}
}

// TestRoundTripSequence round-trips sequences with shared and per-position
// transitions, with and without emission, and -Inf in both: the model, its
// scores, and the presence of "emission" in the output survive.
func TestRoundTripSequence(t *testing.T) {
	for _, c := range sequenceModels() {
		t.Run(c.name, func(t *testing.T) {
			m := c.m
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			f := &m.Factors[0]
			shared, _, _ := model.SequenceTransitions(m, f)
			if want := strings.HasPrefix(c.name, "shared"); shared != want {
				t.Fatalf("shared layout %v, want %v", shared, want)
			}
			if !slices.Contains(f.Table, math.Inf(-1)) || (f.EmissionScores() != nil && !slices.Contains(f.EmissionScores(), math.Inf(-1))) {
				t.Fatal("the test model has no -Inf")
			}
			for _, format := range []Format{JSON, Msgpack} {
				var b bytes.Buffer
				if err := Write(&b, m, format); err != nil {
					t.Fatal(err)
				}
				if format == JSON {
					if got := bytes.Contains(b.Bytes(), []byte(`"emission": [`)); got != (f.EmissionScores() != nil) {
						t.Errorf("JSON output has an emission: %v, want %v", got, f.EmissionScores() != nil)
					}
					if !bytes.Contains(b.Bytes(), []byte(`"-inf"`)) {
						t.Error(`JSON output has no "-inf"`)
					}
				}
				m2 := roundTrip(t, m, format)
				if d := diffModels(m, m2); d != "" {
					t.Fatalf("%v: round trip changed the %s", format, d)
				}
				if d := diffModels(m, roundTrip(t, m2, format)); d != "" {
					t.Fatalf("%v: second round trip changed the %s", format, d)
				}
				// Same scores everywhere.
				x := make([]int, m.NumVars())
				for {
					if s, s2 := m.Score(x), m2.Score(x); !sameFloat(s, s2) {
						t.Fatalf("%v: score of %v is %v after the round trip, was %v", format, x, s2, s)
					}
					i := 0
					for ; i < len(x); i++ {
						if x[i]++; x[i] < m.Cards[i] {
							break
						}
						x[i] = 0
					}
					if i == len(x) {
						break
					}
				}
			}
		})
	}
}

// TestReadSequence reads hand-written sequences: the fields land where they
// belong, "-inf" is -Inf, a null emission is none, and JSON and its msgpack
// conversion agree.
func TestReadSequence(t *testing.T) {
	inf := math.Inf(-1)
	js := doc("2, 2, 2, 3", `{"kind": "sequence", "vars": [0, 1, 2], "table": [0, 1.5, "-inf", -2], "emission": [1, 0, "-Infinity", 0, 0.5, -0.5]},
		{"kind": "sequence", "vars": [2, 3], "table": [1, 2, 3, 4, 5, "-INF"], "emission": null},
		{"kind": "sequence", "vars": [0, 1, 2], "table": [1, 2, 3, 4, 5, 6, 7, 8]}`)
	want := model.New([]int{2, 2, 2, 3})
	want.Factors = []model.Factor{
		model.Factor{Kind: model.Sequence, Vars: []int{0, 1, 2}, Table: []float64{0, 1.5, inf, -2}}.WithEmission([]float64{1, 0, inf, 0, 0.5, -0.5}),
		{Kind: model.Sequence, Vars: []int{2, 3}, Table: []float64{1, 2, 3, 4, 5, inf}},
		{Kind: model.Sequence, Vars: []int{0, 1, 2}, Table: []float64{1, 2, 3, 4, 5, 6, 7, 8}},
	}
	for _, c := range []struct {
		name   string
		data   []byte
		format Format
	}{
		{"m.json", []byte(js), JSON},
		{"m.msgpack", toMsgpack(t, js), Msgpack},
	} {
		m, err := Read(bytes.NewReader(c.data), c.name, c.format)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffModels(want, m); d != "" {
			t.Fatalf("%s: the %s differs", c.name, d)
		}
		// x = (0, 1, 0, 2): emission 1 + 0 + 0; links T(0,1) = 1.5 and
		// T(1,0) = "-inf" on the first; 3 on the second; the third's per
		// position T0(0,1) = 2, T1(1,0) = 7.
		if s := m.FactorScore(0, []int{0, 1, 0, 2}); !math.IsInf(s, -1) {
			t.Errorf("%s: factor 0 scores %v, want -Inf", c.name, s)
		}
		// x = (0, 1, 1, 2): emission 1 + 0 - 0.5, links T(0,1) + T(1,1).
		if s := m.FactorScore(0, []int{0, 1, 1, 2}); s != 1+0-0.5+1.5-2 {
			t.Errorf("%s: factor 0 scores %v, want 0", c.name, s)
		}
		if s := m.FactorScore(1, []int{0, 1, 0, 2}); s != 3 {
			t.Errorf("%s: factor 1 scores %v, want 3", c.name, s)
		}
		if s := m.FactorScore(2, []int{0, 1, 0, 2}); s != 2+7 {
			t.Errorf("%s: factor 2 scores %v, want 9", c.name, s)
		}
	}
}

func TestFiles(t *testing.T) {
	m := allKinds()
	dir := t.TempDir()
	for _, name := range []string{"m.json", "m.msgpack", "m.mp", "m.json.gz", "m.msgpack.gz", "M.JSON"} {
		path := filepath.Join(dir, name)
		if err := WriteFile(path, m); err != nil {
			t.Fatal(err)
		}
		m2, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffModels(m, m2); d != "" {
			t.Fatalf("%s: round trip changed the %s", name, d)
		}
	}
	// Read recognises gzip by its magic bytes, whatever the name.
	data, err := os.ReadFile(filepath.Join(dir, "m.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Read(bytes.NewReader(data), "m.json", JSON); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(filepath.Join(dir, "m.txt")); err == nil {
		t.Fatal("ReadFile accepted an unknown extension")
	}
	if err := WriteFile(filepath.Join(dir, "m.yaml"), m); err == nil {
		t.Fatal("WriteFile accepted an unknown extension")
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("ReadFile of a missing file succeeded")
	}
}

func TestWriteRejectsInvalid(t *testing.T) {
	m := allKinds()
	m.Factors[3].Weight = math.NaN()
	for _, f := range []Format{JSON, Msgpack} {
		if err := Write(&bytes.Buffer{}, m, f); err == nil {
			t.Fatalf("%v: wrote a model with a NaN weight", f)
		}
	}
	if err := Write(&bytes.Buffer{}, allKinds(), Format(7)); err == nil {
		t.Fatal("wrote an unknown format")
	}
	for name, change := range map[string]func(f *model.Factor){
		"a short emission":     func(f *model.Factor) { f.SetEmission(f.EmissionScores()[:7]) },
		"a +Inf emission":      func(f *model.Factor) { f.EmissionScores()[0] = math.Inf(1) },
		"a NaN transition":     func(f *model.Factor) { f.Table[1] = math.NaN() },
		"5 transitions":        func(f *model.Factor) { f.Table = append(f.Table, 0) },
		"a one-variable scope": func(f *model.Factor) { f.Vars = f.Vars[:1] },
	} {
		m := allKinds()
		f := &m.Factors[14]
		if f.Kind != model.Sequence || len(f.EmissionScores()) != 8 {
			t.Fatal("allKinds changed: factor 14 is not the shared sequence")
		}
		change(f)
		for _, format := range []Format{JSON, Msgpack} {
			if err := Write(&bytes.Buffer{}, m, format); err == nil {
				t.Errorf("%v: wrote a sequence with %s", format, name)
			}
		}
	}
}

// TestMsgpackIsStandard checks that the msgpack output decodes with a
// general-purpose decoder, and that a document made by a general-purpose
// encoder (ints for whole floats, float32, "-inf" strings, nil unaries)
// reads as expected.
func TestMsgpackIsStandard(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, allKinds(), Msgpack); err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := msgpack.Unmarshal(b.Bytes(), &generic); err != nil {
		t.Fatal(err)
	}
	if generic["format"] != formatName || len(generic["factors"].([]any)) != len(allKinds().Factors) {
		t.Fatalf("generic decoding: %v", generic)
	}

	doc := map[string]any{
		"format":   "ddrun-model",
		"version":  uint8(1),
		"cards":    []uint16{2, 3, 2},
		"unaries":  []any{nil, []any{float32(0.5), -2, "-Infinity"}, []any{int8(-100), int16(-1000)}},
		"constant": int32(-70000),
		"factors": []any{
			map[string]any{"kind": "dense", "vars": []int{1, 0}, "table": []any{1, 2, 3, "-inf", 5, 6.5}},
			map[string]any{"kind": "or", "vars": []int8{0}, "negated": nil},
			map[string]any{"kind": "potts", "vars": []int16{0, 2}, "weight": uint32(70000)},
			map[string]any{"kind": "dense", "vars": []uint16{2}, "table": []any{uint64(1 << 40), int64(-1 << 40)}},
			map[string]any{"kind": "budget", "vars": []uint32{0, 2}, "budget": uint64(1)},
			map[string]any{"kind": "andout", "vars": []int64{2, 0}, "negated": []bool{true, false}},
			map[string]any{"kind": "sequence", "vars": []int32{0, 1, 2}, "table": []any{1, float32(0.5), "-inf", 0, int8(-3), 2, 7, 8, 9, uint16(300), -1, "-Infinity"},
				"emission": []any{0, 1, float32(-0.25), 2, "-inf", int64(-1 << 40), 3}},
			map[string]any{"kind": "sequence", "vars": []int{2, 0}, "table": []int{1, 2, 3, 4}, "emission": nil},
		},
	}
	data, err := msgpack.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Read(bytes.NewReader(data), "g.msgpack", Msgpack)
	if err != nil {
		t.Fatal(err)
	}
	want := model.New([]int{2, 3, 2})
	copy(want.Unaries(1), []float64{0.5, -2, math.Inf(-1)})
	copy(want.Unaries(2), []float64{-100, -1000})
	want.Constant = -70000
	want.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{1, 0}, Table: []float64{1, 2, 3, math.Inf(-1), 5, 6.5}},
		{Kind: model.OR, Vars: []int{0}},
		{Kind: model.Potts, Vars: []int{0, 2}, Weight: 70000},
		{Kind: model.Dense, Vars: []int{2}, Table: []float64{1 << 40, -1 << 40}},
		model.Factor{Kind: model.Budget, Vars: []int{0, 2}}.WithBudget(1),
		model.Factor{Kind: model.ANDOut, Vars: []int{2, 0}}.WithNegated([]bool{true, false}),
		model.Factor{Kind: model.Sequence, Vars: []int{0, 1, 2}, Table: []float64{1, 0.5, math.Inf(-1), 0, -3, 2, 7, 8, 9, 300, -1, math.Inf(-1)}}.WithEmission([]float64{0, 1, -0.25, 2, math.Inf(-1), -1 << 40, 3}),
		{Kind: model.Sequence, Vars: []int{2, 0}, Table: []float64{1, 2, 3, 4}},
	}
	if d := diffModels(want, m); d != "" {
		t.Fatalf("generic document: the %s differs", d)
	}
}

// TestExample checks examples/logic-small.json: it uses every logic kind and
// a pair, a Potts and a dense factor, it is feasible, and writing it back
// reproduces the file byte for byte.
func TestExample(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "logic-small.json")
	m, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[model.Kind]bool{}
	negated := false
	for _, f := range m.Factors {
		kinds[f.Kind] = true
		for _, n := range f.NegatedInputs() {
			negated = negated || n
		}
	}
	for k := model.Dense; k <= model.Budget; k++ {
		if !kinds[k] {
			t.Errorf("no %s factor", k)
		}
	}
	if !negated {
		t.Error("no negated input")
	}
	n := m.NumVars()
	if n < 8 || n > 12 {
		t.Errorf("%d variables, want 8-12", n)
	}
	best := math.Inf(-1)
	x := make([]int, n)
	for s := 0; s < 1<<n; s++ {
		for i := range x {
			x[i] = s >> i & 1
		}
		best = math.Max(best, m.Score(x))
	}
	if math.IsInf(best, -1) {
		t.Fatal("the example is infeasible")
	}
	var b bytes.Buffer
	if err := Write(&b, m, JSON); err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(path)
	if !bytes.Equal(b.Bytes(), orig) {
		t.Errorf("writing the example back changes it:\n%s", b.String())
	}
}

// docExample returns the first JSON example of docs/native-format.md after
// the heading (from the start with heading ""), and the model Read makes
// of it.
func docExample(t *testing.T, heading string) ([]byte, *model.Model, error) {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "docs", "native-format.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := md, true
	if heading != "" {
		if _, section, ok = bytes.Cut(md, []byte(heading)); !ok {
			t.Fatalf("no section %q in the document", heading)
		}
	}
	_, rest, ok := bytes.Cut(section, []byte("```json\n"))
	if !ok {
		t.Fatalf("no JSON example after %q in the document", heading)
	}
	example, _, _ := bytes.Cut(rest, []byte("```"))
	m, err := Read(bytes.NewReader(example), "native-format.md", JSON)
	return example, m, err
}

// TestDocSequenceExample checks the sequence example of
// docs/native-format.md: it reads, uses the shared layout with an emission
// and -Inf transitions, its best assignment and score are those the text
// gives, and it is in canonical form.
func TestDocSequenceExample(t *testing.T) {
	example, m, err := docExample(t, "\n### Sequences\n")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Cards, []int{3, 3, 3}) {
		t.Fatalf("the example has cards %v, the text (and this test) three variables of 3 states", m.Cards)
	}
	if len(m.Factors) != 1 || m.Factors[0].Kind != model.Sequence || m.Factors[0].EmissionScores() == nil ||
		!slices.Contains(m.Factors[0].Table, math.Inf(-1)) {
		t.Fatal("the example is not one sequence with an emission and -inf transitions")
	}
	if shared, _, _ := model.SequenceTransitions(m, &m.Factors[0]); !shared {
		t.Error("the example does not use the shared layout")
	}
	best, arg, ties := math.Inf(-1), []int(nil), 0
	x := make([]int, m.NumVars())
	for s := range 27 {
		x[0], x[1], x[2] = s%3, s/3%3, s/9
		switch sc := m.Score(x); {
		case sc > best:
			best, arg, ties = sc, append([]int(nil), x...), 1
		case sc == best:
			ties++
		}
	}
	if best != 6 || ties != 1 || !slices.Equal(arg, []int{0, 1, 2}) {
		t.Errorf("best assignment %v scores %v (%d ties), the document says (0, 1, 2) and 6", arg, best, ties)
	}
	var b bytes.Buffer
	if err := Write(&b, m, JSON); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), example) {
		t.Errorf("the example is not in canonical form; Write gives:\n%s", b.String())
	}
}

// TestDocExample checks the example of docs/native-format.md: it reads, its
// best assignment is the one the text gives, and it is in canonical form.
func TestDocExample(t *testing.T) {
	example, m, err := docExample(t, "")
	if err != nil {
		t.Fatal(err)
	}
	best, arg := math.Inf(-1), []int(nil)
	x := make([]int, m.NumVars())
	var visit func(i int)
	visit = func(i int) {
		if i == len(x) {
			if s := m.Score(x); s > best {
				best, arg = s, append([]int(nil), x...)
			}
			return
		}
		for x[i] = 0; x[i] < m.Cards[i]; x[i]++ {
			visit(i + 1)
		}
	}
	visit(0)
	if best != 3.5 || !slices.Equal(arg, []int{0, 0, 1, 0, 0}) {
		t.Errorf("best assignment %v scores %v, the document says (0, 0, 1, 0, 0) and 3.5", arg, best)
	}
	var b bytes.Buffer
	if err := Write(&b, m, JSON); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), example) {
		t.Errorf("the example is not in canonical form; Write gives:\n%s", b.String())
	}
}
