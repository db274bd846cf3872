package transport

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Floats is a []float64 that travels as one msgpack bin field holding the
// values as raw little-endian IEEE 754 bytes (8 per value). Every bit pattern
// survives, NaN payloads and signed zeros included. A nil Floats encodes as
// msgpack nil and decodes back to nil; an empty non-nil one encodes as an
// empty bin and decodes to an empty non-nil slice.
//
// On little-endian architectures (see floats_le.go) the bytes are copied
// straight from and into the slice's memory through unsafe.Slice; elsewhere,
// or with the build tag purego, a portable loop over math.Float64bits is
// used. Both produce identical bytes.
type Floats []float64

// Int32s is a []int32 that travels as one msgpack bin field of raw
// little-endian bytes (4 per value), with the same nil/empty rules as Floats.
type Int32s []int32

var (
	_ msgpack.CustomEncoder = Floats(nil)
	_ msgpack.CustomDecoder = (*Floats)(nil)
	_ msgpack.CustomEncoder = Int32s(nil)
	_ msgpack.CustomDecoder = (*Int32s)(nil)
)

// EncodeMsgpack implements msgpack.CustomEncoder.
func (f Floats) EncodeMsgpack(enc *msgpack.Encoder) error {
	return encodeVec(enc, f, 8, "Floats", writeFloats)
}

// DecodeMsgpack implements msgpack.CustomDecoder. The bin length must be a
// multiple of 8; anything but nil or bin is an error. Like msgpack's own
// slice decoding, it reuses *f's backing array when it is large enough, so
// decoding into a reused message allocates nothing; after an error the
// reused array's contents are unspecified.
func (f *Floats) DecodeMsgpack(dec *msgpack.Decoder) error {
	return decodeVec(dec, (*[]float64)(f), 8, "Floats", readFloats)
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (s Int32s) EncodeMsgpack(enc *msgpack.Encoder) error {
	return encodeVec(enc, s, 4, "Int32s", writeInt32s)
}

// DecodeMsgpack implements msgpack.CustomDecoder. The bin length must be a
// multiple of 4; anything but nil or bin is an error. It reuses *s's
// backing array when it is large enough.
func (s *Int32s) DecodeMsgpack(dec *msgpack.Decoder) error {
	return decodeVec(dec, (*[]int32)(s), 4, "Int32s", readInt32s)
}

// encodeVec writes s, width bytes a value, as one bin (nil as nil) with
// write; name is the type's, for the error.
func encodeVec[T any](enc *msgpack.Encoder, s []T, width int, name string, write func(io.Writer, []T) error) error {
	if s == nil {
		return enc.EncodeNil()
	}
	n := len(s)
	if uint64(n) > math.MaxUint32/uint64(width) {
		return fmt.Errorf("transport: %d %s exceed the 4 GiB msgpack bin limit", n, strings.ToLower(name))
	}
	if err := enc.EncodeBytesLen(width * n); err != nil {
		return err
	}
	return write(enc.Writer(), s)
}

// decodeVec reads a nil or a bin of width-byte values into *dst with read,
// which reuses *dst's array when it is large enough.
func decodeVec[T any](dec *msgpack.Decoder, dst *[]T, width int, name string, read func(*msgpack.Decoder, int, []T) ([]T, error)) error {
	n, err := decodeBinLen(dec, width, name)
	if err != nil {
		return err
	}
	if n < 0 {
		*dst = nil
		return nil
	}
	v, err := read(dec, n/width, *dst)
	if err != nil {
		return fmt.Errorf("transport: decoding %s: %w", name, err)
	}
	*dst = v
	return nil
}

// decodeBinLen reads a nil (-1) or a bin header whose length is a multiple of
// width and not longer than the bytes left in the decoder's input, when the
// input can tell (it can for everything this package decodes).
func decodeBinLen(dec *msgpack.Decoder, width int, what string) (int, error) {
	c, err := dec.PeekCode()
	if err != nil {
		return 0, fmt.Errorf("transport: decoding %s: %w", what, err)
	}
	switch c {
	case msgpcode.Nil, msgpcode.Bin8, msgpcode.Bin16, msgpcode.Bin32:
	default:
		return 0, fmt.Errorf("transport: decoding %s: want bin or nil, got msgpack code 0x%02x", what, c)
	}
	n, err := dec.DecodeBytesLen()
	if err != nil {
		return 0, fmt.Errorf("transport: decoding %s: %w", what, err)
	}
	if n < 0 {
		return -1, nil
	}
	if n%width != 0 {
		return 0, fmt.Errorf("transport: decoding %s: bin of %d bytes is not a multiple of %d", what, n, width)
	}
	if l, ok := dec.Buffered().(interface{ Len() int }); ok && n > l.Len() {
		return 0, fmt.Errorf("transport: decoding %s: bin of %d bytes but only %d left: %w", what, n, l.Len(), io.ErrUnexpectedEOF)
	}
	return n, nil
}

// scratchBytes is the size of the stack buffer the portable paths convert
// through when they cannot write into the destination directly.
const scratchBytes = 8 << 10

// allocStep bounds how much a decoder allocates ahead of the bytes it has
// actually read when the input cannot tell its length.
const allocStep = 1 << 20

// putFloats writes len(src)*8 little-endian bytes into dst (portable path).
func putFloats(dst []byte, src []float64) {
	_ = dst[:8*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint64(dst[8*i:], math.Float64bits(v))
	}
}

// getFloats fills dst from len(dst)*8 little-endian bytes (portable path).
func getFloats(dst []float64, src []byte) {
	_ = src[:8*len(dst)]
	for i := range dst {
		dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
	}
}

func putInt32s(dst []byte, src []int32) {
	_ = dst[:4*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], uint32(v))
	}
}

