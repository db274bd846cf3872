package indexed

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"

	"github.com/ddrun/ddrun/model"
)

// decoder reads the structure section, or a tail of it, sequentially
// through its own buffer, knowing how many bytes are left so that no count
// it reads makes it set aside more than the section holds.
type decoder struct {
	src  io.Reader
	buf  []byte
	i, n int   // buf[i:n] is read and not yet decoded
	left int64 // bytes left to decode
	end  int64 // the file offset where they end
	name string
	zero [8]byte
	err  error
	// general turns the fast paths of record, readCards and varCards off
	// (the differential tests).
	general bool
}

// newDecoder reads the bytes [off, end) of the file: from in when not nil
// (positioned at off), else from r. Its buffer is up to 64 KiB.
func newDecoder(r io.ReaderAt, in io.Reader, off, end int64, name string) *decoder {
	if in == nil {
		in = io.NewSectionReader(r, off, end-off)
	}
	size := int(min(max(end-off, 4096), 1<<16))
	return &decoder{src: in, buf: make([]byte, size), left: end - off, end: end, name: name}
}

// pos returns the file offset of the next byte to decode.
func (d *decoder) pos() int64 { return d.end - d.left }

// bytes returns the next n bytes (n <= len(d.buf)), valid until the next
// call; zeros after an error.
func (d *decoder) bytes(n int) []byte {
	if d.n-d.i < n && !d.fill(n) {
		return d.zero[:n]
	}
	p := d.buf[d.i : d.i+n]
	d.i += n
	d.left -= int64(n)
	return p
}

// fill makes the buffer hold at least n bytes, or sets d.err.
func (d *decoder) fill(n int) bool {
	if d.err != nil {
		return false
	}
	if int64(n) > d.left {
		d.err = errf(d.name, "structure ends early (%d bytes left, %d wanted)", d.left, n)
		return false
	}
	d.n = copy(d.buf, d.buf[d.i:d.n])
	d.i = 0
	want := int(min(int64(len(d.buf)), d.left)) // never past the section
	k, err := io.ReadAtLeast(d.src, d.buf[d.n:want], n-d.n)
	d.n += k
	if err != nil {
		d.err = errf(d.name, "reading the structure: %v", err)
		return false
	}
	return true
}

// words consumes and returns the next 4-byte words that the buffer holds,
// up to most of them; nil when it holds none (read one with u32, which
// fills it), and always when d.general.
func (d *decoder) words(most int) []byte {
	m := min(most, (d.n-d.i)/4)
	if m <= 0 || d.general {
		return nil
	}
	p := d.buf[d.i : d.i+4*m]
	d.i += 4 * m
	d.left -= int64(4 * m)
	return p
}

func (d *decoder) u8() uint8    { return d.bytes(1)[0] }
func (d *decoder) u32() uint32  { return binary.LittleEndian.Uint32(d.bytes(4)) }
func (d *decoder) u64() uint64  { return binary.LittleEndian.Uint64(d.bytes(8)) }
func (d *decoder) f64() float64 { return math.Float64frombits(d.u64()) }

// floats reads len(dst) float64s: at once when the buffer holds them.
func (d *decoder) floats(dst []float64) {
	if n := 8 * len(dst); n <= d.n-d.i {
		p := d.buf[d.i : d.i+n]
		for i := range dst {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:]))
		}
		d.i += n
		d.left -= int64(n)
		return
	}
	for len(dst) > 0 && d.err == nil {
		k := min(len(dst), len(d.buf)/8)
		p := d.bytes(8 * k)
		for i := range dst[:k] {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:]))
		}
		dst = dst[k:]
	}
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

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

// entries reads a u64 entry count, capped so that it fits an int
// (checkShape compares it with what the scope needs).
func (d *decoder) entries() int { return capEntries(d.u64()) }

// capEntries caps an entry count so that it fits an int: counts over
// model.MaxTableEntries become model.MaxTableEntries+1.
func capEntries(v uint64) int {
	if v > model.MaxTableEntries {
		return model.MaxTableEntries + 1
	}
	return int(v)
}

// record decodes factor a's record into f, reusing f's Vars and Negated,
// and returns its payload's declared offset (within the payload section)
// and entries (p.Off is not set). Of the rules it checks only what the
// decoding needs: the scope's size against nvars and the bytes left, and
// the negation bytes.
func (d *decoder) record(f *model.Factor, a, nvars int) (off uint64, p Payload, err error) {
	if !d.general {
		if off, p, ok := d.small(f, nvars); ok {
			return off, p, nil
		}
	}
	return d.anyRecord(f, a, nvars)
}

// Record sizes: kind (1 byte), arity (4), two variables (8), then a
// weight (Pair, Potts), a weight and a truncation (TruncLinear, TruncQuad)
// or a payload offset and entry count (Dense).
const (
	smallWeighted = 1 + 4 + 8 + 8
	smallTwoWords = smallWeighted + 8
)

