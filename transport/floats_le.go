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

func floatBytes(f []float64) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 8*len(f))
}

func int32Bytes(s []int32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 4*len(s))
}

func writeFloats(w io.Writer, f []float64) error {
	if len(f) == 0 {
		return nil
	}
	_, err := w.Write(floatBytes(f))
	return err
}

func writeInt32s(w io.Writer, s []int32) error {
	if len(s) == 0 {
		return nil
	}
	_, err := w.Write(int32Bytes(s))
	return err
}

// readFloats reads n values into dst's array if it is large enough, else
// into a new one. The caller has checked n against the bytes left when the
// input can tell; otherwise it reads in allocStep pieces so that a lying
// length costs at most one piece beyond the real input.
func readFloats(dec *msgpack.Decoder, n int, dst []float64) ([]float64, error) {
	var out []float64
	switch _, ok := dec.Buffered().(interface{ Len() int }); {
	case dst != nil && cap(dst) >= n:
		out = dst[:n]
	case !ok && 8*n > allocStep:
		return readFloatsPortable(dec, n, dst)
	default:
		out = make([]float64, n)
	}
	if err := dec.ReadFull(floatBytes(out)); err != nil {
		return nil, unexpectedEOF(err)
	}
	return out, nil
}

func readInt32s(dec *msgpack.Decoder, n int, dst []int32) ([]int32, error) {
	var out []int32
	switch _, ok := dec.Buffered().(interface{ Len() int }); {
	case dst != nil && cap(dst) >= n:
		out = dst[:n]
	case !ok && 4*n > allocStep:
		return readInt32sPortable(dec, n, dst)
	default:
		out = make([]int32, n)
	}
	if err := dec.ReadFull(int32Bytes(out)); err != nil {
		return nil, unexpectedEOF(err)
	}
	return out, nil
}
