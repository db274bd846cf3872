package native

import (
	"errors"
	"fmt"

	"github.com/ddrun/ddrun/model"
)

// The pipelined streaming read (ReadOptions.Pipeline). A conversion to
// .ddx spends its time framing the factors' values (finding where each
// ends), decoding and checking them, and in the sink (the indexed
// writer); all three are serial, so the read runs them as a pipeline of
// three goroutines: the framer reads the factors' frames ahead (from its
// own reader, while the variables are read), the decoder runs the
// sequential read (mpStream.read) on those frames into batches of pieces,
// and the caller's goroutine gives each batch's pieces to the sink, in
// file order. What the sink sees and what the reading returns are the
// sequential read's:
//   - a batch holds what its stage gave in order (frames; or Begin, then
//     variables, then the number of factors, then factors), and an error
//     travels in the stage's last batch, after the items before it, so
//     the next stage meets it where the sequential read would have;
//   - the sink's first error stops the delivery and is returned, whatever
//     the decoder or the framer found later in the file; each stage then
//     tells the one before it to stop and waits for it, so no goroutine
//     outlives the call on any path;
//   - the end checks (trailing bytes, free states) are the read's own, so
//     they come after every piece.
//
// Memory stays bounded: each stage has at most pipeBatches batches, each
// sent once it holds pipeItems items or pipeBytes bytes of values, and
// reused. The factors are not copied: while the decoder fills a batch,
// its arenas (scopes, negations, tables) are the batch's, so a built
// factor's slices stay valid until the sink is done with the batch. A
// batch grown past 2*pipeBytes (its last item alone is large) is waited
// for before the next is filled, so that each stage holds at most one
// such item, as the sequential read holds one.
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
	return 8*(len(b.ufloats)+len(raw.vars)+len(raw.tables)) + len(raw.negs)
}

// readPiped is read with the framing and the decoding on goroutines of
// their own (ReadOptions.Pipeline).
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

// decoder is the decoding stage of a pipelined read.
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
	clear(b.factors) // the rare kinds' fields
	*b = pipeBatch{
		nfactors: -1,
		vars:     b.vars[:0],
		ufloats:  shrunk(b.ufloats, pipeBytes/8),
		factors:  b.factors[:0],
	}
	raw := &d.s.raw
	raw.vars, raw.negs, raw.tables = shrunk(b.arenaVars, pipeBytes/8), shrunk(b.arenaNegs, pipeBytes), shrunk(b.arenaTables, pipeBytes/8)
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

// frameSource gives the factors' frames: the array's length (head), each
// factor's value in order (next), then the check that nothing follows the
// document when "factors" is its last field (end). Errors are the
// sequential read's, placed.
type frameSource interface {
	head() (int, error)
	next(a int) (mpReader, error)
	end() error
}

// readerFrames reads the frames from r, on the decoding goroutine.
type readerFrames struct {
	s *mpStream
	r *streamReader
}

func (f readerFrames) head() (int, error) {
	n, err := f.r.head(false)
	if err != nil {
		return 0, at("factors", err)
	}
	return n, nil
}

func (f readerFrames) next(a int) (mpReader, error) {
	fr, err := f.s.frame(f.r)
	if err != nil {
		return mpReader{}, at(fmt.Sprintf("factors[%d]", a), err)
	}
	return fr, nil
}

func (f readerFrames) end() error { return f.s.end(f.r) }

// frameBatch is a run of the factors' frames, read ahead of the decoder.
type frameBatch struct {
	nf    int     // >= 0: the first batch, after the factors' head
	buf   []byte  // the frames, back to back
	ends  []int   // where each frame ends in buf
	bases []int64 // where each starts in the input
	last  bool    // the framing ended: err (nil or not) is its result
	err   error   // after the frames
}

// pipedFrames are the frames a framer reads ahead, on the decoding side.
type pipedFrames struct {
	pipe *batchPipe[frameBatch]
	cur  *frameBatch
	k    int // the next frame of cur
}

// startFramer starts reading the factors' frames ahead of the decoder.
func (s *mpStream) startFramer() *pipedFrames {
	return &pipedFrames{pipe: startPipe(s.frameFactors)}
}

func (f *pipedFrames) head() (int, error) {
	f.cur = f.pipe.recv()
	if f.cur.nf < 0 {
		return 0, f.cur.err // no head: its error is the batch's
	}
	return f.cur.nf, nil
}

func (f *pipedFrames) next(int) (mpReader, error) {
	for f.k == len(f.cur.ends) {
		if f.cur.last {
			return mpReader{}, f.cur.err // fewer frames than the head said
		}
		f.pipe.put(f.cur)
		f.cur, f.k = f.pipe.recv(), 0
	}
	b := f.cur
	start := 0
	if f.k > 0 {
		start = b.ends[f.k-1]
	}
	fr := mpReader{b: b.buf[start:b.ends[f.k]:b.ends[f.k]], base: b.bases[f.k]}
	f.k++
	return fr, nil
}

func (f *pipedFrames) end() error {
	for !f.cur.last {
		f.pipe.put(f.cur)
		f.cur, f.k = f.pipe.recv(), 0
	}
	return f.cur.err
}

// frameFactors is the framing stage: it reads the factors' head and
// frames into batches, with the sequential read's errors, and sends them,
// the last with the result (the end check when "factors" is the
// document's last field).
func (s *mpStream) frameFactors(p *batchPipe[frameBatch]) {
	b, ok := p.get()
	if !ok {
		return
	}
	*b = frameBatch{nf: -1, buf: b.buf[:0], ends: b.ends[:0], bases: b.bases[:0]}
	fail := func(err error) {
		b.last, b.err = true, err
		p.send(b)
	}
	r, err := s.reader(s.factorsAt)
	if err != nil {
		fail(err)
		return
	}
	defer r.c.Close()
	src := readerFrames{s: s, r: r}
	nf, err := src.head()
	if err != nil {
		fail(err)
		return
	}
	b.nf = nf
	var frame []byte // one value: a value's bound is on its own bytes
	for a := range nf {
		base := r.off
		if frame, err = r.value(frame[:0], true, 0); err != nil {
			fail(at(fmt.Sprintf("factors[%d]", a), err))
			return
		}
		b.buf = append(b.buf, frame...)
		b.ends, b.bases = append(b.ends, len(b.buf)), append(b.bases, base)
		if len(b.ends) < pipeItems && len(b.buf) < pipeBytes {
			continue
		}
		size := len(b.buf)
		p.send(b)
		if size > 2*pipeBytes && !p.drain() { // a large factor: one at a time
			return
		}
		if b, ok = p.get(); !ok {
			return
		}
		*b = frameBatch{nf: -1, buf: shrunk(b.buf, pipeBytes), ends: b.ends[:0], bases: b.bases[:0]}
		if cap(frame) > 2*pipeBytes {
			frame = nil
		}
	}
	if s.lastFactors {
		err = src.end()
	}
	fail(err)
}
