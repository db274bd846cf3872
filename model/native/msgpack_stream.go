package native

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	"github.com/ddrun/ddrun/model"
)

// Opener opens a model file's bytes (decompressed) at offset off: the
// streaming reader reads the file a few times, from several places (with
// ReadOptions.Pipeline, from two goroutines at once).
type Opener func(off int64) (io.ReadCloser, error)

// Sink gets a model piece by piece from ReadMsgpackStream: Begin once with
// the constant and the number of variables, Var for each variable in order
// (unary nil: zeros; the slice is reused after the call), then Factor for
// each factor in order (valid until the call returns). An error from a
// call stops the reading and is returned.
type Sink struct {
	Begin func(constant float64, nvars int) error
	// Factors, when not nil, is told the number of factors the file
	// declares before the first Factor (for progress: not checked yet).
	Factors func(n int)
	Var     func(i, card int, unary []float64) error
	Factor  func(a int, f *model.Factor) error
}

// ReadMsgpackStream reads a msgpack model (docs/native-format.md) as Read
// does, with the same checks, but without holding it: it gives the sink
// one variable and one factor at a time. It reads the file three times
// through open: once to find where the top-level fields start (skipping
// them; it stops at "factors" when that is the last field, as Write puts
// it), then the cardinalities and the unaries side by side (two readers),
// then the factors. What it keeps grows with the runs of equal
// cardinalities and one bit per variable, not with the factors or the
// unaries. Errors are one line (*Error) naming the file; a model that
// fails a check found after some pieces were given (a variable in no
// factor and without unaries beyond model.FreeStatesOK) fails at the end:
// the sink's output is then to be thrown away.
//
// With opts.Pipeline the reading runs on two goroutines of its own (the
// factors read and decoded on one, beside the variables; checked and
// built on the other), a few bounded batches ahead of the sink
// (msgpack_pipe.go), which is still called in order on the caller's
// goroutine: the same calls, the same error (the sink's first error wins
// over one found further on in the file), and no goroutine left when it
// returns.
func ReadMsgpackStream(open Opener, name string, opts ReadOptions, sink Sink) error {
	s := &mpStream{open: open, limit: model.EntryLimit(opts.MaxEntries), opts: opts}
	s.maxValue = int64(1<<20) + 2*bytesPerEntry*int64(s.limit)
	s.maxBytes = s.maxValue
	if opts.EachPiece {
		s.maxBytes = math.MaxInt64 // each kept value is bounded, not the input
	}
	var err error
	if opts.Pipeline {
		err = s.readPiped(sink)
	} else {
		err = s.read(sink)
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			err = &Error{Msg: oneLine(err.Error()), Err: err}
		}
		return withFile(err, name, nil)
	}
	return nil
}

// mpStream is one streaming read.
type mpStream struct {
	open     Opener
	opts     ReadOptions
	limit    int
	maxBytes int64 // the input's bytes
	maxValue int64 // the bytes of a value kept (frame, unary)
	// where each top-level field's value starts (-1: absent or null)
	cardsAt, unariesAt, factorsAt int64
	lastFactors                   bool // "factors" is the document's last field
	raw                           rawModel
	cards                         cardRuns
	vouched                       []uint64 // variables with unaries or in a factor
	buf, buf2                     []byte
	// piped: the decoder's arenas are a batch's, emptied when it is sent
	// (msgpack_pipe.go), not after each factor; ahead, when not nil,
	// reads and decodes the factors ahead
	piped bool
	ahead *pipedFactors
}

// streamReader reads a stream and counts its bytes.
type streamReader struct {
	r   *bufio.Reader
	c   io.Closer
	off int64
	max int64 // the most bytes read
	// keepMax is the most bytes of one value kept (a value's bytes are
	// appended to a buffer as they are read).
	keepMax int64
}

