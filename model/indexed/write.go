package indexed

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/ddrun/ddrun/model"
)

// WriteOptions say how a Writer lays out its file.
type WriteOptions struct {
	// BlockSize is the payload bytes per checksum (0: DefaultBlockSize); a
	// multiple of 8 in [MinBlockSize, MaxBlockSize].
	BlockSize int
	// FoldUnary makes Add fold a factor over no variable into the constant
	// and one over a single variable into that variable's unary (its
	// table, whatever its kind: a logic factor's -Inf entries become -Inf
	// unary entries) instead of writing it, unless the sum would not be a
	// valid constant (finite) or unary (no NaN, no +Inf). The file then
	// has fewer factors (Writer.Folded says how many were folded) and the
	// same scores.
	FoldUnary bool
	// TempDir is the directory of the temporary files that hold the
	// structure and the block index until Close (removed by Close and
	// Abort); "" keeps them in memory. The files hold about what the
	// structure section will: 4 bytes per variable, 8 per state, and each
	// factor's record.
	TempDir string
	// Context, when not nil, stops the write once it ends: Add and Close
	// then fail with its cause.
	Context context.Context
	// Report, when its fields are set, is told what the writer lays out
	// as it writes it, so that a caller who needs a pass over the
	// structure it has just written (shard.Summary) has it without
	// reading the file back.
	Report WriteReport
}

// WriteReport is told what a Writer lays out (WriteOptions.Report); nil
// fields are skipped. It holds nothing itself: what a caller keeps of it
// is the caller's.
type WriteReport struct {
	// Factor is called as each factor is written (not when one is
	// folded), in the file's order, before Add returns.
	Factor func(WrittenFactor)
	// Closed is called by a Close that has written the whole file.
	Closed func(Written)
}

// WrittenFactor is one factor as a Writer writes it (WriteReport.Factor).
type WrittenFactor struct {
	// A is the factor's number in the file (folded factors take none).
	A int
	// Rel is where its record starts, counted from the first record's
	// start: Written.Records adds the file offset, known at Close (the
	// structure goes after the payload). Rel + Written.Records is the
	// Record.Pos a Walk of the file gives.
	Rel int64
	// Entries is its payload's number of float64 entries (Payload.Entries).
	Entries int
	// Factor is the factor as Add got it (with its payload, which a Walk's
	// factor lacks): valid during the call only.
	Factor *model.Factor
	// Cards are the model's cardinalities, every variable added by then
	// (read only).
	Cards *CardRuns
}

// Written is what Close laid out (WriteReport.Closed).
type Written struct {
	// Size is the file's length in bytes and StructureCRC the structure
	// section's checksum, as Scanner.Size and StructureCRC give them.
	Size         int64
	StructureCRC uint32
	// Records is the file offset of the first factor record.
	Records             int64
	NumVars, NumFactors int
	// Cards are the cardinalities, run-length encoded (as a Walk's Cards
	// gives them); the writer no longer uses them.
	Cards CardRuns
	// ForbiddenVar and ForbiddenState name the first state, in the order
	// of the variables then their states, whose unary in the file is
	// -Inf (after the folds); both -1 when no unary entry is -Inf.
	ForbiddenVar, ForbiddenState int
}

// Writer writes an indexed model file in one pass over the model: the
// header, then each factor's payload as Add is called, straight to the
// output; the structure (cardinalities, unaries, factor records) and the
// block index, which the format puts after the payload, go to spills (in
// memory, or with WriteOptions.TempDir in temporary files) that Close
// copies after the payload, with the trailer. With TempDir, memory does not
// grow with the model: buffers, and the cardinalities run-length encoded
// (CardRuns: one run when they are all equal).
type Writer struct {
	w         *bufio.Writer
	err       error
	cards     CardRuns
	nvars     int
	constant  float64
	blockSize int64
	fold      bool
	folded    int
	scr       scratch
	ctx       context.Context

	unary   *spill // the unaries, little-endian float64
	records *spill // the factor records, encoded as in the file
	index   *spill // the CRC-32C of each full payload block

	payload    int64 // payload bytes written
	fill       int64 // bytes of the current block
	crc        uint32
	scratch    []byte
	nfactors   int
	stateLimit int // the most states in all (maxStates)

	report WriteReport
	// The first -Inf unary entry (variable, state; -1 when none): a -Inf
	// entry stays -Inf under the folds (a sum with +Inf or NaN is not
	// folded), so the least of those added is the file's first.
	forbidVar, forbidState int
}

