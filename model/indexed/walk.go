package indexed

import (
	"io"
	"math"

	"github.com/ddrun/ddrun/model"
)

// Visitor receives what Walk reads; nil fields are skipped.
type Visitor struct {
	// Cards, when set, is called with consecutive runs of equal
	// cardinality: variables [from, from+n) all have cardinality card (a
	// model whose cardinalities are all 4 makes one call).
	Cards func(from, n, card int) error
	// Unaries, when set, gets variable i's unary (a view valid during the
	// call only).
	Unaries func(i int, u []float64) error
	// Factor, when set, gets factor a, where its record starts (a file
	// offset, for ReadRecords), its payload, and the factor without its
	// payload (Table and Emission nil). f and its slices are reused
	// between calls: copy what you keep.
	Factor func(a int, rec Record, f *model.Factor) error
}

// Record says where a factor lies in the file: Pos is the file offset of
// its record in the structure section, Payload its payload (zero when it
// has none).
type Record struct {
	Pos     int64
	Payload Payload
}

// Walk reads the structure section once, sequentially (a 64 KiB buffer,
// nothing per variable or per factor beyond the cardinalities run-length
// encoded: see CardRuns), and calls v's functions with what it reads, in
// order: the cardinalities, the unaries, the factors. It checks what
// ReadStructure checks (cardinalities, total states and payload entries
// against the limit, unless ReadOptions.Ranges, unary values, factor kinds, scopes, parameters,
// payloads back to back and filling the payload section, nothing left
// over) and the structure's checksum, computed as it reads.
//
// The checksum can only be compared at the end: the callbacks may have
// seen corrupt data by then. A caller must treat a Walk that fails as
// having read nothing valid. An error of a callback stops the walk and is
// returned as it is.
func (s *Scanner) Walk(v Visitor) error {
	return s.newWalker().walk(v)
}

// walker is one Walk's state.
type walker struct {
	s    *Scanner
	d    *decoder
	crc  *crcReader
	chk  checker
	runs CardRuns
	// flat, when not nil (ReadStructure), gets the cardinalities and
	// serves the lookups instead of runs.
	flat   []int
	states int
	f      model.Factor
	u      []float64
	cbErr  error // a callback's error
}

func (s *Scanner) newWalker() *walker {
	crc := &crcReader{r: io.NewSectionReader(s.r, s.structOff(), int64(s.t.structLen)), ctx: s.ctx}
	w := &walker{s: s, crc: crc, d: newDecoder(nil, crc, s.structOff(), s.structEnd(), s.name)}
	w.chk = checker{name: s.name, nvars: s.nvars, limit: s.total, payloadOff: s.payloadOff(), payloadLen: s.payloadLen()}
	w.chk.card, w.chk.runs = w.runs.Card, &w.runs
	w.d.general, w.chk.general = s.general, s.general
	return w
}

// walk runs the walk and sorts out its error: a callback's as it is, a
// stopped context's, or, when decoding failed or the walk ended, the
// checksum mismatch if the section does not match its checksum (a
// corrupt section is reported as such, not by what its bytes decoded to).
func (w *walker) walk(v Visitor) error {
	err := w.run(v)
	switch {
	case w.cbErr != nil:
		return w.cbErr
	case err != nil && w.s.stopped() != nil:
		return w.s.stopped()
	case err != nil:
		// Read the rest of the section through the checksum.
		if _, derr := io.Copy(io.Discard, w.d.src); derr != nil {
			return err
		}
	}
	if w.crc.crc != w.s.t.structCRC {
		return errf(w.s.name, "structure checksum mismatch (corrupt file)")
	}
	return err
}

func (w *walker) run(v Visitor) error {
	d, s := w.d, w.s
	c := d.f64()
	n := d.count("number of variables", 4)
	if d.err != nil {
		return d.err
	}
	if math.Float64bits(c) != math.Float64bits(s.constant) || n != s.nvars {
		return errf(s.name, "the structure's head changed since the file was opened")
	}
	if err := w.cards(n, v.Cards); err != nil {
		return err
	}
	if err := w.unaries(n, v.Unaries); err != nil {
		return err
	}
	nf := d.count("number of factors", 5)
	if d.err == nil && uint64(nf) != s.t.nfactors {
		return errf(s.name, "structure has %d factors, the trailer says %d", nf, s.t.nfactors)
	}
	if d.err != nil {
		return d.err
	}
	if err := w.factors(nf, v.Factor); err != nil {
		return err
	}
	if d.left != 0 {
		return errf(s.name, "%d bytes follow the last factor in the structure", d.left)
	}
	if w.chk.next != s.payloadLen() {
		return errf(s.name, "the factors' payloads take %d bytes, the payload section has %d", w.chk.next, s.payloadLen())
	}
	return nil
}

// cards reads the cardinalities into w.flat or w.runs.
func (w *walker) cards(n int, fn func(from, n, card int) error) error {
	if w.flat != nil {
		flat := w.flat
		w.chk.card, w.chk.runs = func(v int) int { return flat[v] }, nil
	}
	var err error
	w.states, err = readCards(w.d, n, w.s.total, w.s.stopped, w.flat, func(from, n, card int) error {
		if w.flat == nil {
			w.runs.Append(n, card)
		}
		if fn != nil {
			if err := fn(from, n, card); err != nil {
				w.cbErr = err
				return err
			}
		}
		return nil
	})
	return err
}

// unaries reads and checks the unaries, variable by variable.
func (w *walker) unaries(n int, fn func(i int, u []float64) error) error {
	d := w.d
	if int64(w.states) > d.left/8 {
		return errf(d.name, "%d unary entries, more than the structure holds", w.states)
	}
	k, off := 0, 0 // variable i's run, and its first unary entry
	for i := range n {
		if i&0xffff == 0 {
			if err := w.s.stopped(); err != nil {
				return err
			}
		}
		var c int
		if w.flat != nil {
			c = w.flat[i]
		} else {
			for i >= w.runs.ends[k] {
				k++
			}
			c = w.runs.cards[k]
		}
		if cap(w.u) < c {
			w.u = make([]float64, c)
		}
		u := w.u[:c]
		d.floats(u)
		if d.err != nil {
			return d.err
		}
		for j, x := range u {
			if msg := badValue(x); msg != "" {
				return errf(d.name, "unary entry %d is %s", off+j, msg)
			}
		}
		off += c
		if fn != nil {
			if err := fn(i, u); err != nil {
				w.cbErr = err
				return err
			}
		}
	}
	return nil
}

// factors reads and checks the nf factor records.
func (w *walker) factors(nf int, fn func(a int, rec Record, f *model.Factor) error) error {
	d := w.d
	for a := range nf {
		if a&0xffff == 0 {
			if err := w.s.stopped(); err != nil {
				return err
			}
		}
		pos := d.pos()
		off, p, err := d.record(&w.f, a, w.s.nvars)
		if err != nil {
			return err
		}
		if err := w.chk.factor(a, &w.f, off, &p); err != nil {
			return err
		}
		if fn != nil {
			if err := fn(a, Record{Pos: pos, Payload: p}, &w.f); err != nil {
				w.cbErr = err
				return err
			}
		}
	}
	return d.err
}
