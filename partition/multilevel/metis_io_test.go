// The METIS graph file format, read and written only by the tests: the
// format tests and the comparisons with gpmetis (metis_compare_test.go).
// Nothing outside the tests reads or writes METIS files.

package multilevel

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// METISError is a problem found in a METIS graph file. Its message is one
// line of the form NAME:LINE: problem.
type METISError struct {
	Name string // the input's name, as given to ReadMETIS
	Line int    // 1-based line of the problem
	Msg  string
	Err  error // the underlying I/O error, if any
}

func (e *METISError) Error() string {
	msg := e.Msg
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	s := fmt.Sprintf("%s:%d: %s", e.Name, e.Line, msg)
	if strings.ContainsAny(s, "\r\n") {
		s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	}
	return s
}

// Unwrap returns the underlying error, if any.
func (e *METISError) Unwrap() error { return e.Err }

// metisReader reads a METIS file line by line, keeping track of line numbers.
type metisReader struct {
	r    *bufio.Reader
	name string
	line int    // number of the line in buf
	buf  []byte // current line, without its line break
	long []byte // storage for lines longer than the bufio buffer
	eof  bool
}

func (mr *metisReader) errorf(format string, args ...any) error {
	return &METISError{Name: mr.name, Line: max(mr.line, 1), Msg: fmt.Sprintf(format, args...)}
}

// next reads the next line into buf; it reports false at end of input.
func (mr *metisReader) next() (bool, error) {
	if mr.eof {
		return false, nil
	}
	b, err := mr.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		mr.long = append(mr.long[:0], b...)
		for err == bufio.ErrBufferFull {
			b, err = mr.r.ReadSlice('\n')
			mr.long = append(mr.long, b...)
		}
		b = mr.long
	}
	if err != nil && err != io.EOF {
		mr.line++
		return false, &METISError{Name: mr.name, Line: mr.line, Msg: "read error", Err: err}
	}
	if err == io.EOF {
		mr.eof = true
		if len(b) == 0 {
			return false, nil
		}
	}
	mr.line++
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	mr.buf = b
	return true, nil
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' }

// skipBlanks returns the index of the first non-blank byte of b at or after i.
func skipBlanks(b []byte, i int) int {
	for i < len(b) && isBlank(b[i]) {
		i++
	}
	return i
}

// isComment reports whether the line is a comment ('%' first, after blanks).
func isComment(b []byte) bool {
	i := skipBlanks(b, 0)
	return i < len(b) && b[i] == '%'
}

// isEmpty reports whether the line holds only blanks.
func isEmpty(b []byte) bool { return skipBlanks(b, 0) == len(b) }

// field returns the token of b starting at i (after blanks) and the index
// after it; tok is empty at the end of the line.
func field(b []byte, i int) (tok []byte, j int) {
	i = skipBlanks(b, i)
	j = i
	for j < len(b) && !isBlank(b[j]) {
		j++
	}
	return b[i:j], j
}