func (s *mpStream) reader(off int64) (*streamReader, error) {
	rc, err := s.open(off)
	if err != nil {
		return nil, err
	}
	return &streamReader{r: bufio.NewReaderSize(model.ContextReader(s.opts.Context, rc), 1<<16), c: rc, off: off, max: s.maxBytes, keepMax: s.maxValue}, nil
}

func (r *streamReader) errorf(format string, args ...any) error {
	return fmt.Errorf(format+" (at byte %d)", append(args, r.off)...)
}

// take appends the next n bytes to buf (keep) or skips them.
func (r *streamReader) take(buf []byte, n uint64, keep bool) ([]byte, error) {
	if n > uint64(r.max-r.off) {
		return nil, r.errorf("more than %d bytes, more than the entry limit allows", r.max)
	}
	if keep && uint64(len(buf))+n > uint64(r.keepMax) { // n < 2^33: no overflow
		return nil, r.errorf("a value of more than %d bytes, more than the entry limit allows", r.keepMax)
	}
	if !keep {
		d, err := r.r.Discard(int(n))
		r.off += int64(d)
		if err == io.EOF {
			err = r.errorf("unexpected end of input")
		}
		return buf, err
	}
	if n <= uint64(r.r.Size()) {
		// From the reader's buffer: most values are a few bytes, for
		// which io.ReadFull's calls cost more than the copy.
		p, err := r.r.Peek(int(n))
		buf = append(buf, p...)
		d, _ := r.r.Discard(len(p))
		r.off += int64(d)
		if err == io.EOF {
			err = r.errorf("unexpected end of input")
		}
		return buf, err
	}
	// Grown as the bytes arrive, takeChunk at a time: a length that a
	// few bytes of a hostile file claim costs what the file holds, not
	// what it claims (up to keepMax, gigabytes).
	for left := n; left > 0; {
		k := min(left, takeChunk)
		start := len(buf)
		buf = slices.Grow(buf, int(k))[:start+int(k)]
		got, err := io.ReadFull(r.r, buf[start:])
		r.off += int64(got)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return buf[:start+got], r.errorf("unexpected end of input")
		}
		if err != nil {
			return buf[:start+got], err
		}
		left -= k
	}
	return buf, nil
}

// takeChunk is the most bytes take reads into its buffer at a time.
const takeChunk = 1 << 20

// maxDepth bounds the nesting of a value (the schema needs 3).
const maxDepth = 8

// code says what follows a msgpack value's first byte c: size payload
// bytes, then items nested values, or first a length of lenBytes bytes
// (then lengthOf). ok is false for a code the schema never uses.
func code(c byte) (size, items uint64, lenBytes int, ok bool) {
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
	case c <= 0x8f:
		items = 2 * uint64(c-0x80)
	case c <= 0x9f:
		items = uint64(c - 0x90)
	case c <= 0xbf:
		size = uint64(c - 0xa0)
	case c == 0xca:
		size = 4
	case c == 0xcb:
		size = 8
	case c >= 0xcc && c <= 0xd3:
		size = 1 << ((c - 0xcc) & 3)
	case c >= 0xd4 && c <= 0xd8:
		size = 1 + 1<<(c-0xd4)
	case c == 0xc4 || c == 0xc7 || c == 0xd9:
		lenBytes = 1
	case c == 0xc5 || c == 0xc8 || c == 0xda || c == 0xdc || c == 0xde:
		lenBytes = 2
	case c == 0xc6 || c == 0xc9 || c == 0xdb || c == 0xdd || c == 0xdf:
		lenBytes = 4
	default:
		return 0, 0, 0, false
	}
	return size, items, lenBytes, true
}

// lengthOf is what code c's length n (big-endian b) means: payload bytes
// or nested values.
func lengthOf(c byte, b []byte) (size, items uint64) {
	var n uint64
	for _, x := range b {
		n = n<<8 | uint64(x)
	}
	switch {
	case c == 0xdc || c == 0xdd:
		return 0, n
	case c == 0xde || c == 0xdf:
		return 0, 2 * n
	case c >= 0xc7 && c <= 0xc9:
		return n + 1, 0 // the extension's type, then its data
	}
	return n, 0
}

