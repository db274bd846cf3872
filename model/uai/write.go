package uai

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/ddrun/ddrun/model"
)

// Write writes m to w as a MARKOV file of potentials (see the package
// documentation for how unaries, the constant and non-dense factors are
// encoded).
func Write(w io.Writer, m *model.Model) error {
	return WriteWith(w, m, WriteOptions{})
}

// WriteWith writes m to w as a MARKOV file, with table entries encoded as
// opts.Log says.
func WriteWith(w io.Writer, m *model.Model, opts WriteOptions) error {
	if err := writeModel(w, m, opts); err != nil {
		return fmt.Errorf("uai: write: %w", err)
	}
	return nil
}

// WriteFile writes m to the file at path, gzip-compressed when path ends in
// .gz, and as natural logarithms (the LG variant) when it ends in .LG or
// .LG.gz. On failure it removes the partial file.
func WriteFile(path string, m *model.Model) error {
	opts := WriteOptions{Log: OptionsFor(path).Log}
	return writeFile(path, func(w io.Writer) error { return writeModel(w, m, opts) })
}

// writeFile creates the file at path and calls write with it, through gzip
// when path ends in .gz. On failure it removes the partial file.
func writeFile(path string, write func(io.Writer) error) error {
	return CreateFile("uai", path, write)
}

// OpenRead opens the file at path and reads it with read, which gets the
// file and path (the name its errors give); an error opening the file
// starts with format (the reader's name). The text formats' readers (this
// package's, model/wcsp's, model/cfn's) share it, as they share
// CreateFile.
func OpenRead[T any](format, path string, read func(r io.Reader, name string) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", format, err)
	}
	defer f.Close()
	return read(f, path)
}

// CreateFile creates the file at path and calls write with it, through
// gzip when path ends in .gz; on failure it removes the partial file. Its
// errors start with format (the writer's name). The text formats' writers
// (this package's, model/wcsp's, model/cfn's) share it.
func CreateFile(format, path string, write func(io.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	var w io.Writer = f
	var zw *gzip.Writer
	if isGzipName(path) {
		zw = gzip.NewWriter(f)
		w = zw
	}
	err = write(w)
	if zw != nil {
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("%s: write %s: %w", format, path, err)
	}
	return nil
}

const (
	// maxExpArg bounds |log-potential| written as a potential, so that its
	// exponential neither overflows nor underflows float64.
	maxExpArg = 700
	// maxCopies bounds how many tables one wide-ranged table may be split into.
	maxCopies = 1 << 16
)

// outTable is one table of the output file.
type outTable struct {
	vars []int
	// entries holds the log-potentials of a dense table (or unaries, or a
	// part of the constant); when nil, model factor factor is expanded.
	entries []float64
	factor  int
	// The table is written copies times, entry t as (t-shift)/copies; shift
	// goes to the constant. This keeps potentials within float64's range.
	copies int
	shift  float64
}

// each calls fn with every log-potential of t, in file order; x is scratch
// of one entry per model variable.
func (t *outTable) each(m *model.Model, x []int, fn func(float64)) {
	if t.entries != nil {
		for _, v := range t.entries {
			fn(v)
		}
		return
	}
	enumerate(m, t.factor, x, fn)
}

// writeModel writes m as a MARKOV file.
func writeModel(w io.Writer, m *model.Model, opts WriteOptions) error {
	if !opts.Log.valid() {
		return fmt.Errorf("invalid log base %v", opts.Log)
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("invalid model: %w", err)
	}
	tables, err := outTables(m)
	if err != nil {
		return err
	}
	x := make([]int, len(m.Cards))
	constant := m.Constant
	if opts.Log == Potentials {
		for i := range tables {
			t := &tables[i]
			if err := planRange(func(fn func(float64)) { t.each(m, x, fn) }, t); err != nil {
				return fmt.Errorf("%s: %w", tableName(m, i), err)
			}
			constant += tables[i].shift
		}
	}
	consts, err := constantTables(constant, opts.Log)
	if err != nil {
		return err
	}
	tables = append(tables, consts...)

	mw := newModelWriter(w, m, opts.Log)
	mw.x = x
	mw.header(tables)
	for i := range tables {
		mw.table(&tables[i])
	}
	return mw.bw.Flush()
}

// tableName names output table i for error messages.
func tableName(m *model.Model, i int) string {
	if i < len(m.Factors) {
		return fmt.Sprintf("factor %d (%s)", i, m.Factors[i].Kind)
	}
	return "unary table"
}

// outTables lists the model's factors, then one arity-1 table per variable
// with non-zero unaries.
func outTables(m *model.Model) ([]outTable, error) {
	tables := make([]outTable, 0, len(m.Factors))
	for a := range m.Factors {
		f := &m.Factors[a]
		if f.Kind == model.Dense {
			tables = append(tables, outTable{vars: f.Vars, entries: f.Table, copies: 1})
			continue
		}
		if _, err := m.TableSize(f.Vars); err != nil {
			return nil, fmt.Errorf("factor %d (%s): %w", a, f.Kind, err)
		}
		tables = append(tables, outTable{vars: f.Vars, factor: a, copies: 1})
	}
	var scopes []int // one shared arena for the unary tables' scopes
	for i := range m.Cards {
		if !allZero(m.Unaries(i)) {
			scopes = append(scopes, i)
		}
	}
	for k, i := range scopes {
		tables = append(tables, outTable{vars: scopes[k : k+1 : k+1], entries: m.Unaries(i), copies: 1})
	}
	return tables, nil
}

// enumerate calls fn with factor a's log-potential at every assignment of
// its scope, the last variable changing fastest; x is scratch.
func enumerate(m *model.Model, a int, x []int, fn func(float64)) {
	vars := m.Factors[a].Vars
	for _, v := range vars {
		x[v] = 0
	}
	for {
		fn(m.FactorScore(a, x))
		k := len(vars) - 1
		for ; k >= 0; k-- {
			v := vars[k]
			x[v]++
			if x[v] < m.Cards[v] {
				break
			}
			x[v] = 0
		}
		if k < 0 {
			return
		}
	}
}

func allZero(u []float64) bool {
	for _, v := range u {
		if v != 0 {
			return false
		}
	}
	return true
}

// planRange chooses a shift and a number of copies for t so that every
// finite entry's potential is representable: entries within ±maxExpArg are
// written as they are; otherwise the table is shifted by its maximum and, if
// its range is still too wide, split into copies.
func planRange(each func(func(float64)), t *outTable) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	each(func(v float64) {
		if math.IsInf(v, 0) {
			return
		}
		lo = math.Min(lo, v)
		hi = math.Max(hi, v)
	})
	t.copies, t.shift = 1, 0
	if lo > hi || lo >= -maxExpArg && hi <= maxExpArg {
		return nil
	}
	t.shift = hi
	copies := math.Ceil((hi - lo) / maxExpArg)
	if !(copies <= maxCopies) {
		return fmt.Errorf("log-potentials span [%g, %g], too wide for the potential format (write the LG variant instead)", lo, hi)
	}
	t.copies = max(1, int(copies))
	return nil
}

