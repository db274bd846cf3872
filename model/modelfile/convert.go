package modelfile

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/native"
	"github.com/ddrun/ddrun/model/uai"
)

// ConvertOptions say how Convert reads and reports.
type ConvertOptions struct {
	// MaxEntries bounds what the conversion holds. Where it reads the
	// model whole (an output that is not indexed, native JSON, WCSP and
	// CFN input, evidence with input that is not UAI), the input's totals,
	// as in Options. Where it streams to an indexed output (UAI and native
	// msgpack input), each piece it holds instead (uai.ReadOptions and
	// native.ReadOptions EachPiece): each variable's cardinality, each
	// table, and the number of variables, of which it keeps a few words
	// each; not the totals, which no process of a sharded run holds: its
	// plan and its workers check each part against the same budget, as
	// for an indexed input. The decompressed bytes of such an input are
	// not bounded either: the output grows with the input, as gen's does.
	MaxEntries int
	// BlockSize is the indexed output's checksum block (0: the default).
	BlockSize int
	// KeepUnaryFactors writes an indexed output's factors over fewer than
	// 2 variables as factors; by default they are folded into the unaries
	// and the constant (indexed.WriteOptions.FoldUnary), as a UAI file's
	// unary tables are best held.
	KeepUnaryFactors bool
	// KeepDense writes a UAI file's pairwise tables to an indexed output
	// as tables; by default (with the unary factors folded) those that
	// are exactly Potts, truncated linear or truncated quadratic plus a
	// constant become factors of those kinds and their constants go to
	// the model's, as the UAI reader turns them (addStructured).
	KeepDense bool
	// Progress, when not nil, is called after each factor written to an
	// indexed output with the factors written and their total.
	Progress func(done, total int)
	// Evidence, when not "", is an evidence file (UAI .evid layout) that
	// an indexed output folds in (evidence.go: the factors over observed
	// variables conditioned on their states, an observed variable left one
	// state that stands for its observed one); Observed, when not nil, gets
	// the evidence read, to map an output assignment back. UAI streams;
	// other inputs are read whole for it.
	Evidence string
	Observed func(model.Evidence)
	// Report, for an indexed output, is told what the writer lays out as
	// it writes (indexed.WriteOptions.Report); other outputs ignore it.
	Report indexed.WriteReport
}

