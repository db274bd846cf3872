//go:build !((386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) && !purego)

package transport

import (
	"io"

	"github.com/vmihailenco/msgpack/v5"
)

// This file is built on big-endian architectures and with the build tag
// purego: every value goes through math.Float64bits and encoding/binary.

// fastPath reports whether the unsafe little-endian copies are in use.
const fastPath = false

func writeFloats(w io.Writer, f []float64) error { return writeFloatsPortable(w, f) }

func writeInt32s(w io.Writer, s []int32) error { return writeInt32sPortable(w, s) }

func readFloats(dec *msgpack.Decoder, n int, dst []float64) ([]float64, error) {
	return readFloatsPortable(dec, n, dst)
}

func readInt32s(dec *msgpack.Decoder, n int, dst []int32) ([]int32, error) {
	return readInt32sPortable(dec, n, dst)
}
