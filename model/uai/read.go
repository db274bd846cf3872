package uai

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/ddrun/ddrun/model"
)

// Read reads a model in the UAI format from r, plain or gzip-compressed.
// name is used in error messages and chooses the table encoding (see
// OptionsFor): names ending in .LG are read as natural logarithms.
func Read(r io.Reader, name string) (*model.Model, error) {
	return ReadWith(r, name, OptionsFor(name))
}

// ReadFile reads the model file at path (see Read).
func ReadFile(path string) (*model.Model, error) {
	return ReadFileWith(path, OptionsFor(path))
}

// ReadFileWith reads the model file at path with explicit options.
func ReadFileWith(path string, opts ReadOptions) (*model.Model, error) {
	return OpenRead("uai", path, func(r io.Reader, name string) (*model.Model, error) { return ReadWith(r, name, opts) })
}

// ReadWith reads a model in the UAI format from r with explicit options;
// unlike Read it ignores name's extension. Errors are *ParseError values
// whose message is one line NAME:LINE: problem.
func ReadWith(r io.Reader, name string, opts ReadOptions) (*model.Model, error) {
	if !opts.Log.valid() {
		return nil, fmt.Errorf("uai: %s: invalid log base %v", name, opts.Log)
	}
	src, err := openSource(r, name, opts.Context)
	if err != nil {
		return nil, err
	}
	defer src.close()
	p := &modelParser{src: src, base: opts.Log, limit: model.EntryLimit(opts.MaxEntries), structure: !opts.KeepDense, fold: opts.FoldUnary}
	m, err := p.parse()
	if err == nil && opts.Folded != nil {
		*opts.Folded = len(p.folded) - p.unfolded
	}
	return m, err
}

// modelParser holds the state of one model read.
type modelParser struct {
	src   *source
	base  LogBase
	limit int // on the total states, and on the total table entries
	// eachPiece applies limit to each cardinality, each table and the
	// number of variables instead of the totals (ReadOptions.EachPiece).
	eachPiece bool
	// m gets its factors as the scopes are read (ReadWith, Stream), each
	// a Dense factor whose scope is a slice of vars and whose table, read
	// next, a slice of tabs (ReadWith) or nil (Stream).
	m       *model.Model
	vars    arena[int]
	tabs    arena[float64]
	entries int // the total table entries, from the scopes
	scopes  []int
	// cardLines[v] is the line of variable v's cardinality.
	cardLines []int
	// onTable, when not nil, gets each table as it is read instead of
	// the model keeping it (Stream); buf is its reused buffer.
	onTable func(a int, t []float64) error
	buf     []float64
	// stamp[v] == a+1: variable v is in factor a's scope (readScope).
	stamp []int
	// tableSize, when not nil, gives the size of factor a's table instead
	// of the model's scope (StreamScopes: from the second reader's scope).
	tableSize func(a int) (int, error)
	cur       []int // the scope of the last tableSize (StreamScopes)
	nf        int   // the number of factors
	// structure turns exactly structured pairwise tables into their kinds
	// as they are read (model.StructurePair), so that their tables are
	// never kept.
	structure bool
	// fold (ReadOptions.FoldUnary) adds the tables of the factors over
	// fewer than two variables to the unaries and the constant; folded
	// lists them in file order, with their variable (-1: none).
	fold     bool
	folded   []foldedFactor
	unfolded int // folded factors kept after all (foldTable)
}

// foldedFactor is a factor that the reader folds: its number in the file
// and its variable (-1 when its scope is empty).
type foldedFactor struct{ a, v int32 }

// expect returns the next token, failing at the end of input with a message
// saying that what() was expected.
func (p *modelParser) expect(what func() string) ([]byte, int, error) {
	tok, line, err := p.src.next()
	if err != nil {
		return nil, line, err
	}
	if tok == nil {
		return nil, line, p.src.errorf(line, "unexpected end of file: expected "+what())
	}
	return tok, line, nil
}

// count reads a non-negative integer described by what().
func (p *modelParser) count(what func() string) (int, int, error) {
	if n, ok := p.src.s.nextDigits(); ok {
		return n, p.src.s.tokLine, nil
	}
	tok, line, err := p.expect(what)
	if err != nil {
		return 0, line, err
	}
	n, problem := parseCount(tok)
	if problem != "" {
		return 0, line, p.src.errorf(line, what()+": "+problem)
	}
	return n, line, nil
}

