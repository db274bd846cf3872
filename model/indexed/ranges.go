package indexed

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/ddrun/ddrun/model"
)

// ReadRecords decodes factors from..to-1, whose records start at file
// offset pos (the Record.Pos that Walk reported for factor from), and
// their payloads, and calls fn with each in order. It reads the structure
// from pos on (a 64 KiB buffer, stopping after factor to-1) and the
// payloads by byte ranges: whole blocks with their checksums checked, up
// to about a megabyte per read, the range's factors a batch at a time.
//
// card gives the cardinality of any variable (the shape checks need those
// of the scopes): a CardRuns' Card (from ReadCards, or built from Walk's
// Cards calls), or the caller's own table; nil reads them with ReadCards.
// A cardinality below 1 is an error.
//
// Each record gets the checks Walk makes of it (kind, scope, parameters,
// payload sizes, the payloads back to back within the range, the range's
// entries against the limit, the payload values), but the structure
// section has one checksum, which only a whole Walk verifies, and a
// record holds no factor number: a pos that is not factor from's record
// start decodes garbage (mostly an error) or other factors. The structure
// is verified by the Walk of whoever handed out pos (a coordinator), or
// was laid out by its own Writer (WriteOptions.Report); a reader binds the
// file to it by (Size, StructureCRC), which the trailer holds under its
// own checksum.
//
// f passed to fn is valid until fn returns, but its slices (Vars, Negated,
// Table, Emission) are fresh: the caller may keep them (a copy of *f).
// The tables of one batch (about a megabyte) share one allocation, and
// scopes are cut from shared chunks, so a kept slice keeps its neighbours.
func (s *Scanner) ReadRecords(pos int64, from, to int, card func(v int) int, fn func(a int, f *model.Factor) error) error {
	if from < 0 || to < from || to > s.NumFactors() {
		return errf(s.name, "factors %d..%d: out of range [0,%d]", from, to, s.NumFactors())
	}
	if from == to {
		return nil
	}
	if pos < s.recordsFrom() || pos >= s.structEnd() {
		return errf(s.name, "record position %d outside the structure's factor records [%d,%d)", pos, s.recordsFrom(), s.structEnd())
	}
	var runs *CardRuns
	if card == nil {
		c, err := s.ReadCards()
		if err != nil {
			return err
		}
		card, runs = c.Card, c
	}
	rr := &rangeReader{s: s, d: newDecoder(s.r, nil, pos, s.structEnd(), s.name)}
	rr.chk = checker{name: s.name, nvars: s.nvars, card: card, runs: runs, limit: s.limit,
		payloadOff: s.payloadOff(), payloadLen: s.payloadLen(), next: -1, general: s.general}
	rr.d.general = s.general
	n := min(to-from, 1<<12) // a batch's factors, most of them over 2 variables
	rr.ids, rr.ps, rr.qs, rr.vars = make([]int, 0, n), make([]Payload, 0, n), make([]queued, 0, n), make([]int, 0, 2*n)
	if from == 0 {
		rr.chk.next = 0 // the first payload starts the section
	}
	for a := from; a < to; a++ {
		if (a-from)&0xffff == 0 {
			if err := s.stopped(); err != nil {
				return err
			}
		}
		off, p, err := rr.d.record(&rr.f, a, s.nvars)
		if err != nil {
			return s.stopOr(err)
		}
		if err := rr.chk.factor(a, &rr.f, off, &p); err != nil {
			return err
		}
		rr.push(a, p)
		if rr.bytes >= maxRead || len(rr.qs) >= 1<<12 {
			if err := rr.flush(fn); err != nil {
				return err
			}
		}
	}
	if to == s.NumFactors() && (rr.d.left != 0 || rr.chk.next >= 0 && rr.chk.next != s.payloadLen()) {
		return errf(s.name, "the last factor's record or payload does not end its section (a wrong record position?)")
	}
	return rr.flush(fn)
}

// rangeReader is one ReadRecords' state: the batch of decoded factors
// whose payloads are read together.
type rangeReader struct {
	s   *Scanner
	d   *decoder
	chk checker
	f   model.Factor // the record being decoded
	g   model.Factor // the factor handed to fn
	ar  intArena
	// The batch: factor ids[i], its payload ps[i], the rest of it in qs[i]
	// and its scope in vars, flat: all without pointers, so that a push
	// costs no write barriers.
	ids   []int
	ps    []Payload
	qs    []queued
	vars  []int
	logic []model.Factor // the logic factors' negations and budgets
	bytes int64          // the batch's payload bytes

	spans []Payload
	which []int
	vals  [][]float64
	buf   []byte
}

