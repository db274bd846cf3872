package cfn

import (
	"bytes"
	"compress/gzip"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// read reads s as a CFN file named t.cfn.
func read(t *testing.T, s string) (*model.Model, Header) {
	t.Helper()
	m, h, err := Read(strings.NewReader(s), "t.cfn", ReadOptions{})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("read an invalid model: %v", err)
	}
	return m, h
}

var inf = math.Inf(1)

// TestReadFeatures checks the objective of every assignment, by brute
// force against a hand-written one, for each feature of the format.
func TestReadFeatures(t *testing.T) {
	cases := []struct {
		name, file string
		max        bool
		cost       func(x []int) float64 // the file's objective; inf: forbidden
	}{
		{"full tables, names, JSON", `{"problem": {"name": "p", "mustbe": "<100.00"},
 "variables": {"a": ["r", "g", "b"], "b": 2},
 "functions": {
   "c0": {"scope": [], "costs": [1.5]},
   "u": {"scope": ["a"], "costs": [0, 1.25, "inf"]},
   "ab": {"scope": ["a", "b"], "costs": [1, 2, 3, 4, 5, 6.999]}}}`, false,
			func(x []int) float64 {
				if x[0] == 2 {
					return inf
				}
				return 1.5 + []float64{0, 1.25}[x[0]] + []float64{1, 2, 3, 4, 5, 6.99}[x[0]*2+x[1]]
			}},
		{"sparse tables by name and index, concise form", `# a comment line
{ {pb <1000.0}
  [[x y z] 3 2] // unnamed variables, named values
  { f {[0 1] 5 [x 2 1.5   z v0 -2]}
    {[x2 1] inf [0 1 0.5]}
  }
}`, false,
			func(x []int) float64 {
				c := 5.0
				switch {
				case x[0] == 0 && x[1] == 2:
					c = 1.5
				case x[0] == 2 && x[1] == 0:
					c = -2
				}
				if x[2] == 0 && x[1] == 1 {
					return c + 0.5
				}
				return inf
			}},
		{"maximise, the bound forbids", `{problem: {name: m, mustbe: ">-5.0"},
 variables: {v1: [a b], v2: [c d]},
 functions: {
  c0: {scope: [], costs: [-6.0]},
  c1: {scope: [v1], costs: [1.0, 0.5]},
  c2: {scope: [v2], costs: [1.0, 0.5]},
  c12: {scope: [v1, v2], costs: [-1.0, 0.5, -2.0, 5.5]}}}`, true,
			func(x []int) float64 {
				v := -6 + []float64{1, 0.5}[x[0]] + []float64{1, 0.5}[x[1]] + []float64{-1, 0.5, -2, 5.5}[x[0]*2+x[1]]
				if x[0]*2+x[1] == 0 || x[0]*2+x[1] == 2 { // -1 and -2 never reach above -5
					return inf
				}
				return v
			}},
		{"minimise, an entry at the bound is forbidden", `{problem: {name: b, mustbe: "<10"},
 variables: {a: 3},
 functions: {f: {scope: [a], costs: [0 9 11]}, g: {scope: [], defaultcost: -1, costs: []}}}`, false,
			func(x []int) float64 { return []float64{-1, 8, inf}[x[0]] }},
		{"shared tables, later and earlier", `{problem: {name: s, mustbe: "<1000"},
 variables: {a: 2, b: 2, c: 2},
 functions: {
  g: {scope: [a, c], costs: "f"},
  f: {scope: [a, b], costs: [1, 2, 3, 4]},
  h: {scope: [b, c], costs: f}}}`, false,
			func(x []int) float64 {
				t := []float64{1, 2, 3, 4}
				return t[x[0]*2+x[2]] + t[x[0]*2+x[1]] + t[x[1]*2+x[2]]
			}},
		{"truncated to the precision", `{problem: {name: tr, mustbe: "<100.0"},
 variables: {a: 2}, functions: {f: {scope: [a], costs: [1.29, -1.29]}}}`, false,
			func(x []int) float64 { return []float64{1.2, -1.2}[x[0]] }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, h := read(t, c.file)
			if h.Maximize != c.max {
				t.Fatalf("maximise %v, want %v", h.Maximize, c.max)
			}
			for x := range oracle.Assignments(m.Cards) {
				want := c.cost(x)
				s := m.Score(x)
				if math.IsInf(want, 1) {
					if !math.IsInf(s, -1) {
						t.Fatalf("%v: score %v, want forbidden", x, s)
					}
					continue
				}
				if got := h.Cost(s); got != math.Round(want*1e6)/1e6 {
					t.Fatalf("%v: objective %v, want %v", x, got, want)
				}
				if sign := map[bool]float64{true: 1, false: -1}[c.max]; math.Abs(s-sign*want) > 1e-12 {
					t.Fatalf("%v: score %v, want %v", x, s, sign*want)
				}
			}
		})
	}
}

