package native

import (
	"errors"
	"fmt"

	"github.com/ddrun/ddrun/model"
)

// The pipelined streaming read (ReadOptions.Pipeline). A conversion to
// .ddx spends its time framing the factors' values (finding where each
// ends) and decoding them, reading the variables, checking and building
// the factors, and in the sink (the indexed writer); all of it is serial,
// so the read runs it as a pipeline of three goroutines:
//   - the first (readFactors) reads the factors from a reader of its own
//     and decodes each into batches of raw factors (in the reader's
//     buffer where it lies whole there, framed first otherwise), starting
//     while the variables are read;
//   - the second (decoder) runs the sequential read (mpStream.read): the
//     index, the variables, and the factors taken from the first stage
//     (their spans copied into its own arenas), checked and built in
//     order, into batches of pieces;
//   - the caller's goroutine gives each batch's pieces to the sink, in
//     file order.
//
// What the sink sees and what the reading returns are the sequential
// read's: every check runs in the sequential order of the file, and
//   - a batch holds what its stage gave in order (raw factors; or Begin,
//     then variables, then the number of factors, then factors), and an
//     error travels in the stage's last batch, after the items before it,
//     so the next stage meets it where the sequential read would have;
//   - the sink's first error stops the delivery and is returned, whatever
//     the stages before it found later in the file; each stage then tells
//     the one before it to stop and waits for it, so no goroutine
//     outlives the call on any path;
//   - the end checks (trailing bytes, free states) are the read's own, so
//     they come after every piece.
//
// Memory stays bounded: each stage has at most pipeBatches batches, each
// sent once it holds pipeItems items or pipeBytes bytes of values, and
// reused. The built factors are not copied: while the decoder fills a
// batch, its arenas (scopes, negations, tables) are the batch's, so a
// factor's slices stay valid until the sink is done with the batch. A
// batch grown past 2*pipeBytes (its last item alone is large) is waited
// for before the next is filled, so that each stage holds at most one
// such item: a large table is held at most three times (the first
// stage's frame and arena, the decoder's arena) where the sequential read
// holds it twice (frame and arena).
//
// (Variables, so that the tests can make the batches tiny.)
var (
	pipeBatches = 4
	pipeItems   = 4096
	pipeBytes   = 1 << 20
)

// batchPipe carries batches of B from a goroutine (the producer) to the
// goroutine that started it (the consumer), in order, and back for reuse.
type batchPipe[B any] struct {
	full    chan *B       // to the consumer, in order
	free    chan *B       // back from it
	done    chan struct{} // closed when the consumer stops
	exited  chan struct{} // closed when the producer has returned
	spare   []*B          // the producer's, not in flight
	created int
}

// startPipe runs produce on a goroutine of its own; the caller must stop
// the pipe.
func startPipe[B any](produce func(p *batchPipe[B])) *batchPipe[B] {
	p := &batchPipe[B]{full: make(chan *B, pipeBatches), free: make(chan *B, pipeBatches),
		done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(p.exited)
		produce(p)
	}()
	return p
}

// stop tells the producer to stop and waits until it has returned.
func (p *batchPipe[B]) stop() {
	close(p.done)
	<-p.exited
}

// get gives the producer a batch to fill (not emptied): a spare one, a new
// one while fewer than pipeBatches exist, or the next the consumer is done
// with; false once the consumer has stopped.
func (p *batchPipe[B]) get() (*B, bool) {
	select {
	case <-p.done: // seen first: a free batch must not keep a stopped producer going
		return nil, false
	default:
	}
	switch {
	case len(p.spare) > 0:
		b := p.spare[len(p.spare)-1]
		p.spare = p.spare[:len(p.spare)-1]
		return b, true
	case p.created < pipeBatches:
		p.created++
		return new(B), true
	}
	select {
	case b := <-p.free:
		return b, true
	case <-p.done:
		return nil, false
	}
}

// send hands a filled batch to the consumer. It never blocks: the channel
// has room for every batch there is.
func (p *batchPipe[B]) send(b *B) { p.full <- b }

