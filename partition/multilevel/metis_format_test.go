package multilevel

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// The example of the METIS manual (figure 3b/c/d): 7 vertices, 11 edges.
const (
	metisPlain = `7 11
5 3 2
1 3 4
5 4 2 1
2 3 6 7
1 3 6
5 4 7
6 4
`
	metisEdgeWeights = `7 11 1
5 1 3 2 2 1
1 1 3 2 4 1
5 3 4 2 2 2 1 2
2 1 3 2 6 2 7 5
1 1 3 3 6 2
5 2 4 2 7 6
6 6 4 5
`
	metisBothWeights = `% a comment
7 11 11
4 5 1 3 2 2 1
2 1 1 3 2 4 1
5 5 3 4 2 2 2 1 2
3 2 1 3 2 6 2 7 5
1 1 1 3 3 6 2
6 5 2 4 2 7 6
2 6 6 4 5
`
)

// sameGraph reports whether two graphs are equal, weights included, with
// nil weights standing for unit weights.
func sameGraph(a, b *Graph) bool {
	if a.NumVertices() != b.NumVertices() || !slices.Equal(a.Xadj, b.Xadj) || !slices.Equal(a.Adjncy, b.Adjncy) {
		return false
	}
	for p := range a.Adjncy {
		if a.weightAt(p) != b.weightAt(p) {
			return false
		}
	}
	for v := range a.NumVertices() {
		if a.vertexWeight(v) != b.vertexWeight(v) {
			return false
		}
	}
	return true
}

func mustReadMETIS(t testing.TB, s string) *Graph {
	t.Helper()
	g, err := ReadMETIS(strings.NewReader(s), "test.graph")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestReadMETISManualExamples(t *testing.T) {
	plain := mustReadMETIS(t, metisPlain)
	if plain.NumVertices() != 7 || plain.NumEdges() != 11 || plain.Adjwgt != nil || plain.Vwgt != nil {
		t.Fatalf("plain: n=%d m=%d adjwgt=%v vwgt=%v", plain.NumVertices(), plain.NumEdges(), plain.Adjwgt, plain.Vwgt)
	}
	if got := plain.Adjncy[plain.Xadj[3]:plain.Xadj[4]]; !slices.Equal(got, []int32{1, 2, 5, 6}) {
		t.Fatalf("vertex 4's neighbours %v", got)
	}
	ew := mustReadMETIS(t, metisEdgeWeights)
	if ew.Vwgt != nil || ew.Adjwgt == nil || ew.Adjwgt[ew.Xadj[3]+3] != 5 {
		t.Fatalf("edge weights: %v", ew.Adjwgt)
	}
	both := mustReadMETIS(t, metisBothWeights)
	if !slices.Equal(both.Vwgt, []int32{4, 2, 5, 3, 1, 6, 2}) || !slices.Equal(both.Adjwgt, ew.Adjwgt) {
		t.Fatalf("both weights: %v %v", both.Vwgt, both.Adjwgt)
	}
	// The cut of {1,2,3} (0-based {0,1,2}) against the rest.
	part := []int32{0, 0, 0, 1, 1, 1, 1}
	if c := EdgeCut(ew, part); c != 1+1+3+2 { // 1-5, 2-4, 3-5, 3-4
		t.Fatalf("cut %d", c)
	}
}

func TestReadMETISLayouts(t *testing.T) {
	want := mustReadMETIS(t, metisPlain)
	variants := []string{
		strings.ReplaceAll(metisPlain, "\n", "\r\n"),
		"% header comment\n\n  7 11 0\n" + metisPlain[5:],
		"7 11 000 1\n" + metisPlain[5:],
		"7 11\n5 3 2\n%comment inside\n1 3 4\n\t5  4 2 1 \n2 3 6 7\n1 3 6\n5 4 7\n6 4", // no final newline
		metisPlain + "\n\n% trailing comment\n   \n",
		"7 11 001\n" + strings.Join([]string{"5 1 3 1 2 1", "1 1 3 1 4 1", "5 1 4 1 2 1 1 1", "2 1 3 1 6 1 7 1", "1 1 3 1 6 1", "5 1 4 1 7 1", "6 1 4 1"}, "\n"),
	}
	for i, s := range variants {
		g, err := ReadMETIS(strings.NewReader(s), "v.graph")
		if err != nil {
			t.Fatalf("variant %d: %v", i, err)
		}
		if !sameGraph(g, want) {
			t.Fatalf("variant %d: read %+v", i, g)
		}
	}
	// Isolated vertices are empty lines.
	g := mustReadMETIS(t, "4 1\n\n3\n2\n\n")
	if g.NumVertices() != 4 || g.NumEdges() != 1 || g.Xadj[1] != 0 || g.Xadj[4] != 2 {
		t.Fatalf("isolated vertices: %+v", g)
	}
	g = mustReadMETIS(t, "0 0\n")
	if g.NumVertices() != 0 {
		t.Fatalf("empty graph: %+v", g)
	}
	// Tiny reads and one long line (more than the reader's buffer).
	g = mustReadMETIS(t, metisPlain)
	h, err := ReadMETIS(iotest.OneByteReader(strings.NewReader(metisPlain)), "x")
	if err != nil || !sameGraph(g, h) {
		t.Fatalf("one-byte reads: %v", err)
	}
	var b strings.Builder
	n := 30000
	b.WriteString("30001 30000\n")
	for v := 2; v <= n+1; v++ {
		b.WriteString(" ")
		b.WriteString(itoa(v))
	}
	b.WriteString("\n")
	for range n {
		b.WriteString("1\n")
	}
	star := mustReadMETIS(t, b.String())
	if star.Xadj[1] != int32(n) {
		t.Fatalf("star: centre degree %d", star.Xadj[1])
	}
}

func itoa(v int) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(buf[i:])
		}
	}
}

