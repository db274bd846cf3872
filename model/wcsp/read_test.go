package wcsp

import (
	"bytes"
	"compress/gzip"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// read reads s as a WCSP file named t.wcsp.
func read(t *testing.T, s string) *model.Model {
	t.Helper()
	m, err := Read(strings.NewReader(s), "t.wcsp", ReadOptions{})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("read an invalid model: %v", err)
	}
	return m
}

// wantCosts checks the cost of every assignment (the cost is -Inf's
// negation, +Inf, for a forbidden one).
func wantCosts(t *testing.T, m *model.Model, cost func(x []int) float64) {
	t.Helper()
	for x := range oracle.Assignments(m.Cards) {
		if got, want := Cost(m.Score(x)), cost(x); got != want {
			t.Fatalf("cost of %v: got %v, want %v", x, got, want)
		}
	}
}

func TestReadFeatures(t *testing.T) {
	cases := []struct {
		name, file string
		cost       func(x []int) float64
	}{
		{"unary and binary with defaults", `pb 2 3 2 10
2 3
1 0 5 1
1 0
2 0 1 1 2
0 2 4
1 1 0
`, func(x []int) float64 {
			c := 5.0
			if x[0] == 1 {
				c = 0
			}
			switch {
			case x[0] == 0 && x[1] == 2:
				c += 4
			case x[0] == 1 && x[1] == 1:
				c += 0
			default:
				c++
			}
			return c
		}},
		{"top forbids", `pb 2 2 1 5
2 2
2 0 1 0 2
0 0 5
1 1 7
`, func(x []int) float64 {
			if x[0] == x[1] {
				return math.Inf(1)
			}
			return 0
		}},
		{"ternary, n-ary and constants", `pb 4 2 4 100
2 2 2 2
3 0 1 2 1 1
1 1 1 0
4 0 1 2 3 0 2
1 0 0 1 3
0 0 0 0 4
0 7 0
0 0 1
2
`, func(x []int) float64 {
			c := 9.0
			if x[0] == 1 && x[1] == 1 && x[2] == 1 {
				c += 0
			} else {
				c++
			}
			if x[0] == 1 && x[1] == 0 && x[2] == 0 && x[3] == 1 {
				c += 3
			}
			if x[0] == 0 && x[1] == 0 && x[2] == 0 && x[3] == 0 {
				c += 4
			}
			return c
		}},
		{"shared tables", `pb 5 2 5 1000
2 2 2 2 2
-2 0 1 0 1
0 1 3
2 2 3 0 -1
-4 0 1 2 3 1 1
1 1 1 1 0
4 1 2 3 4 2 -2
1 0 0 1
0 -1
`, func(x []int) float64 {
			c := 0.0
			if x[0] == 0 && x[1] == 1 {
				c += 3
			}
			if x[2] == 0 && x[3] == 1 {
				c += 3
			}
			if !(x[0] == 1 && x[1] == 1 && x[2] == 1 && x[3] == 1) {
				c++
			}
			if !(x[1] == 1 && x[2] == 1 && x[3] == 1 && x[4] == 1) {
				c += 2
			}
			if x[0] == 0 {
				c--
			}
			return c
		}},
		{"negative costs, duplicates override, CRLF", "pb 1 3 2 50\r\n3\r\n1 0 -2 2\r\n1 4\r\n1 -1\r\n1 0 0 1 2 60\r\n", func(x []int) float64 {
			switch x[0] {
			case 0:
				return -2
			case 1:
				return -1
			}
			return math.Inf(1)
		}},
		{"a forbidden constant", "pb 1 2 1 9\n2\n0 9 0\n", func([]int) float64 { return math.Inf(1) }},
		{"no variables", "empty 0 0 1 9\n0 4 0\n", func([]int) float64 { return 4 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := read(t, c.file)
			wantCosts(t, m, c.cost)
			// gzip-compressed, the same model
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write([]byte(c.file))
			zw.Close()
			mz, err := Read(&buf, "t.wcsp.gz", ReadOptions{})
			if err != nil {
				t.Fatalf("gzip: %v", err)
			}
			wantCosts(t, mz, c.cost)
		})
	}
}