// drain waits until the consumer is done with every batch sent; false
// once the consumer has stopped.
func (p *batchPipe[B]) drain() bool {
	for p.created > len(p.spare) {
		select {
		case b := <-p.free:
			p.spare = append(p.spare, b)
		case <-p.done:
			return false
		}
	}
	return true
}

// recv is the consumer's next batch (the producer always sends a last one).
func (p *batchPipe[B]) recv() *B { return <-p.full }

// put gives a batch the consumer is done with back to the producer. It
// never blocks.
func (p *batchPipe[B]) put(b *B) { p.free <- b }

// errPipeStopped ends a stage when the next one has stopped: that one has
// the error to return.
var errPipeStopped = errors.New("native: the pipelined read was stopped")

// pipeVar is a variable of a batch: its unaries are ufloats[unary:][:card]
// (unary -1: nil, zeros).
type pipeVar struct {
	i, card, unary int
}

// pipeFactor is a factor of a batch, its slices in the batch's arenas.
type pipeFactor struct {
	a int
	f model.Factor
}

// pipeBatch is a run of pieces decoded ahead of the sink.
type pipeBatch struct {
	begin    bool // Begin(constant, nvars) comes first
	constant float64
	nvars    int
	nfactors int // >= 0: Factors(nfactors) comes after the variables
	vars     []pipeVar
	ufloats  []float64
	factors  []pipeFactor
	// the decoder's arenas while the batch was filled
	arenaVars   []int
	arenaNegs   []bool
	arenaTables []float64
	last        bool  // the read ended: err (nil or not) is its result
	err         error // after the pieces
}

// bytes is the size of the values the batch holds, its arenas those the
// decoder holds while it fills it.
func (b *pipeBatch) bytes(raw *rawModel) int {
	return 8*len(b.ufloats) + raw.arenaBytes()
}

// arenaBytes is the size of the factors' values in raw's arenas.
func (raw *rawModel) arenaBytes() int {
	return 8*(len(raw.vars)+len(raw.tables)) + len(raw.negs)
}

// readPiped is read on two goroutines of its own, the caller's giving the
// sink its pieces (ReadOptions.Pipeline).
func (s *mpStream) readPiped(sink Sink) error {
	s.piped = true
	p := startPipe(func(p *batchPipe[pipeBatch]) { (&decoder{s: s, pipe: p}).run() })
	defer p.stop()
	for {
		b := p.recv()
		if err := b.deliver(sink); err != nil {
			return err
		}
		if b.last {
			return b.err
		}
		p.put(b)
	}
}

// deliver gives the batch's pieces to the sink, in order.
func (b *pipeBatch) deliver(sink Sink) error {
	if b.begin {
		if err := sink.Begin(b.constant, b.nvars); err != nil {
			return err
		}
	}
	for _, v := range b.vars {
		var u []float64
		if v.unary >= 0 {
			u = b.ufloats[v.unary : v.unary+v.card : v.unary+v.card]
		}
		if err := sink.Var(v.i, v.card, u); err != nil {
			return err
		}
	}
	if b.nfactors >= 0 && sink.Factors != nil {
		sink.Factors(b.nfactors)
	}
	for k := range b.factors {
		if err := sink.Factor(b.factors[k].a, &b.factors[k].f); err != nil {
			return err
		}
	}
	return nil
}

// decoder is the second stage of a pipelined read: the sequential read,
// the factors taken from the first.
type decoder struct {
	s    *mpStream
	pipe *batchPipe[pipeBatch]
	cur  *pipeBatch
}