func (p *modelParser) parse() (*model.Model, error) {
	if err := p.preamble(); err != nil {
		return nil, err
	}
	if err := p.variables(); err != nil {
		return nil, err
	}
	if err := p.factorScopes(); err != nil {
		return nil, err
	}
	m := p.build() // before the tables: folded ones add to the unaries
	if err := p.factorTables(); err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil { // not expected: the parser checks as it goes
		return nil, &ParseError{Name: p.src.name, Line: p.src.s.tokLine, Msg: "invalid model", Err: err}
	}
	return m, nil
}

// preamble reads the network type.
func (p *modelParser) preamble() error {
	tok, line, err := p.expect(func() string { return "the preamble word MARKOV or BAYES" })
	if err != nil {
		return err
	}
	if !bytes.EqualFold(tok, []byte("MARKOV")) && !bytes.EqualFold(tok, []byte("BAYES")) {
		return p.src.errorf(line, "bad preamble word "+quote(tok)+": expected MARKOV or BAYES")
	}
	return nil
}

// variables reads the number of variables and their cardinalities.
func (p *modelParser) variables() error {
	n, nline, err := p.count(func() string { return "number of variables" })
	if err != nil {
		return err
	}
	if p.eachPiece && n > p.limit {
		return p.src.errorf(nline, fmt.Sprintf("%d variables, more than the limit of %d", n, p.limit))
	}
	cards := make([]int, 0, p.src.capFor(n, 2))
	p.cardLines = make([]int, 0, cap(cards))
	states := 0
	for i := 0; i < n; i++ {
		c, line, err := p.count(func() string { return fmt.Sprintf("cardinality of variable %d (of %d)", i, n) })
		if err != nil {
			return err
		}
		if c < 1 {
			return p.src.errorf(line, fmt.Sprintf("variable %d: cardinality %d < 1", i, c))
		}
		if p.eachPiece && c > p.limit {
			return p.src.errorf(line, fmt.Sprintf("variable %d: cardinality %d is over the limit of %d", i, c, p.limit))
		}
		if !p.eachPiece && c > p.limit-states {
			return p.src.errorf(line, fmt.Sprintf("variable %d: cardinality %d brings the total number of states over the limit of %d", i, c, p.limit))
		}
		states += c
		cards = append(cards, c)
		p.cardLines = append(p.cardLines, line)
	}
	p.m = &model.Model{Cards: cards}
	return nil
}

// factorScopes reads the number of factors and their scopes.
func (p *modelParser) factorScopes() error {
	if err := p.factorCount(); err != nil {
		return err
	}
	return p.scopeList()
}

// factorCount reads the number of factors.
func (p *modelParser) factorCount() error {
	nf, _, err := p.count(func() string { return "number of factors" })
	p.nf = nf
	return err
}

// scopeList reads the scopes of the p.nf factors.
func (p *modelParser) scopeList() error {
	nf, nvars := p.nf, len(p.m.Cards)
	if p.fold && (nf > math.MaxInt32 || nvars > math.MaxInt32) {
		p.fold = false // foldedFactor holds int32s
	}
	var ends []int // fold: where each kept factor's scope ends in p.scopes
	switch {
	case p.fold:
		// The factors are made once their number is known, after the
		// scopes, which meanwhile lie in one growing slice.
		p.scopes = make([]int, 0, p.src.capFor(2*nf, 2))
	default:
		p.m.Factors = make([]model.Factor, 0, p.src.capFor(nf, 4))
	}
	p.startScopes()
	one := make([]int, 1) // the scope of a factor to fold
	// The scope's own memory (no more than the cardinalities': k <=
	// nvars).
	mem := func(k int) []int {
		switch {
		case p.fold && k < 2:
			return one[:k]
		case p.fold:
			p.scopes = slices.Grow(p.scopes, k)
			return p.scopes[len(p.scopes) : len(p.scopes)+k]
		default:
			return p.vars.alloc(k, p.src.capFor(arenaBlock, 2))
		}
	}
	for a := 0; a < nf; a++ {
		scope, _, err := p.readScope(a, mem)
		if err != nil {
			return err
		}
		k := len(scope)
		switch {
		case p.fold && k < 2:
			v := int32(-1)
			if k == 1 {
				v = int32(scope[0])
			}
			p.folded = append(p.folded, foldedFactor{int32(a), v})
		case p.fold:
			p.scopes = p.scopes[:len(p.scopes)+k]
			ends = append(ends, len(p.scopes))
		default:
			p.m.Factors = append(p.m.Factors, model.Factor{Kind: model.Dense, Vars: scope})
		}
	}
	if p.fold {
		p.m.Factors = make([]model.Factor, len(ends))
		lo := 0
		for a, hi := range ends {
			p.m.Factors[a] = model.Factor{Kind: model.Dense, Vars: p.scopes[lo:hi:hi]}
			lo = hi
		}
		p.scopes = nil
	}
	return p.checkFreeStates(p.stamp)
}