// A gzip-compressed file reads as the plain one.
func TestReadGzip(t *testing.T) {
	const s = `{problem: {name: g, mustbe: "<10"}, variables: {a: 2}, functions: {f: {scope: [a], costs: [1 2]}}}`
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	zw.Close()
	m, h, err := Read(&buf, "g.cfn.gz", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Cost(m.Score([]int{1})) != 2 {
		t.Fatalf("cost %v", h.Cost(m.Score([]int{1})))
	}
}

// readErrors are malformed files and the one-line error each gets.
var readErrors = []struct{ input, want string }{
	{"", "t.cfn:1: unexpected end of file: want the network"},
	{"{problem {name p mustbe 10}}", "t.cfn:1: mustbe \"10\": want '<' (minimise) or '>' (maximise) and a bound"},
	{"{problem {name p mustbe <1e5}}", "t.cfn:1: mustbe bound: want a decimal number or inf, have \"1e5\""},
	{"{problem {name p mustbe <1.0000000000000000}}", "t.cfn:1: mustbe \"<1.0000000000000000\": precision of 16 decimals, at most 15 supported"},
	{"{problem {name p\n mustbe <10}\n variables {a -3}}", "t.cfn:3: not supported: interval variable a (negative domain size -3)"},
	{"{problem {name p mustbe <10}\n variables {a 0}}", "t.cfn:2: variable a: empty domain"},
	{"{problem {name p mustbe <10}\n variables {a 2 a 3}}", "t.cfn:2: variable \"a\" declared twice"},
	{"{problem {name p mustbe <10}\n variables {a [x y x]}}", "t.cfn:2: variable a: value \"x\" twice"},
	{"{problem {name p mustbe <10}\n variables {a [x 1]}}", "t.cfn:2: variable a: value name \"1\": want a name not starting with a digit"},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [a]\n type salldiff params {metric var cost 1}}}}", "t.cfn:4: not supported: salldiff (global cost function)"},
	{"{{p <10} {a 2 b 2}\n {f {[a b]\n sgcc {metric var}}}}", "t.cfn:3: not supported: sgcc (global cost function)"},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [b] costs [1 2]}}}", "t.cfn:3: function f: unknown variable \"b\""},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [a a] costs [1 2]}}}", "t.cfn:3: function f: variable \"a\" twice in the scope"},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [a] costs [1\n 2 3]}}}", "t.cfn:4: function f: more costs than its 2 entries"},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [a] costs [1]}}}", "t.cfn:3: function f: 1 costs for a table of 2 entries"},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [a] costs [1 x]}}}", "t.cfn:3: cost of function f: want a decimal number or inf, have \"x\""},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [a] defaultcost 0 costs [\n 1 5\n 1 6]}}}", "t.cfn:5: function f: tuple 1 listed twice"},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [a] defaultcost 0 costs [2 5]}}}", "t.cfn:3: value \"2\" out of the domain of variable 0 (size 2)"},
	{"{problem {name p mustbe <10}\n variables {a [x y]}\n functions {f {scope [a] defaultcost 0 costs [z 5]}}}", "t.cfn:3: value \"z\" not in the domain of variable 0"},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [a] costs g}}}", "t.cfn:3: cost table \"g\" shared but never defined"},
	{"{problem {name p mustbe <10}\n variables {a 2 b 3}\n functions {f {scope [a] costs g}\n g {scope [b] costs [1 2 3]}}}", "t.cfn:4: function g: cannot share its table with a function over domain sizes [2]"},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [a] costs [1 9007199254740993]}}}", "t.cfn:3: cost of function f 9007199254740993: magnitude above 2^53 units of 10^-0 is not exactly representable"},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [] costs []}}}", "t.cfn:3: function f: a constant without a cost or a default cost"},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {}}\n}\nx", "t.cfn:5: unexpected \"x\" after the functions"},
	{"{problem {name p mustbe <10}\n variables {a 2}\n functions {f {scope [a] costs [1 2]} scope", "t.cfn:3: unexpected end of file: want function scope"},
	{"{problem {name p mustbe <10}\n variables {a 1000 b 1000}\n functions {f {scope [a b] costs []}}}", "t.cfn:3: function f: table of more than 1000 entries exceeds the entry limit (100000 left of 100000)"},
	{"{problem {name p mustbe <10}\n variables {a 100001}}", "t.cfn:2: domain sizes sum to more than the limit of 100000"},
}

