package indexed

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/ddrun/ddrun/model"
)

// ReadOptions say how an indexed file is read.
type ReadOptions struct {
	// MaxEntries bounds the total payload entries (tables, transitions,
	// emissions) and, on its own, the total states (0:
	// model.DefaultMaxEntries), checked before memory is set aside.
	MaxEntries int
	// Ranges: MaxEntries bounds what each range read takes (ReadRecords'
	// payload entries, ReadVars' states: a part of the model), not the
	// model's totals, which a Scanner's Walk and ReadCards stream without
	// holding (a sharded run's plan, and each worker's cardinalities).
	// The file's own sections still bound those totals.
	Ranges bool
	// Context, when not nil, stops the reading once it ends.
	Context context.Context
}

// Payload says where a factor's payload lies: Table entries (a Dense
// table or a Sequence's transitions) then Emission entries, float64 each,
// from byte Off of the file.
type Payload struct {
	Off             int64
	Table, Emission int
}

// Entries returns the payload's number of float64 entries.
func (p Payload) Entries() int { return p.Table + p.Emission }

// Structure is what the structure section holds: the model without its
// payloads, and where each factor's payload lies.
type Structure struct {
	// Name names the file in errors.
	Name string
	// Model has the cardinalities, unaries, constant and every factor's
	// kind, scope and parameters; Dense and Sequence factors have nil
	// Table and Emission (ReadFactors reads them), so Model.Validate fails
	// on it while it has any.
	Model *model.Model
	// Payloads[a] is factor a's payload (zero for factors without one).
	Payloads []Payload
	// Entries is the total of the payloads' entries.
	Entries int

	layout
}

// layout is what an opened file's header, trailer and block index say:
// where its sections lie and the payload blocks' checksums (O(blocks)).
type layout struct {
	name string
	t    trailer
	crcs []uint32
	ctx  context.Context
}

func (l *layout) payloadOff() int64 { return int64(l.t.payloadOff) }
func (l *layout) payloadLen() int64 { return int64(l.t.payloadLen) }
func (l *layout) blockSize() int64  { return int64(l.t.blockSize) }
func (l *layout) structOff() int64  { return int64(l.t.structOff) }
func (l *layout) structEnd() int64  { return int64(l.t.structOff + l.t.structLen) }

// stopped returns the error of a reading whose context has ended, or nil.
func (l *layout) stopped() error {
	if l.ctx != nil && l.ctx.Err() != nil {
		return errf(l.name, "reading stopped: %v", context.Cause(l.ctx))
	}
	return nil
}

func errf(name, format string, args ...any) error {
	return fmt.Errorf("indexed: %s: %s", name, fmt.Sprintf(format, args...))
}

// ReadFile reads the whole model in the file at path.
func ReadFile(path string, opts ReadOptions) (*model.Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("indexed: %w", err)
	}
	defer f.Close()
	return ReadOpened(f, path, opts)
}

// ReadOpened reads the whole model in the opened regular file f (by byte
// ranges: f's offset does not matter and is not moved).
func ReadOpened(f *os.File, name string, opts ReadOptions) (*model.Model, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("indexed: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errf(name, "not a regular file (the format is read by byte ranges)")
	}
	return ReadModel(f, fi.Size(), name, opts)
}

// ReadModel reads the whole model: the structure, then every payload.
func ReadModel(r io.ReaderAt, size int64, name string, opts ReadOptions) (*model.Model, error) {
	s, err := ReadStructure(r, size, name, opts)
	if err != nil {
		return nil, err
	}
	ids := make([]int, 0, len(s.Payloads))
	for a, p := range s.Payloads {
		if p.Entries() > 0 {
			ids = append(ids, a)
		}
	}
	fs, err := ReadFactors(r, s, ids)
	if err != nil {
		return nil, err
	}
	m := s.Model
	for i, a := range ids {
		m.Factors[a] = fs[i]
	}
	if err := m.Validate(); err != nil { // not expected: the readers check as they go
		return nil, errf(name, "invalid model: %v", err)
	}
	return m, nil
}