// startScopes readies the checks of readScope.
func (p *modelParser) startScopes() {
	p.stamp = make([]int, len(p.m.Cards))
	p.entries = 0
}

// readScope reads factor a's scope into mem(k), the memory of its k
// variables, checks it (its variables, their repeats, its table's size,
// which p.entries adds up unless p.eachPiece) and returns it with its
// table's size.
func (p *modelParser) readScope(a int, mem func(k int) []int) ([]int, int, error) {
	nf, nvars := p.nf, len(p.m.Cards)
	k, line, err := p.count(func() string { return fmt.Sprintf("scope size of factor %d (of %d)", a, nf) })
	if err != nil {
		return nil, 0, err
	}
	if k > nvars {
		return nil, 0, p.src.errorf(line, fmt.Sprintf("factor %d scope has %d variables, the model has only %d", a, k, nvars))
	}
	scope := mem(k)
	for j := 0; j < k; j++ {
		v, vline, err := p.count(func() string { return fmt.Sprintf("variable %d of the scope of factor %d", j, a) })
		if err != nil {
			return nil, 0, err
		}
		if v >= nvars {
			return nil, 0, p.src.errorf(vline, fmt.Sprintf("factor %d scope: variable %d out of range [0,%d)", a, v, nvars))
		}
		if p.stamp[v] == a+1 {
			return nil, 0, p.src.errorf(vline, fmt.Sprintf("factor %d scope: variable %d appears twice", a, v))
		}
		p.stamp[v] = a + 1
		scope[j] = v
	}
	size, err := p.m.TableSize(scope)
	if err != nil {
		return nil, 0, p.src.errorf(line, fmt.Sprintf("factor %d: %v", a, err))
	}
	switch {
	case p.eachPiece && size > p.limit:
		return nil, 0, p.src.errorf(line, fmt.Sprintf("factor %d: its table of %d entries is over the limit of %d", a, size, p.limit))
	case p.eachPiece: // no total: nothing adds the tables up
	case size > p.limit-p.entries:
		return nil, 0, p.src.errorf(line, fmt.Sprintf("factor %d: its table of %d entries brings the total number of table entries over the limit of %d", a, size, p.limit))
	default:
		p.entries += size
	}
	return scope, size, nil
}

// checkFreeStates bounds the states of the variables in no scope (those with
// stamp 0), so that a few header bytes cannot claim gigabytes of unaries.
func (p *modelParser) checkFreeStates(stamp []int) error {
	free, states, widest := 0, 0, -1
	for v, c := range p.m.Cards {
		if stamp[v] != 0 {
			continue
		}
		free++
		states = model.AddCapped(states, c) // no total bounds c under EachPiece
		if widest < 0 || c > p.m.Cards[widest] {
			widest = v
		}
	}
	if model.FreeStatesOK(free, states) {
		return nil
	}
	return p.src.errorf(p.cardLines[widest], fmt.Sprintf("variable %d has cardinality %d but appears in no factor; the %d variables in no factor have %d states, more than %d", widest, p.m.Cards[widest], free, states, model.MaxFreeStates))
}