// parseNonNeg parses a non-negative decimal integer of at most maxVal.
func parseNonNeg(tok []byte, maxVal int64) (int64, bool) {
	if len(tok) == 0 {
		return 0, false
	}
	i := 0
	if tok[0] == '+' {
		i = 1
		if len(tok) == 1 {
			return 0, false
		}
	}
	var x int64
	for ; i < len(tok); i++ {
		c := tok[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		x = x*10 + int64(c-'0')
		if x > maxVal {
			return 0, false
		}
	}
	return x, true
}

func quoteTok(tok []byte) string {
	const maxQuoted = 40
	if len(tok) > maxQuoted {
		return strconv.Quote(string(tok[:maxQuoted])) + "..."
	}
	return strconv.Quote(string(tok))
}

// ReadMETIS reads a graph in the METIS graph format (METIS 5 manual,
// section 4.1.1), the input of gpmetis:
//
//	% comment lines start with '%' and are skipped anywhere
//	n m [fmt [ncon]]        header: vertices, undirected edges
//	[w] v1 [e1] v2 [e2] ... one line per vertex, in order: its neighbours
//
// Neighbours are numbered from 1. fmt is up to three binary digits: the
// last (001) says each neighbour is followed by the weight of the edge,
// the middle one (010) that each line starts with the vertex's weight, and
// the first (100, vertex sizes) is not supported; ncon, the number of
// weights per vertex, must be 1. An empty line is a vertex without
// neighbours, so there must be exactly n vertex lines; only blank and
// comment lines may follow them. Every edge must be listed by both ends
// with the same weight, m must be the number of undirected edges, and the
// limits of Graph apply (non-negative weights whose totals fit in int32).
// Lines may end in CRLF.
//
// name is used in error messages, which are one line each, of the form
// NAME:LINE: problem (a *METISError). The graph returned passes Validate;
// its Vwgt (Adjwgt) is nil when the file has no vertex (edge) weights.
func ReadMETIS(r io.Reader, name string) (*Graph, error) {
	mr := &metisReader{r: bufio.NewReaderSize(r, 1<<16), name: name}
	// Header: the first line that is neither blank nor a comment.
	for {
		ok, err := mr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, mr.errorf("no header line (n m [fmt [ncon]])")
		}
		if !isComment(mr.buf) && !isEmpty(mr.buf) {
			break
		}
	}
	headerLine := mr.line
	var hdr [4][]byte
	nh := 0
	for i := 0; ; {
		tok, j := field(mr.buf, i)
		if len(tok) == 0 {
			break
		}
		if nh == 4 {
			return nil, mr.errorf("header has more than 4 fields (n m [fmt [ncon]])")
		}
		hdr[nh] = tok
		nh++
		i = j
	}
	if nh < 2 {
		return nil, mr.errorf("header needs at least n and m, has %d field(s)", nh)
	}
	n64, ok := parseNonNeg(hdr[0], math.MaxInt32-1)
	if !ok {
		return nil, mr.errorf("header: number of vertices %s is not an integer in [0,%d]", quoteTok(hdr[0]), math.MaxInt32-1)
	}
	m64, ok := parseNonNeg(hdr[1], math.MaxInt32/2)
	if !ok {
		return nil, mr.errorf("header: number of edges %s is not an integer in [0,%d]", quoteTok(hdr[1]), math.MaxInt32/2)
	}
	hasVwgt, hasEwgt := false, false
	if nh >= 3 {
		f := hdr[2]
		if len(f) > 3 {
			return nil, mr.errorf("header: fmt %s has more than 3 digits", quoteTok(f))
		}
		for i, c := range f {
			if c != '0' && c != '1' {
				return nil, mr.errorf("header: fmt %s is not made of binary digits", quoteTok(f))
			}
			switch len(f) - 1 - i {
			case 0:
				hasEwgt = c == '1'
			case 1:
				hasVwgt = c == '1'
			case 2:
				if c == '1' {
					return nil, mr.errorf("header: fmt %s: vertex sizes (fmt 100) are not supported", quoteTok(f))
				}
			}
		}
	}
	if nh == 4 {
		ncon, ok := parseNonNeg(hdr[3], math.MaxInt32)
		if !ok || ncon == 0 {
			return nil, mr.errorf("header: ncon %s is not a positive integer", quoteTok(hdr[3]))
		}
		if ncon != 1 {
			return nil, mr.errorf("header: ncon %d: only one vertex weight per vertex is supported", ncon)
		}
	}
	n := int(n64)
	const capHint = 1 << 20 // never trust the header for allocation sizes
	g := &Graph{Xadj: make([]int32, 1, min(n, capHint)+1)}
	g.Adjncy = make([]int32, 0, min(2*m64, capHint))
	if hasEwgt {
		g.Adjwgt = make([]int32, 0, min(2*m64, capHint))
	}
	if hasVwgt {
		g.Vwgt = make([]int32, 0, min(n, capHint))
	}
	lineOf := make([]int32, 0, min(n, capHint)) // for errors found after reading
	var vtotal, etotal int64
	for v := 0; v < n; {
		ok, err := mr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, mr.errorf("file ends after %d of %d vertex lines", v, n)
		}
		b := mr.buf
		if isComment(b) {
			continue
		}
		i := 0
		if hasVwgt {
			tok, j := field(b, i)
			if len(tok) == 0 {
				return nil, mr.errorf("vertex %d: missing vertex weight", v+1)
			}
			w, ok := parseNonNeg(tok, math.MaxInt32)
			if !ok {
				return nil, mr.errorf("vertex %d: weight %s is not an integer in [0,%d]", v+1, quoteTok(tok), math.MaxInt32)
			}
			vtotal += w
			if vtotal > math.MaxInt32 {
				return nil, mr.errorf("total vertex weight exceeds %d", math.MaxInt32)
			}
			g.Vwgt = append(g.Vwgt, int32(w))
			i = j
		}
		for {
			tok, j := field(b, i)
			if len(tok) == 0 {
				break
			}
			u, ok := parseNonNeg(tok, n64)
			if !ok || u == 0 {
				return nil, mr.errorf("vertex %d: neighbour %s is not an integer in [1,%d]", v+1, quoteTok(tok), n)
			}
			if int(u) == v+1 {
				return nil, mr.errorf("vertex %d: self-loop", v+1)
			}
			if len(g.Adjncy) >= int(2*m64) {
				return nil, mr.errorf("vertex %d: more adjacency entries than the %d the header's %d edges allow", v+1, 2*m64, m64)
			}
			g.Adjncy = append(g.Adjncy, int32(u-1))
			i = j
			if hasEwgt {
				tok, j = field(b, i)
				if len(tok) == 0 {
					return nil, mr.errorf("vertex %d: neighbour %d has no edge weight", v+1, u)
				}
				w, ok := parseNonNeg(tok, math.MaxInt32)
				if !ok {
					return nil, mr.errorf("vertex %d: weight %s of edge to %d is not an integer in [0,%d]", v+1, quoteTok(tok), u, math.MaxInt32)
				}
				etotal += w
				if etotal > math.MaxInt32 {
					return nil, mr.errorf("total edge weight (both directions) exceeds %d", math.MaxInt32)
				}
				g.Adjwgt = append(g.Adjwgt, int32(w))
				i = j
			}
		}
		g.Xadj = append(g.Xadj, int32(len(g.Adjncy)))
		lineOf = append(lineOf, int32(mr.line))
		v++
	}
	for {
		ok, err := mr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if !isComment(mr.buf) && !isEmpty(mr.buf) {
			return nil, mr.errorf("data after the %d vertex lines", n)
		}
	}
	if int64(len(g.Adjncy)) != 2*m64 {
		return nil, &METISError{Name: name, Line: headerLine, Msg: fmt.Sprintf("header says %d edges, the adjacency lists hold %d entries (want %d)", m64, len(g.Adjncy), 2*m64)}
	}
	if err := g.Validate(); err != nil {
		var ge *graphError
		if errors.As(err, &ge) && ge.v >= 0 && ge.v < len(lineOf) {
			return nil, &METISError{Name: name, Line: int(lineOf[ge.v]), Msg: ge.msg(1)}
		}
		return nil, &METISError{Name: name, Line: headerLine, Msg: strings.TrimPrefix(err.Error(), "multilevel: graph: ")}
	}
	return g, nil
}

