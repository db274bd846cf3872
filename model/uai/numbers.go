package uai

import (
	"bytes"
	"math"
	"strconv"
)

// parseCount parses a non-negative decimal integer (an optional '+', then
// digits). On failure it returns a description of the problem with tok.
func parseCount(tok []byte) (int, string) {
	d := tok
	if len(d) > 0 && d[0] == '+' {
		d = d[1:]
	}
	if len(d) == 0 {
		return 0, quote(tok) + " is not an integer"
	}
	n := 0
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, countProblem(tok)
		}
		n = n*10 + int(c-'0')
		if n > 1e17 {
			return 0, quote(tok) + " is too large"
		}
	}
	return n, ""
}

// countProblem explains why tok is not a count.
func countProblem(tok []byte) string {
	if !isDecimal(tok) {
		return quote(tok) + " is not an integer"
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err == nil && v < 0 {
		return quote(tok) + " is negative"
	}
	return quote(tok) + " is not an integer"
}

// isDecimal reports whether tok uses only the characters of a decimal
// floating-point number; it rejects hex floats and digit separators.
func isDecimal(tok []byte) bool {
	if len(tok) == 0 {
		return false
	}
	for _, c := range tok {
		if (c < '0' || c > '9') && c != '.' && c != '-' && c != '+' && c != 'e' && c != 'E' {
			return false
		}
	}
	return true
}

// special returns the value of an infinity or NaN spelled out (inf,
// +Infinity, nan, ...), and whether tok is one.
func special(tok []byte) (float64, bool) {
	t := tok
	sign := 1.0
	if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
		if t[0] == '-' {
			sign = -1
		}
		t = t[1:]
	}
	switch {
	case bytes.EqualFold(t, []byte("inf")), bytes.EqualFold(t, []byte("infinity")):
		return math.Inf(int(sign)), true
	case bytes.EqualFold(t, []byte("nan")):
		return math.NaN(), true
	}
	return 0, false
}

// parseNumber parses a decimal floating-point token, or an infinity or NaN
// spelled out. ok is false when tok is not a number; rangeErr is true when
// the magnitude overflows float64 (v is then ±Inf).
func parseNumber(tok []byte) (v float64, ok, rangeErr bool) {
	if !isDecimal(tok) {
		v, ok = special(tok)
		return v, ok, false
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
			return v, true, true
		}
		return 0, false, false
	}
	return v, true, false
}

// maxDecimalExp bounds the decimal exponent of potentials read beyond
// float64's range: 1e-10000 is accepted (log-potential about -23026), smaller
// ones are out of range.
const maxDecimalExp = 10000

// ln10 is the natural logarithm of 10.
const ln10 = math.Ln10

// logOfDecimal returns the natural log of a positive decimal token whose value
// float64 cannot hold accurately (overflow, underflow, subnormal), computed
// from its mantissa and decimal exponent. ok is false if tok has no exponent
// part or the value is not positive.
func logOfDecimal(tok []byte) (float64, bool) {
	i := bytes.IndexAny(tok, "eE")
	if i <= 0 {
		return 0, false
	}
	mant, err := strconv.ParseFloat(string(tok[:i]), 64)
	if err != nil || !(mant > 0) || math.IsInf(mant, 0) {
		return 0, false
	}
	exp, err := strconv.Atoi(string(tok[i+1:]))
	if err != nil || exp < -maxDecimalExp || exp > maxDecimalExp {
		return 0, false
	}
	return math.Log(mant) + float64(exp)*ln10, true
}

// hasNonzeroMantissa reports whether a decimal token has a non-zero digit
// before its exponent (so that a zero value is an underflow).
func hasNonzeroMantissa(tok []byte) bool {
	for _, c := range tok {
		if c == 'e' || c == 'E' {
			return false
		}
		if c >= '1' && c <= '9' {
			return true
		}
	}
	return false
}

// minNormal is the smallest positive normal float64.
const minNormal = 0x1p-1022

// entryToLog converts a table entry token to a log-potential under base. On
// failure it returns a description of the problem.
func entryToLog(tok []byte, base LogBase) (float64, string) {
	v, ok, rangeErr := parseNumber(tok)
	if !ok {
		return 0, quote(tok) + " is not a number"
	}
	if math.IsNaN(v) {
		return 0, quote(tok) + " is not a number (NaN)"
	}
	switch base {
	case Potentials:
		if v < 0 {
			return 0, "negative potential " + string(tok)
		}
		if rangeErr || v < minNormal && v > 0 || v == 0 && hasNonzeroMantissa(tok) {
			// Out of float64's accurate range: take the log from the text.
			if l, ok := logOfDecimal(tok); ok {
				return l, ""
			}
			if rangeErr {
				return 0, "potential " + quote(tok) + " is out of range"
			}
		}
		if math.IsInf(v, 1) {
			return 0, "infinite potential " + quote(tok)
		}
		if v == 0 {
			return math.Inf(-1), ""
		}
		return math.Log(v), ""
	case Log10, Ln:
		if rangeErr {
			return 0, "log-potential " + quote(tok) + " is out of range"
		}
		if math.IsInf(v, 1) {
			return 0, "infinite log-potential " + quote(tok)
		}
		if base == Log10 {
			v *= ln10
			if math.IsInf(v, 1) {
				return 0, "log-potential " + quote(tok) + " is out of range"
			}
		}
		return v, ""
	}
	return 0, "unknown log base " + base.String()
}

// memoLen bounds the tokens entryMemo keeps.
const memoLen = 32

// entryMemo is entryToLog with the last two distinct valid tokens and
// their values kept: a table of a Potts factor written as potentials
// repeats two tokens (the weight's and 1, 14 of its 16 entries on 4
// labels), whose parsing and logarithm are most of the reading. The values
// are entryToLog's (a function of the token's bytes and the base).
type entryMemo struct {
	tok  [2][memoLen]byte
	n    [2]int // 0: empty (a token is never empty)
	v    [2]float64
	last int // the slot hit or filled last
}

// toLog is entryToLog(tok, base).
func (m *entryMemo) toLog(tok []byte, base LogBase) (float64, string) {
	for k := range m.n {
		if m.n[k] == len(tok) && string(m.tok[k][:len(tok)]) == string(tok) {
			m.last = k
			return m.v[k], ""
		}
	}
	v, problem := entryToLog(tok, base)
	if problem == "" && len(tok) <= memoLen {
		k := 1 - m.last
		m.n[k] = copy(m.tok[k][:], tok)
		m.v[k], m.last = v, k
	}
	return v, problem
}
