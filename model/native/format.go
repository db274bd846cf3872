package native

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ddrun/ddrun/model"
)

// Format is an encoding of the native schema.
type Format int

const (
	// JSON is the human-writable encoding: -Inf is written "-inf".
	JSON Format = iota
	// Msgpack is the compact binary encoding of the same schema.
	Msgpack
)

func (f Format) String() string {
	switch f {
	case JSON:
		return "json"
	case Msgpack:
		return "msgpack"
	}
	return fmt.Sprintf("format(%d)", int(f))
}

// FormatOf returns the format of a file from its extension: .json, .msgpack
// or .mp, optionally followed by .gz.
func FormatOf(path string) (Format, error) {
	ext := strings.ToLower(filepath.Ext(strings.TrimSuffix(strings.ToLower(path), ".gz")))
	switch ext {
	case ".json":
		return JSON, nil
	case ".msgpack", ".mp":
		return Msgpack, nil
	}
	return 0, fmt.Errorf("%s: unknown model file extension %q (want .json, .msgpack or .mp, optionally with .gz)", path, ext)
}

// gzipMagic starts every gzip stream; neither encoding can start with it.
var gzipMagic = []byte{0x1f, 0x8b}

// Read reads a model in format f from r; name (a file name) prefixes every
// error. Gzip-compressed input is recognised by its magic bytes. The model
// has passed (*model.Model).Validate. Its factors' Vars, Negated, Table and
// Emission slices share a few backing arrays, each slice capped at its own
// length (so appending to one copies it). Errors are one line, usually *Error.
func Read(r io.Reader, name string, f Format) (*model.Model, error) {
	return ReadWith(r, name, f, ReadOptions{})
}

// ReadOptions bounds what Read accepts.
type ReadOptions struct {
	// MaxEntries bounds the total number of table entries (dense tables,
	// sequence transitions and emissions) and, on its own, the total
	// number of variable states (0: model.DefaultMaxEntries). The states
	// are checked before the model's unaries are allocated; the input's
	// (decompressed) bytes are bounded by bytesPerEntry for each entry
	// the limits allow, so a gzip bomb stops early.
	MaxEntries int
	// EachPiece makes ReadMsgpackStream check MaxEntries against each
	// piece it holds instead of the totals: each variable's cardinality,
	// each factor's entries, the number of variables (it holds a bit and
	// at most a run per variable), and the bytes of each value it keeps
	// (bytesPerEntry per entry), not the input's; for a caller that keeps
	// no more than one factor at a time (a streaming conversion to .ddx,
	// whose parts a sharded run checks against the budget of each
	// process). ReadWith holds the model and checks the totals whatever
	// it says.
	EachPiece bool
	// Context, when not nil, stops the reading once it ends: checked
	// before every read of the (decompressed) input and between decoding
	// and building the model.
	Context context.Context
	// Pipeline makes ReadMsgpackStream read on two goroutines of its
	// own, a few bounded batches ahead of the sink, which it still calls
	// in order on the caller's goroutine (msgpack_pipe.go): one reads and
	// decodes the factors (beside the variables), one reads the variables
	// and checks and builds the factors, so that the reading and what the
	// sink does with the pieces (a conversion's writer) overlap on two
	// cores. The sink sees the same calls and the reading returns the same
	// error as without it. ReadWith ignores it.
	Pipeline bool
}

// bytesPerEntry bounds the input bytes per entry (a unary or table entry)
// that ReadWith reads before it gives up: a generous bound for JSON numbers
// with their separators and indentation.
const bytesPerEntry = 64

// ReadWith is Read with options.
func ReadWith(r io.Reader, name string, f Format, opts ReadOptions) (*model.Model, error) {
	if f != JSON && f != Msgpack {
		return nil, fmt.Errorf("%s: unknown format %v", name, f)
	}
	limit := model.EntryLimit(opts.MaxEntries)
	maxBytes := int64(1<<20) + 2*bytesPerEntry*int64(limit)
	data, err := readAll(model.ContextReader(opts.Context, r), sizeHint(r), maxBytes, opts.Context)
	if err != nil {
		return nil, &Error{File: name, Msg: oneLine(err.Error()), Err: err}
	}
	var raw *rawModel
	if f == JSON {
		raw, err = decodeJSON(data)
	} else {
		raw, err = decodeMsgpack(data)
	}
	if err == nil && opts.Context != nil && opts.Context.Err() != nil {
		err = context.Cause(opts.Context)
	}
	if err != nil {
		return nil, withFile(err, name, jsonData(f, data))
	}
	m, err := raw.build(limit)
	if err != nil {
		return nil, withFile(err, name, jsonData(f, data))
	}
	return m, nil
}