// metisErrors are malformed inputs with the line and the words their error
// must name.
var metisErrors = []struct {
	input string
	line  int
	want  string
}{
	{"", 1, "no header"},
	{"% only a comment\n\n", 2, "no header"},
	{"7\n", 1, "at least n and m"},
	{"7 11 1 1 1\n", 1, "more than 4 fields"},
	{"x 11\n", 1, "number of vertices \"x\""},
	{"-3 1\n", 1, "number of vertices"},
	{"99999999999 1\n", 1, "number of vertices"},
	{"3 y\n", 1, "number of edges \"y\""},
	{"3 1 2\n", 1, "binary digits"},
	{"3 1 1011\n", 1, "more than 3 digits"},
	{"3 1 100\n", 1, "vertex sizes"},
	{"3 1 10 2\n", 1, "ncon 2"},
	{"3 1 10 0\n", 1, "ncon \"0\""},
	{"3 1\n2\n1\n", 3, "file ends after 2 of 3 vertex lines"},
	{"2 1\n2\n1\n3\n", 4, "data after the 2 vertex lines"},
	{"2 1\n2\n0\n", 3, "neighbour \"0\" is not an integer in [1,2]"},
	{"2 1\n3\n1\n", 2, "neighbour \"3\""},
	{"2 1\n2 x\n1\n", 2, "neighbour \"x\""},
	{"2 1\n1\n1\n", 2, "vertex 1: self-loop"},
	{"2 1 1\n2\n1 1\n", 2, "neighbour 2 has no edge weight"},
	{"2 1 1\n2 -1\n1 1\n", 2, "weight \"-1\" of edge to 2"},
	{"2 1 10\n\n1 1\n", 2, "missing vertex weight"},
	{"2 1 10\nq 2\n1 1\n", 2, "vertex 1: weight \"q\""},
	{"2 1 10\n2147483647 2\n1 1\n", 3, "total vertex weight"},
	{"2 1 1\n2 2147483647\n1 2147483647\n", 3, "total edge weight"},
	{"3 1\n2\n\n2\n", 2, "vertex 1 lists neighbour 2, which does not list it"},
	{"3 1\n2 3\n1\n1\n", 3, "vertex 2: more adjacency entries than the 2"},
	{"3 2\n2 2\n1 1\n\n", 2, "vertex 1 lists neighbour 2 twice"},
	{"2 1 1\n2 3\n1 4\n", 2, "edge (1, 2) has weight 3 in the first's list and 4 in the second's"},
	{"3 2\n2\n1\n\n", 1, "header says 2 edges"},
}

