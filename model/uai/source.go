package uai

import (
	"bufio"
	"compress/gzip"
	"context"
	"io"
	"os"
	"strconv"

	"github.com/ddrun/ddrun/model"
)

// source is an opened input: a token scanner over the (decompressed) bytes,
// and what is known of the input's size.
type source struct {
	name string
	s    *scanner
	size int64 // bytes of (uncompressed) input, -1 when unknown
	gz   *gzip.Reader
}

// openSource wraps r, transparently decompressing gzip input, which it
// recognises by its magic bytes whatever the name. Once ctx (if not nil)
// ends, reads fail with its cause.
func openSource(r io.Reader, name string, ctx context.Context) (*source, error) {
	src := &source{name: name, size: sizeOf(r)}
	br := bufio.NewReaderSize(r, scanBufSize)
	zr, err := gunzipIfMagic(br, name)
	if err != nil {
		return nil, err
	}
	var in io.Reader = br
	if zr != nil {
		src.gz, src.size, in = zr, -1, zr
	}
	src.s = newScanner(model.ContextReader(ctx, in))
	return src, nil
}

// gunzipIfMagic returns a gzip reader of br's bytes when they start with
// gzip's magic bytes (whatever the name), else nil; a bad gzip header is
// a *ParseError naming name, line 1. A short or failed peek is left for
// the caller's reads to see again.
func gunzipIfMagic(br *bufio.Reader, name string) (*gzip.Reader, error) {
	if magic, _ := br.Peek(2); len(magic) != 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return nil, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, &ParseError{Name: name, Line: 1, Msg: "reading gzip header", Err: err}
	}
	return zr, nil
}

// OpenText is the decoding side of the other text formats' readers
// (model/wcsp's, model/cfn's; OpenRead opens their files): a buffered reader of r's bytes,
// gunzipped when they start with gzip's magic bytes (whatever the name),
// that fails with context.Cause(ctx) once ctx (if not nil) ends, checked
// before every read of the input and of the decompressed bytes. done
// releases the decompressor. A bad gzip header is a *ParseError naming
// name, line 1.
func OpenText(ctx context.Context, r io.Reader, name string) (br *bufio.Reader, done func(), err error) {
	br = bufio.NewReaderSize(model.ContextReader(ctx, r), 64<<10)
	zr, err := gunzipIfMagic(br, name)
	if err != nil {
		return nil, nil, err
	}
	if zr == nil {
		return br, func() {}, nil
	}
	return bufio.NewReaderSize(model.ContextReader(ctx, zr), 64<<10), func() { zr.Close() }, nil
}

// close releases the decompressor, if any.
func (src *source) close() {
	if src.gz != nil {
		src.gz.Close()
	}
}

// remaining returns an upper bound on the input bytes not yet consumed, or
// -1 when the input's size is unknown.
func (src *source) remaining() int64 {
	if src.size < 0 {
		return -1
	}
	r := src.size - src.s.consumed()
	if r < 0 {
		r = 0
	}
	return r
}

// defaultCap bounds pre-allocation when the input's size is unknown; slices
// grow as data actually arrives.
const defaultCap = 1 << 16

// capFor returns a safe pre-allocation capacity for n items when each item
// takes at least minBytes bytes of the remaining input.
func (src *source) capFor(n int, minBytes int64) int {
	if n <= 0 {
		return 0
	}
	limit := int64(defaultCap)
	if rem := src.remaining(); rem >= 0 {
		limit = rem/minBytes + 1
	}
	if int64(n) < limit {
		return n
	}
	return int(limit)
}

// sizeOf returns the number of bytes r will deliver, or -1 when unknown.
func sizeOf(r io.Reader) int64 {
	switch v := r.(type) {
	case interface{ Len() int }: // bytes.Reader, bytes.Buffer, strings.Reader, a modelfile tee
		return int64(v.Len())
	case *os.File:
		fi, err := v.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		off, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return -1
		}
		if n := fi.Size() - off; n >= 0 {
			return n
		}
	}
	return -1
}

// errorf returns a ParseError at line.
func (src *source) errorf(line int, msg string) error {
	return &ParseError{Name: src.name, Line: line, Msg: msg}
}

// next returns the next token and its line, or nil at end of input; read
// errors and over-long tokens become ParseErrors.
func (src *source) next() ([]byte, int, error) {
	tok, err := src.s.next()
	if err != nil {
		if err == errTokenTooLong {
			return nil, src.s.tokLine, src.errorf(src.s.tokLine, "token "+quote(tok)+" is longer than "+strconv.Itoa(maxTokenLen)+" bytes")
		}
		return nil, src.s.line, &ParseError{Name: src.name, Line: src.s.line, Msg: "read error", Err: err}
	}
	return tok, src.s.tokLine, nil
}