// queued is a factor of the batch without its scope and payload.
type queued struct {
	kind          model.Kind
	weight, trunc float64
	end           int // its scope is vars[the previous one's end:end]
	logic         int // a logic factor's index in logic, else -1
}

// push adds factor a, just decoded into rr.f, to the batch.
func (rr *rangeReader) push(a int, p Payload) {
	f := &rr.f
	rr.vars = append(rr.vars, f.Vars...)
	q := queued{kind: f.Kind, weight: f.Weight, trunc: f.Trunc, end: len(rr.vars), logic: -1}
	if f.Kind.IsLogic() {
		g := *f
		g.Vars = nil
		if f.NegatedInputs() != nil {
			g.SetNegated(slices.Clone(f.NegatedInputs()))
		}
		q.logic = len(rr.logic)
		rr.logic = append(rr.logic, g)
	}
	rr.ids = append(rr.ids, a)
	rr.qs = append(rr.qs, q)
	rr.ps = append(rr.ps, p)
	rr.bytes += 8 * int64(p.Entries())
}

// flush reads the batch's payloads, hands its factors to fn and empties it.
func (rr *rangeReader) flush(fn func(a int, f *model.Factor) error) error {
	rr.spans, rr.which, rr.vals = rr.spans[:0], rr.which[:0], rr.vals[:0]
	total := 0
	for i, p := range rr.ps {
		if e := p.Entries(); e > 0 {
			rr.spans, rr.which = append(rr.spans, p), append(rr.which, i)
			total += e
		}
	}
	arena := make([]float64, total)
	for _, p := range rr.spans {
		var v []float64
		v, arena = splitArena(arena, p.Entries())
		rr.vals = append(rr.vals, v)
	}
	err := rr.s.fillBuf(rr.s.r, rr.spans, rr.vals, &rr.buf, func(k int) error {
		i := rr.which[k]
		return checkValues(rr.s.name, rr.ids[i], rr.qs[i].kind, rr.spans[k].Table, rr.vals[k])
	})
	if err != nil {
		return err
	}
	g, from, k := &rr.g, 0, 0
	for i, q := range rr.qs {
		if q.logic >= 0 {
			*g = rr.logic[q.logic]
		} else {
			*g = model.Factor{Kind: q.kind, Weight: q.weight, Trunc: q.trunc}
		}
		g.Vars = rr.ar.copy(rr.vars[from:q.end])
		from = q.end
		if k < len(rr.which) && rr.which[k] == i {
			setPayload(g, rr.spans[k], rr.vals[k])
			k++
		}
		if err := fn(rr.ids[i], g); err != nil {
			return err
		}
	}
	*g = model.Factor{}
	clear(rr.logic)
	clear(rr.vals)
	rr.ids, rr.qs, rr.ps, rr.vars, rr.logic, rr.bytes = rr.ids[:0], rr.qs[:0], rr.ps[:0], rr.vars[:0], rr.logic[:0], 0
	return nil
}

// maxGap is the most bytes between two wanted unaries that ReadVars reads
// through rather than starting another read.
const maxGap = 64 << 10

// ReadVars returns the cardinalities and the unaries (flat, variable by
// variable) of vars, sorted variable numbers without repeats. It streams
// the cardinalities once up to the last of vars (4 bytes per variable,
// sequential, no memory per variable but the result) to find where their
// unaries lie, then reads those by byte ranges: neighbouring ones
// together, up to about a megabyte per read. As ReadRecords, it cannot
// verify the structure's checksum; it checks the cardinalities (>= 1,
// within the limit) and the unary values.
func (s *Scanner) ReadVars(vars []int) (cards []int, unary []float64, err error) {
	for k, v := range vars {
		if v < 0 || v >= s.nvars {
			return nil, nil, errf(s.name, "variable %d out of range [0,%d)", v, s.nvars)
		}
		if k > 0 && v <= vars[k-1] {
			return nil, nil, errf(s.name, "variables not sorted or repeated: %d after %d", v, vars[k-1])
		}
	}
	if len(vars) == 0 {
		return []int{}, []float64{}, nil
	}
	cards = make([]int, len(vars))
	offs := make([]int64, len(vars)) // where each one's unary starts, in entries
	want, err := s.varCards(vars, cards, offs)
	if err != nil {
		return nil, nil, err
	}
	unary = make([]float64, want)
	if err := s.readUnaries(vars, cards, offs, unary); err != nil {
		return nil, nil, err
	}
	return cards, unary, nil
}