// readErrors are malformed inputs and the start of their one-line errors.
var readErrors = []struct{ input, want string }{
	{"", "t.wcsp:1: unexpected end of file: want problem name"},
	{"pb 1 2 0", "t.wcsp:1: unexpected end of file: want upper bound top"},
	{"pb x 2 0 1", `t.wcsp:1: number of variables: want an integer, have "x"`},
	{"pb 1 2 0 0\n2", "t.wcsp:1: upper bound top 0: want > 0"},
	{"pb 1 2 0 10\n-3\n", "t.wcsp:2: not supported: interval variable 0"},
	{"pb 1 2 0 10\n0\n", "t.wcsp:2: variable 0: empty domain"},
	{"pb 2 2 1 10\n2 2\n2 0 1 -1 salldiff var -1\n", "t.wcsp:3: not supported: salldiff (global cost function)"},
	{"pb 2 2 1 10\n2 2\n2 0 1 -1 >= 0 0\n", "t.wcsp:3: not supported: >= (global cost function)"},
	{"pb 3 2 1 10\n2 2 2\n3 0 1 2 -1 sgcc\n", "t.wcsp:3: not supported: sgcc (global cost function)"},
	{"pb 2 2 1 10\n2 2\n1 0 -1 knapsack 1 1\n", "t.wcsp:3: not supported: knapsack (global cost function)"},
	{"pb 2 2 1 10\n2 2\n2 0 0 0 0\n", "t.wcsp:3: cost function 0: variable 0 twice in the scope"},
	{"pb 2 2 1 10\n2 2\n2 0 2 0 0\n", "t.wcsp:3: variable of cost function 0 2 out of range [0, 1]"},
	{"pb 2 2 1 10\n2 2\n2 0 1 0 1\n0 2 3\n", "t.wcsp:4: value of variable 1 in tuple 1 of cost function 0 2 out of range [0, 1]"},
	{"pb 2 2 1 10\n2 2\n2 0 1 0 5\n", "t.wcsp:3: cost function 0: 5 tuples for a table of 4 entries"},
	{"pb 2 2 1 10\n2 2\n2 0 1 0 1\n0 1 x\n", `t.wcsp:4: cost of tuple 1 of cost function 0: want an integer, have "x"`},
	{"pb 2 2 1 10\n2 2\n2 0 1 0 -1\n", "t.wcsp:3: cost function 0: shared table 1 is not defined (0 so far)"},
	{"pb 2 2 1 10\n2 2\n1 0 0 -9223372036854775808\n", "t.wcsp:3: cost function 0: shared table -9223372036854775808 is not defined"},
	{"pb 2 2 2 10\n2 3\n-1 0 0 0\n1 1 0 -1\n", "t.wcsp:4: cost function 1: shared table 1 has domain sizes [2], the scope [3]"},
	{"pb 2 2 1 10\n2 2\n0 1 2\n", "t.wcsp:3: number of tuples of constant cost function 0 2 out of range [0, 1]"},
	{"pb 2 2 1 10\n2 2\n3 0 1 1 0 0\n", "t.wcsp:3: arity of cost function 0 3 out of range [-2, 2]"},
	{"pb 2 2 1 10\n2 2\n1 0 0 0\n7\n", `t.wcsp:4: unexpected "7" after the 1 cost functions`},
	{"pb 2 2 2 10\n2 2\n1 0 0 0\n", "t.wcsp:3: unexpected end of file: want arity of cost function 1"},
	{"pb 1 2 1 99999999999999999999\n", `t.wcsp:1: upper bound top: "99999999999999999999" out of range`},
	{"pb 1 2 1 9007199254740999\n2\n1 0 9007199254740993 0\n", "t.wcsp:3: default cost of cost function 0 9007199254740993: magnitude above 2^53"},
	{"pb 2 1000 1 10\n1000 1000\n2 0 1 0 0\n", "t.wcsp:3: cost function 0: table of more than 1000 entries exceeds the entry limit"},
	{"pb 2 2 1 10\n2 2\n1 0 0 0 " + strings.Repeat("9", 300), "t.wcsp:3: unexpected"},
}