// Convert reads the model file in and writes it to out, each in the format
// its name says. UAI to indexed streams in memory that does not grow with
// the factors: the UAI file is read twice (uai.StreamScopes: a scope and
// its table at a time, the tables' text tokenized and converted in
// windows on up to 4 cores: uai.ReadOptions.Converters) and the writer spills the structure to temporary
// files beside out (indexed.WriteOptions.TempDir), the structured pairwise
// tables written as their kinds unless o.KeepDense; so does native msgpack
// (native.ReadMsgpackStream: the file read three times, a factor at a
// time; with more than one core the reading runs on two goroutines a few
// bounded batches ahead of the writer, native.ReadOptions.Pipeline, the
// same bytes out and the same errors). An indexed output has
// the factors over fewer than 2 variables folded into the unaries and the
// constant unless o.KeepUnaryFactors. Other conversions read the whole
// model first (native JSON is decoded whole; a UAI or native
// output is written from a whole model). On failure out and the temporary
// files are removed; o's callbacks (Progress, Observed, Report) may have
// been called before the failure (a UAI file's scopes are checked as its
// tables are read): what they made is then to be thrown away.
func Convert(ctx context.Context, in, out string, o ConvertOptions) (err error) {
	if FormatOf(out) == Unknown {
		return fmt.Errorf("%s: unknown model format (want %s)", out, formats)
	}
	if FormatOf(in) == Unknown {
		return fmt.Errorf("%s: unknown model format (want %s)", in, formats)
	}
	if isXZ(out) {
		return Save(out, nil) // the error: xz is read only
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
	wopts := indexed.WriteOptions{BlockSize: o.BlockSize, FoldUnary: !o.KeepUnaryFactors,
		TempDir: filepath.Dir(out), Context: ctx, Report: o.Report}
	if FormatOf(in) == Native && isMsgpack(in) && o.Evidence == "" {
		return streamMsgpack(ctx, in, f, o, wopts)
	}
	if FormatOf(in) != UAI && o.Evidence != "" {
		return wholeWithEvidence(ctx, in, f, o, wopts)
	}
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
				w.Abort()
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

// streamUAI converts a UAI file to an indexed one table by table, reading
// the file twice (uai.StreamScopes) so that neither the scopes nor the
// tables are kept; the writer spills the structure beside out.
func streamUAI(ctx context.Context, in string, f *os.File, o ConvertOptions, wopts indexed.WriteOptions) error {
	var w *indexed.Writer
	defer func() {
		if w != nil {
			w.Abort() // after Close: nothing left to do
		}
	}()
	ropts := uai.OptionsFor(in)
	ropts.MaxEntries, ropts.EachPiece, ropts.Context = o.MaxEntries, true, ctx
	// The tables' text is tokenized and converted in windows on other
	// goroutines while this one reads it and writes: as many windows at
	// once as the cores (up to 4).
	ropts.Converters = max(1, min(runtime.GOMAXPROCS(0), 4))
	nf := 0 // the factors the file declares
	open := uaiOpener(ctx, in)
	var ev model.Evidence
	var card func(int) int
	var runs indexed.CardRuns // the cardinalities, run-length encoded
	// What each table passes to the writer, reused: the writer keeps no
	// factor past Add (indexed.WrittenFactor), and the one or two
	// allocated a table came to 0.34 GB at 10^6 variables.
	var table model.Factor
	var kinds structuredScratch
	err := uai.StreamScopes(open, in, ropts, func(cards []int, factors int) error {
		nf = factors
		for k := 0; k < len(cards); {
			n := 1
			for k+n < len(cards) && cards[k+n] == cards[k] {
				n++
			}
			runs.Append(n, cards[k])
			k += n
		}
		var err error
		if o.Evidence != "" {
			cards = slices.Clone(cards)
			card = func(v int) int { return cards[v] }
			if ev, err = readEvidenceFor(ctx, o.Evidence, cards); err != nil {
				return err
			}
			if o.Observed != nil {
				o.Observed(ev)
			}
		}
		if w, err = indexed.NewStreamWriter(f, 0, wopts); err != nil {
			return err
		}
		for v, c := range cards {
			if err := addObservedVar(w, ev, v, c, nil); err != nil {
				return err
			}
		}
		return nil
	}, func(a int, scope []int, t []float64) error {
		table = model.Factor{Kind: model.Dense, Vars: scope, Table: t}
		fa := &table
		if len(ev) > 0 {
			var err error
			if fa, err = conditioned(fa, ev, card); err != nil {
				return fmt.Errorf("%s: factor %d: %w", in, a, err)
			}
		}
		if err := addStructured(w, fa, &runs, wopts.FoldUnary && !o.KeepDense, &kinds); err != nil {
			return err
		}
		if o.Progress != nil {
			o.Progress(a+1, nf)
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

// uaiOpener opens the UAI file in for uai.StreamScopes, under ctx; xz is
// decompressed here, gzip by the UAI reader. A regular file's reader has
// a Len (teeFile's): the reader sizes the cardinalities' slices from the
// file's size, as solve's reading does (without it, one grown by appends
// from 64 Ki entries to 10^6 took 0.1 s, in each of the two readings).
func uaiOpener(ctx context.Context, in string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		src, err := openCtx(ctx, in)
		if err != nil {
			return nil, err
		}
		if isXZ(in) {
			r, err := newXZReader(newCtxReader(ctx, src), in, xzUnbounded)
			if err != nil {
				src.Close()
				return nil, err
			}
			return readCloser{r, src}, nil
		}
		t := newTeeFile(ctx, src, nil)
		if t.left < 0 { // a FIFO: no size to tell
			return readCloser{t.r, src}, nil
		}
		return fileReader{t}, nil
	}
}

// addStructured adds f to w, a pairwise table that is exactly Potts,
// truncated linear or truncated quadratic plus a constant turned into its
// kind (model.PairStructure, as the UAI reader turns the tables it keeps:
// 8 bytes for a Potts factor's weight where its table takes 8 per entry;
// solve reads the same kinds) and its constant added as a factor over no
// variable, which w folds into the model's constant (fold: w folds such
// factors; without, the tables stay as they are).
func addStructured(w *indexed.Writer, f *model.Factor, cards *indexed.CardRuns, fold bool, s *structuredScratch) error {
	if !fold || f.Kind != model.Dense || len(f.Vars) != 2 || cards.Card(f.Vars[0]) != cards.Card(f.Vars[1]) {
		return w.Add(f)
	}
	k, wt, tr, c, ok := model.PairStructure(cards.Card(f.Vars[0]), f.Table)
	if !ok {
		return w.Add(f)
	}
	s.f = model.Factor{Kind: k, Vars: f.Vars, Weight: wt, Trunc: tr}
	if err := w.Add(&s.f); err != nil {
		return err
	}
	if c == 0 {
		return nil
	}
	s.c[0] = c
	s.f = model.Factor{Kind: model.Dense, Table: s.c[:]}
	return w.Add(&s.f)
}

// structuredScratch holds what addStructured passes to the writer, which
// keeps no factor past Add.
type structuredScratch struct {
	f model.Factor
	c [1]float64
}

// isMsgpack reports whether path names a native msgpack file (.msgpack,
// .mp, with .gz or .xz).
func isMsgpack(path string) bool {
	f, err := native.FormatOf(strings.TrimSuffix(strings.ToLower(path), ".xz"))
	return err == nil && f == native.Msgpack
}

// streamMsgpack converts a native msgpack file to an indexed one a
// variable and a factor at a time (native.ReadMsgpackStream, which reads
// the file three times); the writer spills the structure beside out.
func streamMsgpack(ctx context.Context, in string, f *os.File, o ConvertOptions, wopts indexed.WriteOptions) error {
	var w *indexed.Writer
	defer func() {
		if w != nil {
			w.Abort() // after Close: nothing left to do
		}
	}()
	nf := 0 // the factors the file declares
	sink := native.Sink{
		Factors: func(n int) { nf = n },
		Begin: func(constant float64, _ int) error {
			var err error
			w, err = indexed.NewStreamWriter(f, constant, wopts)
			return err
		},
		Var: func(_, card int, u []float64) error { return w.AddVar(card, u) },
		Factor: func(a int, fa *model.Factor) error {
			if err := w.Add(fa); err != nil {
				return err
			}
			if o.Progress != nil {
				o.Progress(a+1, nf)
			}
			return nil
		},
	}
	// The decoding runs a few batches ahead of the writer on another
	// goroutine when there is a core for it (native.ReadOptions.Pipeline):
	// the same output and errors, on two cores.
	ropts := native.ReadOptions{MaxEntries: o.MaxEntries, EachPiece: true, Context: ctx,
		Pipeline: runtime.GOMAXPROCS(0) > 1}
	err := native.ReadMsgpackStream(OpenAt(ctx, in), in, ropts, sink)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s: reading stopped: %w", in, context.Cause(ctx))
	}
	if err != nil {
		return err
	}
	if w == nil {
		return fmt.Errorf("%s: no model read", in)
	}
	return w.Close()
}

// OpenAt opens the model file at path for reading from offset off of its
// bytes, decompressed (gzip, recognised by its magic bytes, or xz, by its
// name; not bounded: the streaming reader bounds each value it keeps): a
// plain file seeks there, a compressed one is decompressed up to there.
func OpenAt(ctx context.Context, path string) native.Opener {
	return func(off int64) (io.ReadCloser, error) {
		fh, err := openCtx(ctx, path)
		if err != nil {
			return nil, err
		}
		var r io.Reader = bufio.NewReaderSize(newCtxReader(ctx, fh), 1<<16)
		compressed := true
		switch magic, _ := r.(*bufio.Reader).Peek(2); {
		case isXZ(path):
			r, err = newXZReader(r, path, xzUnbounded)
		case len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b:
			r, err = gzip.NewReader(r)
		default:
			compressed = false
			if _, err = fh.Seek(off, io.SeekStart); err == nil {
				r = newCtxReader(ctx, fh)
			}
		}
		if err == nil && compressed && off > 0 {
			_, err = io.CopyN(io.Discard, r, off)
		}
		if err != nil {
			fh.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return readCloser{r, fh}, nil
	}
}

// readCloser reads from r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// fileReader is a teeFile (with its Len) that closes its file.
type fileReader struct{ *teeFile }

func (r fileReader) Close() error { return r.f.Close() }

// wholeWithEvidence converts a model read whole to an indexed file with
// the evidence o.Evidence folded in (evidence.go).
func wholeWithEvidence(ctx context.Context, in string, f *os.File, o ConvertOptions, wopts indexed.WriteOptions) error {
	m, err := LoadWith(ctx, in, Options{MaxEntries: o.MaxEntries})
	if err != nil {
		return err
	}
	ev, err := LoadEvidenceWith(ctx, o.Evidence, m, nil)
	if err != nil {
		return err
	}
	if o.Observed != nil {
		o.Observed(ev)
	}
	w, err := indexed.NewStreamWriter(f, m.Constant, wopts)
	if err != nil {
		return err
	}
	for v, c := range m.Cards {
		if err := addObservedVar(w, ev, v, c, m.Unaries(v)); err != nil {
			w.Abort()
			return err
		}
	}
	card := func(v int) int { return m.Cards[v] }
	for a := range m.Factors {
		g, err := conditioned(&m.Factors[a], ev, card)
		if err == nil {
			err = w.Add(g)
		}
		if err != nil {
			w.Abort()
			return fmt.Errorf("%s: factor %d: %w", in, a, err)
		}
		if o.Progress != nil {
			o.Progress(a+1, len(m.Factors))
		}
	}
	return w.Close()
}
