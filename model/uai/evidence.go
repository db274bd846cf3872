package uai

import (
	"fmt"
	"io"

	"github.com/ddrun/ddrun/model"
)

// ReadEvidence reads an evidence file for m from r (plain or gzip). Both
// layouts in use are accepted: UAI 2014 `k var state var state ...` and UAI
// 2010 `1 k var state ...` (a number of samples, which must be 1, first).
// They are told apart by the number of tokens: 2k+1 (odd) is the 2014
// layout, an even count with a leading 1 the 2010 layout. An empty input or
// `0` is no evidence. Observations are checked against m; a variable
// observed twice must have the same state both times.
func ReadEvidence(r io.Reader, name string, m *model.Model) (model.Evidence, error) {
	src, err := openSource(r, name, nil)
	if err != nil {
		return nil, err
	}
	defer src.close()
	toks, err := readInts(src)
	if err != nil {
		return nil, err
	}
	return parseEvidence(src, toks, m)
}

// ReadEvidenceFile reads the evidence file at path for m (see ReadEvidence).
func ReadEvidenceFile(path string, m *model.Model) (model.Evidence, error) {
	return OpenRead("uai", path, func(r io.Reader, name string) (model.Evidence, error) { return ReadEvidence(r, name, m) })
}

// intToken is a token of an all-integer file: its value, or the problem
// that kept it from being one, and its line.
type intToken struct {
	val     int
	problem string
	line    int
	text    string
}

// readInts reads all tokens of src as non-negative integers; bad tokens
// keep their problem, reported once their role is known.
func readInts(src *source) ([]intToken, error) {
	var toks []intToken
	for {
		tok, line, err := src.next()
		if err != nil {
			return nil, err
		}
		if tok == nil {
			return toks, nil
		}
		n, problem := parseCount(tok)
		toks = append(toks, intToken{val: n, problem: problem, line: line, text: quote(tok)})
	}
}

// lastLine returns the line of the last token (1 when there is none).
func lastLine(toks []intToken) int {
	if len(toks) == 0 {
		return 1
	}
	return toks[len(toks)-1].line
}

// parseEvidence interprets the tokens of an evidence file.
func parseEvidence(src *source, toks []intToken, m *model.Model) (model.Evidence, error) {
	ev := model.Evidence{}
	if len(toks) == 0 {
		return ev, nil
	}
	// value returns token i, or an error naming its role.
	value := func(i int, what string) (int, error) {
		if i >= len(toks) {
			return 0, src.errorf(lastLine(toks), "unexpected end of file: expected "+what)
		}
		if toks[i].problem != "" {
			return 0, src.errorf(toks[i].line, what+": "+toks[i].problem)
		}
		return toks[i].val, nil
	}
	first := 0
	if len(toks)%2 == 0 && toks[0].problem == "" && toks[0].val == 1 {
		first = 1 // UAI 2010 layout: one sample
	}
	k, err := value(first, "number of observed variables")
	if err != nil {
		return nil, err
	}
	n := len(m.Cards)
	for j := 0; j < k; j++ {
		vi := first + 1 + 2*j
		v, err := value(vi, fmt.Sprintf("variable of observation %d (of %d)", j, k))
		if err != nil {
			return nil, err
		}
		s, err := value(vi+1, fmt.Sprintf("state of observation %d (of %d)", j, k))
		if err != nil {
			return nil, err
		}
		if v >= n {
			return nil, src.errorf(toks[vi].line, fmt.Sprintf("observation %d: variable %d out of range [0,%d)", j, v, n))
		}
		if s >= m.Cards[v] {
			return nil, src.errorf(toks[vi+1].line, fmt.Sprintf("observation %d: variable %d state %d out of range [0,%d)", j, v, s, m.Cards[v]))
		}
		if prev, ok := ev[v]; ok && prev != s {
			return nil, src.errorf(toks[vi].line, fmt.Sprintf("observation %d: variable %d observed with state %d and with state %d", j, v, prev, s))
		}
		ev[v] = s
	}
	if rest := first + 1 + 2*k; rest < len(toks) {
		layout := "UAI 2014 layout `k var state ...`"
		if first == 1 {
			layout = "UAI 2010 layout `1 k var state ...`"
		}
		return nil, src.errorf(toks[rest].line, fmt.Sprintf("trailing garbage after %d observations (%s): %s", k, layout, toks[rest].text))
	}
	return ev, nil
}