// WriteMETIS writes g in the METIS graph format, with fmt 001, 010 or 011
// when g has non-unit edge weights, vertex weights or both (see ReadMETIS),
// so that ReadMETIS and gpmetis read it back.
func WriteMETIS(w io.Writer, g *Graph) error {
	if err := g.Validate(); err != nil {
		return err
	}
	n := g.NumVertices()
	hasE, hasV := false, false
	for _, x := range g.Adjwgt {
		if x != 1 {
			hasE = true
			break
		}
	}
	for _, x := range g.Vwgt {
		if x != 1 {
			hasV = true
			break
		}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	line := make([]byte, 0, 256)
	line = strconv.AppendInt(line, int64(n), 10)
	line = append(line, ' ')
	line = strconv.AppendInt(line, int64(g.NumEdges()), 10)
	switch {
	case hasV && hasE:
		line = append(line, " 011"...)
	case hasV:
		line = append(line, " 010"...)
	case hasE:
		line = append(line, " 001"...)
	}
	line = append(line, '\n')
	if _, err := bw.Write(line); err != nil {
		return fmt.Errorf("multilevel: WriteMETIS: %w", err)
	}
	for v := 0; v < n; v++ {
		line = line[:0]
		if hasV {
			line = strconv.AppendInt(line, int64(g.Vwgt[v]), 10)
		}
		for p := g.Xadj[v]; p < g.Xadj[v+1]; p++ {
			if len(line) > 0 {
				line = append(line, ' ')
			}
			line = strconv.AppendInt(line, int64(g.Adjncy[p])+1, 10)
			if hasE {
				line = append(line, ' ')
				line = strconv.AppendInt(line, int64(g.Adjwgt[p]), 10)
			}
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("multilevel: WriteMETIS: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("multilevel: WriteMETIS: %w", err)
	}
	return nil
}
