//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) && !purego

package transport

import (
	"io"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
)

// This file is built only for little-endian architectures, where the memory
// of a []float64 or []int32 already is the wire format: encoding is one
// write of the slice's bytes and decoding one read into a fresh slice. The
// build tag purego selects the portable loops instead.

// fastPath reports whether the unsafe little-endian copies are in use.
const fastPath = true

// rawBytes is the memory of s, which on these architectures already is
// the wire format.
func rawBytes[T float64 | int32](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

func writeFloats(w io.Writer, f []float64) error { return writeRaw(w, f) }

func writeInt32s(w io.Writer, s []int32) error { return writeRaw(w, s) }

func writeRaw[T float64 | int32](w io.Writer, s []T) error {
	if len(s) == 0 {
		return nil
	}
	_, err := w.Write(rawBytes(s))
	return err
}

// readFloats reads n values into dst's array if it is large enough, else
// into a new one. The caller has checked n against the bytes left when the
// input can tell; otherwise it reads in allocStep pieces so that a lying
// length costs at most one piece beyond the real input.
func readFloats(dec *msgpack.Decoder, n int, dst []float64) ([]float64, error) {
	return readRaw(dec, n, dst, readFloatsPortable)
}

func readInt32s(dec *msgpack.Decoder, n int, dst []int32) ([]int32, error) {
	return readRaw(dec, n, dst, readInt32sPortable)
}

// readRaw is readFloats and readInt32s: one read into the values' memory,
// or the portable loop (allocating in allocStep pieces) when the input
// cannot tell how many bytes it has left.
func readRaw[T float64 | int32](dec *msgpack.Decoder, n int, dst []T, portable func(*msgpack.Decoder, int, []T) ([]T, error)) ([]T, error) {
	var out []T
	switch _, ok := dec.Buffered().(interface{ Len() int }); {
	case dst != nil && cap(dst) >= n:
		out = dst[:n]
	case !ok && n*int(unsafe.Sizeof(*new(T))) > allocStep:
		return portable(dec, n, dst)
	default:
		out = make([]T, n)
	}
	if err := dec.ReadFull(rawBytes(out)); err != nil {
		return nil, unexpectedEOF(err)
	}
	return out, nil
}
