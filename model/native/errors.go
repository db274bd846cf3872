package native

import (
	"bytes"
	"fmt"
	"strings"
)

// Error is a problem with a model file. Its message is one line:
//
//	file[:line:col]: place: message
//
// where place is a path into the document such as "factors[3] (potts)" or
// "unaries[2][1]", and line:col (1-based, in bytes) are given for JSON input
// when the position is known.
type Error struct {
	File      string
	Line, Col int    // 0 when unknown (always for msgpack)
	Place     string // "" when the problem concerns the whole file
	Msg       string
	Err       error // the underlying error, if any

	at int64 // JSON byte offset + 1 of the place, 0 when unknown
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Place != "" {
		b.WriteString(e.Place)
		b.WriteString(": ")
	}
	b.WriteString(oneLine(e.Msg))
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// oneLine replaces line breaks so that every message stays on one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// placeErr is an error at a place, before the file name is known.
func placeErr(place, format string, args ...any) *Error {
	return &Error{Place: place, Msg: fmt.Sprintf(format, args...)}
}

// atOffset sets the JSON byte offset of e's place (pos < 0: unknown) and returns e.
func (e *Error) atOffset(pos int64) *Error {
	if pos >= 0 {
		e.at = pos + 1
	}
	return e
}

// withFile sets the file name of err, converting it to *Error if needed, and
// for JSON input (data != nil) turns its byte offset into line and column.
func withFile(err error, name string, data []byte) error {
	e, ok := err.(*Error)
	if !ok {
		e = &Error{Msg: err.Error(), Err: err}
	}
	e.File = name
	if e.at > 0 && e.Line == 0 && data != nil {
		e.Line, e.Col = lineCol(data, e.at-1)
	}
	return e
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// quote quotes a name from the input for a message, cut to a sane length.
func quote(s string) string {
	const limit = 40
	if len(s) > limit {
		return fmt.Sprintf("%q...", s[:limit])
	}
	return fmt.Sprintf("%q", s)
}
