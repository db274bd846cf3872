package uai

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// streamTrace reads in with StreamScopes (converters windows at once; the
// callback failing at factor failAt, -1: never) and writes down every
// callback and the error; opens is how many times the input was opened
// (2 when the windows read every table, 4 when the sequential reading
// took over).
func streamTrace(in string, converters, failAt int) (trace string, opens int) {
	var b strings.Builder
	open := func() (io.ReadCloser, error) {
		opens++
		return io.NopCloser(strings.NewReader(in)), nil
	}
	opts := ReadOptions{MaxEntries: 1 << 16, Converters: converters}
	err := StreamScopes(open, "p.uai", opts, func(cards []int, factors int) error {
		fmt.Fprintf(&b, "vars %v %d\n", cards, factors)
		return nil
	}, func(a int, scope []int, t []float64) error {
		fmt.Fprintf(&b, "factor %d %v", a, scope)
		for _, v := range t {
			fmt.Fprintf(&b, " %x", math.Float64bits(v))
		}
		b.WriteByte('\n')
		if a == failAt {
			return errors.New("callback stop")
		}
		return nil
	})
	fmt.Fprintf(&b, "err %v\n", err)
	return b.String(), opens
}

// checkWindows fails unless the windowed reading of in (several window
// sizes and numbers at once) gives the sequential reading's callbacks and
// error, also with the callback failing on the way; it returns whether
// the windows read every table of in themselves (the sequential reading
// never took over).
func checkWindows(t *testing.T, in string) (parallel bool) {
	t.Helper()
	defer func(n int) { windowBytes = n }(windowBytes)
	parallel = true
	for _, failAt := range []int{-1, 0, 2} {
		want, _ := streamTrace(in, 0, failAt)
		for _, size := range []int{1, 3, 64, 1 << 15} {
			windowBytes = size
			for _, converters := range []int{1, 3} {
				got, opens := streamTrace(in, converters, failAt)
				if got != want {
					t.Fatalf("%d windows, of %d bytes, the callback failing at %d: windowed reading\n%s\nsequential\n%s\ninput %q", converters, size, failAt, got, want, in)
				}
				parallel = parallel && opens == 2
			}
		}
	}
	return parallel
}

// lines spreads in over lines (a token a line, every second break with
// a comment line after it), so that the windows cut it.
func lines(in string) string {
	var b strings.Builder
	for k, tok := range strings.Fields(in) {
		b.WriteString(tok)
		b.WriteString("\n")
		if k%2 == 1 {
			b.WriteString("  c a comment 1 2 3\n")
		}
	}
	return b.String()
}

// The windowed reading (ReadOptions.Converters) gives what the sequential
// one gives on valid models and on every file error of readErrors, bad
// entries and files cut inside a table included, on one line and spread
// over lines with comments; on the valid models the windows read every
// table themselves.
func TestWindowTablesMatchSequential(t *testing.T) {
	inputs := []string{markovExample, bayesExample,
		"MARKOV 2 2 2 2  0  1 1  1 2.5  2 1 3",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 6 0.5 1 1 1 1 2",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 x 4 5 6 6 0.5 1 1 1 1 2",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 6 0.5 1 1 1 -1 2",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 6 0.5 1 1",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 5 0.5 1 1 1 1",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 6 0.5 1 1 1 1 2 9",
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 6 0.5 1 1 1 1 2 \n6\n0 0 0 0 0 0",
	}
	for _, e := range readErrors {
		inputs = append(inputs, e.input)
	}
	for _, in := range inputs {
		checkWindows(t, in)
		checkWindows(t, lines(in))
	}
	for _, in := range []string{markovExample, bayesExample, lines(markovExample), lines(bayesExample),
		"MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 3 4 5 6 6 0.5 1 1 1 1 2"} {
		if !checkWindows(t, in) {
			t.Errorf("the sequential reading took over on a valid model:\n%s", in)
		}
	}
}

