package indexed

import (
	"encoding/binary"
	"io"
	"math"

	"github.com/ddrun/ddrun/model"
)

// Scanner reads an indexed file without holding its model: Walk streams
// the structure section once, ReadRecords decodes a range of factor
// records and their payloads, ReadVars some variables' cardinalities and
// unaries, all by byte ranges of the file. It holds the file's layout and
// the payload blocks' checksums (4 bytes per block), nothing per variable
// or per factor. Its methods may be called concurrently when its
// ReaderAt's may.
type Scanner struct {
	layout
	r        io.ReaderAt
	size     int64
	limit    int
	total    int // the limit on the model's totals (Walk, ReadCards)
	constant float64
	nvars    int
	// general makes Walk, ReadRecords, ReadCards and ReadVars decode and
	// check every record and cardinality by the general path, their fast
	// paths off (the differential tests).
	general bool
}

// structHead is the structure section's fixed head: constant and number
// of variables.
const structHead = 16

// OpenScan reads and checks the header, the trailer and the block index
// of an indexed file of size bytes (as ReadStructure does), and the
// structure section's head: the constant and the number of variables. It
// does not read the rest of the structure, so it cannot check its
// checksum: Walk does.
func OpenScan(r io.ReaderAt, size int64, name string, opts ReadOptions) (*Scanner, error) {
	l, err := open(r, size, name, opts.Context)
	if err != nil {
		return nil, err
	}
	s := &Scanner{layout: *l, r: r, size: size, limit: model.EntryLimit(opts.MaxEntries)}
	s.total = s.limit
	if opts.Ranges {
		s.total = math.MaxInt
	}
	if err := s.head(); err != nil {
		return nil, err
	}
	return s, nil
}

// head reads the structure's constant and number of variables and checks
// them, and the trailer's counts, against the section's length: each
// variable takes a cardinality and a unary entry (12 bytes) at least, each
// factor record 5.
func (s *Scanner) head() error {
	t := &s.t
	if t.structLen < structHead+8 {
		return errf(s.name, "structure of %d bytes is too short (corrupt file)", t.structLen)
	}
	var b [structHead]byte
	if err := readAt(s.r, b[:], s.structOff()); err != nil {
		return errf(s.name, "reading the structure: %v", err)
	}
	c := math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
	n := binary.LittleEndian.Uint64(b[8:])
	if math.IsNaN(c) || math.IsInf(c, 0) {
		return errf(s.name, "constant %v is not finite", c)
	}
	if n != t.nvars {
		return errf(s.name, "structure has %d variables, the trailer says %d (corrupt file)", n, t.nvars)
	}
	rest := t.structLen - structHead - 8
	if n > rest/12 {
		return errf(s.name, "number of variables: %d, more than the structure's %d bytes can hold", n, t.structLen)
	}
	if t.nfactors > (rest-12*n)/5 {
		return errf(s.name, "number of factors: %d, more than the structure's %d bytes can hold", t.nfactors, t.structLen)
	}
	s.constant, s.nvars = c, int(n)
	return nil
}

// Name returns the name the Scanner gives the file in errors.
func (s *Scanner) Name() string { return s.name }

// Size returns the file's size in bytes.
func (s *Scanner) Size() int64 { return s.size }

// StructureCRC returns the CRC-32C of the structure section that the
// trailer records. With Size it identifies the file: a range reader that
// cannot check the structure's checksum (ReadRecords, ReadVars) can check
// that it reads the file that a Walk checked.
func (s *Scanner) StructureCRC() uint32 { return s.t.structCRC }

// NumVars returns the number of variables.
func (s *Scanner) NumVars() int { return s.nvars }

// NumFactors returns the number of factors.
func (s *Scanner) NumFactors() int { return int(s.t.nfactors) }

// Constant returns the model's constant.
func (s *Scanner) Constant() float64 { return s.constant }

// BlockSize returns the payload bytes per checksum.
func (s *Scanner) BlockSize() int { return int(s.t.blockSize) }

// PayloadSize returns the payload section's length in bytes.
func (s *Scanner) PayloadSize() int64 { return s.payloadLen() }

// StructureSize returns the structure section's length in bytes.
func (s *Scanner) StructureSize() int64 { return int64(s.t.structLen) }

// recordsFrom returns the least file offset at which factor records may
// start: after the head, a card and a unary entry per variable, and the
// number of factors.
func (s *Scanner) recordsFrom() int64 {
	return s.structOff() + structHead + 12*int64(s.nvars) + 8
}

// CardRuns holds cardinalities run-length encoded: runs of consecutive
// variables of equal cardinality, so that a model whose variables all
// have the same cardinality takes one run. A model whose neighbouring
// variables differ takes a run each: O(variables), as a plain array.
type CardRuns struct {
	ends   []int // ends[k]: one past run k's last variable
	cards  []int // cards[k]: run k's cardinality
	starts []int // starts[k]: the states of the variables before run k
	// oneEnd is ends[0] when there is one run, else 0: Card's inlined case.
	oneEnd int
}

// Append adds n variables of cardinality card after the others.
func (c *CardRuns) Append(n, card int) {
	if n <= 0 {
		return
	}
	if k := len(c.cards) - 1; k >= 0 && c.cards[k] == card {
		c.ends[k] += n
	} else {
		c.starts = append(c.starts, c.States())
		c.ends = append(c.ends, c.NumVars()+n)
		c.cards = append(c.cards, card)
	}
	c.oneEnd = 0
	if len(c.ends) == 1 {
		c.oneEnd = c.ends[0]
	}
}

