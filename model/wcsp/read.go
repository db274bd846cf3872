package wcsp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// ReadOptions controls how a file is read.
type ReadOptions struct {
	// MaxEntries bounds the total number of table entries and, on its own,
	// the total domain size (0: model.DefaultMaxEntries).
	MaxEntries int
	// Context, when not nil, stops the reading once it ends: checked
	// before every read of the (decompressed) input.
	Context context.Context
}

// ParseError is a problem found in an input file; its message is one line
// "NAME:LINE: problem" (the UAI reader's error type).
type ParseError = uai.ParseError

// Cost turns a score of a model read by this package back into the file's
// cost (the sum of the costs of the assignment, what toulbar2 prints as
// "Optimum:"): the model scores every assignment as minus that sum.
func Cost(score float64) float64 { return 0 - score } // 0 - 0 is +0, not -0

// maxExact bounds the magnitude of a finite cost: float64 holds every
// integer up to 2^53 exactly.
const maxExact = 1 << 53

// maxToken bounds a token's length; no number or keyword of the format is
// longer.
const maxToken = 256

// ReadFile reads the file at path (gzip-compressed or not).
func ReadFile(path string, o ReadOptions) (*model.Model, error) {
	return uai.OpenRead("wcsp", path, func(r io.Reader, name string) (*model.Model, error) { return Read(r, name, o) })
}

// Read reads a WCSP file from r (gzip-compressed or not: the magic bytes
// say); name is used in errors.
func Read(r io.Reader, name string, o ReadOptions) (*model.Model, error) {
	br, done, err := uai.OpenText(o.Context, r, name)
	if err != nil {
		return nil, err
	}
	defer done()
	p := &parser{s: scanner{r: br, line: 1}, name: name, limit: model.EntryLimit(o.MaxEntries)}
	m, err := p.read()
	if err != nil {
		return nil, err
	}
	return m, nil
}

// scanner splits the input into whitespace-separated tokens, counting lines.
type scanner struct {
	r    *bufio.Reader
	line int // line of the next byte
	tok  []byte
	last int   // line of the last token returned
	err  error // the read error that ended the input (nil at a clean EOF)
}

// next returns the next token and its line; ok is false at the end of the
// input or on a read error (s.err).
func (s *scanner) next() (tok []byte, line int, ok bool) {
	s.tok = s.tok[:0]
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if err != io.EOF {
				s.err = err
			}
			if len(s.tok) == 0 && s.last > 0 {
				return s.tok, s.last, false // errors at the end name the last token's line
			}
			return s.tok, s.line, len(s.tok) > 0 && s.err == nil
		}
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v' {
			if len(s.tok) > 0 {
				if c == '\n' {
					s.r.UnreadByte()
				}
				s.last = s.line
				return s.tok, s.line, true
			}
			if c == '\n' {
				s.line++
			}
			continue
		}
		if len(s.tok) >= maxToken {
			return s.tok, s.line, true // the caller rejects it as too long
		}
		s.tok = append(s.tok, c)
	}
}

type parser struct {
	s     scanner
	name  string
	limit int
	line  int // line of the last token read
	top   int64
	used  int // table entries so far

	shared []sharedTable
}

// sharedTable is a table declared with a negative arity, kept for reuse.
type sharedTable struct {
	cards []int   // the domain sizes of its scope
	costs []int64 // arity <= 3: the full table (last variable fastest)
	// arity > 3: the listed tuples (flat indexes) and their costs
	index []int
}

func (p *parser) errf(format string, a ...any) error {
	return &ParseError{Name: p.name, Line: p.line, Msg: fmt.Sprintf(format, a...)}
}

// token returns the next token; what names what is expected, for errors.
func (p *parser) token(what string) (string, error) {
	tok, line, ok := p.s.next()
	p.line = line
	if !ok {
		if p.s.err != nil {
			return "", &ParseError{Name: p.name, Line: line, Msg: "reading " + what, Err: p.s.err}
		}
		return "", p.errf("unexpected end of file: want %s", what)
	}
	if len(tok) >= maxToken {
		return "", p.errf("%s: token %q... too long", what, tok[:40])
	}
	return string(tok), nil
}