// jsonData returns data when it is JSON (for line and column), else nil.
func jsonData(f Format, data []byte) []byte {
	if f == JSON {
		return data
	}
	return nil
}

// readAll reads all of r (hint: its size, 0 when unknown), decompressing
// gzip input, which it reads until ctx (if not nil) ends; more than
// maxBytes (decompressed) is an error.
func readAll(r io.Reader, hint int, maxBytes int64, ctx context.Context) ([]byte, error) {
	data, err := readSized(r, hint, maxBytes)
	if err != nil || !bytes.HasPrefix(data, gzipMagic) {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	// Guess a compression ratio of 4 for the first allocation.
	if data, err = readSized(model.ContextReader(ctx, zr), int(min(4*int64(len(data)), maxBytes)), maxBytes); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return data, nil
}

// sizeHint guesses how many bytes r holds (0: unknown).
func sizeHint(r io.Reader) int {
	switch r := r.(type) {
	case interface{ Len() int }: // bytes.Reader, bytes.Buffer, strings.Reader
		return r.Len()
	case *os.File:
		if fi, err := r.Stat(); err == nil && fi.Mode().IsRegular() {
			return int(min(fi.Size(), 1<<40))
		}
	}
	return 0
}

// readSized reads all of r into a buffer of size hint at first (with one
// more byte, so that a right hint needs no growth to see the end); more
// than maxBytes is an error.
func readSized(r io.Reader, hint int, maxBytes int64) ([]byte, error) {
	lr := &io.LimitedReader{R: r, N: maxBytes + 1}
	var b bytes.Buffer
	if hint > 0 {
		b.Grow(int(min(int64(hint), maxBytes)) + 1)
	}
	_, err := b.ReadFrom(lr)
	if err == nil && int64(b.Len()) > maxBytes {
		return nil, fmt.Errorf("more than %d bytes, more than the entry limit allows", maxBytes)
	}
	return b.Bytes(), err
}

// ReadFile reads a model file, its format given by its extension (see
// FormatOf).
func ReadFile(path string) (*model.Model, error) {
	f, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return Read(fh, path, f)
}

// Write writes m in format f to w. It refuses a model that does not pass
// Validate or that Read would refuse.
func Write(w io.Writer, m *model.Model, f Format) error {
	if err := checkWritable(m); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	var err error
	switch f {
	case JSON:
		err = writeJSON(bw, docOf(m))
	case Msgpack:
		err = writeMsgpack(bw, docOf(m))
	default:
		return fmt.Errorf("native: unknown format %v", f)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// checkWritable checks what Write needs beyond Validate.
func checkWritable(m *model.Model) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("native: invalid model: %w", err)
	}
	if total := len(m.Unary); total > maxUnaryEntries {
		return fmt.Errorf("native: %d unary entries, the format allows %d", total, maxUnaryEntries)
	}
	for a := range m.Factors {
		// Validate bounds a shared transition table by nothing but the
		// cardinalities; the format allows model.MaxTableEntries.
		if f := &m.Factors[a]; f.Kind == model.Sequence && len(f.Table) > model.MaxTableEntries {
			return fmt.Errorf("native: factor %d (%s): transitions have %d entries, the format allows %d", a, f.Kind, len(f.Table), model.MaxTableEntries)
		}
	}
	return nil
}

// WriteFile writes m to path, its format given by its extension (see
// FormatOf); a .gz suffix compresses it.
func WriteFile(path string, m *model.Model) error {
	f, err := FormatOf(path)
	if err != nil {
		return err
	}
	if err := checkWritable(m); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return writeFile(path, func(w io.Writer) error { return Write(w, m, f) })
}

// writeFile creates path and calls write with it, through gzip when path
// ends in .gz; errors are prefixed with path.
func writeFile(path string, write func(io.Writer) error) (err error) {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := fh.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	var w io.Writer = fh
	var zw *gzip.Writer
	if strings.HasSuffix(strings.ToLower(path), ".gz") {
		zw = gzip.NewWriter(fh)
		w = zw
	}
	if err := write(w); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}