func TestReadErrors(t *testing.T) {
	for _, c := range readErrors {
		_, err := Read(strings.NewReader(c.input), "t.wcsp", ReadOptions{MaxEntries: 10000})
		if err == nil {
			t.Errorf("%q: no error, want %q", c.input, c.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.want) || strings.ContainsAny(err.Error(), "\r\n") {
			t.Errorf("%q:\n got %q\nwant %q...", c.input, err, c.want)
		}
	}
}

// randomCostModel is a model of small random integer scores over up to 4
// variables, with forbidden entries, all kinds of factor scopes (0 to 3
// variables), unaries and a constant.
func randomCostModel(rng *rand.Rand) *model.Model {
	n := 1 + rng.Intn(4)
	cards := make([]int, n)
	for i := range cards {
		cards[i] = 1 + rng.Intn(3)
	}
	m := model.New(cards)
	for i := range m.Unary {
		m.Unary[i] = float64(rng.Intn(7) - 3)
	}
	m.Constant = float64(rng.Intn(21) - 10)
	for a := rng.Intn(5); a > 0; a-- {
		vars := rng.Perm(n)[:rng.Intn(min(n, 3)+1)]
		size, _ := m.TableSize(vars)
		table := make([]float64, size)
		for e := range table {
			if rng.Intn(6) == 0 {
				table[e] = math.Inf(-1)
			} else {
				table[e] = float64(rng.Intn(21) - 10)
			}
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: vars, Table: table})
	}
	if n >= 2 && rng.Intn(2) == 0 {
		m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{0, 1}, Weight: float64(rng.Intn(5) - 2)})
		m.Cards[1] = m.Cards[0]
		m2 := model.New(m.Cards)
		m2.Constant, m2.Factors = m.Constant, m.Factors
		for i := range m2.Unary {
			m2.Unary[i] = float64(rng.Intn(7) - 3)
		}
		for a := range m2.Factors {
			f := &m2.Factors[a]
			if f.Kind == model.Dense {
				size, _ := m2.TableSize(f.Vars)
				if len(f.Table) != size {
					f.Table = make([]float64, size)
				}
			}
		}
		m = m2
	}
	return m
}

// TestRoundTripUAI writes random integer-score models as UAI (.LG: natural
// logarithms, exact for integers), reads them back, writes them as WCSP and
// reads that: every assignment keeps its score.
func TestRoundTripUAI(t *testing.T) {
	rng := rand.New(rand.NewSource(29))
	for it := 0; it < 300; it++ {
		m := randomCostModel(rng)
		if err := m.Validate(); err != nil {
			t.Fatalf("model %d: %v", it, err)
		}
		var lg bytes.Buffer
		if err := uai.WriteWith(&lg, m, uai.WriteOptions{Log: uai.Ln}); err != nil {
			t.Fatalf("model %d: uai: %v", it, err)
		}
		mu, err := uai.ReadWith(&lg, "m.LG", uai.ReadOptions{Log: uai.Ln, KeepDense: true})
		if err != nil {
			t.Fatalf("model %d: uai read: %v", it, err)
		}
		var w bytes.Buffer
		if err := Write(&w, mu, "m"); err != nil {
			t.Fatalf("model %d: write: %v", it, err)
		}
		text := w.String()
		back, err := Read(&w, "m.wcsp", ReadOptions{})
		if err != nil {
			t.Fatalf("model %d: read back: %v\n%s", it, err, text)
		}
		for x := range oracle.Assignments(m.Cards) {
			if a, b := m.Score(x), back.Score(x); a != b {
				t.Fatalf("model %d, %v: score %v, after UAI and WCSP %v\n%s", it, x, a, b, text)
			}
		}
	}
}

func TestWriteRefusesFractions(t *testing.T) {
	m := model.New([]int{2})
	m.Unary[1] = 0.5
	err := Write(&bytes.Buffer{}, m, "m")
	if err == nil || !strings.Contains(err.Error(), "not an integer") || strings.ContainsAny(err.Error(), "\n") {
		t.Fatalf("got %v, want a one-line error about a non-integer score", err)
	}
}

// A score a few bits off an integer (a UAI potential's logarithm) is written
// as that integer.
func TestWriteRoundsLastBits(t *testing.T) {
	m := model.New([]int{2})
	m.Unary[1] = math.Log(math.Exp(-5))
	var buf bytes.Buffer
	if err := Write(&buf, m, "m"); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf, "m.wcsp", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := Cost(back.Score([]int{1})); got != 5 {
		t.Fatalf("cost %v, want 5", got)
	}
}
