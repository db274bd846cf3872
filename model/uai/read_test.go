package uai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/ddrun/ddrun/model"
)

func TestReadMarkov(t *testing.T) {
	m := mustRead(t, markovExample, "example.uai")
	if got, want := m.Cards, []int{2, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("cards %v, want %v", got, want)
	}
	if len(m.Factors) != 2 {
		t.Fatalf("%d factors, want 2", len(m.Factors))
	}
	for a, f := range m.Factors {
		if f.Kind != model.Dense {
			t.Errorf("factor %d kind %v, want dense", a, f.Kind)
		}
	}
	if !slices.Equal(m.Factors[1].Vars, []int{0, 1, 2}) {
		t.Errorf("factor 1 scope %v", m.Factors[1].Vars)
	}
	for _, u := range m.Unary {
		if u != 0 {
			t.Fatalf("non-zero unary %v", u)
		}
	}
	tests := []struct {
		x    []int
		want float64
	}{
		{[]int{0, 0, 0}, math.Log(4) + math.Log(2.25)},
		{[]int{0, 1, 2}, math.Log(2.4) + math.Log(10)},
		{[]int{1, 0, 1}, math.Log(1) + math.Log(4)},
		{[]int{1, 1, 2}, math.Inf(-1)}, // factor 0 entry 3 is 0
		{[]int{0, 1, 0}, math.Inf(-1)}, // factor 1 entry 3 is 0
	}
	for _, tc := range tests {
		if got := m.Score(tc.x); !close(got, tc.want, 1e-12) {
			t.Errorf("Score(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}

func TestReadBayes(t *testing.T) {
	m := mustRead(t, bayesExample, "example.uai")
	if len(m.Factors) != 3 {
		t.Fatalf("%d factors, want 3", len(m.Factors))
	}
	tests := []struct {
		x    []int
		want float64
	}{
		{[]int{0, 0, 0}, math.Log(0.436 * 0.128 * 0.210)},
		{[]int{1, 0, 2}, math.Log(0.564 * 0.920 * 0.457)},
		{[]int{1, 1, 1}, math.Inf(-1)},
	}
	for _, tc := range tests {
		if got := m.Score(tc.x); !close(got, tc.want, 1e-12) {
			t.Errorf("Score(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}

// TestReadWhitespace splits the example's tokens across lines in odd ways,
// with tabs, CRLF, blank lines and comments.
func TestReadWhitespace(t *testing.T) {
	want := mustRead(t, markovExample, "example.uai")
	toks := strings.Fields(markovExample)
	seps := []string{" ", "\n", "\t", "\r\n", "  \n\n\t ", "\n\n"}
	var b strings.Builder
	b.WriteString("c leading comment\n  c indented comment\n")
	for i, tok := range toks {
		b.WriteString(tok)
		b.WriteString(seps[i%len(seps)])
		if i == 7 {
			b.WriteString("\nc comment inside the scopes 1 2 3\n")
		}
	}
	b.WriteString("\nc trailing comment")
	m := mustRead(t, b.String(), "spaced.uai")
	sameScores(t, want, m, 50, 0)

	// All on one line, no trailing newline.
	m = mustRead(t, strings.Join(toks, " "), "oneline.uai")
	sameScores(t, want, m, 50, 0)
}

// TestReadTinyReads feeds the reader one byte at a time, so that every
// token straddles buffer refills.
func TestReadTinyReads(t *testing.T) {
	want := mustRead(t, markovExample, "example.uai")
	m, err := Read(iotest.OneByteReader(strings.NewReader(markovExample)), "bytes.uai")
	if err != nil {
		t.Fatal(err)
	}
	sameScores(t, want, m, 50, 0)
	m, err = Read(iotest.DataErrReader(strings.NewReader(markovExample)), "dataerr.uai")
	if err != nil {
		t.Fatal(err)
	}
	sameScores(t, want, m, 50, 0)
}

func TestReadLongInput(t *testing.T) {
	// A model larger than the scanner's buffer, through an unsized reader.
	m := gridModel(40, 40, 3, 7)
	var buf bytes.Buffer
	if err := Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	if buf.Len() < 4*scanBufSize {
		t.Fatalf("test model too small: %d bytes", buf.Len())
	}
	back, err := Read(iotest.HalfReader(&buf), "grid.uai")
	if err != nil {
		t.Fatal(err)
	}
	sameScores(t, m, back, 20, 1e-12)
}

func TestReadArenas(t *testing.T) {
	m := mustRead(t, markovExample, "example.uai")
	f0, f1 := m.Factors[0], m.Factors[1]
	if cap(f0.Vars) != len(f0.Vars) || cap(f0.Table) != len(f0.Table) {
		t.Errorf("factor 0 sub-slices are not capped: vars %d/%d table %d/%d", len(f0.Vars), cap(f0.Vars), len(f0.Table), cap(f0.Table))
	}
	// Both factors share one arena: factor 1's data follows factor 0's.
	if addr(f0.Table, len(f0.Table)) != addr(f1.Table, 0) {
		t.Errorf("tables are not consecutive in one arena")
	}
	if addr(f0.Vars, len(f0.Vars)) != addr(f1.Vars, 0) {
		t.Errorf("scopes are not consecutive in one arena")
	}
}

// addr returns the address of s[i], which may be one past its end.
func addr[E any](s []E, i int) uintptr {
	var e E
	return uintptr(unsafe.Pointer(unsafe.SliceData(s))) + uintptr(i)*unsafe.Sizeof(e)
}

func TestReadZeroArity(t *testing.T) {
	m := mustRead(t, "MARKOV 2 2 2 2  0  1 1  1 2.5  2 1 3", "zero.uai")
	if len(m.Factors) != 2 {
		t.Fatalf("%d factors, want 2", len(m.Factors))
	}
	f := m.Factors[0]
	if f.Kind != model.Dense || len(f.Vars) != 0 || len(f.Table) != 1 {
		t.Fatalf("0-arity factor: %+v", f)
	}
	if m.Constant != 0 {
		t.Errorf("constant %v, want 0 (0-arity factors stay factors)", m.Constant)
	}
	if got, want := m.Score([]int{0, 1}), math.Log(2.5)+math.Log(3); !close(got, want, 1e-15) {
		t.Errorf("score %v, want %v", got, want)
	}
	// No variables, no factors.
	m = mustRead(t, "MARKOV 0 0", "empty.uai")
	if len(m.Cards) != 0 || len(m.Factors) != 0 {
		t.Errorf("empty model: %+v", m)
	}
	// A zero 0-arity entry makes every assignment infeasible.
	m = mustRead(t, "MARKOV 1 2 1 0 1 0", "infeasible.uai")
	if s := m.Score([]int{0}); !math.IsInf(s, -1) {
		t.Errorf("score %v, want -Inf", s)
	}
}

func TestReadLogBases(t *testing.T) {
	const lg = "MARKOV 1 3 1 1 0 3 0 -1.5 -inf"
	tests := []struct {
		name string
		opts *ReadOptions // nil: Read, choosing by name
		want []float64
	}{
		{"x.LG", nil, []float64{0, -1.5, math.Inf(-1)}},
		{"x.lg.gz", nil, []float64{0, -1.5, math.Inf(-1)}},
		{"x.LG", &ReadOptions{Log: Ln}, []float64{0, -1.5, math.Inf(-1)}},
		{"x.uai", &ReadOptions{Log: Log10}, []float64{0, -1.5 * math.Ln10, math.Inf(-1)}},
	}
	for _, tc := range tests {
		var m *model.Model
		var err error
		if tc.opts == nil {
			m, err = Read(strings.NewReader(lg), tc.name)
		} else {
			m, err = ReadWith(strings.NewReader(lg), tc.name, *tc.opts)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, w := range tc.want {
			if got := m.Factors[0].Table[i]; !close(got, w, 1e-15) {
				t.Errorf("%s %v: entry %d = %v, want %v", tc.name, tc.opts, i, got, w)
			}
		}
	}
	// Read of a .uai name reads potentials, where -1.5 is an error.
	if _, err := Read(strings.NewReader(lg), "x.uai"); err == nil || !strings.Contains(err.Error(), "negative potential -1.5") {
		t.Errorf("potentials: got %v", err)
	}
	// ReadWith ignores the name.
	if _, err := ReadWith(strings.NewReader(lg), "x.LG", ReadOptions{}); err == nil {
		t.Errorf("ReadWith potentials on x.LG: no error")
	}
	if _, err := ReadWith(strings.NewReader(lg), "x.uai", ReadOptions{Log: 7}); err == nil {
		t.Errorf("invalid log base accepted")
	}
	// In log encodings +Inf and NaN are rejected.
	for _, bad := range []string{"inf", "+Infinity", "nan", "1e400"} {
		_, err := ReadWith(strings.NewReader("MARKOV 1 1 1 1 0 1 "+bad), "x.LG", ReadOptions{Log: Ln})
		if err == nil {
			t.Errorf("log-potential %s accepted", bad)
		}
	}
	if got := OptionsFor("a/b.LG.GZ").Log; got != Ln {
		t.Errorf("OptionsFor(.LG.GZ) = %v", got)
	}
	if got := OptionsFor("a/b.uai.gz").Log; got != Potentials {
		t.Errorf("OptionsFor(.uai.gz) = %v", got)
	}
}

// TestReadExtremePotentials checks potentials beyond float64's normal range
// keep their logarithm.
func TestReadExtremePotentials(t *testing.T) {
	m := mustRead(t, "MARKOV 1 5 1 1 0 5 1e-400 1e400 4e-310 0.0e5 1.5E-3", "x.uai")
	want := []float64{-400 * math.Ln10, 400 * math.Ln10, math.Log(4) - 310*math.Ln10, math.Inf(-1), math.Log(1.5e-3)}
	for i, w := range want {
		if got := m.Factors[0].Table[i]; !close(got, w, 1e-14) {
			t.Errorf("entry %d = %v, want %v", i, got, w)
		}
	}
}

func TestReadGzip(t *testing.T) {
	want := mustRead(t, markovExample, "example.uai")
	gz := gzipBytes(t, []byte(markovExample))
	// Recognised by magic bytes whatever the name.
	for _, name := range []string{"example.uai.gz", "example.uai"} {
		m, err := Read(bytes.NewReader(gz), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameScores(t, want, m, 20, 0)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "model.uai.gz")
	if err := os.WriteFile(path, gz, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sameScores(t, want, m, 20, 0)

	// A corrupt stream is a one-line error naming the file.
	bad := append([]byte(nil), gz...)
	bad[len(bad)-5] ^= 0xff // the checksum
	_, err = Read(bytes.NewReader(bad), "bad.uai.gz")
	if err == nil || !strings.HasPrefix(err.Error(), "bad.uai.gz:") {
		t.Errorf("corrupt gzip: %v", err)
	}
	_, err = Read(bytes.NewReader(gz[:20]), "short.uai.gz")
	if err == nil || !strings.HasPrefix(err.Error(), "short.uai.gz:") {
		t.Errorf("truncated gzip: %v", err)
	}
}

func TestReadFileErrors(t *testing.T) {
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.uai")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	path := filepath.Join(t.TempDir(), "bad.uai")
	if err := os.WriteFile(path, []byte("MARKOV\n2\n2 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Name != path || pe.Line != 3 {
		t.Fatalf("got %v, want a ParseError at %s:3", err, path)
	}
}

// readError is one malformed input and what its error must say.
type readError struct {
	name  string
	input string
	want  []string // substrings of the message, beyond "x.uai:LINE:"
	line  int
}

var readErrors = []readError{
	{"empty", "", []string{"unexpected end of file", "MARKOV or BAYES"}, 1},
	{"blank", "\n\n  \n", []string{"unexpected end of file", "MARKOV or BAYES"}, 1},
	{"bad preamble", "MARKOFF\n1\n2\n0\n", []string{`bad preamble word "MARKOFF"`}, 1},
	{"preamble number", "3\n", []string{`bad preamble word "3"`}, 1},
	{"no variables", "MARKOV\n", []string{"unexpected end of file", "number of variables"}, 1},
	{"negative variables", "MARKOV\n-3\n", []string{"number of variables", `"-3" is negative`}, 2},
	{"fractional variables", "MARKOV\n2.5\n", []string{"number of variables", `"2.5" is not an integer`}, 2},
	{"word variables", "MARKOV\nthree\n", []string{"number of variables", `"three" is not an integer`}, 2},
	{"huge variables", "MARKOV\n1000000000000\n2 2\n", []string{"unexpected end of file", "cardinality of variable 2"}, 3},
	{"too many digits", "MARKOV\n100000000000000000000\n", []string{"number of variables", "too large"}, 2},
	{"missing card", "MARKOV\n3\n2 2\n", []string{"unexpected end of file", "cardinality of variable 2 (of 3)"}, 3},
	{"zero card", "MARKOV\n3\n2 0 2\n0\n", []string{"variable 1: cardinality 0 < 1"}, 3},
	{"negative card", "MARKOV\n3\n2 -2 2\n0\n", []string{"cardinality of variable 1", `"-2" is negative`}, 3},
	{"card float", "MARKOV\n2\n2 2.0\n0\n", []string{"cardinality of variable 1", `"2.0" is not an integer`}, 3},
	{"too many states", "MARKOV\n2\n200000000 200000000\n0\n", []string{"variable 1", "total number of states over the limit of 268435456"}, 3},
	{"tables over the total limit", "MARKOV\n2\n16384 16384\n2\n2 0 1\n2 1 0\n", []string{"factor 1: its table of 268435456 entries brings the total number of table entries over the limit of 268435456"}, 6},
	{"huge free variable", "MARKOV\n2\n2\n268435454\n1\n1 0\n", []string{"variable 1 has cardinality 268435454 but appears in no factor", "more than 1048576"}, 4},
	{"no factor count", "MARKOV\n2\n2 2\n", []string{"unexpected end of file", "number of factors"}, 3},
	{"negative factors", "MARKOV\n2\n2 2\n-1\n", []string{"number of factors", `"-1" is negative`}, 4},
	{"missing scope", "MARKOV\n2\n2 2\n2\n1 0\n", []string{"unexpected end of file", "scope size of factor 1 (of 2)"}, 5},
	{"short scope", "MARKOV\n2\n2 2\n1\n2 0\n", []string{"unexpected end of file", "variable 1 of the scope of factor 0"}, 5},
	{"scope out of range", "MARKOV\n10\n2 2 2 2 2 2 2 2 2 2\n4\n1 0\n1 1\n1 2\n2 3 12\n", []string{"factor 3 scope: variable 12 out of range [0,10)"}, 8},
	{"scope negative", "MARKOV\n2\n2 2\n1\n2 0 -1\n", []string{"variable 1 of the scope of factor 0", `"-1" is negative`}, 5},
	{"scope word", "MARKOV\n2\n2 2\n1\n2 0 x\n", []string{"variable 1 of the scope of factor 0", `"x" is not an integer`}, 5},
	{"scope duplicate", "MARKOV\n3\n2 2 2\n1\n3 0 2 0\n", []string{"factor 0 scope: variable 0 appears twice"}, 5},
	{"scope too long", "MARKOV\n2\n2 2\n1\n3 0 1 1\n", []string{"factor 0 scope has 3 variables, the model has only 2"}, 5},
	{"table too big", "MARKOV\n4\n1000 1000 1000 1000\n1\n4 0 1 2 3\n", []string{"factor 0: table over 4 variables has more than 268435456 entries"}, 5},
	{"no tables", "MARKOV\n2\n2 2\n2\n1 0\n1 1\n", []string{"unexpected end of file", "table of factor 0", "declares 2 factors", "has 0 tables"}, 6},
	{"missing table", "MARKOV\n2\n2 2\n2\n1 0\n1 1\n2 1 1\n", []string{"unexpected end of file", "table of factor 1", "declares 2 factors", "has 1 tables"}, 7},
	{"table count word", "MARKOV\n1\n2\n1\n1 0\nfour 1 1\n", []string{"entry count of the table of factor 0", `"four" is not an integer`}, 6},
	{"table count wrong", "MARKOV\n2\n2 2\n1\n2 0 1\n\n6\n1 1 1 1 1 1\n", []string{"table of factor 0 has 6 entries, scope needs 4"}, 7},
	{"short table", "MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 1\n1\n", []string{"unexpected end of file", "entry 3 of the table of factor 0 (4 entries)"}, 8},
	{"not a number", "MARKOV\n2\n2 2\n3\n1 0\n1 1\n2 0 1\n2 1 1\n2 1 1\n4\n1 1\nabc 1\n", []string{`table of factor 2 entry 2: "abc" is not a number`}, 12},
	{"hex float", "MARKOV\n1\n2\n1\n1 0\n2 0x1p-2 1\n", []string{`table of factor 0 entry 0: "0x1p-2" is not a number`}, 6},
	{"underscore", "MARKOV\n1\n2\n1\n1 0\n2 1_0 1\n", []string{`table of factor 0 entry 0: "1_0" is not a number`}, 6},
	{"negative potential", "MARKOV\n2\n2 2\n2\n1 0\n2 0 1\n2\n1 1\n4\n1 1 1\n-0.5\n", []string{"table of factor 1 entry 3: negative potential -0.5"}, 11},
	{"nan potential", "MARKOV\n1\n2\n1\n1 0\n2 1 NaN\n", []string{"table of factor 0 entry 1", `"NaN" is not a number (NaN)`}, 6},
	{"inf potential", "MARKOV\n1\n2\n1\n1 0\n2 1 +Inf\n", []string{"table of factor 0 entry 1", `infinite potential "+Inf"`}, 6},
	{"huge potential no exponent", "MARKOV\n1\n2\n1\n1 0\n2 1 " + strings.Repeat("9", 400) + "\n", []string{"table of factor 0 entry 1", "out of range"}, 6},
	{"trailing garbage", "MARKOV\n1\n2\n1\n1 0\n2 1 1\nxyz\n", []string{`trailing garbage after the last table: "xyz"`, "declares 1 factors"}, 7},
	{"extra table", "MARKOV\n1\n2\n1\n1 0\n2 1 1\n2 1 1\n", []string{`trailing garbage after the last table: "2"`}, 7},
	{"long token", "MARKOV\n1\n2\n1\n1 0\n2 1 " + strings.Repeat("1", 5000) + "\n", []string{"longer than 4096 bytes"}, 6},
	{"binary garbage", "MARKOV\n1\n2\n1\n1 0\n2 1 \x00\xff\n", []string{`table of factor 0 entry 1: "\x00\xff" is not a number`}, 6},
	{"comment not at line start", "MARKOV\n1\n2 c comment\n", []string{"number of factors", `"c" is not an integer`}, 3},
}

func TestReadErrors(t *testing.T) {
	for _, tc := range readErrors {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.input), "x.uai")
			checkParseError(t, err, "x.uai", tc.line, tc.want)
			// The same error through gzip and one-byte reads.
			_, err = Read(bytes.NewReader(gzipBytes(t, []byte(tc.input))), "x.uai")
			checkParseError(t, err, "x.uai", tc.line, tc.want)
			_, err = Read(iotest.OneByteReader(strings.NewReader(tc.input)), "x.uai")
			checkParseError(t, err, "x.uai", tc.line, tc.want)
		})
	}
}

// checkParseError checks that err is a one-line *ParseError "name:line: ..."
// containing every wanted substring.
func checkParseError(t *testing.T, err error, name string, line int, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	msg := err.Error()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %q is not a *ParseError", msg)
	}
	if strings.ContainsAny(msg, "\n\r") {
		t.Errorf("error is not one line: %q", msg)
	}
	prefix := name + ":" + strconv.Itoa(line) + ": "
	if !strings.HasPrefix(msg, prefix) {
		t.Errorf("error %q does not start with %q", msg, prefix)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
}

// failingReader returns some data, then an error.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadIOError(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := Read(&failingReader{data: []byte("MARKOV\n2\n2 "), err: boom}, "x.uai")
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want wrapped %v", err, boom)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "x.uai:3: read error") || !strings.Contains(msg, "disk on fire") {
		t.Errorf("message %q", msg)
	}
}

// limitIn is a model of 9 states and 18 table entries (6 and 12).
const limitIn = "MARKOV\n3\n2 3 4\n2\n2 0 1\n2 1 2\n6\n1 2 3 4 5 6\n12\n1 1 1 1 1 1 1 1 1 1 1 1\n"

// limitCase is a read of limitIn under limit: the error it gives ("": it
// reads) at line.
type limitCase struct {
	limit int
	want  string
	line  int
}

// ReadOptions.MaxEntries bounds the total table entries and, on its own,
// the total states, in plain, gzip and .LG input alike; a model at the
// limit is read.
func TestReadMaxEntries(t *testing.T) {
	cases := []limitCase{
		{18, "", 0},
		{17, "factor 1: its table of 12 entries brings the total number of table entries over the limit of 17", 6},
		{8, "variable 2: cardinality 4 brings the total number of states over the limit of 8", 3},
	}
	for _, c := range cases {
		for _, name := range []string{"x.uai", "x.LG"} {
			for _, gz := range []bool{false, true} {
				data := []byte(limitIn)
				if gz {
					data = gzipBytes(t, data)
				}
				opts := OptionsFor(name)
				opts.MaxEntries = c.limit
				m, err := ReadWith(bytes.NewReader(data), name, opts)
				if c.want == "" {
					if err != nil || len(m.Factors) != 2 {
						t.Fatalf("limit %d %s gz=%v: %v", c.limit, name, gz, err)
					}
					continue
				}
				checkParseError(t, err, name, c.line, []string{c.want})
			}
		}
	}
}

// ReadOptions.Context stops the reading behind decompression, where a few
// compressed bytes are a long stretch of parsing.
func TestReadContextStopsGzip(t *testing.T) {
	var in bytes.Buffer
	in.WriteString("MARKOV\n20\n" + strings.Repeat("2 ", 20) + "\n1\n20")
	for i := range 20 {
		fmt.Fprintf(&in, " %d", i)
	}
	fmt.Fprintf(&in, "\n%d\n", 1<<20)
	in.Write(bytes.Repeat([]byte("1 "), 1<<20))
	data := gzipBytes(t, in.Bytes())
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stop")
	cancel(stop)
	_, err := ReadWith(bytes.NewReader(data), "x.uai.gz", ReadOptions{Context: ctx})
	if !errors.Is(err, stop) {
		t.Fatalf("err %v", err)
	}
	if _, err := ReadWith(bytes.NewReader(data), "x.uai.gz", ReadOptions{Context: context.Background()}); err != nil {
		t.Fatal(err)
	}
}
