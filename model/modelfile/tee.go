package modelfile

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// LoadTee reads a model like Load and writes every byte of the file, as it
// is read, to w (a hash, for instance): when it succeeds, w has seen the
// whole file exactly once, so a caller that needs both the model and a
// digest of its file reads the file once.
func LoadTee(path string, w io.Writer) (*model.Model, error) {
	return LoadWith(context.Background(), path, Options{Tee: w})
}

// LoadEvidenceTee reads the evidence file at path for m, like
// uai.ReadEvidenceFile, and writes its bytes to w as LoadTee does.
func LoadEvidenceTee(path string, m *model.Model, w io.Writer) (model.Evidence, error) {
	return LoadEvidenceWith(context.Background(), path, m, w)
}

// LoadEvidenceWith reads the evidence file at path for m, like
// uai.ReadEvidenceFile, under ctx as LoadWith reads a model (a FIFO stops
// when ctx ends); tee, when not nil, gets every byte of the file.
func LoadEvidenceWith(ctx context.Context, path string, m *model.Model, tee io.Writer) (model.Evidence, error) {
	f, err := openCtx(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("uai: %w", err)
	}
	defer f.Close()
	t := newTeeFile(ctx, f, tee)
	ev, err := uai.ReadEvidence(t, path, m)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%s: reading stopped: %w", path, context.Cause(ctx))
	}
	if tee != nil {
		err = t.drain(err)
	}
	return ev, err
}

// teeFile reads a file (through r, which may be f itself) and writes what
// it reads to w when w is not nil. Its Len (the bytes left) lets the
// readers size their buffers as they do for an *os.File.
type teeFile struct {
	f    *os.File
	r    io.Reader
	w    io.Writer
	left int64
}

// newTeeFile reads f under ctx (newCtxReader), writing what it reads to w
// when w is not nil; its size is known when f is a regular file.
func newTeeFile(ctx context.Context, f *os.File, w io.Writer) *teeFile {
	t := &teeFile{f: f, r: newCtxReader(ctx, f), w: w, left: -1}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		t.left = fi.Size()
	}
	return t
}

func (t *teeFile) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		if t.left >= 0 {
			t.left = max(0, t.left-int64(n))
		}
		if t.w == nil {
			return n, err
		}
		if _, werr := t.w.Write(p[:n]); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// Len returns the bytes not read yet, or 0 when the size is unknown (the
// "no hint" of most readers; the UAI reader takes it for a size of 0 and
// grows its slices as the data arrives).
func (t *teeFile) Len() int { return int(max(0, t.left)) }

func (t *teeFile) close() { t.f.Close() }

// drain writes the rest of the file, which a reader may leave unread past
// the end of what it parses, to w; it returns err when that is not nil.
func (t *teeFile) drain(err error) error {
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, t); err != nil {
		return fmt.Errorf("%s: %w", t.f.Name(), err)
	}
	return nil
}
