package indexed

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"

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
}

// Writer writes an indexed model file in one pass: the header, then each
// factor's payload as Add is called, and on Close the structure, the block
// index and the trailer. It keeps the structure (scopes, small parameters:
// O(factors x arity)) and no payload, so a model whose tables do not fit in
// memory can be written factor by factor.
type Writer struct {
	w         *bufio.Writer
	err       error
	cards     []int
	unaryOff  []int
	unary     []float64
	constant  float64
	blockSize int64
	fold      bool
	folded    int
	scr       scratch

	payload  int64 // payload bytes written
	fill     int64 // bytes of the current block
	crc      uint32
	crcs     []uint32
	scratch  []byte
	factors  []record
	vars     []uint32 // the scopes, back to back
	negated  []bool   // the negations of the factors that have them, back to back
	nfactors int
	entries  int64
}

// record is a factor's structure as the Writer keeps it.
type record struct {
	kind            model.Kind
	arity           uint32
	negated         bool
	weight          float64
	budget          uint32
	off             int64
	table, emission int64
}

// NewWriter starts an indexed file on w for a model with m's
// cardinalities, unaries and constant (m's factors are ignored: Add them).
// The writer keeps m's Cards, UnaryOff and Unary until Close (a copy of
// Unary with opts.FoldUnary, which changes it); the caller must not change
// them.
func NewWriter(w io.Writer, m *model.Model, opts WriteOptions) (*Writer, error) {
	return newWriter(w, m, opts, opts.FoldUnary)
}

// newWriter is NewWriter, copying m.Unary when copyUnary is set.
func newWriter(w io.Writer, m *model.Model, opts WriteOptions, copyUnary bool) (*Writer, error) {
	bs := int64(opts.BlockSize)
	if bs == 0 {
		bs = DefaultBlockSize
	}
	if !validBlockSize(bs) {
		return nil, fmt.Errorf("indexed: block size %d: want a multiple of 8 in [%d, %d]", bs, MinBlockSize, MaxBlockSize)
	}
	n := len(m.Cards)
	if len(m.UnaryOff) != n+1 || m.UnaryOff[0] != 0 || len(m.Unary) != m.UnaryOff[n] {
		return nil, errors.New("indexed: unary offsets do not match the cardinalities")
	}
	for i, c := range m.Cards {
		if c < 1 || c > math.MaxUint32 || m.UnaryOff[i+1]-m.UnaryOff[i] != c {
			return nil, fmt.Errorf("indexed: variable %d: cardinality %d (%d unary entries)", i, c, m.UnaryOff[i+1]-m.UnaryOff[i])
		}
	}
	for k, v := range m.Unary {
		if s := badValue(v); s != "" {
			return nil, fmt.Errorf("indexed: unary entry %d is %s", k, s)
		}
	}
	if math.IsNaN(m.Constant) || math.IsInf(m.Constant, 0) {
		return nil, fmt.Errorf("indexed: constant %v is not finite", m.Constant)
	}
	wr := &Writer{w: bufio.NewWriterSize(w, 1<<16), cards: m.Cards, unaryOff: m.UnaryOff, unary: m.Unary,
		constant: m.Constant, blockSize: bs, fold: opts.FoldUnary, scratch: make([]byte, 8<<10)}
	if copyUnary {
		wr.unary = slices.Clone(m.Unary)
	}
	var h [headerSize]byte
	copy(h[:], headerMagic)
	binary.LittleEndian.PutUint32(h[8:], Version)
	binary.LittleEndian.PutUint32(h[12:], uint32(bs))
	_, wr.err = wr.w.Write(h[:])
	return wr, wr.wrap(wr.err)
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

// Add appends a factor: its payload (a Dense table, a Sequence's
// transitions then emission) goes to the file now, its structure stays in
// the Writer until Close; or, with WriteOptions.FoldUnary, a factor over
// fewer than 2 variables may be folded. It checks the factor as
// model.Validate does; errors number factors in the order of the Add
// calls.
func (wr *Writer) Add(f *model.Factor) error {
	if wr.err != nil {
		return wr.err
	}
	a := wr.nfactors + wr.folded
	if wr.nfactors >= math.MaxInt32-1 {
		return fmt.Errorf("indexed: more than %d factors", math.MaxInt32-2)
	}
	card := func(v int) int { return wr.cards[v] }
	if msg := checkFactor(f, len(wr.cards), card, len(f.Table), len(f.Emission), &wr.scr); msg != "" {
		return fmt.Errorf("indexed: factor %d (%s): %s", a, f.Kind, msg)
	}
	for _, part := range [][]float64{f.Table, f.Emission} {
		for k, v := range part {
			if s := badValue(v); s != "" {
				return fmt.Errorf("indexed: factor %d (%s): payload entry %d is %s", a, f.Kind, k, s)
			}
		}
	}
	if wr.fold && len(f.Vars) < 2 && wr.foldFactor(f) {
		return nil
	}
	r := record{kind: f.Kind, arity: uint32(len(f.Vars)), weight: f.Weight, budget: uint32(f.Budget),
		off: wr.payload, table: int64(len(f.Table)), emission: int64(len(f.Emission))}
	for _, v := range f.Vars {
		wr.vars = append(wr.vars, uint32(v))
	}
	if f.Kind.IsLogic() && f.Negated != nil {
		r.negated = true
		wr.negated = append(wr.negated, f.Negated...)
	}
	wr.factors = append(wr.factors, r)
	wr.nfactors++
	wr.floats(f.Table)
	wr.floats(f.Emission)
	return wr.wrap(wr.err)
}

// foldFactor adds f, a checked factor over fewer than 2 variables (whose
// cardinalities are in wr.scr.cards), to the constant or its variable's
// unary, unless a sum would be invalid; it reports whether it did.
func (wr *Writer) foldFactor(f *model.Factor) bool {
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
			return false
		}
		wr.constant = c
	} else {
		v := f.Vars[0]
		u := wr.unary[wr.unaryOff[v]:wr.unaryOff[v+1]]
		for s := range u {
			if badValue(u[s]+t[s]) != "" {
				return false
			}
		}
		for s := range u {
			u[s] += t[s]
		}
	}
	wr.folded++
	return true
}

