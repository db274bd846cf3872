package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// appendBuf is the io.Writer (and io.ByteWriter) the encoders write into: a
// growing byte slice whose tail the portable float paths fill directly.
type appendBuf struct{ b []byte }

func (a *appendBuf) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

func (a *appendBuf) WriteByte(c byte) error {
	a.b = append(a.b, c)
	return nil
}

// grow extends the buffer by n bytes and returns them for the caller to fill.
func (a *appendBuf) grow(n int) []byte {
	a.b = slices.Grow(a.b, n)
	m := len(a.b)
	a.b = a.b[:m+n]
	return a.b[m:]
}

// maxDepth is how deeply msgpack containers may nest in a message body.
// The bodies of this package nest two or three levels; the bound keeps the
// (recursive) msgpack decoder's stack small whatever arrives.
const maxDepth = 32

var errTruncated = errors.New("truncated msgpack value")

// checkMsgpack reports whether b holds exactly one well-formed msgpack value
// nested at most maxDepth containers deep. It allocates nothing for shallow
// values and runs in time linear in the number of items, never in the size
// of bin or str payloads, which it skips.
func checkMsgpack(b []byte) error {
	var stackArr [8]uint64
	stack := stackArr[:0]
	pending := uint64(1) // values still to read at the current level
	i := 0
	for {
		for pending == 0 {
			if len(stack) == 0 {
				if i != len(b) {
					return fmt.Errorf("%d trailing bytes after the msgpack value", len(b)-i)
				}
				return nil
			}
			pending = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
		if i >= len(b) {
			return errTruncated
		}
		c := b[i]
		i++
		pending--

		var skip, items uint64
		container := false
		lenBytes := 0 // width of a length field that follows c
		mult := uint64(1)
		extra := uint64(0)
		switch {
		case c <= 0x7f || c >= 0xe0: // positive and negative fixint
		case c <= 0x8f: // fixmap
			items, container = 2*uint64(c&0x0f), true
		case c <= 0x9f: // fixarray
			items, container = uint64(c&0x0f), true
		case c <= 0xbf: // fixstr
			skip = uint64(c & 0x1f)
		default:
			switch c {
			case 0xc0, 0xc2, 0xc3: // nil, false, true
			case 0xc1:
				return fmt.Errorf("reserved msgpack code 0xc1 at byte %d", i-1)
			case 0xc4, 0xd9: // bin8, str8
				lenBytes = 1
			case 0xc5, 0xda: // bin16, str16
				lenBytes = 2
			case 0xc6, 0xdb: // bin32, str32
				lenBytes = 4
			case 0xc7: // ext8
				lenBytes, extra = 1, 1
			case 0xc8: // ext16
				lenBytes, extra = 2, 1
			case 0xc9: // ext32
				lenBytes, extra = 4, 1
			case 0xca: // float32
				skip = 4
			case 0xcb: // float64
				skip = 8
			case 0xcc, 0xd0: // uint8, int8
				skip = 1
			case 0xcd, 0xd1:
				skip = 2
			case 0xce, 0xd2:
				skip = 4
			case 0xcf, 0xd3:
				skip = 8
			case 0xd4: // fixext1..16: type byte + data
				skip = 2
			case 0xd5:
				skip = 3
			case 0xd6:
				skip = 5
			case 0xd7:
				skip = 9
			case 0xd8:
				skip = 17
			case 0xdc: // array16
				lenBytes, container = 2, true
			case 0xdd: // array32
				lenBytes, container = 4, true
			case 0xde: // map16
				lenBytes, container, mult = 2, true, 2
			case 0xdf: // map32
				lenBytes, container, mult = 4, true, 2
			}
		}
		if lenBytes > 0 {
			if len(b)-i < lenBytes {
				return errTruncated
			}
			var n uint64
			switch lenBytes {
			case 1:
				n = uint64(b[i])
			case 2:
				n = uint64(binary.BigEndian.Uint16(b[i:]))
			case 4:
				n = uint64(binary.BigEndian.Uint32(b[i:]))
			}
			i += lenBytes
			if container {
				items = n * mult
			} else {
				skip = n + extra
			}
		}
		if skip > uint64(len(b)-i) {
			return errTruncated
		}
		i += int(skip)
		if container && items > 0 {
			if items > uint64(len(b)-i) { // every value takes at least a byte
				return errTruncated
			}
			if len(stack) >= maxDepth {
				return fmt.Errorf("msgpack containers nested deeper than %d", maxDepth)
			}
			stack = append(stack, pending)
			pending = items
		}
	}
}