// run reads into batches and sends them, the last with the read's result;
// it sends nothing more once the sink's side has stopped.
func (d *decoder) run() {
	if !d.next() {
		return
	}
	err := d.s.read(Sink{
		Begin: func(constant float64, n int) error {
			d.cur.begin, d.cur.constant, d.cur.nvars = true, constant, n
			return nil
		},
		Factors: func(n int) { d.cur.nfactors = n },
		Var: func(i, card int, u []float64) error {
			b := d.cur
			v := pipeVar{i: i, card: card, unary: -1}
			if u != nil {
				v.unary = len(b.ufloats)
				b.ufloats = append(b.ufloats, u...)
			}
			b.vars = append(b.vars, v)
			return d.flushIfFull()
		},
		Factor: func(a int, f *model.Factor) error {
			d.cur.factors = append(d.cur.factors, pipeFactor{a: a, f: *f})
			return d.flushIfFull()
		},
	})
	if err == errPipeStopped {
		return
	}
	d.cur.last, d.cur.err = true, err
	d.send()
}

// flushIfFull sends the batch being filled once it is full and takes the
// next; errPipeStopped when the sink's side has stopped.
func (d *decoder) flushIfFull() error {
	b := d.cur
	size := b.bytes(&d.s.raw)
	if len(b.vars)+len(b.factors) < pipeItems && size < pipeBytes {
		return nil
	}
	d.send()
	// A large factor: have the sink finish it (and those before it)
	// before decoding another.
	if size > 2*pipeBytes && !d.pipe.drain() {
		return errPipeStopped
	}
	if !d.next() {
		return errPipeStopped
	}
	return nil
}

// send hands the batch being filled, with the decoder's arenas, to the
// sink's side.
func (d *decoder) send() {
	raw := &d.s.raw
	b := d.cur
	b.arenaVars, b.arenaNegs, b.arenaTables = raw.vars, raw.negs, raw.tables
	raw.vars, raw.negs, raw.tables = nil, nil, nil
	d.cur = nil
	d.pipe.send(b)
}

// next takes an empty batch to fill, and its arenas for the decoder;
// false once the sink's side has stopped.
func (d *decoder) next() bool {
	b, ok := d.pipe.get()
	if !ok {
		return false
	}
	if b.factors == nil { // new: room for a full batch at once
		b.vars, b.factors = make([]pipeVar, 0, pipeItems), make([]pipeFactor, 0, pipeItems)
	}
	raw := &d.s.raw
	raw.vars, raw.negs, raw.tables = shrunk(b.arenaVars, pipeBytes/8), shrunk(b.arenaNegs, pipeBytes), shrunk(b.arenaTables, pipeBytes/8)
	clear(b.factors) // the rare kinds' fields
	*b = pipeBatch{
		nfactors: -1,
		vars:     b.vars[:0],
		ufloats:  shrunk(b.ufloats, pipeBytes/8),
		factors:  b.factors[:0],
	}
	d.cur = b
	return true
}

// shrunk is a[:0], or nil when a holds more than twice max elements.
func shrunk[T any](a []T, max int) []T {
	if cap(a) > 2*max {
		return nil
	}
	return a[:0]
}

// factorSource gives the factors decoded: the array's length (head), each
// factor in order (next: rf's spans in the decoder's arenas, s.raw), then
// the check that nothing follows the document when "factors" is its last
// field (end). Errors are the sequential read's, placed.
type factorSource interface {
	head() (int, error)
	next(a int, rf *rawFactor) error
	end() error
}

// readerFactors reads and decodes the factors from r into raw's arenas,
// framing them in *buf.
type readerFactors struct {
	s   *mpStream
	r   *streamReader
	raw *rawModel
	buf *[]byte
}

func (f readerFactors) head() (int, error) {
	n, err := f.r.head(false)
	if err != nil {
		return 0, at("factors", err)
	}
	return n, nil
}

func (f readerFactors) next(a int, rf *rawFactor) error {
	if f.inPlace(a, rf) {
		return nil
	}
	base := f.r.off
	b, err := f.r.value((*f.buf)[:0], true, 0)
	if err != nil {
		return at(fmt.Sprintf("factors[%d]", a), err)
	}
	*f.buf = b
	d := mpDecoder{r: mpReader{b: b, base: base}, raw: f.raw}
	return d.factor(a, rf)
}