// ReadStructure reads the trailer, the block index and the structure
// section of an indexed file of size bytes, checking their checksums and
// everything they declare; it reads no payload. It reads the structure
// once, as Scanner.Walk does, keeping what it reads.
func ReadStructure(r io.ReaderAt, size int64, name string, opts ReadOptions) (*Structure, error) {
	opts.Ranges = false // it takes the whole model: MaxEntries bounds the total
	sc, err := OpenScan(r, size, name, opts)
	if err != nil {
		return nil, err
	}
	s := &Structure{Name: name, layout: sc.layout}
	m := &model.Model{Constant: sc.constant, Cards: make([]int, sc.nvars), UnaryOff: make([]int, sc.nvars+1)}
	w := sc.newWalker()
	w.flat = m.Cards // OpenScan checked that the section holds this many cards
	var ar intArena
	v := Visitor{
		Unaries: func(i int, u []float64) error {
			if i == 0 { // the walker checked the states against the section
				m.Unary = make([]float64, 0, w.states)
			}
			m.Unary = append(m.Unary, u...)
			m.UnaryOff[i+1] = len(m.Unary)
			return nil
		},
		Factor: func(a int, rec Record, f *model.Factor) error {
			if a == 0 { // the walker checked the count against the section
				m.Factors = make([]model.Factor, sc.NumFactors())
				s.Payloads = make([]Payload, sc.NumFactors())
			}
			g := &m.Factors[a]
			*g = *f
			g.Vars = ar.copy(f.Vars)
			if f.NegatedInputs() != nil {
				g.SetNegated(slices.Clone(f.NegatedInputs()))
			}
			s.Payloads[a] = rec.Payload
			s.Entries += rec.Payload.Entries()
			return nil
		},
	}
	if err := w.walk(v); err != nil {
		return nil, err
	}
	if m.Unary == nil {
		m.Unary = []float64{}
	}
	if m.Factors == nil {
		m.Factors, s.Payloads = []model.Factor{}, []Payload{}
	}
	s.Model = m
	return s, nil
}

// open reads and checks an indexed file's header, trailer and block index.
func open(r io.ReaderAt, size int64, name string, ctx context.Context) (*layout, error) {
	if size < headerSize+trailerSize {
		return nil, errf(name, "%d bytes is too short for an indexed model file (header and trailer take %d)", size, headerSize+trailerSize)
	}
	var h [headerSize]byte
	if err := readAt(r, h[:], 0); err != nil {
		return nil, errf(name, "reading the header: %v", err)
	}
	if string(h[:8]) != headerMagic {
		return nil, errf(name, "not an indexed model file (bad magic %q)", h[:8])
	}
	le := binary.LittleEndian
	if v := le.Uint32(h[8:]); v != Version {
		return nil, errf(name, "format version %d, this reader reads version %d", v, Version)
	}
	tb := make([]byte, trailerSize)
	if err := readAt(r, tb, size-trailerSize); err != nil {
		return nil, errf(name, "reading the trailer: %v", err)
	}
	t, msg := decodeTrailer(tb)
	if msg != "" {
		return nil, errf(name, "%s", msg)
	}
	if msg := t.check(le.Uint32(h[12:]), uint64(size)); msg != "" {
		return nil, errf(name, "trailer: %s", msg)
	}
	idx := make([]byte, 4*t.blocks)
	if err := readAt(r, idx, int64(t.indexOff)); err != nil {
		return nil, errf(name, "reading the block index: %v", err)
	}
	if crc32.Checksum(idx, castagnoli) != t.indexCRC {
		return nil, errf(name, "block index checksum mismatch (corrupt file)")
	}
	l := &layout{name: name, t: t, ctx: ctx, crcs: make([]uint32, t.blocks)}
	for i := range l.crcs {
		l.crcs[i] = le.Uint32(idx[4*i:])
	}
	return l, nil
}