// MaxSpilledStates is the most states in all that a Writer takes when its
// structure goes to temporary files (WriteOptions.TempDir): it then holds
// nothing per state, and the format's offsets are u64, so the bound only
// keeps the unaries section under 8 TiB. A Writer that keeps the structure
// in memory takes model.MaxTableEntries, as a model in memory may hold.
const MaxSpilledStates = 1 << 40

// maxStates is the most states in all a Writer with opts takes.
func maxStates(opts WriteOptions) int {
	if opts.TempDir != "" {
		return MaxSpilledStates
	}
	return model.MaxTableEntries
}

// NewWriter starts an indexed file on w for a model with m's
// cardinalities, unaries and constant (m's factors are ignored: Add them).
// The writer copies what it keeps of m. After an error from Add, call
// Abort (or Close, which reports the error) to remove the temporary files.
func NewWriter(w io.Writer, m *model.Model, opts WriteOptions) (*Writer, error) {
	n := len(m.Cards)
	if len(m.UnaryOff) != n+1 || m.UnaryOff[0] != 0 || len(m.Unary) != m.UnaryOff[n] {
		return nil, errors.New("indexed: unary offsets do not match the cardinalities")
	}
	wr, err := NewStreamWriter(w, m.Constant, opts)
	if err != nil {
		return nil, err
	}
	for i, c := range m.Cards {
		if m.UnaryOff[i+1]-m.UnaryOff[i] != c {
			wr.Abort()
			return nil, fmt.Errorf("indexed: variable %d: cardinality %d (%d unary entries)", i, c, m.UnaryOff[i+1]-m.UnaryOff[i])
		}
		if err := wr.AddVar(c, m.Unary[m.UnaryOff[i]:m.UnaryOff[i+1]]); err != nil {
			wr.Abort()
			return nil, err
		}
	}
	return wr, nil
}

// NewStreamWriter starts an indexed file on w for a model with the given
// constant and no variable yet: AddVar adds the variables, in order, then
// Add the factors. With opts.TempDir the writer keeps no more than buffers
// and the cardinalities' runs; after an error, call Abort (or Close) to
// remove its temporary files.
func NewStreamWriter(w io.Writer, constant float64, opts WriteOptions) (*Writer, error) {
	bs := int64(opts.BlockSize)
	if bs == 0 {
		bs = DefaultBlockSize
	}
	if !validBlockSize(bs) {
		return nil, fmt.Errorf("indexed: block size %d: want a multiple of 8 in [%d, %d]", bs, MinBlockSize, MaxBlockSize)
	}
	if math.IsNaN(constant) || math.IsInf(constant, 0) {
		return nil, fmt.Errorf("indexed: constant %v is not finite", constant)
	}
	wr := &Writer{w: bufio.NewWriterSize(w, 1<<16), constant: constant, blockSize: bs, fold: opts.FoldUnary,
		scratch: make([]byte, 8<<10), ctx: opts.Context, stateLimit: maxStates(opts),
		report: opts.Report, forbidVar: -1, forbidState: -1}
	for _, s := range []struct {
		p    **spill
		what string
	}{{&wr.unary, "unaries"}, {&wr.records, "records"}, {&wr.index, "index"}} {
		sp, err := newSpill(opts.TempDir, s.what)
		if err != nil {
			wr.Abort()
			return nil, fmt.Errorf("indexed: %w", err)
		}
		*s.p = sp
	}
	var h [headerSize]byte
	copy(h[:], headerMagic)
	binary.LittleEndian.PutUint32(h[8:], Version)
	binary.LittleEndian.PutUint32(h[12:], uint32(bs))
	if _, err := wr.w.Write(h[:]); err != nil {
		wr.Abort()
		return nil, wr.wrap(err)
	}
	return wr, nil
}