func TestReadMETISErrors(t *testing.T) {
	for _, c := range metisErrors {
		_, err := ReadMETIS(strings.NewReader(c.input), "bad.graph")
		if err == nil {
			t.Errorf("%q: no error, want %q", c.input, c.want)
			continue
		}
		var me *METISError
		if !errors.As(err, &me) {
			t.Errorf("%q: error %T, want *METISError", c.input, err)
			continue
		}
		checkMETISError(t, err)
		if me.Line != c.line || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %q, want line %d and %q", c.input, err, c.line, c.want)
		}
	}
}

// checkMETISError fails unless err is one line starting with the name.
func checkMETISError(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("error is not one line: %q", msg)
	}
	if !strings.HasPrefix(msg, "bad.graph:") && !strings.HasPrefix(msg, "fuzz.graph:") {
		t.Fatalf("error does not start with the name: %q", msg)
	}
}

func TestReadMETISIOError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("7 11\n5 3 2\n"), iotest.ErrReader(boom))
	_, err := ReadMETIS(r, "bad.graph")
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want one wrapping %v", err, boom)
	}
	checkMETISError(t, err)
}

func TestWriteMETISRoundTrip(t *testing.T) {
	for _, s := range []string{metisPlain, metisEdgeWeights, metisBothWeights, "4 1\n\n3\n2\n\n", "0 0\n"} {
		g := mustReadMETIS(t, s)
		var buf bytes.Buffer
		if err := WriteMETIS(&buf, g); err != nil {
			t.Fatal(err)
		}
		back := mustReadMETIS(t, buf.String())
		if !sameGraph(g, back) {
			t.Fatalf("round trip of %q gave %q", s, buf.String())
		}
	}
	// The writer picks fmt from the weights.
	var buf bytes.Buffer
	if err := WriteMETIS(&buf, mustReadMETIS(t, metisPlain)); err != nil || !strings.HasPrefix(buf.String(), "7 11\n5 3 2\n") {
		t.Fatalf("plain output %q (%v)", buf.String(), err)
	}
	buf.Reset()
	if err := WriteMETIS(&buf, mustReadMETIS(t, metisBothWeights)); err != nil || !strings.HasPrefix(buf.String(), "7 11 011\n4 5 1 3 2 2 1\n") {
		t.Fatalf("weighted output %q (%v)", buf.String(), err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 30 {
		g := randomCSR(r, 1+r.IntN(50), r.IntN(150), i%2 == 1)
		buf.Reset()
		if err := WriteMETIS(&buf, g); err != nil {
			t.Fatal(err)
		}
		back := mustReadMETIS(t, buf.String())
		if !sameGraph(g, back) {
			t.Fatalf("random graph %d: round trip differs", i)
		}
	}
	// Invalid graphs are refused; write errors are reported.
	if err := WriteMETIS(io.Discard, &Graph{Xadj: []int32{0, 1}, Adjncy: []int32{0}}); err == nil {
		t.Fatal("WriteMETIS wrote a graph with a self-loop")
	}
	if err := WriteMETIS(failWriter{}, mustReadMETIS(t, metisPlain)); err == nil {
		t.Fatal("WriteMETIS ignored a write error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func FuzzReadMETIS(f *testing.F) {
	for _, s := range []string{metisPlain, metisEdgeWeights, metisBothWeights, "4 1\n\n3\n2\n\n", "0 0", "1 0 10 1\n7\n", "3 1 11\n%c\n1 2 1\n1 1 1\n1\n"} {
		f.Add([]byte(s))
	}
	for _, c := range metisErrors {
		f.Add([]byte(c.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ReadMETIS(bytes.NewReader(data), "fuzz.graph")
		if err != nil {
			checkMETISError(t, err)
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("read an invalid graph: %v", err)
		}
		var buf bytes.Buffer
		if err := WriteMETIS(&buf, g); err != nil {
			t.Fatalf("writing back: %v", err)
		}
		back, err := ReadMETIS(&buf, "back.graph")
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		if !sameGraph(g, back) {
			t.Fatal("round trip differs")
		}
	})
}