// check checks the trailer's layout against the header's block size and
// the file's size: header, payload, structure, index and trailer back to
// back, nothing else.
func (t *trailer) check(headerBlock uint32, size uint64) string {
	switch {
	case t.version != Version:
		return fmt.Sprintf("format version %d, want %d", t.version, Version)
	case t.blockSize != headerBlock:
		return fmt.Sprintf("block size %d, the header says %d", t.blockSize, headerBlock)
	case !validBlockSize(int64(t.blockSize)):
		return fmt.Sprintf("block size %d: want a multiple of 8 in [%d, %d]", t.blockSize, MinBlockSize, MaxBlockSize)
	case t.payloadOff != headerSize:
		return fmt.Sprintf("payload at byte %d, want %d", t.payloadOff, headerSize)
	case t.payloadLen > size || t.payloadLen%8 != 0:
		return fmt.Sprintf("payload of %d bytes in a file of %d (or not whole float64s)", t.payloadLen, size)
	case t.structOff != t.payloadOff+t.payloadLen:
		return fmt.Sprintf("structure at byte %d, the payload ends at %d", t.structOff, t.payloadOff+t.payloadLen)
	case t.structLen > size || t.indexOff != t.structOff+t.structLen:
		return fmt.Sprintf("block index at byte %d, the structure (%d bytes) ends at %d", t.indexOff, t.structLen, t.structOff+t.structLen)
	case t.blocks != (t.payloadLen+uint64(t.blockSize)-1)/uint64(t.blockSize):
		return fmt.Sprintf("%d blocks for %d payload bytes of %d-byte blocks", t.blocks, t.payloadLen, t.blockSize)
	case t.blocks > size || t.indexOff+4*t.blocks != size-trailerSize:
		return fmt.Sprintf("sections end at byte %d, the trailer starts at %d (torn or padded file)", t.indexOff+4*t.blocks, size-trailerSize)
	}
	return ""
}