// AddVar adds the next variable, of cardinality card, with its unaries
// (card entries; nil: zeros). Every variable comes before the first
// factor.
func (wr *Writer) AddVar(card int, unary []float64) error {
	if wr.err != nil {
		return wr.err
	}
	i, states := wr.nvars, wr.cards.States()
	switch {
	case wr.nfactors+wr.folded > 0:
		return wr.fail(fmt.Errorf("indexed: variable %d added after the factors", i))
	case card < 1 || card > math.MaxUint32 || unary != nil && len(unary) != card:
		return wr.fail(fmt.Errorf("indexed: variable %d: cardinality %d (%d unary entries)", i, card, len(unary)))
	case card > wr.stateLimit-states:
		return wr.fail(fmt.Errorf("indexed: variable %d: more than %d states in all", i, wr.stateLimit))
	}
	for k, v := range unary {
		if s := badValue(v); s != "" {
			return wr.fail(fmt.Errorf("indexed: unary entry %d is %s", states+k, s))
		}
		if math.IsInf(v, -1) {
			wr.forbid(i, k)
		}
	}
	for left := card; left > 0; {
		n := min(left, len(wr.scratch)/8)
		b := wr.scratch[:8*n]
		if unary == nil {
			clear(b)
		} else {
			putFloats(b, unary[:n])
			unary = unary[n:]
		}
		if err := wr.unary.write(b); err != nil {
			return wr.fail(wr.wrap(err))
		}
		left -= n
	}
	wr.cards.Append(1, card)
	wr.nvars++
	return nil
}

// forbid notes that variable i's state k has a -Inf unary.
func (wr *Writer) forbid(i, k int) {
	if wr.forbidVar < 0 || i < wr.forbidVar || i == wr.forbidVar && k < wr.forbidState {
		wr.forbidVar, wr.forbidState = i, k
	}
}

// putFloats encodes vs into b (8 bytes each), little-endian.
func putFloats(b []byte, vs []float64) {
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
}

// fail keeps err as the writer's error and returns it.
func (wr *Writer) fail(err error) error {
	wr.err = err
	return err
}

func (wr *Writer) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("indexed: write: %w", err)
}

// Factors returns the number of factors written so far.
func (wr *Writer) Factors() int { return wr.nfactors }

// Folded returns the number of factors folded into the unaries and the
// constant so far (WriteOptions.FoldUnary).
func (wr *Writer) Folded() int { return wr.folded }

// ctxEvery is how many factors Add writes between looks at the context.
const ctxEvery = 1 << 12

// Add appends a factor: its payload (a Dense table, a Sequence's
// transitions then emission) goes to the file now, its record to the
// records' spill; or, with WriteOptions.FoldUnary, a factor over fewer
// than 2 variables may be folded. It checks the factor as model.Validate
// does; errors number factors in the order of the Add calls.
func (wr *Writer) Add(f *model.Factor) error {
	if wr.err != nil {
		return wr.err
	}
	a := wr.nfactors + wr.folded
	if a%ctxEvery == 0 && wr.ctx != nil && wr.ctx.Err() != nil {
		return wr.fail(fmt.Errorf("indexed: write stopped: %w", context.Cause(wr.ctx)))
	}
	if wr.nfactors >= math.MaxInt32-1 {
		return fmt.Errorf("indexed: more than %d factors", math.MaxInt32-2)
	}
	if msg := checkFactor(f, wr.nvars, wr.cards.Card, len(f.Table), len(f.EmissionScores()), &wr.scr); msg != "" {
		return fmt.Errorf("indexed: factor %d (%s): %s", a, f.Kind, msg)
	}
	for _, part := range [][]float64{f.Table, f.EmissionScores()} {
		for k, v := range part {
			if s := badValue(v); s != "" {
				return fmt.Errorf("indexed: factor %d (%s): payload entry %d is %s", a, f.Kind, k, s)
			}
		}
	}
	if wr.fold && len(f.Vars) < 2 {
		folded, err := wr.foldFactor(f)
		if err != nil {
			return wr.fail(wr.wrap(err))
		}
		if folded {
			return nil
		}
	}
	rel := wr.records.size
	if err := wr.record(f); err != nil {
		return wr.fail(wr.wrap(err))
	}
	wr.nfactors++
	wr.floats(f.Table)
	wr.floats(f.EmissionScores())
	if wr.err != nil {
		return wr.fail(wr.wrap(wr.err))
	}
	if wr.report.Factor != nil {
		wr.report.Factor(WrittenFactor{A: wr.nfactors - 1, Rel: rel, Entries: len(f.Table) + len(f.EmissionScores()),
			Factor: f, Cards: &wr.cards})
	}
	return nil
}