// small is record's fast path for the common records: a Pair, Potts,
// TruncLinear, TruncQuad or Dense factor over 2 variables whose whole
// record the buffer holds, read at fixed offsets. It decodes what the
// general path (anyRecord) would, which it leaves everything else to:
// ok is false, nothing consumed. Such a record passes anyRecord's checks
// whenever the model has 2 variables or more: its arity, 2, is at most
// nvars, and the bytes left hold its record, 2*4 bytes or more.
func (d *decoder) small(f *model.Factor, nvars int) (off uint64, p Payload, ok bool) {
	b := d.buf[d.i:d.n]
	if d.err != nil || nvars < 2 || len(b) < smallWeighted {
		return 0, p, false
	}
	le := binary.LittleEndian
	k := model.Kind(b[0])
	if le.Uint32(b[1:]) != 2 {
		return 0, p, false
	}
	size := smallTwoWords
	switch k {
	case model.Pair, model.Potts:
		size = smallWeighted
	case model.Dense, model.TruncLinear, model.TruncQuad:
	default:
		return 0, p, false
	}
	if len(b) < size {
		return 0, p, false
	}
	vars := append(f.Vars[:0], int(le.Uint32(b[5:])), int(le.Uint32(b[9:])))
	*f = model.Factor{Kind: k, Vars: vars}
	if k == model.Dense {
		off = le.Uint64(b[13:])
		p.Table = capEntries(le.Uint64(b[21:]))
	} else {
		f.Weight = math.Float64frombits(le.Uint64(b[13:]))
		if size == smallTwoWords {
			f.Trunc = math.Float64frombits(le.Uint64(b[21:]))
		}
	}
	d.i += size
	d.left -= int64(size)
	return off, p, true
}

// anyRecord is record's general path: any record, field by field.
func (d *decoder) anyRecord(f *model.Factor, a, nvars int) (off uint64, p Payload, err error) {
	name := d.name
	vars, neg := f.Vars[:0], f.NegatedInputs()[:0]
	*f = model.Factor{Kind: model.Kind(d.u8())}
	arity := d.u32()
	if d.err != nil {
		return 0, p, d.err
	}
	if uint64(arity) > uint64(nvars) || int64(arity) > d.left/4 {
		return 0, p, errf(name, "factor %d: scope of %d variables (the model has %d)", a, arity, nvars)
	}
	for range arity {
		vars = append(vars, int(d.u32()))
	}
	f.Vars = vars
	switch {
	case f.Kind == model.Dense:
		off, p.Table = d.u64(), d.entries()
	case f.Kind == model.Sequence:
		off, p.Table = d.u64(), d.entries()
		p.Emission = d.entries()
	case f.Kind == model.Pair || f.Kind == model.Potts:
		f.Weight = d.f64()
	case f.Kind.IsTruncated():
		f.Weight = d.f64()
		f.Trunc = d.f64()
	case f.Kind.IsLogic():
		if err := d.negations(f, neg, a); err != nil {
			return 0, p, err
		}
		if f.Kind == model.Budget {
			f.SetBudget(int(d.u32()))
		}
	}
	return off, p, d.err
}

// negations decodes a logic factor's negation flag and flags into f,
// reusing neg.
func (d *decoder) negations(f *model.Factor, neg []bool, a int) error {
	switch d.u8() {
	case 0:
		return d.err
	case 1:
	default:
		if d.err != nil {
			return d.err
		}
		return errf(d.name, "factor %d: negation flag is not 0 or 1", a)
	}
	n := len(f.Vars)
	if int64(n) > d.left {
		return errf(d.name, "factor %d: negations run past the structure", a)
	}
	for k := range n {
		switch d.u8() {
		case 0:
			neg = append(neg, false)
		case 1:
			neg = append(neg, true)
		default:
			if d.err != nil {
				return d.err
			}
			return errf(d.name, "factor %d: negation %d is not 0 or 1", a, k)
		}
	}
	f.SetNegated(neg)
	return d.err
}

// checker applies the per-factor rules to decoded records: the factor's
// shape against the cardinalities, the payload's place (back to back with
// the previous one) and the entry limit.
type checker struct {
	name    string
	nvars   int
	card    func(v int) int
	limit   int // on the total payload entries
	entries int // the payload entries so far
	// payload is the payload section's offset and length; next is where
	// the next payload must start within it (-1: anywhere, the first of a
	// range read).
	payloadOff, payloadLen, next int64
	scr                          scratch
	// runs, when not nil, are the cardinalities card reads: small looks
	// them up itself, keeping the last run it found (variables [lo, hi) of
	// cardinality runCard), so that a model whose cardinalities are all
	// equal costs no search.
	runs    *CardRuns
	lo, hi  int
	runCard int
	general bool // small is off (the differential tests)
}