func (f readerFactors) end() error { return f.s.end(f.r) }

// decodeInPlace makes readerFactors decode a factor straight from the
// reader's buffer where it can (a variable, so that the tests can compare
// with framing every factor first).
var decodeInPlace = true

// inPlace decodes factor a straight from the reader's buffer, without
// framing it first (a second walk over its bytes, a third of the factors'
// reading), when it decodes there without an error within the bounds a
// frame has: a value the decoder reads whole is well-formed, so framing it
// would have found it as it is. false: nothing was read, the arenas and
// rf are as they were, and the caller frames and decodes the factor as
// before, which finds what stopped this one (an error, or a factor that
// does not lie whole in the buffer).
func (f readerFactors) inPlace(a int, rf *rawFactor) bool {
	r := f.r
	p := r.buffered()
	if len(p) == 0 {
		return false
	}
	raw := f.raw
	nv, nn, nt := len(raw.vars), len(raw.negs), len(raw.tables)
	d := mpDecoder{r: mpReader{b: p, base: r.off}, raw: raw}
	if err := d.factor(a, rf); err != nil || !r.taken(d.r.off) {
		raw.vars, raw.negs, raw.tables = raw.vars[:nv], raw.negs[:nn], raw.tables[:nt]
		*rf = rawFactor{pos: -1}
		return false
	}
	return true
}

// buffered is what the reader's buffer holds, filled first when it holds
// little (value's policy); a short or failed fill leaves the value to the
// framing.
func (r *streamReader) buffered() []byte {
	if !decodeInPlace {
		return nil
	}
	if r.r.Buffered() < 4096 {
		r.r.Peek(r.r.Size())
	}
	p, _ := r.r.Peek(r.r.Buffered())
	return p
}

// taken moves past the n bytes at the start of the buffer that were
// decoded in place, when a frame of them would have been within the
// bounds (value's); false, reading nothing, when not.
func (r *streamReader) taken(n int) bool {
	if int64(n) > r.max-r.off || int64(n) > r.keepMax {
		return false
	}
	r.r.Discard(n)
	r.off += int64(n)
	return true
}

// inPlaceInt is inPlace for a cardinality: an integer decoded straight
// from the buffer; false: nothing was read, the caller frames it.
func (r *streamReader) inPlaceInt() (int, bool) {
	p := r.buffered()
	if len(p) == 0 {
		return 0, false
	}
	m := mpReader{b: p, base: r.off}
	v, err := m.intValue()
	if err != nil || !r.taken(m.off) {
		return 0, false
	}
	return v, true
}

// inPlaceFloats is inPlace for a variable's unaries: it appends them
// (hint entries expected) to *arena, or reads a null (null: nothing
// appended); false: nothing was read or appended, the caller frames them.
func (r *streamReader) inPlaceFloats(arena *[]float64, hint int) (sp span, null, ok bool) {
	p := r.buffered()
	if len(p) == 0 {
		return span{}, false, false
	}
	if p[0] == 0xc0 {
		return span{}, true, r.taken(1)
	}
	n := len(*arena)
	d := mpDecoder{r: mpReader{b: p, base: r.off}}
	sp, err := d.floats(arena, hint)
	if err != nil || !r.taken(d.r.off) {
		*arena = (*arena)[:n]
		return span{}, false, false
	}
	return sp, false, true
}

// factorBatch is a run of factors read and decoded ahead of the decoding
// goroutine, their spans in the batch's arenas.
type factorBatch struct {
	nf     int // >= 0: the first batch, after the factors' head
	rfs    []rawFactor
	vars   []int
	negs   []bool
	tables []float64
	last   bool  // the reading ended: err (nil or not) is its result
	err    error // after the factors
}

// pipedFactors are the factors read ahead, on the decoding goroutine.
type pipedFactors struct {
	pipe *batchPipe[factorBatch]
	raw  *rawModel // the decoder's arenas, which next copies the spans to
	cur  *factorBatch
	k    int // the next factor of cur
}

