package native

import (
	"errors"

	"github.com/ddrun/ddrun/model"
)

// The pipelined streaming read (ReadOptions.Pipeline). A conversion to
// .ddx spends most of its time decoding and checking the pieces, and the
// rest in the sink (the indexed writer); both are serial, so the read
// overlaps them: a goroutine runs the sequential read (mpStream.read) into
// batches, and the caller's goroutine gives each batch's pieces to the
// sink, in file order. What the sink sees and what the reading returns
// are the sequential read's:
//   - a batch holds the pieces in the order the read gave them (Begin,
//     then variables, then the number of factors, then factors), and the
//     read's error travels in the last batch, after the pieces before it;
//   - the sink's first error stops the delivery and is returned, whatever
//     the decoder found later in the file (it is then told to stop and
//     waited for, so no goroutine outlives the call on any path);
//   - the end checks (free states, trailing bytes) are the read's own, so
//     they come after every piece.
//
// Memory stays bounded: at most pipeBatches batches exist, each sent once
// it holds pipeItems pieces or pipeBytes bytes of values, and reused. The
// factors are not copied: while the read fills a batch, the decoder's
// arenas (scopes, negations, tables) are the batch's, so a built factor's
// slices stay valid until the sink is done with the batch. A batch grown
// past 2*pipeBytes (its last factor alone is large) is waited for before
// the next is filled, so that at most one such factor is held, as the
// sequential read holds one. (Variables, so that the tests can make the
// batches tiny.)
var (
	pipeBatches = 4
	pipeItems   = 4096
	pipeBytes   = 1 << 20
)

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

// pipeBatch is a run of pieces read ahead of the sink.
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

// errPipeStopped ends the read when the sink has failed: the caller has
// its error and returns it.
var errPipeStopped = errors.New("native: the pipelined read was stopped")

// piper is the decoding side of a pipelined read.
type piper struct {
	s       *mpStream
	full    chan<- *pipeBatch // to the sink, in order
	free    <-chan *pipeBatch // back from the sink
	done    <-chan struct{}   // closed when the sink's side returns
	cur     *pipeBatch
	spare   []*pipeBatch
	created int
}

// readPiped is read with the decoding on another goroutine
// (ReadOptions.Pipeline).
func (s *mpStream) readPiped(sink Sink) error {
	full := make(chan *pipeBatch, pipeBatches)
	free := make(chan *pipeBatch, pipeBatches)
	done := make(chan struct{})
	exited := make(chan struct{})
	p := &piper{s: s, full: full, free: free, done: done}
	s.piped = true
	go func() {
		defer close(exited)
		p.run()
	}()
	defer func() {
		close(done)
		<-exited
	}()
	for {
		b := <-full
		if err := b.deliver(sink); err != nil {
			return err
		}
		if b.last {
			return b.err
		}
		free <- b // never blocks: it holds every batch there is
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

// run reads into batches and sends them, the last with the read's result;
// it sends nothing more once the sink's side has returned.
func (p *piper) run() {
	if !p.next() {
		return
	}
	err := p.s.read(Sink{
		Begin: func(constant float64, n int) error {
			p.cur.begin, p.cur.constant, p.cur.nvars = true, constant, n
			return nil
		},
		Factors: func(n int) { p.cur.nfactors = n },
		Var: func(i, card int, u []float64) error {
			b := p.cur
			v := pipeVar{i: i, card: card, unary: -1}
			if u != nil {
				v.unary = len(b.ufloats)
				b.ufloats = append(b.ufloats, u...)
			}
			b.vars = append(b.vars, v)
			return p.flushIfFull()
		},
		Factor: func(a int, f *model.Factor) error {
			p.cur.factors = append(p.cur.factors, pipeFactor{a: a, f: *f})
			return p.flushIfFull()
		},
	})
	if err == errPipeStopped {
		return
	}
	p.cur.last, p.cur.err = true, err
	p.send()
}

// flushIfFull sends the batch being filled once it is full and takes the
// next; errPipeStopped when the sink's side has returned.
func (p *piper) flushIfFull() error {
	b := p.cur
	size := b.bytes(&p.s.raw)
	if len(b.vars)+len(b.factors) < pipeItems && size < pipeBytes {
		return nil
	}
	p.send()
	if size > 2*pipeBytes {
		// One factor alone is large: have the sink finish it (and those
		// before it) before reading another.
		for p.created-len(p.spare) > 0 {
			select {
			case b := <-p.free:
				p.spare = append(p.spare, b)
			case <-p.done:
				return errPipeStopped
			}
		}
	}
	if !p.next() {
		return errPipeStopped
	}
	return nil
}

// send hands the batch being filled, with the decoder's arenas, to the
// sink's side.
func (p *piper) send() {
	raw := &p.s.raw
	b := p.cur
	b.arenaVars, b.arenaNegs, b.arenaTables = raw.vars, raw.negs, raw.tables
	raw.vars, raw.negs, raw.tables = nil, nil, nil
	p.cur = nil
	p.full <- b // never blocks: it has room for every batch there is
}

// next takes an empty batch to fill, and its arenas for the decoder: a
// spare one, a new one while fewer than pipeBatches exist, or the next
// the sink is done with. false: the sink's side has returned.
func (p *piper) next() bool {
	var b *pipeBatch
	switch {
	case len(p.spare) > 0:
		b, p.spare = p.spare[len(p.spare)-1], p.spare[:len(p.spare)-1]
	case p.created < pipeBatches:
		b = &pipeBatch{}
		p.created++
	default:
		select {
		case b = <-p.free:
		case <-p.done:
			return false
		}
	}
	b.reset()
	raw := &p.s.raw
	raw.vars, raw.negs, raw.tables = b.arenaVars, b.arenaNegs, b.arenaTables
	b.arenaVars, b.arenaNegs, b.arenaTables = nil, nil, nil
	p.cur = b
	return true
}

// reset empties the batch for reuse, dropping what a large factor grew.
func (b *pipeBatch) reset() {
	clear(b.factors) // the rare kinds' fields
	*b = pipeBatch{
		nfactors:    -1,
		vars:        b.vars[:0],
		ufloats:     shrunk(b.ufloats, pipeBytes/8),
		factors:     b.factors[:0],
		arenaVars:   shrunk(b.arenaVars, pipeBytes/8),
		arenaNegs:   shrunk(b.arenaNegs, pipeBytes),
		arenaTables: shrunk(b.arenaTables, pipeBytes/8),
	}
}

// shrunk is a[:0], or nil when a holds more than twice max elements.
func shrunk[T any](a []T, max int) []T {
	if cap(a) > 2*max {
		return nil
	}
	return a[:0]
}
