package uai

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseError is a problem found in an input file. Its message is one line of
// the form NAME:LINE: problem, naming the offending token where there is one.
type ParseError struct {
	Name string // the input's name, as given to the reader
	Line int    // 1-based line of the offending token (or of the last token at end of file)
	Msg  string // the problem
	Err  error  // the underlying error (I/O, gzip), if any
}

func (e *ParseError) Error() string {
	msg := e.Msg
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return oneLine(fmt.Sprintf("%s:%d: %s", e.Name, e.Line, msg))
}

// Unwrap returns the underlying error, if any.
func (e *ParseError) Unwrap() error { return e.Err }

// oneLine replaces line breaks so that a message always fits on one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// maxQuoted bounds how much of an offending token an error message repeats.
const maxQuoted = 40

// quote returns tok as a quoted Go string, shortened when long.
func quote(tok []byte) string {
	if len(tok) > maxQuoted {
		return strconv.Quote(string(tok[:maxQuoted])) + "..."
	}
	return strconv.Quote(string(tok))
}