// floats writes payload values, updating the block checksums.
func (wr *Writer) floats(vs []float64) {
	for len(vs) > 0 && wr.err == nil {
		n := min(len(vs), len(wr.scratch)/8)
		for i, v := range vs[:n] {
			binary.LittleEndian.PutUint64(wr.scratch[8*i:], math.Float64bits(v))
		}
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
			wr.crcs = append(wr.crcs, wr.crc)
			wr.crc, wr.fill = 0, 0
		}
		p = p[n:]
	}
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
func (c *crcWriter) u8(v uint8)    { c.write([]byte{v}) }
func (c *crcWriter) u32(v uint32)  { binary.LittleEndian.PutUint32(c.b[:], v); c.write(c.b[:4]) }
func (c *crcWriter) u64(v uint64)  { binary.LittleEndian.PutUint64(c.b[:], v); c.write(c.b[:]) }
func (c *crcWriter) f64(v float64) { c.u64(math.Float64bits(v)) }

// Close writes the structure, the block index and the trailer, and flushes.
// It does not close the underlying writer.
func (wr *Writer) Close() error {
	if wr.err != nil {
		return wr.err
	}
	if wr.fill > 0 {
		wr.crcs = append(wr.crcs, wr.crc)
	}
	t := trailer{payloadOff: headerSize, payloadLen: uint64(wr.payload), structOff: uint64(headerSize + wr.payload),
		blocks: uint64(len(wr.crcs)), nvars: uint64(len(wr.cards)), nfactors: uint64(wr.nfactors),
		blockSize: uint32(wr.blockSize), version: Version}
	c := &crcWriter{w: wr.w}
	c.f64(wr.constant)
	c.u64(uint64(len(wr.cards)))
	for _, card := range wr.cards {
		c.u32(uint32(card))
	}
	for _, v := range wr.unary {
		c.f64(v)
	}
	c.u64(uint64(wr.nfactors))
	vi, ni := 0, 0
	for _, r := range wr.factors {
		c.u8(uint8(r.kind))
		c.u32(r.arity)
		for _, v := range wr.vars[vi : vi+int(r.arity)] {
			c.u32(v)
		}
		switch {
		case r.kind == model.Dense:
			c.u64(uint64(r.off))
			c.u64(uint64(r.table))
		case r.kind == model.Sequence:
			c.u64(uint64(r.off))
			c.u64(uint64(r.table))
			c.u64(uint64(r.emission))
		case r.kind == model.Pair || r.kind == model.Potts:
			c.f64(r.weight)
		default: // logic
			if r.negated {
				c.u8(1)
				for _, b := range wr.negated[ni : ni+int(r.arity)] {
					if b {
						c.u8(1)
					} else {
						c.u8(0)
					}
				}
				ni += int(r.arity)
			} else {
				c.u8(0)
			}
			if r.kind == model.Budget {
				c.u32(r.budget)
			}
		}
		vi += int(r.arity)
	}
	t.structLen, t.structCRC = uint64(c.n), c.crc
	t.indexOff = t.structOff + t.structLen
	ic := &crcWriter{w: wr.w}
	for _, v := range wr.crcs {
		ic.u32(v)
	}
	t.indexCRC = ic.crc
	wr.w.Write(t.encode())
	wr.err = wr.w.Flush()
	if wr.err == nil {
		wr.err = errors.New("indexed: writer is closed")
		return nil
	}
	return wr.wrap(wr.err)
}