// valueLen is the length of the msgpack value p starts with, nested at
// most maxDepth - depth deep, when all of it lies in p and value would
// read it without an error; ok is false otherwise (value then reads it,
// and finds the error).
func valueLen(p []byte, depth int) (n int, ok bool) {
	if depth > maxDepth || len(p) == 0 {
		return 0, false
	}
	size, items, lenBytes, ok := code(p[0])
	if !ok || len(p) < 1+lenBytes {
		return 0, false
	}
	n = 1 + lenBytes
	if lenBytes > 0 {
		size, items = lengthOf(p[0], p[1:n])
	}
	if size > uint64(len(p)-n) {
		return 0, false
	}
	n += int(size)
	for range items {
		// The items most values hold, a float64 or a fixint, without the
		// call (the index pass skips a million unaries so).
		if depth < maxDepth && n < len(p) {
			if c := p[n]; c == 0xcb && len(p)-n >= 9 {
				n += 9
				continue
			} else if c <= 0x7f || c >= 0xe0 {
				n++
				continue
			}
		}
		m, ok := valueLen(p[n:], depth+1)
		if !ok {
			return 0, false
		}
		n += m
	}
	return n, true
}

// value appends the next msgpack value's bytes to buf (keep) or skips it.
// A value that lies whole in the reader's buffer is taken from it at once
// (valueLen); the others are read a byte and a length at a time.
func (r *streamReader) value(buf []byte, keep bool, depth int) ([]byte, error) {
	if r.r.Buffered() < 4096 {
		r.r.Peek(r.r.Size()) // a short or failed fill leaves the rest to the bytewise reading
	}
	if p, _ := r.r.Peek(r.r.Buffered()); len(p) > 0 {
		if n, ok := valueLen(p, depth); ok && int64(n) <= r.max-r.off && int64(len(buf)+n) <= r.keepMax {
			if keep {
				buf = append(buf, p[:n]...)
			}
			r.r.Discard(n)
			r.off += int64(n)
			return buf, nil
		}
	}
	return r.bytewise(buf, keep, depth)
}

