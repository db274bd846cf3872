package uai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// TestStreamMatchesRead checks that Stream hands out the structure and the
// tables that ReadWith builds, and stops on a callback's error.
func TestStreamMatchesRead(t *testing.T) {
	const in = "MARKOV\n3\n2 3 2\n3\n1 0\n2 0 1\n2 1 2\n2\n1 2\n6\n1 2 3 4 5 6\n6\n0.5 1 1 1 1 2\n"
	want, err := Read(strings.NewReader(in), "x.uai")
	if err != nil {
		t.Fatal(err)
	}
	var got *model.Model
	err = Stream(strings.NewReader(in), "x.uai", ReadOptions{}, func(m *model.Model) error {
		for a := range m.Factors {
			if m.Factors[a].Table != nil {
				t.Errorf("factor %d: structure carries a table", a)
			}
		}
		got = m
		return nil
	}, func(a int, tab []float64) error {
		got.Factors[a].Table = append([]float64(nil), tab...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	x := []int{1, 2, 1}
	if got.Score(x) != want.Score(x) {
		t.Fatalf("score %v, want %v", got.Score(x), want.Score(x))
	}
	stop := errors.New("stop")
	err = Stream(strings.NewReader(in), "x.uai", ReadOptions{}, func(*model.Model) error { return nil },
		func(a int, _ []float64) error { return stop })
	if err != stop {
		t.Fatalf("callback error: got %v", err)
	}
	err = Stream(strings.NewReader(in+" 7"), "x.uai", ReadOptions{}, func(*model.Model) error { return nil },
		func(int, []float64) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "trailing garbage") {
		t.Fatalf("trailing garbage: got %v", err)
	}
}

// opener returns an open function for StreamScopes that gives the inputs
// in turn (the last one again when they run out) and counts its calls.
func opener(inputs ...string) (func() (io.ReadCloser, error), *int) {
	calls := 0
	return func() (io.ReadCloser, error) {
		in := inputs[min(calls, len(inputs)-1)]
		calls++
		return io.NopCloser(strings.NewReader(in)), nil
	}, &calls
}

// streamScopesModel reads in with StreamScopes into a model.
func streamScopesModel(open func() (io.ReadCloser, error), name string) (*model.Model, error) {
	return streamScopesWith(open, name, OptionsFor(name))
}

// streamScopesWith is streamScopesModel with opts.
func streamScopesWith(open func() (io.ReadCloser, error), name string, opts ReadOptions) (*model.Model, error) {
	var m *model.Model
	err := StreamScopes(open, name, opts, func(cards []int, factors int) error {
		m = model.New(slices.Clone(cards))
		m.Factors = make([]model.Factor, 0, factors)
		return nil
	}, func(a int, scope []int, t []float64) error {
		if a != len(m.Factors) {
			return fmt.Errorf("factor %d after %d", a, len(m.Factors))
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: slices.Clone(scope), Table: slices.Clone(t)})
		return nil
	})
	return m, err
}

// TestStreamScopes: StreamScopes gives what ReadWith reads (the factors,
// in order, with their scopes and tables), and every error of readErrors
// with ReadWith's message, plain and gzip; a callback's error is returned
// as it is; a file that changes between the two reads is an error.
func TestStreamScopes(t *testing.T) {
	const in = "MARKOV\n3\n2 3 2\n4\n1 0\n2 0 1\n2 1 2\n0\n2\n1 2\n6\n1 2 3 4 5 6\n6\n0.5 1 1 1 1 2\n1 3\n"
	want, err := Read(strings.NewReader(in), "x.uai")
	if err != nil {
		t.Fatal(err)
	}
	for _, input := range []string{in, string(gzipBytes(t, []byte(in)))} {
		open, calls := opener(input)
		got, err := streamScopesModel(open, "x.uai")
		if err != nil {
			t.Fatal(err)
		}
		if *calls != 2 || len(got.Factors) != len(want.Factors) {
			t.Fatalf("%d opens, %d factors; want 2, %d", *calls, len(got.Factors), len(want.Factors))
		}
		for a, f := range got.Factors {
			if !slices.Equal(f.Vars, want.Factors[a].Vars) || !slices.Equal(f.Table, want.Factors[a].Table) {
				t.Fatalf("factor %d: %v %v, want %v %v", a, f.Vars, f.Table, want.Factors[a].Vars, want.Factors[a].Table)
			}
		}
	}
	for _, tc := range readErrors {
		for _, input := range []string{tc.input, string(gzipBytes(t, []byte(tc.input)))} {
			_, wantErr := Read(strings.NewReader(tc.input), "x.uai")
			open, _ := opener(input)
			_, err := streamScopesModel(open, "x.uai")
			checkParseError(t, err, "x.uai", tc.line, tc.want)
			if err.Error() != wantErr.Error() {
				t.Fatalf("%s: %q, ReadWith says %q", tc.name, err, wantErr)
			}
		}
	}
	stop := errors.New("stop")
	open, _ := opener(in)
	err = StreamScopes(open, "x.uai", ReadOptions{}, func([]int, int) error { return nil },
		func(a int, _ []int, _ []float64) error {
			if a == 2 {
				return stop
			}
			return nil
		})
	if err != stop {
		t.Fatalf("callback error: got %v", err)
	}
	// The second read finds fewer scopes, or a scope of another size.
	fewer := strings.Replace(in, "\n4\n1 0\n", "\n3\n1 0\n", 1)
	for second, want := range map[string]string{
		fewer: "uai: x.uai: the second read has 3 scopes, the first 4 (did the file change?)",
		strings.Replace(in, "2 1 2\n", "1 1  \n", 1): "x.uai:13: table of factor 2 has 6 entries, scope needs 3",
	} {
		open, _ = opener(in, second)
		if _, err := streamScopesModel(open, "x.uai"); err == nil || err.Error() != want {
			t.Fatalf("a file changed between the reads: error %v, want %q", err, want)
		}
	}
	failOpen := func() (io.ReadCloser, error) { return nil, errors.New("no such file") }
	if err := StreamScopes(failOpen, "x.uai", ReadOptions{}, nil, nil); err == nil || err.Error() != "uai: no such file" {
		t.Fatalf("open error: got %v", err)
	}
}

// ReadOptions.EachPiece makes StreamScopes bound each cardinality, each
// table and the number of variables by MaxEntries, not the totals: a model
// whose totals are over the limit (9 states, 18 table entries) and whose
// pieces fit is read, in plain and gzip input and with windows alike,
// where ReadWith refuses it; a piece over the limit is a one-line error at
// its line.
func TestStreamScopesEachPiece(t *testing.T) {
	if _, err := ReadWith(strings.NewReader(limitIn), "x.uai", ReadOptions{MaxEntries: 12, EachPiece: true}); err == nil {
		t.Fatal("ReadWith holds the model: it must check the totals whatever EachPiece says")
	}
	cases := []limitCase{
		{12, "", 0},
		{8, "factor 1: its table of 12 entries is over the limit of 8", 6},
		{3, "variable 2: cardinality 4 is over the limit of 3", 3},
		{2, "3 variables, more than the limit of 2", 2},
	}
	for _, c := range cases {
		for _, input := range []string{limitIn, string(gzipBytes(t, []byte(limitIn)))} {
			for _, converters := range []int{0, 2} {
				open, _ := opener(input)
				m, err := streamScopesWith(open, "x.uai", ReadOptions{MaxEntries: c.limit, EachPiece: true, Converters: converters})
				if c.want == "" {
					if err != nil || len(m.Factors) != 2 || len(m.Factors[1].Table) != 12 {
						t.Fatalf("limit %d: %v", c.limit, err)
					}
					continue
				}
				checkParseError(t, err, "x.uai", c.line, []string{c.want})
			}
		}
	}
}

// lateScopeErrors are files whose tables' errors (or a callback's) come
// before a scope's error in the reading order of StreamScopes, which
// checks each scope as its table is read: ReadWith reads every scope
// before any table, so the scope's error is the one.
var lateScopeErrors = []string{
	// factor 0's first entry is bad; factor 2's scope names variable 5
	"MARKOV\n3\n2 3 2\n3\n1 0\n2 0 1\n2 1 5\n2\nx 2\n6\n1 2 3 4 5 6\n6\n1 1 1 1 1 2\n",
	// factor 0's count is not its scope's size; factor 2's scope repeats
	// a variable
	"MARKOV\n3\n2 3 2\n3\n1 0\n2 0 1\n2 1 1\n3\n1 2\n",
	// factor 0's count is wrong; variable 2 (2^21 states) is in no factor
	"MARKOV\n3\n2 3 2097152\n2\n1 0\n2 0 1\n3\n1 2 3\n6\n1 2 3 4 5 6\n",
	// valid tables, then trailing garbage; factor 1's scope has a
	// variable -1 (where the first reader's skip stops)
	"MARKOV\n3\n2 3 2\n2\n1 0\n2 0 -1\n2\n1 2\n6\n1 1 1 1 1 1\n9\n",
	// every table valid (the callbacks get them all); factor 2's scope
	// repeats a variable
	"MARKOV\n3\n2 3 2\n3\n1 0\n2 0 1\n2 1 1\n2\n1 2\n6\n1 2 3 4 5 6\n9\n1 1 1 1 1 1 1 1 1\n",
	// every table valid; variable 2 (2^21 states) is in no factor
	"MARKOV\n3\n2 3 2097152\n2\n1 0\n2 0 1\n2\n1 2\n6\n1 2 3 4 5 6\n",
}

// lateLimit is the entry limit of the lateScopeErrors reads: the 2^21
// states are within it.
const lateLimit = 1<<21 + 10

// StreamScopes returns ReadWith's error where a scope's error lies after
// a table's error or a callback's, the vars callback's included (its
// scopes are read as the tables are), with and without the windows,
// plain and gzip; a callback that cancels the reading does not make it
// succeed.
func TestStreamScopesLateScopeErrors(t *testing.T) {
	for _, in := range lateScopeErrors {
		_, want := ReadWith(strings.NewReader(in), "x.uai", ReadOptions{MaxEntries: lateLimit})
		if want == nil {
			t.Fatalf("ReadWith read %q", in)
		}
		for _, input := range []string{in, string(gzipBytes(t, []byte(in)))} {
			for _, converters := range []int{0, 2} {
				for _, failAt := range []int{-2, -1, 0, 1} { // -2: vars fails
					open, _ := opener(input)
					err := StreamScopes(open, "x.uai", ReadOptions{MaxEntries: lateLimit, Converters: converters},
						func([]int, int) error {
							if failAt == -2 {
								return errors.New("vars stop")
							}
							return nil
						},
						func(a int, _ []int, _ []float64) error {
							if a == failAt {
								return errors.New("callback stop")
							}
							return nil
						})
					if err == nil || err.Error() != want.Error() {
						t.Fatalf("%q, %d converters, callback failing at %d: %v, want %v", in, converters, failAt, err, want)
					}
				}
				ctx, cancel := context.WithCancel(context.Background())
				open, _ := opener(input)
				err := StreamScopes(open, "x.uai", ReadOptions{MaxEntries: lateLimit, Converters: converters, Context: ctx},
					func([]int, int) error { return nil },
					func(int, []int, []float64) error { cancel(); return nil })
				cancel()
				if err == nil {
					t.Fatalf("%q, %d converters, cancelled at factor 0: no error (ReadWith: %v)", in, converters, want)
				}
			}
		}
	}
}

// The first reader's skip of the scopes leaves it where the full reading
// would: the tables' errors name the same lines and tokens after scopes
// with comment lines, carriage returns, leading zeros, a "c" that is not
// a comment (not at a line's start) and scopes over several lines.
func TestStreamScopesSkipExact(t *testing.T) {
	for _, in := range []string{
		"MARKOV\n2\n2 2\n1\n2 0 1 c 4\n1 2 3 4\n",
		"MARKOV\r\n2\r\n2 2\r\n2\r\n1 0\r\nc a comment\r\n2\r\n0\r\n1\r\n2\r\n1 2\r\n4\r\n1 2 3 x\r\n",
		"MARKOV\n2\n02 2\n2\n1\n00\n2 0 01\nc comment 1 2\n2 1 2 3\n",
		"MARKOV\n2\n2 2\n1\n2 0\n1\n\n\n\n4 1 2\n3 4 5\n",
	} {
		_, want := ReadWith(strings.NewReader(in), "x.uai", ReadOptions{})
		if want == nil {
			t.Fatalf("ReadWith read %q", in)
		}
		for _, converters := range []int{0, 2} {
			open, _ := opener(in)
			err := StreamScopes(open, "x.uai", ReadOptions{Converters: converters}, func([]int, int) error { return nil },
				func(int, []int, []float64) error { return nil })
			if err == nil || err.Error() != want.Error() {
				t.Fatalf("%q, %d converters: %v, want %v", in, converters, err, want)
			}
		}
	}
}

// FuzzStreamScopesMatchesRead: StreamScopes, sequential and in windows
// (of a few bytes, so that small inputs span several), reads the scopes
// and tables ReadWith reads and fails where it fails, with its message;
// with the callback failing at the first factor, the windows fail as the
// sequential reading does.
func FuzzStreamScopesMatchesRead(f *testing.F) {
	f.Add([]byte(markovExample))
	f.Add([]byte(bayesExample))
	for _, in := range lateScopeErrors {
		f.Add([]byte(in))
	}
	for _, e := range readErrors {
		f.Add([]byte(e.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer func(n int) { windowBytes = n }(windowBytes)
		windowBytes = 7
		opts := ReadOptions{MaxEntries: lateLimit, KeepDense: true}
		m, want := ReadWith(bytes.NewReader(data), "f.uai", opts)
		open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		failing := "" // the sequential reading's error with the callback failing
		for _, converters := range []int{0, 2} {
			opts.Converters = converters
			got, err := streamScopesWith(open, "f.uai", opts)
			switch {
			case (err == nil) != (want == nil):
				t.Fatalf("%d converters: StreamScopes %v, ReadWith %v", converters, err, want)
			case err != nil && err.Error() != want.Error():
				t.Fatalf("%d converters: StreamScopes %q, ReadWith %q", converters, err, want)
			case err == nil:
				if len(got.Factors) != len(m.Factors) {
					t.Fatalf("%d converters: %d factors, ReadWith %d", converters, len(got.Factors), len(m.Factors))
				}
				for a, fa := range got.Factors {
					if !slices.Equal(fa.Vars, m.Factors[a].Vars) || !slices.EqualFunc(fa.Table, m.Factors[a].Table, sameBits) {
						t.Fatalf("%d converters: factor %d: %v %v, ReadWith %v %v", converters, a, fa.Vars, fa.Table, m.Factors[a].Vars, m.Factors[a].Table)
					}
				}
			}
			err = StreamScopes(open, "f.uai", opts, func([]int, int) error { return nil },
				func(int, []int, []float64) error { return errStop })
			switch {
			case want == nil && len(m.Factors) > 0 && err != errStop:
				t.Fatalf("%d converters: the callback's error, got %v", converters, err)
			case converters == 0:
				failing = fmt.Sprint(err)
			case fmt.Sprint(err) != failing:
				t.Fatalf("the callback failing: %v in windows, %s sequentially", err, failing)
			}
		}
	})
}

var errStop = errors.New("callback stop")

// sameBits reports whether x and y are the same float64, bit for bit.
func sameBits(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