// Write writes m whole to w in the indexed format.
func Write(w io.Writer, m *model.Model, opts WriteOptions) error {
	wr, err := NewWriter(w, m, opts)
	if err != nil {
		return err
	}
	for a := range m.Factors {
		if err := wr.Add(&m.Factors[a]); err != nil {
			return err
		}
	}
	return wr.Close()
}

// WriteFile writes m to the file at path; on failure it removes the
// partial file.
func WriteFile(path string, m *model.Model) error {
	return writeFile(path, func(w io.Writer) error { return Write(w, m, WriteOptions{}) })
}

// WriteStream writes the model that src gives to w: it reads the
// cardinalities and unaries (which the Writer holds until Close, as
// NewWriter does, without another copy), then adds the factors one by one
// as src gives them, so that nothing else of the model is held: memory is
// the unaries plus the Writer's structure (O(factors x arity)). progress,
// when not nil, is told of each piece (a variable's unaries, a factor).
func WriteStream(w io.Writer, src model.Source, opts WriteOptions, progress model.Progress) error {
	n := src.NumVars()
	m := &model.Model{Cards: make([]int, n), UnaryOff: make([]int, n+1), Constant: src.Constant()}
	for i := range n {
		c := src.Card(i)
		if c < 1 || c > math.MaxUint32 {
			return fmt.Errorf("indexed: variable %d: cardinality %d", i, c)
		}
		if c > model.MaxTableEntries-m.UnaryOff[i] {
			return fmt.Errorf("indexed: variable %d: more than %d states in all", i, model.MaxTableEntries)
		}
		m.Cards[i], m.UnaryOff[i+1] = c, m.UnaryOff[i]+c
	}
	m.Unary = make([]float64, m.UnaryOff[n])
	total := int64(n + src.NumFactors())
	var done int64
	var err error
	src.EachUnaries(func(i int, u []float64) {
		if err == nil && (i < 0 || i >= n || len(u) != m.Cards[i]) {
			err = fmt.Errorf("indexed: variable %d: %d unary entries from the source", i, len(u))
		}
		if err == nil {
			copy(m.Unaries(i), u)
			progress.Step(&done, total)
		}
	})
	if err != nil {
		return err
	}
	wr, err := newWriter(w, m, opts, false)
	if err != nil {
		return err
	}
	src.EachFactor(func(a int, f *model.Factor) {
		if err == nil {
			err = wr.Add(f)
			progress.Step(&done, total)
		}
	})
	if err != nil {
		return err
	}
	return wr.Close()
}

// WriteStreamFile is WriteStream to the file at path; on failure it
// removes the partial file.
func WriteStreamFile(path string, src model.Source, opts WriteOptions, progress model.Progress) error {
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
