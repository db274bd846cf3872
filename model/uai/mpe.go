package uai

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// WriteMPE writes x in the UAI MPE solution format: a line `MPE`, then one
// line `N x0 x1 ... xN-1`.
func WriteMPE(w io.Writer, x []int) error {
	for i, s := range x {
		if s < 0 {
			return fmt.Errorf("uai: write MPE: variable %d has negative state %d", i, s)
		}
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("MPE\n")
	buf := strconv.AppendInt(nil, int64(len(x)), 10)
	for _, s := range x {
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, int64(s), 10)
		if len(buf) >= 32<<10 {
			bw.Write(buf)
			buf = buf[:0]
		}
	}
	buf = append(buf, '\n')
	bw.Write(buf)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("uai: write MPE: %w", err)
	}
	return nil
}

// ReadMPE reads an assignment in the UAI MPE solution format (plain or
// gzip): an optional header word `MPE` (or `MAP`, as in UAI 2014), then the
// line `N x0 ... xN-1`. The older layout with a number of solutions `1`
// before that line is accepted too, and when a file holds several
// solutions separated by `-BEGIN-` the last one is read.
func ReadMPE(r io.Reader, name string) ([]int, error) {
	src, err := openSource(r, name, nil)
	if err != nil {
		return nil, err
	}
	defer src.close()
	var toks []intToken
	headerLine := 0
	for {
		tok, line, err := src.next()
		if err != nil {
			return nil, err
		}
		if tok == nil {
			break
		}
		switch {
		case len(toks) == 0 && headerLine == 0 && (bytes.EqualFold(tok, []byte("MPE")) || bytes.EqualFold(tok, []byte("MAP"))):
			headerLine = line
		case bytes.Equal(tok, []byte("-BEGIN-")):
			toks = toks[:0] // a later solution replaces earlier ones
		default:
			n, problem := parseCount(tok)
			toks = append(toks, intToken{val: n, problem: problem, line: line, text: quote(tok)})
		}
	}
	return parseMPE(src, toks, max(headerLine, 1))
}

// parseMPE interprets the tokens of one solution.
func parseMPE(src *source, toks []intToken, line int) ([]int, error) {
	if len(toks) == 0 {
		return nil, src.errorf(line, "unexpected end of file: expected the number of variables of the MPE assignment")
	}
	for _, t := range toks {
		if t.problem != "" {
			return nil, src.errorf(t.line, "MPE assignment: "+t.problem)
		}
	}
	first := 0
	if toks[0].val != len(toks)-1 && toks[0].val == 1 && len(toks) >= 2 && toks[1].val == len(toks)-2 {
		first = 1 // older layout: the number of solutions, 1, comes first
	}
	n := toks[first].val
	have := len(toks) - first - 1
	switch {
	case have < n:
		return nil, src.errorf(lastLine(toks), fmt.Sprintf("unexpected end of file: MPE assignment declares %d variables, has %d states", n, have))
	case have > n:
		extra := toks[first+1+n]
		return nil, src.errorf(extra.line, fmt.Sprintf("trailing garbage after the MPE assignment of %d variables: %s", n, extra.text))
	}
	x := make([]int, n)
	for i := range x {
		x[i] = toks[first+1+i].val
	}
	return x, nil
}