// factor checks factor a, whose payload is declared at off (within the
// payload section) with p's entries, and sets p.Off (a file offset).
func (c *checker) factor(a int, f *model.Factor, off uint64, p *Payload) error {
	if c.general || !c.small(f, p) {
		if msg := checkFactor(f, c.nvars, c.card, p.Table, p.Emission, &c.scr); msg != "" {
			return errf(c.name, "factor %d (%s): %s", a, f.Kind, msg)
		}
	}
	e := p.Entries()
	if e == 0 {
		return nil
	}
	if c.next >= 0 && off != uint64(c.next) {
		return errf(c.name, "factor %d: payload at byte %d of the payload section, want %d (payloads are back to back in factor order)", a, off, c.next)
	}
	if off%8 != 0 || off > uint64(c.payloadLen) {
		return errf(c.name, "factor %d: payload at byte %d of a payload section of %d bytes", a, off, c.payloadLen)
	}
	if e > c.limit-c.entries {
		return errf(c.name, "factor %d: its %d payload entries bring the total over the limit of %d", a, e, c.limit)
	}
	bytes := 8 * int64(e)
	if bytes > c.payloadLen-int64(off) {
		return errf(c.name, "factor %d: payload of %d bytes runs past the payload section's end", a, bytes)
	}
	c.entries += e
	p.Off = c.payloadOff + int64(off)
	c.next = int64(off) + bytes
	return nil
}

// small is factor's fast path for the common factors, a Pair, Potts,
// TruncLinear, TruncQuad or Dense factor over 2 variables: it reports
// whether f passes checkFactor (without its general scope search), and
// false for anything else, which checkFactor then checks and words the
// error of.
func (c *checker) small(f *model.Factor, p *Payload) bool {
	if len(f.Vars) != 2 {
		return false
	}
	v0, v1 := f.Vars[0], f.Vars[1]
	if uint(v0) >= uint(c.nvars) || uint(v1) >= uint(c.nvars) || v0 == v1 {
		return false
	}
	c0, c1 := c.cardOf(v0), c.cardOf(v1)
	if c0 < 1 || c1 < 1 || c0 > math.MaxUint32 || c1 > math.MaxUint32 {
		return false
	}
	if f.Kind == model.Dense {
		// checkShape's size loop: c0 and then c0*c1 within the limit.
		return c0 <= model.MaxTableEntries/c1 && p.Emission == 0 && p.Table == c0*c1
	}
	if p.Table != 0 || p.Emission != 0 || math.IsNaN(f.Weight) || math.IsInf(f.Weight, 0) {
		return false
	}
	switch f.Kind {
	case model.Pair:
		return c0 == 2 && c1 == 2
	case model.Potts:
		return c0 == c1
	case model.TruncLinear, model.TruncQuad:
		t := f.Trunc
		return c0 == c1 && t > 0 && !math.IsInf(t, 0) && !math.IsInf(f.Weight*t, 0)
	}
	return false
}

// cardOf returns variable v's cardinality (v in range): from the last run
// found when c.runs is set, else from c.card. The last run's case is
// inlined (with no runs, [lo, hi) is empty).
func (c *checker) cardOf(v int) int {
	if v >= c.lo && v < c.hi {
		return c.runCard
	}
	return c.findCard(v)
}

// findCard is cardOf past the last run.
func (c *checker) findCard(v int) int {
	if c.runs == nil {
		return c.card(v)
	}
	if v >= c.runs.NumVars() {
		return 0
	}
	k := c.runs.run(v)
	c.lo, c.hi, c.runCard = 0, c.runs.ends[k], c.runs.cards[k]
	if k > 0 {
		c.lo = c.runs.ends[k-1]
	}
	return c.runCard
}

// crcReader checksums what is read through it, and fails once ctx (when
// not nil) has ended.
type crcReader struct {
	r   io.Reader
	crc uint32
	ctx context.Context
}

func (c *crcReader) Read(p []byte) (int, error) {
	if c.ctx != nil && c.ctx.Err() != nil {
		return 0, context.Cause(c.ctx)
	}
	n, err := c.r.Read(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	return n, err
}

// intArena hands out int slices cut from shared chunks, so that many
// small scopes cost few allocations.
type intArena struct{ free []int }

// copy returns a copy of v in the arena (capacity len(v)).
func (ar *intArena) copy(v []int) []int {
	n := len(v)
	if n > len(ar.free) {
		if n > 1<<10 {
			return append(make([]int, 0, n), v...)
		}
		ar.free = make([]int, 1<<14)
	}
	out := ar.free[:n:n]
	ar.free = ar.free[n:]
	copy(out, v)
	return out
}
