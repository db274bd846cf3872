package uai

import (
	"fmt"
)

// This file is StreamScopes' reading of the tables with the entries'
// conversion (entryToLog: parsing the number and taking its logarithm,
// most of a table's reading) on other goroutines: the reader tokenizes
// the tables into batches of about batchTokens entries, Converters
// goroutines convert the batches, and the reader hands the tables over in
// file order as their batches come back. The tables, the errors and their
// order are those of the sequential reading (factorTables): a batch's
// tables are handed over, and its first bad entry reported, before
// anything the reader found after them.

// batchTokens is about the entries of one batch (a table is never split).
var batchTokens = 1 << 15

// batch is a run of whole tables' entry tokens (the last one cut short
// when the reading stopped inside it), then their values.
type batch struct {
	text   []byte // the tokens back to back
	ends   []int  // the end of each token in text
	lines  []int  // the line of each token
	tables []batchTable
	scopes []int
	vals   []float64
	// bad is the first token that is not a valid entry (-1: none), and
	// problem what is wrong with it.
	bad     int
	problem string
	done    chan struct{}
}

// batchTable is a table of a batch: factor a, its scope (scopes[s0:s1]),
// its entries (tokens [t0, t0+size)).
type batchTable struct {
	a, s0, s1, t0, size int
}

func (b *batch) reset() {
	b.text, b.ends, b.lines, b.tables, b.scopes = b.text[:0], b.ends[:0], b.lines[:0], b.tables[:0], b.scopes[:0]
	b.bad, b.problem = -1, ""
	if b.done == nil {
		b.done = make(chan struct{}, 1) // one signal per conversion, received once
	}
}

// convert converts b's tokens under base, up to the first bad one.
func (b *batch) convert(base LogBase) {
	defer func() { b.done <- struct{}{} }()
	b.vals = b.vals[:0]
	start := 0
	for i, end := range b.ends {
		v, problem := entryToLog(b.text[start:end], base)
		if problem != "" {
			b.bad, b.problem = i, problem
			return
		}
		b.vals = append(b.vals, v)
		start = end
	}
}

// pipe is one piped reading's goroutines and batches.
type pipe struct {
	p       *modelParser
	work    chan *batch
	free    []*batch
	pending []*batch // submitted, in file order
	max     int      // the most batches pending
	// converters is the number of converting goroutines.
	converters int
	// deliver gets each table, in order.
	deliver func(a int, scope []int, t []float64) error
}

func newPipe(p *modelParser, converters int, deliver func(a int, scope []int, t []float64) error) *pipe {
	pl := &pipe{p: p, work: make(chan *batch), converters: converters, max: converters + 1, deliver: deliver}
	for range converters {
		go func() {
			for b := <-pl.work; b != nil; b = <-pl.work {
				b.convert(p.base)
			}
		}()
	}
	return pl
}

// stop ends the converters (a nil batch each: the package's tests
// have a close of their own) once the pending batches are done.
func (pl *pipe) stop() {
	for range pl.converters {
		pl.work <- nil
	}
	for _, b := range pl.pending {
		<-b.done
	}
}

func (pl *pipe) fresh() *batch {
	var b *batch
	if n := len(pl.free); n > 0 {
		b, pl.free = pl.free[n-1], pl.free[:n-1]
	} else {
		b = &batch{}
	}
	b.reset()
	return b
}

// submit hands b to the converters, and hands over the oldest pending
// batch's tables when too many are pending.
func (pl *pipe) submit(b *batch) error {
	pl.pending = append(pl.pending, b)
	pl.work <- b
	if len(pl.pending) > pl.max {
		return pl.handOldest(-1)
	}
	return nil
}

// handOldest waits for the oldest pending batch and hands its tables over
// (all but a last one cut short: partial >= 0, its entries so far).
func (pl *pipe) handOldest(partial int) error {
	b := pl.pending[0]
	<-b.done
	pl.pending = pl.pending[1:]
	defer func() { pl.free = append(pl.free, b) }()
	for k, t := range b.tables {
		size := t.size
		if k == len(b.tables)-1 && partial >= 0 {
			size = partial
		}
		if b.bad >= 0 && b.bad < t.t0+size {
			e := b.bad - t.t0
			return pl.p.src.errorf(b.lines[b.bad], fmt.Sprintf("table of factor %d entry %d: %s", t.a, e, b.problem))
		}
		if size < t.size {
			return nil
		}
		if err := pl.deliver(t.a, b.scopes[t.s0:t.s1], b.vals[t.t0:t.t0+t.size]); err != nil {
			return err
		}
	}
	return nil
}

// drainThen hands over every pending table, b's included (cut short after
// partial entries when partial >= 0), and returns the first error they
// give, or err.
func (pl *pipe) drainThen(b *batch, partial int, err error) error {
	if len(b.ends) > 0 || len(b.tables) > 0 {
		pl.pending = append(pl.pending, b)
		pl.work <- b
	}
	for len(pl.pending) > 0 {
		last := -1
		if len(pl.pending) == 1 && len(pl.pending[0].tables) > 0 && pl.pending[0] == b {
			last = partial
		}
		if e := pl.handOldest(last); e != nil {
			return e
		}
	}
	return err
}

// pipedTables is factorTables for StreamScopes (tables handed to deliver,
// no folding) with converters goroutines converting the entries.
func (p *modelParser) pipedTables(converters int, deliver func(a int, scope []int, t []float64) error) error {
	pl := newPipe(p, converters, deliver)
	defer pl.stop()
	b := pl.fresh()
	for a := 0; a < p.nf; a++ {
		tok, line, err := p.src.next()
		if err != nil {
			return pl.drainThen(b, -1, err)
		}
		if tok == nil {
			return pl.drainThen(b, -1, p.src.errorf(line, fmt.Sprintf("unexpected end of file: expected the table of factor %d; the preamble declares %d factors, the file has %d tables", a, p.nf, a)))
		}
		n, problem := parseCount(tok)
		if problem != "" {
			return pl.drainThen(b, -1, p.src.errorf(line, fmt.Sprintf("entry count of the table of factor %d: %s", a, problem)))
		}
		size, err := p.tableSize(a)
		if err != nil {
			return pl.drainThen(b, -1, err)
		}
		if n != size {
			return pl.drainThen(b, -1, p.src.errorf(line, fmt.Sprintf("table of factor %d has %d entries, scope needs %d", a, n, size)))
		}
		s0 := len(b.scopes)
		b.scopes = append(b.scopes, p.cur...)
		b.tables = append(b.tables, batchTable{a: a, s0: s0, s1: len(b.scopes), t0: len(b.ends), size: size})
		for e := 0; e < size; e++ {
			tok, line, err := p.src.next()
			if err == nil && tok == nil {
				err = p.src.errorf(line, fmt.Sprintf("unexpected end of file: expected entry %d of the table of factor %d (%d entries)", e, a, size))
			}
			if err != nil {
				return pl.drainThen(b, e, err)
			}
			b.text = append(b.text, tok...)
			b.ends = append(b.ends, len(b.text))
			b.lines = append(b.lines, line)
		}
		if len(b.ends) >= batchTokens {
			if err := pl.submit(b); err != nil {
				return err
			}
			b = pl.fresh()
		}
	}
	return pl.drainThen(b, -1, nil)
}
