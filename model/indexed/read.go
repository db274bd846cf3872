package indexed

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"sort"

	"github.com/ddrun/ddrun/model"
)

// ReadOptions say how an indexed file is read.
type ReadOptions struct {
	// MaxEntries bounds the total payload entries (tables, transitions,
	// emissions) and, on its own, the total states (0:
	// model.DefaultMaxEntries), checked before memory is set aside.
	MaxEntries int
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

	payloadOff, payloadLen, blockSize int64
	crcs                              []uint32
	ctx                               context.Context
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
// everything they declare; it reads no payload.
func ReadStructure(r io.ReaderAt, size int64, name string, opts ReadOptions) (*Structure, error) {
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
	s := &Structure{Name: name, payloadOff: int64(t.payloadOff), payloadLen: int64(t.payloadLen),
		blockSize: int64(t.blockSize), ctx: opts.Context}
	idx := make([]byte, 4*t.blocks)
	if err := readAt(r, idx, int64(t.indexOff)); err != nil {
		return nil, errf(name, "reading the block index: %v", err)
	}
	if crc32.Checksum(idx, castagnoli) != t.indexCRC {
		return nil, errf(name, "block index checksum mismatch (corrupt file)")
	}
	s.crcs = make([]uint32, t.blocks)
	for i := range s.crcs {
		s.crcs[i] = le.Uint32(idx[4*i:])
	}
	sec := io.NewSectionReader(r, int64(t.structOff), int64(t.structLen))
	h32 := crc32.New(castagnoli)
	if _, err := io.Copy(h32, sec); err != nil {
		return nil, errf(name, "reading the structure: %v", err)
	}
	if h32.Sum32() != t.structCRC {
		return nil, errf(name, "structure checksum mismatch (corrupt file)")
	}
	d := &decoder{r: bufio.NewReaderSize(io.NewSectionReader(r, int64(t.structOff), int64(t.structLen)), 1<<16),
		left: int64(t.structLen), name: name}
	if err := d.structure(s, &t, model.EntryLimit(opts.MaxEntries)); err != nil {
		return nil, err
	}
	return s, nil
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

// decoder reads the structure section, knowing how many bytes are left so
// that no count it reads makes it set aside more than the section holds.
type decoder struct {
	r    *bufio.Reader
	left int64
	name string
	b    [8]byte
	err  error
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return d.b[:n]
	}
	if int64(n) > d.left {
		d.err = errf(d.name, "structure ends early (%d bytes left, %d wanted)", d.left, n)
		return d.b[:n]
	}
	if _, err := io.ReadFull(d.r, d.b[:n]); err != nil {
		d.err = errf(d.name, "reading the structure: %v", err)
	}
	d.left -= int64(n)
	return d.b[:n]
}
func (d *decoder) u8() uint8    { return d.bytes(1)[0] }
func (d *decoder) u32() uint32  { return binary.LittleEndian.Uint32(d.bytes(4)) }
func (d *decoder) u64() uint64  { return binary.LittleEndian.Uint64(d.bytes(8)) }
func (d *decoder) f64() float64 { return math.Float64frombits(d.u64()) }

// count reads a u64 count of items of at least minBytes bytes each,
// failing when the section cannot hold them.
func (d *decoder) count(what string, minBytes int64) int {
	n := d.u64()
	if d.err == nil && n > uint64(d.left/minBytes) {
		d.err = errf(d.name, "%s: %d, more than the structure's %d remaining bytes can hold", what, n, d.left)
		return 0
	}
	return int(n)
}

func (d *decoder) structure(s *Structure, t *trailer, limit int) error {
	name := d.name
	m := &model.Model{Constant: d.f64()}
	if d.err == nil && (math.IsNaN(m.Constant) || math.IsInf(m.Constant, 0)) {
		return errf(name, "constant %v is not finite", m.Constant)
	}
	n := d.count("number of variables", 4)
	if d.err == nil && uint64(n) != t.nvars {
		return errf(name, "structure has %d variables, the trailer says %d", n, t.nvars)
	}
	if d.err != nil {
		return d.err
	}
	m.Cards = make([]int, n)
	m.UnaryOff = make([]int, n+1)
	states := 0
	for i := range m.Cards {
		c := int(d.u32())
		if d.err != nil {
			return d.err
		}
		if c < 1 {
			return errf(name, "variable %d: cardinality %d < 1", i, c)
		}
		if c > limit-states {
			return errf(name, "variable %d: cardinality %d brings the total number of states over the limit of %d", i, c, limit)
		}
		states += c
		m.Cards[i], m.UnaryOff[i+1] = c, states
	}
	if int64(states) > d.left/8 {
		return errf(name, "%d unary entries, more than the structure holds", states)
	}
	m.Unary = make([]float64, states)
	for k := range m.Unary {
		m.Unary[k] = d.f64()
		if msg := badValue(m.Unary[k]); msg != "" && d.err == nil {
			return errf(name, "unary entry %d is %s", k, msg)
		}
	}
	nf := d.count("number of factors", 5)
	if d.err == nil && uint64(nf) != t.nfactors {
		return errf(name, "structure has %d factors, the trailer says %d", nf, t.nfactors)
	}
	if d.err != nil {
		return d.err
	}
	m.Factors = make([]model.Factor, nf)
	s.Payloads = make([]Payload, nf)
	stamp := make([]int32, n)
	var next int64 // where the next payload must start, payload-relative
	for a := range m.Factors {
		if a&0xffff == 0 && s.ctx != nil && s.ctx.Err() != nil {
			return errf(name, "reading stopped: %v", context.Cause(s.ctx))
		}
		if err := d.factor(m, s, a, stamp, &next, limit); err != nil {
			return err
		}
	}
	if d.err != nil {
		return d.err
	}
	if d.left != 0 {
		return errf(name, "%d bytes follow the last factor in the structure", d.left)
	}
	if next != s.payloadLen {
		return errf(name, "the factors' payloads take %d bytes, the payload section has %d", next, s.payloadLen)
	}
	s.Model = m
	return nil
}

func (d *decoder) factor(m *model.Model, s *Structure, a int, stamp []int32, next *int64, limit int) error {
	name := d.name
	f := &m.Factors[a]
	f.Kind = model.Kind(d.u8())
	arity := d.u32()
	if d.err != nil {
		return d.err
	}
	if uint64(arity) > uint64(len(m.Cards)) || int64(arity) > d.left/4 {
		return errf(name, "factor %d: scope of %d variables (the model has %d)", a, arity, len(m.Cards))
	}
	f.Vars = make([]int, arity)
	for k := range f.Vars {
		f.Vars[k] = int(d.u32())
	}
	var p Payload
	var off uint64
	switch {
	case f.Kind == model.Dense:
		off, p.Table = d.u64(), d.entries()
	case f.Kind == model.Sequence:
		off, p.Table = d.u64(), d.entries()
		p.Emission = d.entries()
	case f.Kind == model.Pair || f.Kind == model.Potts:
		f.Weight = d.f64()
	case f.Kind.IsLogic():
		switch d.u8() {
		case 0:
		case 1:
			if int64(arity) > d.left {
				return errf(name, "factor %d: negations run past the structure", a)
			}
			f.Negated = make([]bool, arity)
			for k := range f.Negated {
				switch d.u8() {
				case 0:
				case 1:
					f.Negated[k] = true
				default:
					return errf(name, "factor %d: negation %d is not 0 or 1", a, k)
				}
			}
		default:
			return errf(name, "factor %d: negation flag is not 0 or 1", a)
		}
		if f.Kind == model.Budget {
			f.Budget = int(d.u32())
		}
	}
	if d.err != nil {
		return d.err
	}
	if msg := checkShape(m.Cards, f, p.Table, p.Emission, stamp, a); msg != "" {
		return errf(name, "factor %d (%s): %s", a, f.Kind, msg)
	}
	if e := p.Entries(); e > 0 {
		if int64(off) != *next {
			return errf(name, "factor %d: payload at byte %d of the payload section, want %d (payloads are back to back in factor order)", a, off, *next)
		}
		if e > limit-s.Entries {
			return errf(name, "factor %d: its %d payload entries bring the total over the limit of %d", a, e, limit)
		}
		bytes := 8 * int64(e)
		if bytes > s.payloadLen-*next {
			return errf(name, "factor %d: payload of %d bytes runs past the payload section's end", a, bytes)
		}
		s.Entries += e
		p.Off = s.payloadOff + *next
		*next += bytes
	}
	s.Payloads[a] = p
	return nil
}

// entries reads a u64 entry count, capped so that it fits an int (checkShape
// compares it with what the scope needs).
func (d *decoder) entries() int {
	v := d.u64()
	if v > model.MaxTableEntries {
		return model.MaxTableEntries + 1
	}
	return int(v)
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
	vals := make(map[int][]float64, len(order))
	for _, a := range order {
		e := s.Payloads[a].Entries()
		vals[a], arena = arena[:e:e], arena[e:]
	}
	if err := s.fill(r, order, vals); err != nil {
		return nil, err
	}
	for i, a := range ids {
		v, ok := vals[a]
		if !ok {
			continue
		}
		p := s.Payloads[a]
		out[i].Table = v[:p.Table:p.Table]
		if p.Emission > 0 {
			out[i].Emission = v[p.Table:]
		}
	}
	return out, nil
}

// fill reads the blocks that hold the payloads of order (sorted factor
// numbers), checks their checksums and decodes the values into vals.
func (s *Structure) fill(r io.ReaderAt, order []int, vals map[int][]float64) error {
	bs := s.blockSize
	buf := make([]byte, 0, max(bs, min(maxRead, s.payloadLen)/bs*bs))
	j := 0        // first factor of order not wholly decoded
	var pos int64 // payload bytes before pos are decoded
	span := func(a int) (int64, int64) {
		p := s.Payloads[a]
		o := p.Off - s.payloadOff
		return o, o + 8*int64(p.Entries())
	}
	for j < len(order) {
		if s.ctx != nil && s.ctx.Err() != nil {
			return errf(s.Name, "reading stopped: %v", context.Cause(s.ctx))
		}
		// A run of whole blocks from factor j's first undecoded byte, over
		// the following factors while no whole block lies between them,
		// up to cap(buf) bytes.
		o, end := span(order[j])
		lo := max(pos, o) / bs
		limit := lo*bs + int64(cap(buf))
		for k := j + 1; k < len(order) && end < limit; k++ {
			ko, ke := span(order[k])
			if ko/bs > (end-1)/bs+1 {
				break
			}
			end = max(end, ke)
		}
		hi := min((end+bs-1)/bs*bs, limit, s.payloadLen) // the run is [lo*bs, hi)
		buf = buf[:hi-lo*bs]
		if err := readAt(r, buf, s.payloadOff+lo*bs); err != nil {
			return errf(s.Name, "reading payload bytes %d..%d: %v", s.payloadOff+lo*bs, s.payloadOff+hi, err)
		}
		for b := int64(0); b*bs < int64(len(buf)); b++ {
			blk := buf[b*bs : min((b+1)*bs, int64(len(buf)))]
			if crc32.Checksum(blk, castagnoli) != s.crcs[lo+b] {
				return errf(s.Name, "payload block %d (bytes %d..%d) checksum mismatch (corrupt file)", lo+b, s.payloadOff+(lo+b)*bs, s.payloadOff+(lo+b)*bs+int64(len(blk)))
			}
		}
		// Decode what the run holds of factors j, j+1, ...
		runLo := lo * bs
		pos = hi
		for k := j; k < len(order); k++ {
			a := order[k]
			o, fe := span(a)
			if o >= hi {
				break
			}
			from, to := max(o, runLo), min(fe, hi)
			v := vals[a]
			for x := from; x < to; x += 8 {
				v[(x-o)/8] = math.Float64frombits(binary.LittleEndian.Uint64(buf[x-runLo:]))
			}
			if to == fe {
				if k == j {
					j++
				}
				if err := s.checkValues(a, v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkValues applies the log-potential rules to factor a's payload.
func (s *Structure) checkValues(a int, v []float64) error {
	for k, x := range v {
		if msg := badValue(x); msg != "" {
			f := s.Model.Factors[a]
			what, t := "table entry", s.Payloads[a].Table
			if f.Kind == model.Sequence {
				what = "transition entry"
				if k >= t {
					what, k = "emission entry", k-t
				}
			}
			return errf(s.Name, "factor %d (%s): %s %d is %s", a, f.Kind, what, k, msg)
		}
	}
	return nil
}