func getInt32s(dst []int32, src []byte) {
	_ = src[:4*len(dst)]
	for i := range dst {
		dst[i] = int32(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// writeFloatsPortable writes f through w without unsafe: straight into the
// tail of an appendBuf, else through a stack buffer.
func writeFloatsPortable(w io.Writer, f []float64) error { return writePortable(w, f, 8, putFloats) }

func writeInt32sPortable(w io.Writer, s []int32) error { return writePortable(w, s, 4, putInt32s) }

// writePortable is writeFloatsPortable and writeInt32sPortable: put
// encodes values of size bytes each.
func writePortable[T float64 | int32](w io.Writer, s []T, size int, put func([]byte, []T)) error {
	if ab, ok := w.(*appendBuf); ok {
		put(ab.grow(size*len(s)), s)
		return nil
	}
	var buf [scratchBytes]byte
	for len(s) > 0 {
		k := min(len(s), scratchBytes/size)
		put(buf[:], s[:k])
		if _, err := w.Write(buf[:size*k]); err != nil {
			return err
		}
		s = s[k:]
	}
	return nil
}

// readFloatsPortable reads n values through a stack buffer into dst's
// array if it is large enough, else into a new one grown at most allocStep
// bytes ahead of what was read.
func readFloatsPortable(dec *msgpack.Decoder, n int, dst []float64) ([]float64, error) {
	return readPortable(dec, n, dst, 8, getFloats)
}

func readInt32sPortable(dec *msgpack.Decoder, n int, dst []int32) ([]int32, error) {
	return readPortable(dec, n, dst, 4, getInt32s)
}

// readPortable is readFloatsPortable and readInt32sPortable: get decodes
// values of size bytes each.
func readPortable[T float64 | int32](dec *msgpack.Decoder, n int, dst []T, size int, get func([]T, []byte)) ([]T, error) {
	out := dst[:0]
	if dst == nil || cap(dst) < n {
		out = make([]T, 0, min(n, allocStep/size))
	}
	var buf [scratchBytes]byte
	for len(out) < n {
		k := min(n-len(out), scratchBytes/size)
		if err := dec.ReadFull(buf[:size*k]); err != nil {
			return nil, unexpectedEOF(err)
		}
		if len(out)+k > cap(out) {
			out = growCap(out, min(n, 2*cap(out)+k))
		}
		m := len(out)
		out = out[:m+k]
		get(out[m:], buf[:size*k])
	}
	return out, nil
}

func growCap[T any](s []T, c int) []T {
	t := make([]T, len(s), c)
	copy(t, s)
	return t
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