// States returns the states of all the variables (the sum of their
// cardinalities).
func (c *CardRuns) States() int {
	k := c.Runs() - 1
	if k < 0 {
		return 0
	}
	first := 0
	if k > 0 {
		first = c.ends[k-1]
	}
	return c.starts[k] + (c.ends[k]-first)*c.cards[k]
}

// NumVars returns the number of variables.
func (c *CardRuns) NumVars() int {
	if c == nil || len(c.ends) == 0 {
		return 0
	}
	return c.ends[len(c.ends)-1]
}

// Runs returns the number of runs.
func (c *CardRuns) Runs() int {
	if c == nil {
		return 0
	}
	return len(c.ends)
}

// Card returns variable v's cardinality, 0 when v is out of range
// (a binary search over the runs). A uniform model's case, one run, is
// inlined in the callers.
func (c *CardRuns) Card(v int) int {
	if c != nil && uint(v) < uint(c.oneEnd) {
		return c.cards[0]
	}
	return c.search(v)
}

// search is Card past the one run's case.
func (c *CardRuns) search(v int) int {
	if v < 0 || v >= c.NumVars() {
		return 0
	}
	return c.cards[c.run(v)]
}

// Unary returns where variable v's unaries start among all the variables'
// (the states of the variables before it) and its cardinality; v must be
// in range.
func (c *CardRuns) Unary(v int) (off, card int) {
	k := c.run(v)
	first := 0
	if k > 0 {
		first = c.ends[k-1]
	}
	return c.starts[k] + (v-first)*c.cards[k], c.cards[k]
}

// run returns the run of variable v, in range: the first k with ends[k] > v
// (a binary search).
func (c *CardRuns) run(v int) int {
	lo, hi := 0, len(c.ends)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if c.ends[mid] > v {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// readCards reads n cardinalities (each >= 1, their total within limit)
// and calls run with each run of equal ones; flat, when not nil, gets them
// one by one. It returns their total.
func readCards(d *decoder, n, limit int, stopped func() error, flat []int, run func(from, n, card int) error) (int, error) {
	states, from, card := 0, 0, 0
	// next checks variable i's cardinality c and notes it.
	next := func(i, c int) error {
		if c < 1 {
			return errf(d.name, "variable %d: cardinality %d < 1", i, c)
		}
		if c > limit-states {
			return errf(d.name, "variable %d: cardinality %d brings the total number of states over the limit of %d", i, c, limit)
		}
		states += c
		if flat != nil {
			flat[i] = c
		}
		if i > 0 && c != card {
			if err := run(from, i-from, card); err != nil {
				return err
			}
			from = i
		}
		card = c
		return nil
	}
	// next's case of the same run, without its call.
	same := func(i, c int) bool {
		if c != card || c <= 0 || c > limit-states {
			return false
		}
		states += c
		if flat != nil {
			flat[i] = c
		}
		return true
	}
	if err := eachCard(d, n, stopped, same, next); err != nil {
		return 0, err
	}
	if n > 0 {
		if err := run(from, n-from, card); err != nil {
			return 0, err
		}
	}
	return states, nil
}

// eachCard decodes n cardinalities from d and hands each to quick, then,
// when quick did not take it (false), to next; stopped is asked every
// 65,536. The cardinalities the buffer holds are taken straight from it
// (decoder.words), the others through d.u32, which fills it. A decoding
// error is d.err.
func eachCard(d *decoder, n int, stopped func() error, quick func(i, c int) bool, next func(i, c int) error) error {
	for i := 0; i < n; {
		if i&0xffff == 0 {
			if err := stopped(); err != nil {
				return err
			}
		}
		p := d.words(min(n-i, 0x10000-i&0xffff))
		if p == nil {
			c := int(d.u32())
			if d.err != nil {
				return d.err
			}
			if err := next(i, c); err != nil {
				return err
			}
			i++
			continue
		}
		for k := range len(p) / 4 {
			if c := int(binary.LittleEndian.Uint32(p[4*k:])); !quick(i+k, c) {
				if err := next(i+k, c); err != nil {
					return err
				}
			}
		}
		i += len(p) / 4
	}
	return nil
}

// ReadCards streams the cardinalities (4 bytes per variable, in one
// sequential pass) and returns them run-length encoded: memory O(runs),
// one run for a model whose variables all have the same cardinality. It
// checks each (>= 1) and their total against the limit (none with
// ReadOptions.Ranges). Its Card method is
// what ReadRecords needs.
func (s *Scanner) ReadCards() (*CardRuns, error) {
	off := s.structOff() + structHead
	d := newDecoder(s.r, nil, off, off+4*int64(s.nvars), s.name)
	d.general = s.general
	c := &CardRuns{}
	_, err := readCards(d, s.nvars, s.total, s.stopped, nil, func(_, n, card int) error {
		c.Append(n, card)
		return nil
	})
	if err != nil {
		return nil, s.stopOr(err)
	}
	return c, nil
}

// stopOr returns the error of a reading whose context has ended, or err.
func (s *Scanner) stopOr(err error) error {
	if serr := s.stopped(); serr != nil {
		return serr
	}
	return err
}
