package modelfile

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ddrun/ddrun/model"
	"github.com/ulikunitz/xz"
)

// isXZ reports whether path names an xz-compressed file (.uai.xz, .LG.xz,
// .json.xz, ...).
func isXZ(path string) bool { return strings.HasSuffix(strings.ToLower(path), ".xz") }

// xzBytesPerEntry bounds the decompressed bytes per entry that the
// MaxEntries limit allows, as native.ReadWith bounds gzip: a generous bound
// for a decimal number and its separators, so that an xz bomb stops early.
const xzBytesPerEntry = 64

// xzBytes is the most bytes an xz input may decompress to for a reader
// of the whole model with the entry limit maxEntries: 1 MiB plus
// 2*xzBytesPerEntry bytes per entry it allows.
func xzBytes(maxEntries int) int64 {
	return int64(1<<20) + 2*xzBytesPerEntry*int64(model.EntryLimit(maxEntries))
}

// xzUnbounded is newXZReader's maxBytes for a streaming reader, which
// bounds each piece it holds instead of the input.
const xzUnbounded = math.MaxInt64

// newXZReader decompresses r as it is read; more than maxBytes bytes is an
// error (unless xzUnbounded).
func newXZReader(r io.Reader, path string, maxBytes int64) (io.Reader, error) {
	zr, err := xz.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%s:1: reading xz header: %w", path, err)
	}
	if maxBytes == xzUnbounded {
		return zr, nil
	}
	return &boundedReader{r: zr, left: maxBytes, path: path}, nil
}

// boundedReader fails once more than left bytes have been read.
type boundedReader struct {
	r    io.Reader
	left int64
	path string
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%s: xz: decompresses to more bytes than the entry limit allows", b.path)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("%s: xz: decompresses to more bytes than the entry limit allows", b.path)
	}
	return n, err
}