// record appends f's record, as the structure section holds it, to the
// records' spill; its payload starts at the payload written so far.
func (wr *Writer) record(f *model.Factor) error {
	b := wr.scratch[:0]
	le := binary.LittleEndian
	b = append(b, uint8(f.Kind))
	b = le.AppendUint32(b, uint32(len(f.Vars)))
	for _, v := range f.Vars {
		if len(b)+4 > len(wr.scratch) {
			if err := wr.records.write(b); err != nil {
				return err
			}
			b = wr.scratch[:0]
		}
		b = le.AppendUint32(b, uint32(v))
	}
	if len(b)+len(f.NegatedInputs())+32 > len(wr.scratch) {
		if err := wr.records.write(b); err != nil {
			return err
		}
		b = wr.scratch[:0]
	}
	switch {
	case f.Kind == model.Dense:
		b = le.AppendUint64(b, uint64(wr.payload))
		b = le.AppendUint64(b, uint64(len(f.Table)))
	case f.Kind == model.Sequence:
		b = le.AppendUint64(b, uint64(wr.payload))
		b = le.AppendUint64(b, uint64(len(f.Table)))
		b = le.AppendUint64(b, uint64(len(f.EmissionScores())))
	case f.Kind == model.Pair || f.Kind == model.Potts:
		b = le.AppendUint64(b, math.Float64bits(f.Weight))
	case f.Kind.IsTruncated():
		b = le.AppendUint64(b, math.Float64bits(f.Weight))
		b = le.AppendUint64(b, math.Float64bits(f.Trunc))
	default: // logic
		if negs := f.NegatedInputs(); negs != nil {
			b = append(b, 1)
			for _, neg := range negs {
				if neg {
					b = append(b, 1)
				} else {
					b = append(b, 0)
				}
			}
		} else {
			b = append(b, 0)
		}
		if f.Kind == model.Budget {
			b = le.AppendUint32(b, uint32(f.BudgetBound()))
		}
	}
	return wr.records.write(b)
}

// foldFactor adds f, a checked factor over fewer than 2 variables (whose
// cardinalities are in wr.scr.cards), to the constant or its variable's
// unary, unless a sum would be invalid; it reports whether it did.
func (wr *Writer) foldFactor(f *model.Factor) (bool, error) {
	t := f.Table
	if f.Kind != model.Dense {
		local := model.New(wr.scr.cards)
		g := *f
		g.Vars = []int{0}[:len(f.Vars)]
		local.Factors = []model.Factor{g}
		t = local.DenseTable(0)
	}
	if len(f.Vars) == 0 {
		c := wr.constant + t[0]
		if math.IsNaN(c) || math.IsInf(c, 0) {
			return false, nil
		}
		wr.constant = c
		wr.folded++
		return true, nil
	}
	off, card := wr.cards.Unary(f.Vars[0])
	u, err := wr.unary.span(8*int64(off), 8*int64(card))
	if err != nil {
		return false, err
	}
	le := binary.LittleEndian
	for s := range card {
		if badValue(math.Float64frombits(le.Uint64(u[8*s:]))+t[s]) != "" {
			return false, nil
		}
	}
	for s := range card {
		x := math.Float64frombits(le.Uint64(u[8*s:])) + t[s]
		le.PutUint64(u[8*s:], math.Float64bits(x))
		if math.IsInf(x, -1) {
			wr.forbid(f.Vars[0], s)
		}
	}
	wr.folded++
	return true, nil
}