// integer reads an integer token.
func (p *parser) integer(what string) (int64, error) {
	tok, err := p.token(what)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(tok, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, p.errf("%s: %q out of range", what, tok)
		}
		return 0, p.errf("%s: want an integer, have %q", what, tok)
	}
	return v, nil
}

// intIn reads an integer in [lo, hi].
func (p *parser) intIn(what string, lo, hi int64) (int, error) {
	v, err := p.integer(what)
	if err != nil {
		return 0, err
	}
	if v < lo || v > hi {
		return 0, p.errf("%s %d out of range [%d, %d]", what, v, lo, hi)
	}
	return int(v), nil
}

// cost reads a cost; a cost >= top is forbidden (returned as is, checked by
// score).
func (p *parser) cost(what string) (int64, error) {
	c, err := p.integer(what)
	if err != nil {
		return 0, err
	}
	if c < p.top && (c > maxExact || c < -maxExact) {
		return 0, p.errf("%s %d: magnitude above 2^53 is not exactly representable", what, c)
	}
	return c, nil
}

// score is the log-potential of cost c.
func (p *parser) score(c int64) float64 {
	if c >= p.top {
		return math.Inf(-1)
	}
	return -float64(c)
}

func (p *parser) read() (*model.Model, error) {
	if _, err := p.token("problem name"); err != nil {
		return nil, err
	}
	nvars, err := p.intIn("number of variables", 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	if _, err := p.intIn("maximum domain size", math.MinInt32, math.MaxInt32); err != nil {
		return nil, err
	}
	nfuncs, err := p.intIn("number of cost functions", 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	if p.top, err = p.integer("upper bound top"); err != nil {
		return nil, err
	}
	if p.top <= 0 {
		return nil, p.errf("upper bound top %d: want > 0", p.top)
	}
	var cards []int
	states := 0
	for i := 0; i < nvars; i++ {
		d, err := p.intIn(fmt.Sprintf("domain size of variable %d", i), math.MinInt32, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		if d < 0 {
			return nil, p.errf("not supported: interval variable %d (negative domain size %d)", i, d)
		}
		if d == 0 {
			return nil, p.errf("variable %d: empty domain", i)
		}
		if states += d; states > p.limit {
			return nil, p.errf("domain sizes sum to more than the limit of %d", p.limit)
		}
		cards = append(cards, d)
	}
	m := model.New(cards)
	for a := 0; a < nfuncs; a++ {
		if err := p.function(m, a); err != nil {
			return nil, err
		}
	}
	if tok, line, ok := p.s.next(); ok {
		p.line = line
		return nil, p.errf("unexpected %q after the %d cost functions the header declares", tok, nfuncs)
	} else if p.s.err != nil {
		return nil, &ParseError{Name: p.name, Line: line, Msg: "reading", Err: p.s.err}
	}
	return m, nil
}

// function reads cost function a.
func (p *parser) function(m *model.Model, a int) error {
	what := fmt.Sprintf("arity of cost function %d", a)
	arity, err := p.intIn(what, -int64(len(m.Cards)), int64(len(m.Cards)))
	if err != nil {
		return err
	}
	share := arity < 0
	if share {
		arity = -arity
	}
	if arity == 0 {
		return p.constant(m, a)
	}
	vars := make([]int, arity)
	for k := range vars {
		if vars[k], err = p.intIn(fmt.Sprintf("variable of cost function %d", a), 0, int64(len(m.Cards)-1)); err != nil {
			return err
		}
		for _, v := range vars[:k] {
			if v == vars[k] {
				return p.errf("cost function %d: variable %d twice in the scope", a, v)
			}
		}
	}
	def, err := p.cost(fmt.Sprintf("default cost of cost function %d", a))
	if err != nil {
		return err
	}
	if def == -1 || (def < 0 && arity == 2) {
		kw, err := p.token("global cost function keyword")
		if err != nil {
			return err
		}
		return p.errf("not supported: %s (global cost function)", kw)
	}
	if def < 0 && arity == 3 {
		return p.errf("not supported: negative default cost %d of ternary cost function %d", def, a)
	}
	cards := make([]int, arity)
	size := 1
	for k, v := range vars {
		cards[k] = m.Cards[v]
		if size > (p.limit-p.used)/cards[k] {
			return p.errf("cost function %d: table of more than %d entries exceeds the entry limit (%d left of %d)", a, size, p.limit-p.used, p.limit)
		}
		size *= cards[k]
	}
	p.used += size
	ntuples, err := p.integer(fmt.Sprintf("number of tuples of cost function %d", a))
	if err != nil {
		return err
	}
	costs := make([]int64, size)
	if ntuples < 0 {
		if share {
			return p.errf("cost function %d: a shared table (negative arity) cannot reuse another (negative tuple count)", a)
		}
		k := -ntuples // MinInt64 stays negative: refused below
		if k <= 0 || k > int64(len(p.shared)) {
			return p.errf("cost function %d: shared table %d is not defined (%d so far)", a, k, len(p.shared))
		}
		sh := &p.shared[k-1]
		if !equalInts(sh.cards, cards) {
			return p.errf("cost function %d: shared table %d has domain sizes %v, the scope %v", a, k, sh.cards, cards)
		}
		if sh.index == nil && arity <= 3 {
			copy(costs, sh.costs)
		} else {
			for e := range costs {
				costs[e] = def
			}
			for t, e := range sh.index {
				costs[e] = sh.costs[t]
			}
		}
	} else {
		if ntuples > int64(size) {
			return p.errf("cost function %d: %d tuples for a table of %d entries", a, ntuples, size)
		}
		for e := range costs {
			costs[e] = def
		}
		var index []int
		var listed []int64
		for t := 0; t < int(ntuples); t++ {
			e := 0
			for k := range vars {
				s, err := p.intIn(fmt.Sprintf("value of variable %d in tuple %d of cost function %d", vars[k], t+1, a), 0, int64(cards[k]-1))
				if err != nil {
					return err
				}
				e = e*cards[k] + s
			}
			c, err := p.cost(fmt.Sprintf("cost of tuple %d of cost function %d", t+1, a))
			if err != nil {
				return err
			}
			costs[e] = c
			if share && arity > 3 {
				index, listed = append(index, e), append(listed, c)
			}
		}
		if share {
			if arity > 3 {
				if index == nil {
					index = []int{}
				}
				p.shared = append(p.shared, sharedTable{cards: cards, costs: listed, index: index})
			} else {
				p.shared = append(p.shared, sharedTable{cards: cards, costs: append([]int64(nil), costs...)})
			}
		}
	}
	table := make([]float64, size)
	for e, c := range costs {
		table[e] = p.score(c)
	}
	m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: vars, Table: table})
	return nil
}

// constant reads an arity-0 function: "defaultcost ntuples" and, when
// ntuples is 1, its cost.
func (p *parser) constant(m *model.Model, a int) error {
	c, err := p.cost(fmt.Sprintf("default cost of constant cost function %d", a))
	if err != nil {
		return err
	}
	n, err := p.intIn(fmt.Sprintf("number of tuples of constant cost function %d", a), 0, 1)
	if err != nil {
		return err
	}
	if n == 1 {
		if c, err = p.cost(fmt.Sprintf("cost of constant cost function %d", a)); err != nil {
			return err
		}
	}
	if c >= p.top { // every assignment is forbidden: a factor says so
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{}, Table: []float64{math.Inf(-1)}})
		return nil
	}
	m.Constant -= float64(c)
	return nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