// factorTables reads one table per factor.
func (p *modelParser) factorTables() error {
	nf := p.nf
	left := p.entries // table entries still to come (ReadWith)
	next := 0         // the next folded factor
	kept := 0         // the next kept factor
	var memo entryMemo
	for a := 0; a < nf; a++ {
		fold := next < len(p.folded) && int(p.folded[next].a) == a
		tok, line, err := p.src.next()
		if err != nil {
			return err
		}
		if tok == nil {
			return p.src.errorf(line, fmt.Sprintf("unexpected end of file: expected the table of factor %d; the preamble declares %d factors, the file has %d tables", a, nf, a))
		}
		n, problem := parseCount(tok)
		if problem != "" {
			return p.src.errorf(line, fmt.Sprintf("entry count of the table of factor %d: %s", a, problem))
		}
		size := 0
		if p.tableSize != nil {
			if size, err = p.tableSize(a); err != nil {
				return err
			}
		} else if fold {
			size = 1
			if v := p.folded[next].v; v >= 0 {
				size = p.m.Cards[v]
			}
		} else if size, err = p.m.TableSize(p.m.Factors[kept].Vars); err != nil {
			return err // not expected: factorScopes checked it
		}
		if n != size {
			return p.src.errorf(line, fmt.Sprintf("table of factor %d has %d entries, scope needs %d", a, n, size))
		}
		// t is filled by appending: to the reused buffer (Stream), or to
		// the table's final memory, set aside at once when the input can
		// hold that many entries and grown as entries arrive otherwise.
		var t []float64
		arena := false
		switch {
		case p.onTable != nil || fold:
			t = p.buf[:0]
		case size <= arenaBlock/8 || p.src.capFor(size, 2) == size:
			left -= size
			t, arena = p.tabs.alloc(size, size+left)[:0], true
		default:
			t = make([]float64, 0, p.src.capFor(size, 2))
		}
		for e := 0; e < size; e++ {
			tok, line, err := p.src.next()
			if err != nil {
				return err
			}
			if tok == nil {
				return p.src.errorf(line, fmt.Sprintf("unexpected end of file: expected entry %d of the table of factor %d (%d entries)", e, a, size))
			}
			v, problem := memo.toLog(tok, p.base)
			if problem != "" {
				return p.src.errorf(line, fmt.Sprintf("table of factor %d entry %d: %s", a, e, problem))
			}
			t = append(t, v)
		}
		if p.onTable != nil {
			p.buf = t
			if err := p.onTable(a, t); err != nil {
				return err
			}
			kept++
			continue
		}
		if fold {
			p.buf = t
			if !p.foldTable(int(p.folded[next].v), t) {
				p.unfolded++
			}
			next++
			continue
		}
		p.m.Factors[kept].Table = t
		if p.structure && p.m.StructurePair(kept) && arena {
			p.tabs.unalloc() // the factor keeps a weight, not its table
		}
		kept++
	}
	return nil
}

// foldTable adds the table t of a factor over variable v (none: v < 0) to
// v's unaries or to the constant, as model.Reduce folds it. A sum that
// would not be a valid unary or constant (+Inf, NaN: log-potentials near
// the largest float64) leaves the factor a factor, after the others.
func (p *modelParser) foldTable(v int, t []float64) bool {
	m := p.m
	if v < 0 {
		if c := m.Constant + t[0]; !math.IsInf(c, 0) && !math.IsNaN(c) {
			m.Constant = c
			return true
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{}, Table: slices.Clone(t)})
		return false
	}
	u := m.Unary[m.UnaryOff[v]:m.UnaryOff[v+1]]
	for s, x := range t {
		if y := u[s] + x; math.IsInf(y, 1) || math.IsNaN(y) {
			m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{v}, Table: slices.Clone(t)})
			return false
		}
	}
	for s, x := range t {
		u[s] += x
	}
	return true
}

// end checks that nothing follows the last table.
func (p *modelParser) end() error {
	tok, line, err := p.src.next()
	if err != nil {
		return err
	}
	if tok != nil {
		return p.src.errorf(line, fmt.Sprintf("trailing garbage after the last table: %s (the preamble declares %d factors)", quote(tok), p.nf))
	}
	return nil
}

// build completes the model: its factors were made as the scopes and
// tables were read (under Stream their tables stay nil), and its unaries
// are all zero.
func (p *modelParser) build() *model.Model {
	m := p.m
	n := len(m.Cards)
	m.UnaryOff = make([]int, n+1)
	for i, c := range m.Cards {
		m.UnaryOff[i+1] = m.UnaryOff[i] + c
	}
	m.Unary = make([]float64, m.UnaryOff[n])
	return m
}