// floats writes payload values, updating the block checksums.
func (wr *Writer) floats(vs []float64) {
	for len(vs) > 0 && wr.err == nil {
		n := min(len(vs), len(wr.scratch)/8)
		putFloats(wr.scratch, vs[:n])
		wr.payloadBytes(wr.scratch[:8*n])
		vs = vs[n:]
	}
}

func (wr *Writer) payloadBytes(p []byte) {
	for len(p) > 0 {
		n := min(int64(len(p)), wr.blockSize-wr.fill)
		wr.crc = crc32.Update(wr.crc, castagnoli, p[:n])
		if _, err := wr.w.Write(p[:n]); err != nil {
			wr.err = err
			return
		}
		wr.fill += n
		wr.payload += n
		if wr.fill == wr.blockSize {
			wr.endBlock()
		}
		p = p[n:]
	}
}

// endBlock appends the current block's checksum to the index.
func (wr *Writer) endBlock() {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], wr.crc)
	if err := wr.index.write(b[:]); err != nil && wr.err == nil {
		wr.err = err
	}
	wr.crc, wr.fill = 0, 0
}

// crcWriter counts and checksums what goes through it.
type crcWriter struct {
	w   *bufio.Writer
	crc uint32
	n   int64
	b   [8]byte
}

func (c *crcWriter) write(p []byte) {
	c.crc = crc32.Update(c.crc, castagnoli, p)
	c.n += int64(len(p))
	c.w.Write(p) // a bufio error is sticky: Flush reports it
}
func (c *crcWriter) u64(v uint64)  { binary.LittleEndian.PutUint64(c.b[:], v); c.write(c.b[:]) }
func (c *crcWriter) f64(v float64) { c.u64(math.Float64bits(v)) }

// Close writes the structure (the cardinalities from their runs, then the
// unaries' and the records' spills), the block index and the trailer,
// flushes, and removes the temporary files. It does not close the
// underlying writer. After an error it only removes the temporary files
// and returns the error.
func (wr *Writer) Close() error {
	defer wr.Abort()
	if wr.err != nil {
		return wr.err
	}
	if wr.ctx != nil && wr.ctx.Err() != nil {
		return wr.fail(fmt.Errorf("indexed: write stopped: %w", context.Cause(wr.ctx)))
	}
	if wr.fill > 0 {
		wr.endBlock()
		if wr.err != nil {
			return wr.fail(wr.wrap(wr.err))
		}
	}
	blocks := wr.index.size / 4
	t := trailer{payloadOff: headerSize, payloadLen: uint64(wr.payload), structOff: uint64(headerSize + wr.payload),
		blocks: uint64(blocks), nvars: uint64(wr.nvars), nfactors: uint64(wr.nfactors),
		blockSize: uint32(wr.blockSize), version: Version}
	c := &crcWriter{w: wr.w}
	c.f64(wr.constant)
	c.u64(uint64(wr.nvars))
	wr.writeCards(c)
	if err := wr.unary.copyTo(c.write); err != nil {
		return wr.fail(wr.wrap(err))
	}
	c.u64(uint64(wr.nfactors))
	records := int64(t.structOff) + c.n
	if err := wr.records.copyTo(c.write); err != nil {
		return wr.fail(wr.wrap(err))
	}
	t.structLen, t.structCRC = uint64(c.n), c.crc
	t.indexOff = t.structOff + t.structLen
	ic := &crcWriter{w: wr.w}
	if err := wr.index.copyTo(ic.write); err != nil {
		return wr.fail(wr.wrap(err))
	}
	t.indexCRC = ic.crc
	wr.w.Write(t.encode())
	if err := wr.w.Flush(); err != nil {
		return wr.fail(wr.wrap(err))
	}
	wr.err = errors.New("indexed: writer is closed")
	if wr.report.Closed != nil {
		wr.report.Closed(Written{Size: int64(t.indexOff) + ic.n + trailerSize, StructureCRC: t.structCRC,
			Records: records, NumVars: wr.nvars, NumFactors: wr.nfactors, Cards: wr.cards,
			ForbiddenVar: wr.forbidVar, ForbiddenState: wr.forbidState})
	}
	return nil
}

