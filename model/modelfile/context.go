package modelfile

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/cfn"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/native"
	"github.com/ddrun/ddrun/model/uai"
	"github.com/ddrun/ddrun/model/wcsp"
)

// Options say how LoadWith reads a model.
type Options struct {
	// MaxEntries bounds the model's total table entries and, on its own,
	// its total states (0: model.DefaultMaxEntries); see uai.ReadOptions
	// and native.ReadOptions.
	MaxEntries int
	// Tee, when not nil, gets every byte of the file as it is read (see
	// LoadTee).
	Tee io.Writer
	// FoldUnary reads a UAI file's tables over fewer than two variables
	// into the unaries and the constant instead of keeping them as
	// factors (uai.ReadOptions.FoldUnary), and Folded, when not nil, gets
	// how many it folded. Other formats ignore it (the native and indexed
	// formats hold unaries as unaries).
	FoldUnary bool
	Folded    *int
	// Cost, when not nil, gets the function that turns a score into the
	// file's own objective where the file has one (a .wcsp file's cost:
	// wcsp.Cost; a .cfn file's, in its units and direction: the header's
	// Cost), and nil otherwise.
	Cost *func(score float64) float64
}

// LoadWith reads a model like Load, with options, under ctx: when ctx ends
// (a signal, a deadline) while the file is opened or read, reading stops
// promptly, also when the file is a FIFO that no writer feeds, and the
// error wraps context.Cause(ctx).
func LoadWith(ctx context.Context, path string, o Options) (*model.Model, error) {
	format := FormatOf(path)
	var nf native.Format
	switch format {
	case UAI, WCSP, CFN:
	case Indexed:
		return loadIndexed(ctx, path, o)
	case Native:
		var err error
		if nf, err = native.FormatOf(strings.TrimSuffix(strings.ToLower(path), ".xz")); err != nil {
			return nil, err
		}
	default:
		return Load(path) // the unknown format's error
	}
	f, err := openCtx(ctx, path)
	if err != nil {
		if format == UAI {
			return nil, fmt.Errorf("uai: %w", err)
		}
		return nil, err
	}
	defer f.Close()
	t := newTeeFile(ctx, f, o.Tee)
	var in io.Reader = t
	if isXZ(path) {
		if in, err = newXZReader(t, path, xzBytes(o.MaxEntries)); err != nil {
			return nil, err
		}
	}
	var m *model.Model
	if format == UAI {
		opts := uai.OptionsFor(strings.TrimSuffix(strings.ToLower(path), ".xz"))
		opts.MaxEntries, opts.Context = o.MaxEntries, ctx
		opts.FoldUnary, opts.Folded = o.FoldUnary, o.Folded
		m, err = uai.ReadWith(in, path, opts)
	} else if format == WCSP {
		m, err = wcsp.Read(in, path, wcsp.ReadOptions{MaxEntries: o.MaxEntries, Context: ctx})
		if o.Cost != nil {
			*o.Cost = wcsp.Cost
		}
	} else if format == CFN {
		var h cfn.Header
		m, h, err = cfn.Read(in, path, cfn.ReadOptions{MaxEntries: o.MaxEntries, Context: ctx})
		if o.Cost != nil {
			*o.Cost = h.Cost
		}
	} else {
		m, err = native.ReadWith(in, path, nf, native.ReadOptions{MaxEntries: o.MaxEntries, Context: ctx})
	}
	if err == nil {
		err = ctx.Err() // a parse that ended as ctx did
	}
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%s: reading stopped: %w", path, context.Cause(ctx))
	}
	if o.Tee != nil {
		err = t.drain(err)
	}
	return m, err
}

// loadIndexed reads an indexed file by byte ranges; with a Tee it first
// copies the whole file to the tee (so the file is read twice).
func loadIndexed(ctx context.Context, path string, o Options) (*model.Model, error) {
	f, err := openCtx(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("indexed: %w", err)
	}
	defer f.Close()
	if o.Tee != nil {
		if _, err := io.Copy(o.Tee, newCtxReader(ctx, f)); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	m, err := indexed.ReadOpened(f, path, indexed.ReadOptions{MaxEntries: o.MaxEntries, Context: ctx})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%s: reading stopped: %w", path, context.Cause(ctx))
	}
	return m, err
}

// openCtx opens path for reading; when ctx ends first (opening a FIFO
// waits for a writer) it returns ctx's cause, and the abandoned open's file
// is closed once it returns.
func openCtx(ctx context.Context, path string) (*os.File, error) {
	if ctx.Done() == nil {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, fmt.Errorf("%s: opening stopped: %w", path, context.Cause(ctx))
	}
}

// ctxReader reads r until ctx ends: then Read returns ctx's cause at once,
// also while a read of r is blocked (a pipe, a FIFO that no writer feeds;
// that read is abandoned, and an *os.File's read is unblocked by a past
// deadline where the file supports one).
type ctxReader struct {
	ctx  context.Context
	r    io.Reader
	buf  []byte
	res  chan readResult
	busy bool // a read of r is under way into buf
}

type readResult struct {
	n   int
	err error
}

// newCtxReader returns r itself when ctx can never end.
func newCtxReader(ctx context.Context, r io.Reader) io.Reader {
	if ctx.Done() == nil {
		return r
	}
	if f, ok := r.(*os.File); ok {
		context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	}
	return &ctxReader{ctx: ctx, r: r, res: make(chan readResult, 1)}
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !c.busy {
		if cap(c.buf) < len(p) {
			c.buf = make([]byte, len(p))
		}
		buf := c.buf[:len(p)]
		c.busy = true
		go func() {
			n, err := c.r.Read(buf)
			c.res <- readResult{n, err}
		}()
	}
	select {
	case r := <-c.res:
		c.busy = false
		n := copy(p, c.buf[:r.n])
		return n, r.err
	case <-c.ctx.Done():
		// The read under way keeps c.buf; c is done with for good.
		return 0, context.Cause(c.ctx)
	}
}
