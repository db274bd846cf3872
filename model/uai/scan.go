package uai

import (
	"bytes"
	"errors"
	"io"
)

const (
	// scanBufSize is the size of the scanner's read buffer.
	scanBufSize = 64 << 10
	// maxTokenLen bounds one token: no number needs more, and a longer run
	// of non-blank bytes is garbage.
	maxTokenLen = 4096
	// maxEmptyReads bounds consecutive reads that return no data and no error.
	maxEmptyReads = 100
)

// isBlank marks the bytes that separate tokens.
var isBlank = [256]bool{' ': true, '\t': true, '\n': true, '\v': true, '\f': true, '\r': true}

// errTokenTooLong reports a token longer than maxTokenLen.
var errTokenTooLong = errors.New("token too long")

// scanner splits a stream into blank-separated tokens, tracking line numbers.
// Lines whose first non-blank byte is 'c' are comments (UAI 2016). Tokens
// are views into the scanner's buffer, valid until the next call to next.
type scanner struct {
	r        io.Reader
	buf      []byte
	pos, end int   // unread data is buf[pos:end]
	line     int   // line of buf[pos]
	bol      bool  // only blanks seen since the start of the current line
	readErr  error // sticky error from r (io.EOF at end of input)
	nread    int64 // bytes read from r
	tokLine  int   // line of the last token returned (1 before any)
}

func newScanner(r io.Reader) *scanner {
	return &scanner{r: r, buf: make([]byte, scanBufSize), line: 1, bol: true, tokLine: 1}
}

// consumed returns the number of input bytes consumed so far.
func (s *scanner) consumed() int64 { return s.nread - int64(s.end-s.pos) }

// fill moves buf[keep:end] to the front of the buffer and reads more input
// after it. It returns how far the kept bytes moved, and whether any new
// byte arrived; at the end of input it returns false and a nil error.
func (s *scanner) fill(keep int) (moved int, ok bool, err error) {
	if keep > 0 {
		copy(s.buf, s.buf[keep:s.end])
		s.end -= keep
		s.pos -= keep
		moved = keep
	}
	for empty := 0; ; empty++ {
		if s.readErr != nil {
			if s.readErr == io.EOF {
				return moved, false, nil
			}
			return moved, false, s.readErr
		}
		if s.end == len(s.buf) {
			return moved, false, errTokenTooLong
		}
		n, rerr := s.r.Read(s.buf[s.end:])
		if n < 0 || n > len(s.buf)-s.end {
			s.readErr = errors.New("invalid read count")
			continue
		}
		s.end += n
		s.nread += int64(n)
		if rerr != nil {
			s.readErr = rerr
		} else if n == 0 && empty >= maxEmptyReads {
			s.readErr = io.ErrNoProgress
		}
		if n > 0 {
			return moved, true, nil
		}
	}
}

// next returns the next token, or nil at the end of input.
func (s *scanner) next() ([]byte, error) {
	// Skip blanks and comment lines.
	for {
		if s.pos == s.end {
			if _, ok, err := s.fill(s.pos); !ok {
				return nil, err
			}
		}
		c := s.buf[s.pos]
		switch {
		case c == '\n':
			s.line++
			s.bol = true
			s.pos++
		case isBlank[c]:
			s.pos++
		case c == 'c' && s.bol:
			if err := s.skipLine(); err != nil {
				return nil, err
			}
		default:
			return s.token()
		}
	}
}

// nextDigits is next for a token of at most 17 decimal digits that lies
// in the buffer, with its value: the scopes' and counts' common case,
// without next's calls and parseCount. When it is not sure of one (a
// comment, a sign, another byte, the buffer's end), it returns false
// having consumed only blanks, as next would: next then goes on.
func (s *scanner) nextDigits() (int, bool) {
	i := s.pos
	for i < s.end {
		c := s.buf[i]
		if c == '\n' {
			s.line++
			s.bol = true
		} else if !isBlank[c] {
			break
		}
		i++
	}
	s.pos = i
	n, j := 0, i
	for ; j < s.end && j-i < 17; j++ {
		c := s.buf[j]
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	if j == i || j == s.end || !isBlank[s.buf[j]] {
		return 0, false
	}
	s.pos, s.bol, s.tokLine = j, false, s.line
	return n, true
}

// skipLine skips to the next newline (not consuming it) or the end of input.
func (s *scanner) skipLine() error {
	for {
		if i := bytes.IndexByte(s.buf[s.pos:s.end], '\n'); i >= 0 {
			s.pos += i
			return nil
		}
		s.pos = s.end
		if _, ok, err := s.fill(s.pos); !ok {
			return err
		}
	}
}

// token scans the token starting at buf[pos].
func (s *scanner) token() ([]byte, error) {
	s.bol = false
	s.tokLine = s.line
	start := s.pos
	i := s.pos
	for {
		for i < s.end && !isBlank[s.buf[i]] {
			i++
		}
		if i-start > maxTokenLen {
			s.pos = i
			return s.buf[start:i], errTokenTooLong
		}
		if i < s.end {
			break
		}
		s.pos = i
		moved, ok, err := s.fill(start)
		start -= moved
		i -= moved
		if err != nil {
			return s.buf[start:i], err
		}
		if !ok {
			break
		}
	}
	s.pos = i
	return s.buf[start:i], nil
}

// skipScopes skips up to left whole scopes (a count k <= maxK, then k
// counts) that lie in the buffer as plain digits, as nextDigits would
// read their tokens, and returns how many it skipped. It stops before a
// scope it is not sure of (a comment, a sign, another byte, a count of
// over 17 digits or over maxK, the buffer's end), having consumed whole
// scopes and blanks only: nextDigits and next then go on. For the
// reader that only needs to get past the scopes (modelParser.skipScopes),
// without nextDigits' call a token.
func (s *scanner) skipScopes(left, maxK int) int {
	buf, end := s.buf[:s.end], s.end
	i, line, bol, tokLine := s.pos, s.line, s.bol, s.tokLine
	done := 0
scopes:
	for done < left {
		j, ln, k := i, line, -1
		var tl int
		for t := 0; k < 0 || t <= k; t++ {
			for j < end && isBlank[buf[j]] {
				if buf[j] == '\n' {
					ln++
				}
				j++
			}
			st, v := j, 0
			for ; j < end && j-st < 17; j++ {
				c := buf[j] - '0'
				if c > 9 {
					break
				}
				v = v*10 + int(c)
			}
			if j == st || j == end || !isBlank[buf[j]] {
				break scopes
			}
			tl = ln
			if k < 0 {
				if v > maxK {
					break scopes
				}
				k = v
			}
		}
		i, line, bol, tokLine = j, ln, false, tl
		done++
	}
	s.pos, s.line, s.bol, s.tokLine = i, line, bol, tokLine
	return done
}