// varCards streams the cardinalities up to the last of vars into cards,
// and the offsets of their unaries into offs; it returns their total.
func (s *Scanner) varCards(vars, cards []int, offs []int64) (int, error) {
	last := vars[len(vars)-1]
	off := s.structOff() + structHead
	d := newDecoder(s.r, nil, off, off+4*int64(last+1), s.name)
	d.general = s.general
	states, want, j := 0, 0, 0
	maxUnaries := (s.structEnd() - s.unaryOff()) / 8 // what the structure section holds
	// next checks variable i's cardinality c and notes it.
	next := func(i, c int) error {
		if c < 1 {
			return errf(s.name, "variable %d: cardinality %d < 1", i, c)
		}
		if c > s.total-states {
			return errf(s.name, "variable %d: cardinality %d brings the total number of states over the limit of %d", i, c, s.total)
		}
		if i == vars[j] {
			if c > s.limit-want {
				return errf(s.name, "variable %d: cardinality %d brings the states read over the limit of %d", i, c, s.limit)
			}
			cards[j], offs[j] = c, int64(states)
			want += c
			j++
		}
		states += c
		// Checked as they add up: with Ranges the total is unbounded, and
		// 8*states could overflow once the loop ends.
		if int64(states) > maxUnaries {
			return errf(s.name, "variable %d: %d unary entries so far, more than the structure holds", i, states)
		}
		return nil
	}
	// A variable not in vars with no more than next's checks, without its
	// call.
	quick := func(i, c int) bool {
		if i == vars[j] || c <= 0 || c > s.total-states || int64(states+c) > maxUnaries {
			return false
		}
		states += c
		return true
	}
	if err := eachCard(d, last+1, s.stopped, quick, next); err != nil {
		if err == d.err {
			return 0, s.stopOr(err)
		}
		return 0, err
	}
	return want, nil
}

// unaryOff returns the file offset of the unaries.
func (s *Scanner) unaryOff() int64 { return s.structOff() + structHead + 4*int64(s.nvars) }

// readUnaries reads the unaries of vars (cards[k] entries from entry
// offs[k] on) into dst, back to back: a run of nearby ones per read.
func (s *Scanner) readUnaries(vars, cards []int, offs []int64, dst []float64) error {
	base := s.unaryOff()
	end := func(k int) int64 { return offs[k] + int64(cards[k]) }
	buf := make([]byte, 0, min(maxRead, 8*(end(len(offs)-1)-offs[0])))
	j, out := 0, 0 // the first variable not wholly read, where its unary goes
	var done int64 // its entries read
	for j < len(offs) {
		if err := s.stopped(); err != nil {
			return err
		}
		lo := offs[j] + done
		limit := lo + maxRead/8
		hi := min(end(j), limit)
		for k := j + 1; k < len(offs) && hi == end(k-1) && 8*(offs[k]-hi) <= maxGap && end(k) <= limit; k++ {
			hi = end(k)
		}
		buf = buf[:8*(hi-lo)]
		if err := readAt(s.r, buf, base+8*lo); err != nil {
			return errf(s.name, "reading unary bytes %d..%d: %v", base+8*lo, base+8*hi, err)
		}
		for j < len(offs) && offs[j] < hi {
			from, to := offs[j]+done, min(end(j), hi)
			for x := from; x < to; x++ {
				v := math.Float64frombits(binary.LittleEndian.Uint64(buf[8*(x-lo):]))
				if msg := badValue(v); msg != "" {
					return errf(s.name, "variable %d: unary entry %d is %s", vars[j], x-offs[j], msg)
				}
				dst[out+int(x-offs[j])] = v
			}
			if to < end(j) {
				done = to - offs[j]
				break
			}
			out, done = out+cards[j], 0
			j++
		}
	}
	return nil
}