// writeCards writes the cardinalities, 4 bytes each, from their runs.
func (wr *Writer) writeCards(c *crcWriter) {
	b := wr.scratch
	for v := 0; v < wr.nvars; {
		card, n := wr.cards.Card(v), 0
		for ; n < len(b)/4 && v < wr.nvars && wr.cards.Card(v) == card; n, v = n+1, v+1 {
			binary.LittleEndian.PutUint32(b[4*n:], uint32(card))
		}
		c.write(b[:4*n])
	}
}

// Abort removes the writer's temporary files and makes it fail from now
// on; the output written so far is incomplete. Close calls it; calling it
// again does nothing.
func (wr *Writer) Abort() {
	if wr.err == nil {
		wr.err = errors.New("indexed: writer is aborted")
	}
	wr.unary.release()
	wr.records.release()
	wr.index.release()
}

// Write writes m whole to w in the indexed format.
func Write(w io.Writer, m *model.Model, opts WriteOptions) error {
	wr, err := NewWriter(w, m, opts)
	if err != nil {
		return err
	}
	for a := range m.Factors {
		if err := wr.Add(&m.Factors[a]); err != nil {
			wr.Abort()
			return err
		}
	}
	return wr.Close()
}

// WriteFile writes m to the file at path, spilling the structure to
// temporary files beside it; on failure it removes the partial file.
func WriteFile(path string, m *model.Model) error {
	opts := WriteOptions{TempDir: filepath.Dir(path)}
	return writeFile(path, func(w io.Writer) error { return Write(w, m, opts) })
}

// WriteStream writes the model that src gives to w: the variables (their
// cardinalities and unaries), then the factors one by one as src gives
// them, so that nothing of the model is held but what the Writer holds (in
// memory unless opts.TempDir, see Writer). progress, when not nil, is told
// of each piece (a variable's unaries, a factor).
func WriteStream(w io.Writer, src model.Source, opts WriteOptions, progress model.Progress) error {
	n := src.NumVars()
	states, limit := 0, maxStates(opts)
	for i := range n {
		c := src.Card(i)
		if c < 1 || c > math.MaxUint32 {
			return fmt.Errorf("indexed: variable %d: cardinality %d", i, c)
		}
		if c > limit-states {
			return fmt.Errorf("indexed: variable %d: more than %d states in all", i, limit)
		}
		states += c
	}
	wr, err := NewStreamWriter(w, src.Constant(), opts)
	if err != nil {
		return err
	}
	total := int64(n + src.NumFactors())
	var done int64
	next := 0
	src.EachUnaries(func(i int, u []float64) {
		if err == nil && (i != next || len(u) != src.Card(i)) {
			err = fmt.Errorf("indexed: variable %d: %d unary entries from the source", i, len(u))
		}
		if err == nil {
			err = wr.AddVar(len(u), u)
			next++
			progress.Step(&done, total)
		}
	})
	if err == nil && next != n {
		err = fmt.Errorf("indexed: the source gave the unaries of %d variables of %d", next, n)
	}
	if err != nil {
		wr.Abort()
		return err
	}
	src.EachFactor(func(a int, f *model.Factor) {
		if err == nil {
			err = wr.Add(f)
			progress.Step(&done, total)
		}
	})
	if err != nil {
		wr.Abort()
		return err
	}
	return wr.Close()
}

// WriteStreamFile is WriteStream to the file at path, spilling to
// temporary files beside it unless opts.TempDir says where; on failure it
// removes the partial file and the temporary files.
func WriteStreamFile(path string, src model.Source, opts WriteOptions, progress model.Progress) error {
	if opts.TempDir == "" {
		opts.TempDir = filepath.Dir(path)
	}
	return writeFile(path, func(w io.Writer) error { return WriteStream(w, src, opts, progress) })
}

// writeFile creates the file at path and writes it with write, removing it
// on failure.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("indexed: %w", err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("indexed: write %s: %w", path, cerr)
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