// bytewise is value a byte and a length at a time.
func (r *streamReader) bytewise(buf []byte, keep bool, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, r.errorf("values nested more than %d deep", maxDepth)
	}
	c, err := r.r.ReadByte()
	if err != nil {
		if err == io.EOF {
			err = r.errorf("unexpected end of input")
		}
		return nil, err
	}
	r.off++
	if keep {
		if int64(len(buf)) >= r.keepMax {
			return nil, r.errorf("a value of more than %d bytes, more than the entry limit allows", r.keepMax)
		}
		buf = append(buf, c)
	}
	size, items, lenBytes, ok := code(c)
	if !ok {
		return nil, r.errorf("found %s", typeName(c))
	}
	if lenBytes > 0 {
		start := len(buf)
		var b []byte
		if b, err = r.take(buf, uint64(lenBytes), true); err != nil {
			return nil, err
		}
		size, items = lengthOf(c, b[start:])
		if keep {
			buf = b
		} else {
			buf = b[:start]
		}
	}
	if buf, err = r.take(buf, size, keep); err != nil {
		return nil, err
	}
	for range items {
		// Each item whole from the buffer where it lies there (the index
		// pass skips the cards and the unaries so, a few bytes each).
		if buf, err = r.value(buf, keep, depth+1); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// head reads a map's header (isMap) or an array's (nil: absent, -1).
func (r *streamReader) head(isMap bool) (int, error) {
	c, err := r.r.ReadByte()
	if err != nil {
		return 0, r.errorf("unexpected end of input")
	}
	r.off++
	lo, w16, w32, want := byte(0x90), byte(0xdc), byte(0xdd), "an array"
	if isMap {
		lo, w16, w32, want = 0x80, 0xde, 0xdf, "a map"
	}
	size := 0
	switch {
	case c == 0xc0 && !isMap:
		return -1, nil
	case c >= lo && c <= lo+0x0f:
		return int(c - lo), nil
	case c == w16:
		size = 2
	case c == w32:
		size = 4
	default:
		r.off--
		return 0, r.errorf("want %s, found %s", want, typeName(c))
	}
	b, err := r.take(nil, uint64(size), true)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, x := range b {
		n = n<<8 | int(x)
	}
	return n, nil
}

// frame reads the next value into s.buf and returns a reader of it.
func (s *mpStream) frame(r *streamReader) (mpReader, error) {
	base := r.off
	b, err := r.value(s.buf[:0], true, 0)
	if err != nil {
		return mpReader{}, err
	}
	s.buf = b
	return mpReader{b: b, base: base}, nil
}

func (s *mpStream) read(sink Sink) error {
	if err := s.index(); err != nil {
		return err
	}
	raw := &s.raw
	if err := raw.checkHead(); err != nil {
		return err
	}
	if math.IsNaN(raw.constant) || math.IsInf(raw.constant, 0) {
		return placeErr("constant", "%s is not finite", describeNonFinite(raw.constant))
	}
	if s.piped && s.factorsAt >= 0 {
		// The factors are read and decoded ahead, beside the variables.
		s.ahead = s.startFactors()
		defer s.ahead.pipe.stop()
	}
	n, err := s.variables(sink)
	if err != nil {
		return err
	}
	if err := s.factors(sink, n); err != nil {
		return err
	}
	return s.checkFree(n)
}

// index reads the top-level map: the small fields, and where the big ones
// start.
func (s *mpStream) index() error {
	s.cardsAt, s.unariesAt, s.factorsAt = -1, -1, -1
	r, err := s.reader(0)
	if err != nil {
		return err
	}
	defer r.c.Close()
	head, err := r.head(true)
	if err != nil {
		return at("", fmt.Errorf("the document: %w", err))
	}
	raw := &s.raw
	var seen seenKeys
	for k := range head {
		kr, err := s.frame(r)
		if err != nil {
			return at("", err)
		}
		d := mpDecoder{r: kr}
		name, err := d.topKey(&seen)
		if err != nil {
			return err
		}
		if c, err := r.r.Peek(1); err == nil && c[0] == 0xc0 {
			r.r.ReadByte() // null: absent
			r.off++
			continue
		}
		switch name {
		case "cards", "unaries", "factors":
			*map[string]*int64{"cards": &s.cardsAt, "unaries": &s.unariesAt, "factors": &s.factorsAt}[name] = r.off
			raw.hasCards = raw.hasCards || name == "cards"
			raw.hasUnaries = raw.hasUnaries || name == "unaries"
			if name == "factors" && k == head-1 {
				s.lastFactors = true // the factors' pass checks the end
				return nil
			}
			if _, err := r.value(nil, false, 0); err != nil {
				return at(name, err)
			}
			continue
		}
		vr, err := s.frame(r)
		if err != nil {
			return at(name, err)
		}
		d.r = vr
		switch name {
		case "format":
			raw.hasFormat = true
			var b []byte
			b, err = d.r.str()
			raw.format = string(b)
		case "version":
			raw.hasVersion = true
			raw.version, err = d.r.integer()
		case "constant":
			raw.constant, err = d.r.float()
		}
		if err != nil {
			return at(name, err)
		}
	}
	return s.end(r)
}

// end checks that nothing follows the document.
func (s *mpStream) end(r *streamReader) error {
	extra := int64(0)
	for {
		d, err := r.r.Discard(1 << 16)
		extra += int64(d)
		if err != nil || extra > 1<<20 {
			break
		}
	}
	if extra > 0 {
		return placeErr("", "%d bytes of data after the document", extra)
	}
	return nil
}

// variables gives the sink the constant, the cardinalities and the
// unaries, read side by side; it returns the number of variables.
func (s *mpStream) variables(sink Sink) (int, error) {
	cr, err := s.reader(s.cardsAt)
	if err != nil {
		return 0, err
	}
	defer cr.c.Close()
	n, err := cr.head(false)
	switch {
	case err != nil:
		return 0, at("cards", err)
	case n > s.limit && s.opts.EachPiece: // a bit each, and a run at most
		return 0, placeErr("cards", "%d variables, more than the limit of %d", n, s.limit)
	case n > s.limit: // every variable has a state
		return 0, placeErr("cards", "%d variables, more than the limit of %d states", n, s.limit)
	}
	var ur *streamReader
	if s.unariesAt >= 0 {
		if ur, err = s.reader(s.unariesAt); err != nil {
			return 0, err
		}
		defer ur.c.Close()
		nu, err := ur.head(false)
		if err != nil {
			return 0, at("unaries", err)
		}
		if nu != n {
			return 0, placeErr("unaries", "%d entries, model has %d variables", nu, n)
		}
	}
	if err := sink.Begin(s.raw.constant, n); err != nil {
		return 0, err
	}
	s.vouched = make([]uint64, (n+63)/64)
	total := 0
	for i := range n {
		c, ok := cr.inPlaceInt()
		if !ok {
			vr, err := s.frame(cr)
			if err != nil {
				return 0, at(fmt.Sprintf("cards[%d]", i), err)
			}
			if c, err = vr.intValue(); err != nil {
				return 0, at(fmt.Sprintf("cards[%d]", i), err)
			}
		}
		if c < 1 {
			return 0, placeErr(fmt.Sprintf("cards[%d]", i), "cardinality %d < 1", c)
		}
		if s.opts.EachPiece && c > s.limit {
			return 0, placeErr(fmt.Sprintf("cards[%d]", i), "cardinality %d is over the limit of %d", c, s.limit)
		}
		if !s.opts.EachPiece && c > s.limit-total {
			return 0, placeErr(fmt.Sprintf("cards[%d]", i), "cardinality %d brings the states (unary entries) over the limit of %d", c, s.limit)
		}
		total += c
		s.cards.add(c)
		var u []float64
		if ur != nil {
			if u, err = s.unary(ur, i, c); err != nil {
				return 0, err
			}
		}
		if err := sink.Var(i, c, u); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// unary reads variable i's unaries (nil: null) of c entries from ur.
func (s *mpStream) unary(ur *streamReader, i, c int) ([]float64, error) {
	// The place is only spelled out for an error (a Sprintf a variable
	// was a tenth of a grid's conversion).
	place := func() string { return fmt.Sprintf("unaries[%d]", i) }
	s.raw.ufloats = s.raw.ufloats[:0]
	sp, null, ok := ur.inPlaceFloats(&s.raw.ufloats, c)
	if !ok {
		base := ur.off
		b, err := ur.value(s.buf2[:0], true, 0)
		if err != nil {
			return nil, at(place(), err)
		}
		s.buf2 = b
		if null = len(b) == 1 && b[0] == 0xc0; !null {
			d := mpDecoder{r: mpReader{b: b, base: base}, raw: &s.raw}
			if sp, err = d.floats(&s.raw.ufloats, c); err != nil {
				return nil, at(place(), err)
			}
		}
	}
	if null {
		return nil, nil
	}
	s.vouched[i/64] |= 1 << (i % 64)
	if sp.n != c {
		return nil, placeErr(place(), "%d entries, variable %d has cardinality %d", sp.n, i, c)
	}
	u := s.raw.ufloats[:c]
	for k, v := range u {
		if err := checkValue(v); err != nil {
			return nil, placeErr(fmt.Sprintf("unaries[%d][%d]", i, k), "%v", err)
		}
	}
	return u, nil
}

// factors gives the sink the factors, one at a time.
func (s *mpStream) factors(sink Sink, n int) error {
	if s.factorsAt < 0 {
		return nil
	}
	var src factorSource = s.ahead
	if s.ahead == nil {
		r, err := s.reader(s.factorsAt)
		if err != nil {
			return err
		}
		defer r.c.Close()
		src = readerFactors{s: s, r: r, raw: &s.raw, buf: &s.buf}
	}
	nf, err := src.head()
	if err != nil {
		return err
	}
	if sink.Factors != nil {
		sink.Factors(nf)
	}
	var scope []int // factor a's scope so far, for the repeats
	sc := scopeCards{n: n, card: s.cards.card, repeat: func(_, v int) bool {
		for _, u := range scope {
			if u == v {
				return true
			}
		}
		scope = append(scope, v)
		return false
	}}
	raw := &s.raw
	entries := 0
	var f model.Factor // the sink's, during its call only: one for all
	var rf rawFactor   // one for all: given to src, it would escape each time
	for a := range nf {
		if !s.piped {
			raw.vars, raw.negs, raw.tables = raw.vars[:0], raw.negs[:0], raw.tables[:0]
		}
		rf = rawFactor{pos: -1}
		if err := src.next(a, &rf); err != nil {
			return err
		}
		for _, sp := range []span{rf.table, rf.emission} {
			if !sp.ok {
				continue
			}
			switch {
			case s.opts.EachPiece && sp.n > s.limit:
				return placeErr(fmt.Sprintf("factors[%d]", a), "%d entries, over the limit of %d", sp.n, s.limit)
			case s.opts.EachPiece: // no total: nothing adds the factors up
			case sp.n > s.limit-entries:
				return placeErr(fmt.Sprintf("factors[%d]", a), "%d entries bring the total number of table entries over the limit of %d", sp.n, s.limit)
			default:
				entries += sp.n
			}
		}
		scope = scope[:0]
		f = model.Factor{}
		if err := raw.buildFactor(&sc, a, &rf, &f); err != nil {
			return err
		}
		for _, v := range f.Vars {
			s.vouched[v/64] |= 1 << (v % 64)
		}
		if err := sink.Factor(a, &f); err != nil {
			return err
		}
	}
	if s.lastFactors {
		return src.end()
	}
	return nil
}

// checkFree bounds the states of the variables that nothing vouches for
// (rawModel.checkFreeStates).
func (s *mpStream) checkFree(n int) error {
	free, states, widest := 0, 0, -1
	for v := range n {
		if s.vouched[v/64]&(1<<(v%64)) != 0 {
			continue
		}
		c := s.cards.card(v)
		free++
		states = model.AddCapped(states, c) // no total bounds c under EachPiece
		if widest < 0 || c > s.cards.card(widest) {
			widest = v
		}
	}
	if model.FreeStatesOK(free, states) {
		return nil
	}
	c := s.cards.card(widest)
	return placeErr(fmt.Sprintf("cards[%d]", widest), "cardinality %d, but variable %d is in no factor and has no unaries; the %d such variables have %d states, more than %d", c, widest, free, states, model.MaxFreeStates)
}

// cardRuns are the cardinalities as runs of equal values: one run for a
// model whose variables all have the same number of states.
type cardRuns struct {
	ends  []int // one past each run's last variable
	cards []int
}

func (c *cardRuns) add(card int) {
	if k := len(c.cards) - 1; k >= 0 && c.cards[k] == card {
		c.ends[k]++
		return
	}
	n := 0
	if k := len(c.ends); k > 0 {
		n = c.ends[k-1]
	}
	c.ends, c.cards = append(c.ends, n+1), append(c.cards, card)
}

func (c *cardRuns) card(v int) int {
	return c.cards[sort.SearchInts(c.ends, v+1)]
}