func FuzzWindowTables(f *testing.F) {
	f.Add([]byte(markovExample))
	f.Add([]byte("MARKOV 3 2 3 2 3 1 0 2 0 1 2 1 2 2 1 2 6 1 2 x 4 5 6 6 0.5 1 1 1 1 2"))
	for _, e := range readErrors {
		f.Add([]byte(e.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkWindows(t, string(data))
	})
}

// bigModel is a random model of about 300 KB of text (more than the
// scanner's and the source's buffers, so that the tables are read in
// many windows): pairwise and unary factors over 2..4 states, entries
// in several spellings (repeated ones, exponents, zeros), tables cut
// over lines at random, comment lines between them.
func bigModel(seed int64) string {
	r := rand.New(rand.NewPCG(uint64(seed), 1))
	const n, nf = 400, 4000
	var b strings.Builder
	fmt.Fprintf(&b, "MARKOV\n%d\n", n)
	cards := make([]int, n)
	for v := range cards {
		cards[v] = 2 + r.IntN(3)
		fmt.Fprintf(&b, "%d ", cards[v])
	}
	fmt.Fprintf(&b, "\n%d\n", nf)
	sizes := make([]int, nf)
	for a := range sizes {
		if a%5 == 0 {
			v := r.IntN(n)
			fmt.Fprintf(&b, "1 %d\n", v)
			sizes[a] = cards[v]
			continue
		}
		u, v := r.IntN(n), r.IntN(n-1)
		if v >= u {
			v++
		}
		fmt.Fprintf(&b, "2 %d %d\n", u, v)
		sizes[a] = cards[u] * cards[v]
	}
	spell := []string{"1", "1", "1", "0", "2.5e-3", "1e-400", "7"}
	for a, size := range sizes {
		b.WriteString("\n")
		if r.IntN(7) == 0 {
			b.WriteString("c between the tables\n")
		}
		fmt.Fprintf(&b, "%d\n", size)
		w := fmt.Sprint(r.Float64() * 3)
		for e := range size {
			switch k := r.IntN(10); {
			case k < 7:
				b.WriteString(spell[(a+e)%len(spell)])
			default:
				b.WriteString(w)
			}
			if r.IntN(4) == 0 {
				b.WriteString("\n")
			} else {
				b.WriteString(" ")
			}
		}
	}
	b.WriteString("\n")
	return b.String()
}

// Models larger than the readers' buffers are read in many windows: the
// same tables as the sequential reading, read by the windows themselves;
// the same errors when an entry or a count is bad, the file is cut, or
// something follows the last table.
func TestWindowTablesLarge(t *testing.T) {
	in := bigModel(1)
	if len(in) < 256<<10 {
		t.Fatalf("the model has %d bytes: too few for windows", len(in))
	}
	if !checkWindows(t, in) {
		t.Fatal("the sequential reading took over on a valid model")
	}
	at := strings.LastIndex(in, "\n4\n") // a table's count, near the end
	for _, bad := range []string{
		in[:at] + "\n4\nx" + in[at+4:],  // a bad first entry
		in[:at] + "\n5\n" + in[at+3:],   // a count that is not the size
		in[:len(in)*3/4],                // cut
		in + "9\n",                      // trailing
		in[:at] + "\n4\n-1" + in[at+4:], // a negative potential
	} {
		checkWindows(t, bad)
	}
}

// checkMemo fails unless entryMemo gives entryToLog's value and problem
// for every token of toks, read in order (repeats hit the memo).
func checkMemo(t *testing.T, toks []string) {
	t.Helper()
	for _, base := range []LogBase{Potentials, Log10, Ln} {
		var m entryMemo
		for _, tok := range toks {
			v, p := m.toLog([]byte(tok), base)
			wv, wp := entryToLog([]byte(tok), base)
			if math.Float64bits(v) != math.Float64bits(wv) || p != wp {
				t.Fatalf("%v: token %q: memo %v %q, entryToLog %v %q (tokens %q)", base, tok, v, p, wv, wp, toks)
			}
		}
	}
}

// The memo of the last two entries gives entryToLog's values and problems
// on repeats, alternations, prefixes of one another and tokens too long to
// keep.
func TestEntryMemoMatchesEntryToLog(t *testing.T) {
	long := strings.Repeat("1", memoLen) + "5"
	checkMemo(t, []string{"0.5", "1", "1", "0.5", "1", "2", "0.5", "1", "10", "1", "1.0", "x", "x", "-1", "-1",
		"1e-400", "1e-400", "inf", "nan", "nan", long, long, long[:memoLen], long, long[:memoLen], "0", "0", "1"})
}

func FuzzEntryMemo(f *testing.F) {
	f.Add("0.5 1 1 1 0.5 2 1e-400 x 1")
	f.Fuzz(func(t *testing.T, s string) {
		checkMemo(t, strings.Fields(s))
	})
}

// checkDigits fails unless a scanner that takes nextDigits where it can
// (and next where it cannot) reads in as one that only takes next: the
// same tokens, values (parseCount's) and lines, with a small buffer so
// that tokens cross its end.
func checkDigits(t *testing.T, in string, bufSize int) {
	t.Helper()
	a := &scanner{r: strings.NewReader(in), buf: make([]byte, bufSize), line: 1, bol: true, tokLine: 1}
	b := &scanner{r: strings.NewReader(in), buf: make([]byte, bufSize), line: 1, bol: true, tokLine: 1}
	for k := 0; ; k++ {
		n, ok := b.nextDigits()
		tok, err := a.next()
		if err != nil || tok == nil {
			if ok {
				t.Fatalf("%q: token %d: nextDigits read %d where next ended (%v)", in, k, n, err)
			}
			return
		}
		if ok {
			want, problem := parseCount(tok)
			if problem != "" || want != n || a.tokLine != b.tokLine {
				t.Fatalf("%q: token %d: nextDigits %d on line %d, next %q (%s) on line %d", in, k, n, b.tokLine, tok, problem, a.tokLine)
			}
			continue
		}
		got, err := b.next()
		if err != nil || string(got) != string(tok) || a.tokLine != b.tokLine {
			t.Fatalf("%q: token %d: after nextDigits, next %q on line %d (%v), want %q on line %d", in, k, got, b.tokLine, err, tok, a.tokLine)
		}
	}
}

// nextDigits reads the counts next reads, on their lines, and leaves the
// rest (comments, signs, long or odd tokens, a buffer's end) to next.
func TestNextDigitsMatchesNext(t *testing.T) {
	in := "MARKOV\n3\n2 2 3\n 2\nc 1 2\n2 0 1\n+3 0 1 2\r\n\n007 99999999999999999 999999999999999999 12x\n-4 5"
	for _, size := range []int{32, 64, 1 << 10} {
		checkDigits(t, in, size)
		checkDigits(t, lines(in), size)
	}
}

func FuzzNextDigits(f *testing.F) {
	f.Add("2 0 1\nc 3\n 12 +4 x 5", 32)
	f.Fuzz(func(t *testing.T, in string, size int) {
		checkDigits(t, in, max(maxTokenLen+1, size%(1<<14)))
	})
}
