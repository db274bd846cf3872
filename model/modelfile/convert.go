package modelfile

import (
	"context"
	"fmt"
	"os"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/uai"
)

// ConvertOptions say how Convert reads and reports.
type ConvertOptions struct {
	// MaxEntries bounds what the input may declare, as in Options.
	MaxEntries int
	// BlockSize is the indexed output's checksum block (0: the default).
	BlockSize int
	// KeepUnaryFactors writes an indexed output's factors over fewer than
	// 2 variables as factors; by default they are folded into the unaries
	// and the constant (indexed.WriteOptions.FoldUnary), as a UAI file's
	// unary tables are best held.
	KeepUnaryFactors bool
	// Progress, when not nil, is called after each factor written to an
	// indexed output with the factors written and their total.
	Progress func(done, total int)
}

// Convert reads the model file in and writes it to out, each in the format
// its name says. UAI to indexed streams: the scopes are kept (O(factors x
// arity)) and each table goes to out as it is parsed, so memory does not
// grow with the tables. An indexed output has the factors over fewer than
// 2 variables folded into the unaries and the constant unless
// o.KeepUnaryFactors. Other conversions read the whole model first
// (native JSON and msgpack are decoded whole; a UAI or native output is
// written from a whole model). On failure out is removed.
func Convert(ctx context.Context, in, out string, o ConvertOptions) (err error) {
	if FormatOf(out) == Unknown {
		return fmt.Errorf("%s: unknown model format (want %s)", out, formats)
	}
	if FormatOf(in) == Unknown {
		return fmt.Errorf("%s: unknown model format (want %s)", in, formats)
	}
	if FormatOf(out) != Indexed {
		m, err := LoadWith(ctx, in, Options{MaxEntries: o.MaxEntries})
		if err != nil {
			return err
		}
		return Save(out, m)
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("indexed: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("indexed: write %s: %w", out, cerr)
		}
		if err != nil {
			os.Remove(out)
		}
	}()
	wopts := indexed.WriteOptions{BlockSize: o.BlockSize, FoldUnary: !o.KeepUnaryFactors}
	if FormatOf(in) != UAI {
		m, err := LoadWith(ctx, in, Options{MaxEntries: o.MaxEntries})
		if err != nil {
			return err
		}
		w, err := indexed.NewWriter(f, m, wopts)
		if err != nil {
			return err
		}
		for a := range m.Factors {
			if err := w.Add(&m.Factors[a]); err != nil {
				return err
			}
			if o.Progress != nil {
				o.Progress(a+1, len(m.Factors))
			}
		}
		return w.Close()
	}
	return streamUAI(ctx, in, f, o, wopts)
}

// streamUAI converts a UAI file to an indexed one table by table.
func streamUAI(ctx context.Context, in string, f *os.File, o ConvertOptions, wopts indexed.WriteOptions) error {
	src, err := openCtx(ctx, in)
	if err != nil {
		return fmt.Errorf("uai: %w", err)
	}
	defer src.Close()
	var w *indexed.Writer
	var st *model.Model
	ropts := uai.OptionsFor(in)
	ropts.MaxEntries, ropts.Context = o.MaxEntries, ctx
	err = uai.Stream(newCtxReader(ctx, src), in, ropts, func(m *model.Model) error {
		st = m
		w, err = indexed.NewWriter(f, m, wopts)
		return err
	}, func(a int, t []float64) error {
		fa := st.Factors[a]
		fa.Table = t
		if err := w.Add(&fa); err != nil {
			return err
		}
		if o.Progress != nil {
			o.Progress(a+1, len(st.Factors))
		}
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s: reading stopped: %w", in, context.Cause(ctx))
	}
	if err != nil {
		return err
	}
	return w.Close()
}
