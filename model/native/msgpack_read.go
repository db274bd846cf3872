package native

import (
	"encoding/binary"
	"fmt"
	"math"
)

// mpReader decodes msgpack from memory. It supports the types the schema
// uses (nil, booleans, integers, floats, strings, arrays, maps) and checks
// every length against the bytes left before trusting it.
type mpReader struct {
	b   []byte
	off int
	// base is the input's offset of b[0] (a value framed from a stream:
	// ReadMsgpackStream), for the messages.
	base int64
}

// mpError is a decoding error at the reader's offset.
func (r *mpReader) errorf(format string, args ...any) error {
	return fmt.Errorf(format+" (at byte %d)", append(args, r.base+int64(r.off))...)
}

func (r *mpReader) left() int { return len(r.b) - r.off }

// need checks that n more bytes are there.
func (r *mpReader) need(n int) error {
	if n < 0 || r.left() < n {
		return r.errorf("unexpected end of input")
	}
	return nil
}

func (r *mpReader) peek() (byte, error) {
	if err := r.need(1); err != nil {
		return 0, err
	}
	return r.b[r.off], nil
}

// uintN reads a big-endian unsigned integer of n bytes (1, 2, 4 or 8).
func (r *mpReader) uintN(n int) (uint64, error) {
	if err := r.need(n); err != nil {
		return 0, err
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	switch n {
	case 1:
		return uint64(p[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(p)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(p)), nil
	}
	return binary.BigEndian.Uint64(p), nil
}

// typeName names the msgpack type of code c for messages.
func typeName(c byte) string {
	switch {
	case c <= 0x7f || c >= 0xe0 || (c >= 0xcc && c <= 0xd3):
		return "an integer"
	case c <= 0x8f || c == 0xde || c == 0xdf:
		return "a map"
	case c <= 0x9f || c == 0xdc || c == 0xdd:
		return "an array"
	case c <= 0xbf || (c >= 0xd9 && c <= 0xdb):
		return "a string"
	case c == 0xc0:
		return "nil"
	case c == 0xc2 || c == 0xc3:
		return "a boolean"
	case c == 0xca || c == 0xcb:
		return "a float"
	case c >= 0xc4 && c <= 0xc6:
		return "binary data"
	case c == 0xc1:
		return "the reserved code 0xc1"
	}
	return "an extension"
}

// isNil consumes a nil if one comes next.
func (r *mpReader) isNil() bool {
	if r.off < len(r.b) && r.b[r.off] == 0xc0 {
		r.off++
		return true
	}
	return false
}

// length reads the header of a map (want "a map") or an array, and checks
// the count against the bytes left (each entry takes at least min bytes).
func (r *mpReader) length(isMap bool) (int, error) {
	c, err := r.peek()
	if err != nil {
		return 0, err
	}
	lo, w16, w32, want, min := byte(0x90), byte(0xdc), byte(0xdd), "an array", 1
	if isMap {
		lo, w16, w32, want, min = 0x80, 0xde, 0xdf, "a map", 2
	}
	var n uint64
	switch {
	case c >= lo && c <= lo+0x0f:
		r.off++
		n = uint64(c - lo)
	case c == w16:
		r.off++
		n, err = r.uintN(2)
	case c == w32:
		r.off++
		n, err = r.uintN(4)
	default:
		return 0, r.errorf("want %s, found %s", want, typeName(c))
	}
	if err != nil {
		return 0, err
	}
	if n > uint64(r.left()/min) {
		return 0, r.errorf("%s of %d entries does not fit in the %d bytes left", want, n, r.left())
	}
	return int(n), nil
}

// str reads a string, returning a view into the input.
func (r *mpReader) str() ([]byte, error) {
	c, err := r.peek()
	if err != nil {
		return nil, err
	}
	var n uint64
	switch {
	case c >= 0xa0 && c <= 0xbf:
		r.off++
		n = uint64(c - 0xa0)
	case c == 0xd9:
		r.off++
		n, err = r.uintN(1)
	case c == 0xda:
		r.off++
		n, err = r.uintN(2)
	case c == 0xdb:
		r.off++
		n, err = r.uintN(4)
	default:
		return nil, r.errorf("want a string, found %s", typeName(c))
	}
	if err != nil {
		return nil, err
	}
	if n > uint64(r.left()) {
		return nil, r.errorf("string of %d bytes does not fit in the %d bytes left", n, r.left())
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s, nil
}

// integer reads an integer that fits in an int64.
func (r *mpReader) integer() (int64, error) {
	c, err := r.peek()
	if err != nil {
		return 0, err
	}
	if c <= 0x7f {
		r.off++
		return int64(c), nil
	}
	if c >= 0xe0 {
		r.off++
		return int64(int8(c)), nil
	}
	var u uint64
	switch c {
	case 0xcc, 0xcd, 0xce, 0xcf: // uint 8..64
		r.off++
		u, err = r.uintN(1 << (c - 0xcc))
		if err == nil && u > math.MaxInt64 {
			return 0, r.errorf("integer %d is too large", u)
		}
		return int64(u), err
	case 0xd0: // int 8..64
		r.off++
		u, err = r.uintN(1)
		return int64(int8(u)), err
	case 0xd1:
		r.off++
		u, err = r.uintN(2)
		return int64(int16(u)), err
	case 0xd2:
		r.off++
		u, err = r.uintN(4)
		return int64(int32(u)), err
	case 0xd3:
		r.off++
		u, err = r.uintN(8)
		return int64(u), err
	}
	return 0, r.errorf("want an integer, found %s", typeName(c))
}

// intValue reads an integer that fits in an int.
func (r *mpReader) intValue() (int, error) {
	v, err := r.integer()
	if err == nil && int64(int(v)) != v {
		return 0, r.errorf("integer %d is too large", v)
	}
	return int(v), err
}

// float reads a number: a float, an integer, or a string naming an infinity
// (as in JSON). Other strings and nil decode to badNumber, to be reported
// with their place by the build step.
func (r *mpReader) float() (float64, error) {
	c, err := r.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case c == 0xcb:
		if err := r.need(9); err != nil {
			return 0, err
		}
		v := float64frombits(r.b[r.off+1 : r.off+9])
		r.off += 9
		return v, nil
	case c == 0xca:
		r.off++
		u, err := r.uintN(4)
		return float64(math.Float32frombits(uint32(u))), err
	case c == 0xc0:
		r.off++
		return badNumber, nil
	case c <= 0x7f || c >= 0xe0 || (c >= 0xcc && c <= 0xd3):
		if c == 0xcf { // uint64: may exceed int64
			r.off++
			u, err := r.uintN(8)
			return float64(u), err
		}
		v, err := r.integer()
		return float64(v), err
	case (c >= 0xa0 && c <= 0xbf) || (c >= 0xd9 && c <= 0xdb):
		s, err := r.str()
		if err != nil {
			return 0, err
		}
		return parseInfName(s), nil
	}
	return 0, r.errorf("want a number, found %s", typeName(c))
}

func (r *mpReader) boolean() (bool, error) {
	c, err := r.peek()
	if err != nil {
		return false, err
	}
	if c == 0xc2 || c == 0xc3 {
		r.off++
		return c == 0xc3, nil
	}
	return false, r.errorf("want a boolean, found %s", typeName(c))
}