func TestReadErrors(t *testing.T) {
	for _, e := range readErrors {
		_, _, err := Read(strings.NewReader(e.input), "t.cfn", ReadOptions{MaxEntries: 100000})
		if err == nil || err.Error() != e.want {
			t.Errorf("%q:\n got %v\nwant %s", e.input, err, e.want)
		}
	}
}

// randomModel has integer or decimal scores (decimals: two digits), some
// entries forbidden, unaries, a constant and factors of arity 0 to 3.
func randomModel(r *rand.Rand, decimals bool) *model.Model {
	n := 1 + r.Intn(4)
	cards := make([]int, n)
	for i := range cards {
		cards[i] = 1 + r.Intn(3)
	}
	m := model.New(cards)
	score := func() float64 {
		if r.Intn(8) == 0 {
			return math.Inf(-1)
		}
		if decimals {
			return float64(r.Intn(2001)-1000) / 100
		}
		return float64(r.Intn(41) - 20)
	}
	for i := range cards {
		if r.Intn(2) == 0 {
			u := m.Unaries(i)
			for k := range u {
				if u[k] = score(); math.IsInf(u[k], -1) {
					u[k] = 3
				}
			}
		}
	}
	m.Constant = float64(r.Intn(11) - 5)
	for a := r.Intn(5); a > 0; a-- {
		vars := r.Perm(n)[:r.Intn(min(n, 3)+1)]
		size := 1
		for _, v := range vars {
			size *= cards[v]
		}
		t := make([]float64, size)
		for e := range t {
			t[e] = score()
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: vars, Table: t})
	}
	return m
}

// sameScores fails unless a and b score every assignment alike (to tol).
func sameScores(t *testing.T, a, b *model.Model, tol float64) {
	t.Helper()
	for x := range oracle.Assignments(a.Cards) {
		sa, sb := a.Score(x), b.Score(x)
		if math.IsInf(sa, -1) != math.IsInf(sb, -1) || (!math.IsInf(sa, -1) && math.Abs(sa-sb) > tol) {
			t.Fatalf("%v: score %v, written and read back %v", x, sa, sb)
		}
	}
}

// Write then Read gives the same score for every assignment, on random
// models with integer and with decimal scores.
func TestWriteRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for it := 0; it < 300; it++ {
		m := randomModel(r, it%2 == 1)
		var buf bytes.Buffer
		if err := Write(&buf, m, "rt"); err != nil {
			t.Fatal(err)
		}
		back, h, err := Read(bytes.NewReader(buf.Bytes()), "rt.cfn", ReadOptions{})
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
		if want := map[bool]int{false: 0, true: 2}[it%2 == 1]; h.Precision > want {
			t.Fatalf("precision %d, want at most %d", h.Precision, want)
		}
		sameScores(t, m, back, 1e-9)
	}
}

// A score no decimal holds is written at MaxWritePrecision decimals.
func TestWriteRounds(t *testing.T) {
	m := model.New([]int{2})
	copy(m.Unaries(0), []float64{math.Log(0.3), math.Inf(-1)})
	var buf bytes.Buffer
	if err := Write(&buf, m, "log"); err != nil {
		t.Fatal(err)
	}
	back, h, err := Read(&buf, "log.cfn", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Precision != MaxWritePrecision {
		t.Fatalf("precision %d", h.Precision)
	}
	sameScores(t, m, back, 0.5e-9)
}