// readAt reads len(p) bytes at off; an io.EOF with all of them is no error
// (io.ReaderAt allows it at the end of the input).
func readAt(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// maxRead bounds one ReadAt of ReadFactors.
const maxRead = 1 << 20

// ReadFactors reads the payloads of factors ids (any order, repeats
// allowed) by byte ranges of r: whole checksummed blocks, at most about a
// megabyte at a time, so that what it sets aside is the factors' tables
// and one buffer. It returns the factors in the order of ids, with their
// tables and emissions; scopes and negations are shared with s.Model.
func ReadFactors(r io.ReaderAt, s *Structure, ids []int) ([]model.Factor, error) {
	out := make([]model.Factor, len(ids))
	// The distinct factors with a payload, by offset (= by number), and
	// their entries (at most s.Entries).
	order := make([]int, 0, len(ids))
	seen := make(map[int]bool, len(ids))
	total := 0
	for i, a := range ids {
		if a < 0 || a >= len(s.Payloads) {
			return nil, errf(s.Name, "factor %d out of range [0,%d)", a, len(s.Payloads))
		}
		out[i] = s.Model.Factors[a]
		if e := s.Payloads[a].Entries(); e > 0 && !seen[a] {
			seen[a] = true
			order = append(order, a)
			total += e
		}
	}
	sort.Ints(order)
	arena := make([]float64, total) // one allocation for all the tables
	spans := make([]Payload, len(order))
	vals := make([][]float64, len(order))
	for k, a := range order {
		spans[k] = s.Payloads[a]
		vals[k], arena = splitArena(arena, spans[k].Entries())
	}
	var buf []byte
	err := s.fillBuf(r, spans, vals, &buf, func(k int) error {
		a := order[k]
		return checkValues(s.Name, a, s.Model.Factors[a].Kind, spans[k].Table, vals[k])
	})
	if err != nil {
		return nil, err
	}
	for i, a := range ids {
		k, ok := slices.BinarySearch(order, a)
		if ok {
			setPayload(&out[i], spans[k], vals[k])
		}
	}
	return out, nil
}

// splitArena cuts n values off the front of arena.
func splitArena(arena []float64, n int) ([]float64, []float64) {
	return arena[:n:n], arena[n:]
}

// setPayload gives f the values v of payload p: its table, then its
// emission (nil when p has none).
func setPayload(f *model.Factor, p Payload, v []float64) {
	f.Table = v[:p.Table:p.Table]
	if p.Emission > 0 {
		f.SetEmission(v[p.Table:])
	}
}

// fillBuf reads payloads spans (sorted by offset, not overlapping, each
// with entries) into vals (vals[k] has spans[k]'s entries): it reads whole
// blocks, a run of neighbouring ones at a time up to maxRead bytes, checks
// their checksums, decodes the values and calls check(k) once span k is
// whole. *buf is its buffer, made when too small.
func (l *layout) fillBuf(r io.ReaderAt, spans []Payload, vals [][]float64, bufp *[]byte, check func(k int) error) error {
	bs, pOff, pLen := l.blockSize(), l.payloadOff(), l.payloadLen()
	if len(spans) == 0 {
		return nil
	}
	if size := max(bs, min(maxRead, pLen)/bs*bs); int64(cap(*bufp)) < size {
		*bufp = make([]byte, 0, size)
	}
	buf := (*bufp)[:0]
	j := 0        // first span not wholly decoded
	var pos int64 // payload bytes before pos are decoded
	span := func(k int) (int64, int64) {
		o := spans[k].Off - pOff
		return o, o + 8*int64(spans[k].Entries())
	}
	for j < len(spans) {
		if err := l.stopped(); err != nil {
			return err
		}
		// A run of whole blocks from span j's first undecoded byte, over
		// the following spans while no whole block lies between them, up
		// to cap(buf) bytes.
		o, end := span(j)
		lo := max(pos, o) / bs
		limit := lo*bs + int64(cap(buf))
		for k := j + 1; k < len(spans) && end < limit; k++ {
			ko, ke := span(k)
			if ko/bs > (end-1)/bs+1 {
				break
			}
			end = max(end, ke)
		}
		hi := min((end+bs-1)/bs*bs, limit, pLen) // the run is [lo*bs, hi)
		buf = buf[:hi-lo*bs]
		if err := l.readBlocks(r, buf, lo); err != nil {
			return err
		}
		// Decode what the run holds of spans j, j+1, ...
		runLo := lo * bs
		pos = hi
		for k := j; k < len(spans); k++ {
			o, fe := span(k)
			if o >= hi {
				break
			}
			from, to := max(o, runLo), min(fe, hi)
			v := vals[k]
			for x := from; x < to; x += 8 {
				v[(x-o)/8] = math.Float64frombits(binary.LittleEndian.Uint64(buf[x-runLo:]))
			}
			if to == fe {
				if k == j {
					j++
				}
				if err := check(k); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// readBlocks reads len(buf) payload bytes from block lo on and checks the
// blocks' checksums.
func (l *layout) readBlocks(r io.ReaderAt, buf []byte, lo int64) error {
	bs, pOff := l.blockSize(), l.payloadOff()
	if err := readAt(r, buf, pOff+lo*bs); err != nil {
		return errf(l.name, "reading payload bytes %d..%d: %v", pOff+lo*bs, pOff+lo*bs+int64(len(buf)), err)
	}
	for b := int64(0); b*bs < int64(len(buf)); b++ {
		blk := buf[b*bs : min((b+1)*bs, int64(len(buf)))]
		if crc32.Checksum(blk, castagnoli) != l.crcs[lo+b] {
			return errf(l.name, "payload block %d (bytes %d..%d) checksum mismatch (corrupt file)", lo+b, pOff+(lo+b)*bs, pOff+(lo+b)*bs+int64(len(blk)))
		}
	}
	return nil
}

// checkValues applies the log-potential rules to the payload v of factor
// a, of the given kind, whose first table entries are its table (or
// transitions).
func checkValues(name string, a int, kind model.Kind, table int, v []float64) error {
	for k, x := range v {
		if msg := badValue(x); msg != "" {
			what := "table entry"
			if kind == model.Sequence {
				what = "transition entry"
				if k >= table {
					what, k = "emission entry", k-table
				}
			}
			return errf(name, "factor %d (%s): %s %d is %s", a, kind, what, k, msg)
		}
	}
	return nil
}