// constantTables encodes the constant as 0-arity tables (none when it is
// zero; with potentials, as many as needed to keep each within range).
func constantTables(c float64, base LogBase) ([]outTable, error) {
	if c == 0 {
		return nil, nil
	}
	n := 1.0
	if base == Potentials {
		n = math.Ceil(math.Abs(c) / maxExpArg)
		if !(n <= maxCopies) {
			return nil, fmt.Errorf("constant %g is too large for the potential format (write the LG variant instead)", c)
		}
	}
	tables := make([]outTable, int(n))
	parts := make([]float64, len(tables))
	for i := range tables {
		parts[i] = c / n
		tables[i] = outTable{vars: []int{}, entries: parts[i : i+1 : i+1], factor: -1, copies: 1}
	}
	return tables, nil
}

// modelWriter formats a MARKOV file.
type modelWriter struct {
	bw   *bufio.Writer
	m    *model.Model // nil when streaming (every table has its entries)
	card func(v int) int
	x    []int // scratch assignment for expanding factors
	base LogBase
	num  []byte // scratch for number formatting
}

// newModelWriter returns a writer of m's tables to w.
func newModelWriter(w io.Writer, m *model.Model, base LogBase) *modelWriter {
	return &modelWriter{bw: bufio.NewWriterSize(w, 64<<10), m: m, card: func(v int) int { return m.Cards[v] }, base: base}
}

func (mw *modelWriter) int(n int) {
	mw.num = strconv.AppendInt(mw.num[:0], int64(n), 10)
	mw.bw.Write(mw.num)
}

// header writes the preamble: type, variables, cardinalities and scopes.
func (mw *modelWriter) header(tables []outTable) {
	n := 0
	for i := range tables {
		n += tables[i].copies
	}
	mw.preamble(len(mw.m.Cards), n)
	for i := range tables {
		mw.scope(&tables[i])
	}
}

// preamble writes the type, the n variables' cardinalities and the number
// of tables.
func (mw *modelWriter) preamble(n, tables int) {
	mw.bw.WriteString("MARKOV\n")
	mw.int(n)
	mw.bw.WriteByte('\n')
	for i := range n {
		if i > 0 {
			mw.bw.WriteByte(' ')
		}
		mw.int(mw.card(i))
	}
	mw.bw.WriteByte('\n')
	mw.int(tables)
	mw.bw.WriteByte('\n')
}

// scope writes t's scope line(s), one per copy.
func (mw *modelWriter) scope(t *outTable) {
	for range t.copies {
		mw.int(len(t.vars))
		for _, v := range t.vars {
			mw.bw.WriteByte(' ')
			mw.int(v)
		}
		mw.bw.WriteByte('\n')
	}
}

// table writes t's table(s), one row per value of all but the last variable.
func (mw *modelWriter) table(t *outTable) {
	size := len(t.entries)
	if t.entries == nil {
		size = 1
		for _, v := range t.vars {
			size *= mw.card(v)
		}
	}
	row := 1
	if len(t.vars) > 0 {
		row = mw.card(t.vars[len(t.vars)-1])
	}
	for range t.copies {
		mw.bw.WriteByte('\n')
		mw.int(size)
		mw.bw.WriteByte('\n')
		col := 0
		t.each(mw.m, mw.x, func(v float64) {
			mw.num = strconv.AppendFloat(mw.num[:0], mw.encode(v, t), 'g', -1, 64)
			mw.bw.Write(mw.num)
			col++
			if col == row {
				mw.bw.WriteByte('\n')
				col = 0
			} else {
				mw.bw.WriteByte(' ')
			}
		})
	}
}

// encode returns the file value of log-potential v of table t.
func (mw *modelWriter) encode(v float64, t *outTable) float64 {
	switch mw.base {
	case Log10:
		return v / ln10
	case Ln:
		return v
	}
	if math.IsInf(v, -1) {
		return 0
	}
	return math.Exp((v - t.shift) / float64(t.copies))
}