// startFactors starts reading and decoding the factors ahead of the
// decoding goroutine (which still checks and builds them, in order).
func (s *mpStream) startFactors() *pipedFactors {
	return &pipedFactors{pipe: startPipe(s.readFactors), raw: &s.raw}
}

func (f *pipedFactors) head() (int, error) {
	f.cur = f.pipe.recv()
	if f.cur.nf < 0 {
		return 0, f.cur.err // no head: its error is the batch's
	}
	return f.cur.nf, nil
}

// next gives the next factor, its spans copied to the decoder's arenas
// (so that the batch can be read into again at once).
func (f *pipedFactors) next(_ int, rf *rawFactor) error {
	for f.k == len(f.cur.rfs) {
		if f.cur.last {
			return f.cur.err // fewer factors than the head said
		}
		f.pipe.put(f.cur)
		f.cur, f.k = f.pipe.recv(), 0
	}
	b, raw := f.cur, f.raw
	*rf = b.rfs[f.k]
	f.k++
	moveSpan(&rf.vars, &raw.vars, b.vars)
	moveSpan(&rf.negated, &raw.negs, b.negs)
	moveSpan(&rf.table, &raw.tables, b.tables)
	moveSpan(&rf.emission, &raw.tables, b.tables)
	return nil
}

// moveSpan copies sp's items (when it has any) from src to the end of
// *dst and points sp at them there.
func moveSpan[T any](sp *span, dst *[]T, src []T) {
	if sp.ok {
		sp.off, *dst = len(*dst), append(*dst, src[sp.off:sp.off+sp.n]...)
	}
}

func (f *pipedFactors) end() error {
	for !f.cur.last {
		f.pipe.put(f.cur)
		f.cur, f.k = f.pipe.recv(), 0
	}
	return f.cur.err
}

// readFactors is the first stage: it reads the factors' head, frames and
// decodes each factor into batches, with the sequential read's errors,
// and sends them, the last with the result (the end check when "factors"
// is the document's last field).
func (s *mpStream) readFactors(p *batchPipe[factorBatch]) {
	var b *factorBatch
	var ar rawModel // the arenas of b
	take := func() bool {
		var ok bool
		if b, ok = p.get(); !ok {
			return false
		}
		if b.rfs == nil { // new: room for a full batch at once
			b.rfs = make([]rawFactor, 0, pipeItems)
		}
		ar.vars, ar.negs, ar.tables = shrunk(b.vars, pipeBytes/8), shrunk(b.negs, pipeBytes), shrunk(b.tables, pipeBytes/8)
		*b = factorBatch{nf: -1, rfs: b.rfs[:0]}
		return true
	}
	send := func(last bool, err error) {
		b.vars, b.negs, b.tables = ar.vars, ar.negs, ar.tables
		b.last, b.err = last, err
		p.send(b)
		b = nil
	}
	if !take() {
		return
	}
	r, err := s.reader(s.factorsAt)
	if err != nil {
		send(true, err)
		return
	}
	defer r.c.Close()
	var frame []byte // not s.buf: the decoder frames the variables in it
	src := readerFactors{s: s, r: r, raw: &ar, buf: &frame}
	nf, err := src.head()
	if err != nil {
		send(true, err)
		return
	}
	b.nf = nf
	var rf rawFactor
	for a := range nf {
		rf = rawFactor{pos: -1}
		if err := src.next(a, &rf); err != nil {
			send(true, err)
			return
		}
		b.rfs = append(b.rfs, rf)
		size := ar.arenaBytes()
		if len(b.rfs) < pipeItems && size < pipeBytes {
			continue
		}
		send(false, nil)
		if size > 2*pipeBytes && !p.drain() { // a large factor: one at a time
			return
		}
		if !take() {
			return
		}
		if cap(frame) > 2*pipeBytes {
			frame = nil // a large factor's
		}
	}
	if s.lastFactors {
		err = src.end()
	}
	send(true, err)
}
