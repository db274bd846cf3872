package service

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// errTooBig is copyModel's error for a model that decompresses beyond its
// bound.
func errTooBig(max int64) error {
	return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("model: decompresses to more than %d bytes (--max-model)", max)}
}

// copyModel copies an uploaded model from body to w as it is and returns
// the bytes copied. A gzip upload (recognised by its magic bytes, whatever
// its format) is decompressed on the way, into nothing but a count, and
// the copy fails (HTTP 413) as soon as the decompressed bytes pass
// maxModel: what the model's reader will decompress is bounded before it
// runs, in constant memory. Plain uploads are bounded by the upload limit
// (http.MaxBytesReader) alone, as their bytes are the model's.
func copyModel(w io.Writer, body io.Reader, maxModel int64) (int64, error) {
	br := bufio.NewReader(body)
	cw := &countWriter{w: w}
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		// Every byte the decompressor reads is written to w first.
		zr, err := gzip.NewReader(io.TeeReader(br, cw))
		if err != nil {
			return cw.n, Invalid(fmt.Errorf("model: reading gzip header: %w", err))
		}
		n, err := io.Copy(io.Discard, io.LimitReader(zr, maxModel+1))
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb):
			return cw.n, err
		case err != nil:
			return cw.n, Invalid(fmt.Errorf("model: gzip: %w", err))
		case n > maxModel:
			return cw.n, errTooBig(maxModel)
		}
	}
	_, err := io.Copy(cw, br) // the rest: a plain upload, or what follows the gzip stream
	return cw.n, err
}

// countWriter counts what it passes on.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
