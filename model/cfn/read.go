package cfn

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

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

// Header is a file's problem line: its name, direction and precision.
type Header struct {
	Name      string
	Maximize  bool // "mustbe": ">B"
	Precision int  // decimals of the costs (those of B)
	// Bound is B in units of 10^-Precision.
	Bound int64
}

// Cost turns a score of a model read with this header back into the
// file's objective (what toulbar2 prints as "Optimum:"), rounded to the
// file's precision: minus the score when minimising, the score when
// maximising.
func (h Header) Cost(score float64) float64 {
	if math.IsInf(score, 0) || math.IsNaN(score) {
		if h.Maximize {
			return score
		}
		return 0 - score
	}
	scale := pow10[h.Precision]
	c := math.Round(score*scale) / scale
	if !h.Maximize {
		c = -c
	}
	return c + 0 // never -0
}

// ParseError is a problem found in an input file; its message is one line
// "NAME:LINE: problem" (the UAI reader's error type).
type ParseError = uai.ParseError

// maxExact bounds the magnitude of a cost in units: float64 holds every
// integer up to 2^53 exactly.
const maxExact = 1 << 53

// maxPrecision bounds the precision: 10^15 units still leave costs up to 9
// exact.
const maxPrecision = 15

var pow10 = func() (p [maxPrecision + 1]float64) {
	p[0] = 1
	for i := 1; i <= maxPrecision; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// maxToken bounds a token's length (a name or a number).
const maxToken = 1024

// ReadFile reads the file at path (gzip-compressed or not).
func ReadFile(path string, o ReadOptions) (*model.Model, Header, error) {
	var h Header
	m, err := uai.OpenRead("cfn", path, func(r io.Reader, name string) (m *model.Model, err error) {
		m, h, err = Read(r, name, o)
		return m, err
	})
	return m, h, err
}

// Read reads a CFN file from r (gzip-compressed or not: the magic bytes
// say); name is used in errors.
func Read(r io.Reader, name string, o ReadOptions) (*model.Model, Header, error) {
	br, done, err := uai.OpenText(o.Context, r, name)
	if err != nil {
		return nil, Header{}, err
	}
	defer done()
	p := &parser{s: scanner{r: br, line: 1, start: true}, name: name, limit: model.EntryLimit(o.MaxEntries)}
	m, err := p.read()
	if err != nil {
		return nil, Header{}, err
	}
	return m, p.h, nil
}

// scanner splits the input into tokens as toulbar2's tokenizer does:
// separators are white space, '"', ':' and ','; each brace is a token.
type scanner struct {
	r     *bufio.Reader
	line  int  // line of the next byte
	start bool // the next byte starts a line
	tok   []byte
	last  int   // line of the last token returned
	err   error // the read error that ended the input (nil at a clean EOF)
}

func isSep(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\f', '\v', '"', ':', ',':
		return true
	}
	return false
}

func isBrace(c byte) bool { return c == '{' || c == '}' || c == '[' || c == ']' }

// skipLine drops the rest of the line, leaving its newline unread.
func (s *scanner) skipLine() {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if err != io.EOF {
				s.err = err
			}
			return
		}
		if c == '\n' {
			s.r.UnreadByte()
			return
		}
	}
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
		if s.start && c == '#' {
			s.skipLine()
			continue
		}
		if c == '/' {
			if b, _ := s.r.Peek(1); len(b) == 1 && b[0] == '/' {
				s.skipLine()
				continue
			}
		}
		if c == '\n' {
			if len(s.tok) > 0 {
				s.r.UnreadByte()
				s.last = s.line
				return s.tok, s.line, true
			}
			s.line++
			s.start = true
			continue
		}
		s.start = false
		if isSep(c) || isBrace(c) {
			if len(s.tok) > 0 {
				if isBrace(c) {
					s.r.UnreadByte()
				}
				s.last = s.line
				return s.tok, s.line, true
			}
			if isBrace(c) {
				s.tok = append(s.tok, c)
				s.last = s.line
				return s.tok, s.line, true
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
	used  int // table entries so far
	h     Header
	json  bool // the tags are there (the file starts {problem ...)

	peeked  bool // tok is the next token, not yet consumed
	tok     string
	tokLine int
	eof     bool

	varIndex  map[string]int
	valIndex  []map[string]int // per variable: value name -> index
	funcs     []function
	shares    map[string][]int // function name -> the functions sharing its table
	shareLine map[string]int   // where a share names a function first
	defined   map[string]int   // a named table function -> its index in funcs
	constant  int64            // the constants' sum, in units (saturated)
	forbidAll bool             // a constant is forbidden
}

// function is one read function over one or more variables: its factor in
// the model and its best (least) entry in units.
type function struct {
	factor int
	min    int64
	finite bool // some entry is finite
}

func (p *parser) errf(format string, a ...any) error {
	return &ParseError{Name: p.name, Line: p.line, Msg: fmt.Sprintf(format, a...)}
}

// next returns the next token; what names what is expected, for errors.
func (p *parser) next(what string) (string, error) {
	if err := p.fill(what); err != nil {
		return "", err
	}
	if p.eof {
		return "", p.errf("unexpected end of file: want %s", what)
	}
	p.peeked = false
	return p.tok, nil
}

// peek returns the next token without consuming it; "" at the end of the
// input.
func (p *parser) peek(what string) (string, error) {
	if err := p.fill(what); err != nil {
		return "", err
	}
	if p.eof {
		return "", nil
	}
	return p.tok, nil
}

func (p *parser) fill(what string) error {
	if p.peeked {
		p.line = p.tokLine
		return nil
	}
	tok, line, ok := p.s.next()
	p.line, p.tokLine = line, line
	if !ok {
		if p.s.err != nil {
			return &ParseError{Name: p.name, Line: line, Msg: "reading " + what, Err: p.s.err}
		}
		p.eof, p.tok, p.peeked = true, "", true
		return nil
	}
	if len(tok) >= maxToken {
		return p.errf("%s: token %q... too long", what, tok[:40])
	}
	p.tok, p.peeked = string(tok), true
	return nil
}

func isOpen(t string) bool  { return t == "{" || t == "[" }
func isClose(t string) bool { return t == "}" || t == "]" }

// open reads an opening brace.
func (p *parser) open(what string) error {
	return p.brace(what, isOpen, "want '{' or '[' to open")
}

// close reads a closing brace.
func (p *parser) close(what string) error {
	return p.brace(what, isClose, "want '}' or ']' to close")
}

// brace reads a token that is accepts (a brace of one kind); another
// token is an error that says want, what and the token read.
func (p *parser) brace(what string, is func(string) bool, want string) error {
	t, err := p.next(what)
	if err != nil {
		return err
	}
	if !is(t) {
		return p.errf("%s %s, have %q", want, what, t)
	}
	return nil
}

// tag reads the tag name when the file has tags.
func (p *parser) tag(name string) error {
	if !p.json {
		return nil
	}
	t, err := p.next("tag " + name)
	if err != nil {
		return err
	}
	if t != name {
		return p.errf("want tag %q, have %q", name, t)
	}
	return nil
}

func startsNumber(t string) bool { return t != "" && strings.IndexByte("0123456789-+.", t[0]) >= 0 }
func isDigit(c byte) bool        { return c >= '0' && c <= '9' }

// units parses a decimal number truncated to the precision (toulbar2's
// Decimal2Cost) into units of 10^-precision.
func (p *parser) units(t, what string) (int64, error) {
	s := t
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	var v int64
	digits, decimals := 0, -1 // decimals: -1 before the point
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.' && decimals < 0:
			decimals = 0
		case isDigit(c):
			digits++
			if decimals >= 0 {
				if decimals >= p.h.Precision {
					continue // truncated, as toulbar2 does
				}
				decimals++
			}
			if v = v*10 + int64(c-'0'); v > maxExact {
				return 0, p.errf("%s %s: magnitude above 2^53 units of 10^-%d is not exactly representable", what, t, p.h.Precision)
			}
		default:
			return 0, p.errf("%s: want a decimal number or inf, have %q", what, t)
		}
	}
	if digits == 0 {
		return 0, p.errf("%s: want a decimal number or inf, have %q", what, t)
	}
	for decimals = max(decimals, 0); decimals < p.h.Precision; decimals++ {
		if v *= 10; v > maxExact {
			return 0, p.errf("%s %s: magnitude above 2^53 units of 10^-%d is not exactly representable", what, t, p.h.Precision)
		}
	}
	if neg {
		v = -v
	}
	return v, nil
}

// cost parses a cost into units to minimise (negated when the file
// maximises); inf is forbidden.
func (p *parser) cost(t, what string) (c int64, forbidden bool, err error) {
	if t == "inf" {
		return 0, true, nil
	}
	c, err = p.units(t, what)
	if p.h.Maximize {
		c = -c
	}
	return c, false, err
}

// score is the log-potential of an entry of c units to minimise.
func (p *parser) score(c int64, forbidden bool) float64 {
	if forbidden {
		return math.Inf(-1)
	}
	return float64(-c) / pow10[p.h.Precision]
}

// satAdd adds two costs, saturating at ±2^62 (each term is at most 2^53).
func satAdd(a, b int64) int64 {
	s := a + b
	const lim = 1 << 62
	if s > lim {
		return lim
	}
	if s < -lim {
		return -lim
	}
	return s
}

func (p *parser) read() (*model.Model, error) {
	if err := p.open("the network"); err != nil {
		return nil, err
	}
	t, err := p.next("problem")
	if err != nil {
		return nil, err
	}
	if t == "problem" {
		p.json = true
		if t, err = p.next("problem"); err != nil {
			return nil, err
		}
	}
	if !isOpen(t) {
		return nil, p.errf("want '{' or '[' to open the problem, have %q", t)
	}
	if err := p.header(); err != nil {
		return nil, err
	}
	m, err := p.variables()
	if err != nil {
		return nil, err
	}
	if err := p.functions(m); err != nil {
		return nil, err
	}
	p.applyBound(m)
	return m, nil
}

// header reads the problem's name and bound; the opening brace is read.
func (p *parser) header() error {
	if err := p.tag("name"); err != nil {
		return err
	}
	name, err := p.next("problem name")
	if err != nil {
		return err
	}
	p.h.Name = name
	if err := p.tag("mustbe"); err != nil {
		return err
	}
	b, err := p.next("mustbe bound")
	if err != nil {
		return err
	}
	if b[0] != '<' && b[0] != '>' {
		return p.errf("mustbe %q: want '<' (minimise) or '>' (maximise) and a bound", b)
	}
	p.h.Maximize = b[0] == '>'
	if dot := strings.IndexByte(b, '.'); dot >= 0 {
		p.h.Precision = len(b) - dot - 1
	}
	if p.h.Precision > maxPrecision {
		return p.errf("mustbe %q: precision of %d decimals, at most %d supported", b, p.h.Precision, maxPrecision)
	}
	if p.h.Bound, err = p.units(b[1:], "mustbe bound"); err != nil {
		return err
	}
	return p.close("the problem")
}

// variables reads the variables and their domains.
func (p *parser) variables() (*model.Model, error) {
	if err := p.tag("variables"); err != nil {
		return nil, err
	}
	if err := p.open("the variables"); err != nil {
		return nil, err
	}
	p.varIndex = map[string]int{}
	var cards []int
	states := 0
	for i := 0; ; i++ {
		t, err := p.next("a variable or '}'")
		if err != nil {
			return nil, err
		}
		if isClose(t) {
			break
		}
		name := fmt.Sprintf("x%d", i) // toulbar2's name of an unnamed variable
		if !isOpen(t) && !isDigit(t[0]) {
			name = t
			if t, err = p.next("the domain of variable " + name); err != nil {
				return nil, err
			}
		}
		if _, dup := p.varIndex[name]; dup {
			return nil, p.errf("variable %q declared twice", name)
		}
		vals := map[string]int{}
		d := 0
		if isOpen(t) {
			for {
				v, err := p.next("a value of variable " + name)
				if err != nil {
					return nil, err
				}
				if isClose(v) {
					break
				}
				if isOpen(v) || isDigit(v[0]) {
					return nil, p.errf("variable %s: value name %q: want a name not starting with a digit", name, v)
				}
				if _, dup := vals[v]; dup {
					return nil, p.errf("variable %s: value %q twice", name, v)
				}
				if states+d >= p.limit {
					return nil, p.errf("domain sizes sum to more than the limit of %d", p.limit)
				}
				vals[v] = d
				d++
			}
		} else {
			n, err := strconv.ParseInt(t, 10, 64)
			if err != nil {
				return nil, p.errf("variable %s: want a domain size or a list of values, have %q", name, t)
			}
			if n < 0 {
				return nil, p.errf("not supported: interval variable %s (negative domain size %d)", name, n)
			}
			if n > int64(p.limit-states) {
				return nil, p.errf("domain sizes sum to more than the limit of %d", p.limit)
			}
			d = int(n)
			vals = nil // "v0", "v1", ... resolved by valueIndex
		}
		if d == 0 {
			return nil, p.errf("variable %s: empty domain", name)
		}
		states += d
		p.varIndex[name] = len(cards)
		p.valIndex = append(p.valIndex, vals)
		cards = append(cards, d)
	}
	return model.New(cards), nil
}

// valueIndex resolves a value token (an index or a name) of variable v.
func (p *parser) valueIndex(m *model.Model, v int, t string) (int, error) {
	if isDigit(t[0]) {
		k, err := strconv.Atoi(t)
		if err != nil || k >= m.Cards[v] {
			return 0, p.errf("value %q out of the domain of variable %d (size %d)", t, v, m.Cards[v])
		}
		return k, nil
	}
	if p.valIndex[v] == nil { // a domain size: values v0, v1, ...
		if k, err := strconv.Atoi(strings.TrimPrefix(t, "v")); err == nil && len(t) > 1 && t[0] == 'v' && isDigit(t[1]) && k < m.Cards[v] {
			return k, nil
		}
	} else if k, ok := p.valIndex[v][t]; ok {
		return k, nil
	}
	return 0, p.errf("value %q not in the domain of variable %d", t, v)
}

// functions reads the cost functions up to their closing brace or the end
// of the input (toulbar2 stops there too).
func (p *parser) functions(m *model.Model) error {
	if err := p.tag("functions"); err != nil {
		return err
	}
	if err := p.open("the functions"); err != nil {
		return err
	}
	p.shares, p.shareLine, p.defined = map[string][]int{}, map[string]int{}, map[string]int{}
	for a := 0; ; a++ {
		t, err := p.peek("a function or '}'")
		if err != nil {
			return err
		}
		if t == "" || isClose(t) {
			p.next("")
			break
		}
		if err := p.function(m, a); err != nil {
			return err
		}
	}
	for name := range p.shares {
		p.line = p.shareLine[name]
		return p.errf("cost table %q shared but never defined", name)
	}
	// Nothing but closing braces may follow.
	for {
		t, err := p.peek("the end")
		if err != nil {
			return err
		}
		if t == "" {
			return nil
		}
		p.next("")
		if !isClose(t) {
			return p.errf("unexpected %q after the functions", t)
		}
	}
}

// function reads function a.
func (p *parser) function(m *model.Model, a int) error {
	t, err := p.next("a function")
	if err != nil {
		return err
	}
	name := ""
	if !isOpen(t) {
		name = t
		if err := p.open("function " + name); err != nil {
			return err
		}
	}
	what := fmt.Sprintf("function %d", a)
	if name != "" {
		what = "function " + name
	}
	if err := p.tag("scope"); err != nil {
		return err
	}
	if err := p.open("the scope of " + what); err != nil {
		return err
	}
	var vars []int
	for {
		v, err := p.next("a variable of the scope of " + what)
		if err != nil {
			return err
		}
		if isClose(v) {
			break
		}
		i, ok := p.varIndex[v]
		if isDigit(v[0]) {
			k, err := strconv.Atoi(v)
			i, ok = k, err == nil && k < len(m.Cards)
		}
		if !ok {
			return p.errf("%s: unknown variable %q", what, v)
		}
		for _, u := range vars {
			if u == i {
				return p.errf("%s: variable %q twice in the scope", what, v)
			}
		}
		vars = append(vars, i)
	}
	// A default cost (sparse table) or none (full table).
	t, err = p.next("the costs of " + what)
	if err != nil {
		return err
	}
	var def int64
	var defBad, sparse bool
	if (p.json && t == "defaultcost") || (!p.json && (startsNumber(t) || t == "inf")) {
		if p.json {
			if t, err = p.next("the default cost of " + what); err != nil {
				return err
			}
		}
		if def, defBad, err = p.cost(t, "default cost of "+what); err != nil {
			return err
		}
		sparse = true
		if t, err = p.next("the costs of " + what); err != nil {
			return err
		}
	}
	if p.json {
		if t == "type" {
			typ, err := p.next("the type of " + what)
			if err != nil {
				return err
			}
			return p.errf("not supported: %s (global cost function)", typ)
		}
		if t != "costs" {
			return p.errf("%s: want tag \"costs\" or \"type\", have %q", what, t)
		}
		if t, err = p.next("the costs of " + what); err != nil {
			return err
		}
	}
	if !isOpen(t) { // a global function's type, or a shared table's name
		typeLine := p.line
		u, err := p.next("the costs of " + what)
		if err != nil {
			return err
		}
		if isOpen(u) {
			p.line = typeLine
			return p.errf("not supported: %s (global cost function)", t)
		}
		if !isClose(u) {
			return p.errf("%s: want '}' after the shared table's name %q, have %q", what, t, u)
		}
		if sparse {
			return p.errf("%s shares the table of %s: it cannot have a default cost", what, t)
		}
		if len(vars) == 0 {
			return p.errf("%s: a constant cannot share a table", what)
		}
		return p.share(m, vars, t, what)
	}
	if len(vars) == 0 {
		return p.constantFunc(def, defBad, sparse, what)
	}
	f, err := p.table(m, vars, sparse, def, defBad, what)
	if err != nil {
		return err
	}
	if err := p.close(what); err != nil {
		return err
	}
	if name != "" {
		p.defined[name] = len(p.funcs) - 1
		if pend, ok := p.shares[name]; ok {
			src := m.Factors[f.factor].Table
			for _, g := range pend {
				if !sameCards(m, m.Factors[p.funcs[g].factor].Vars, vars) {
					return p.errf("%s: cannot share its table with a function over domain sizes %v", what, cardsOf(m, m.Factors[p.funcs[g].factor].Vars))
				}
				copy(m.Factors[p.funcs[g].factor].Table, src)
				p.funcs[g].min, p.funcs[g].finite = f.min, f.finite
			}
			delete(p.shares, name)
			delete(p.shareLine, name)
		}
	}
	return nil
}

func cardsOf(m *model.Model, vars []int) []int {
	c := make([]int, len(vars))
	for k, v := range vars {
		c[k] = m.Cards[v]
	}
	return c
}

func sameCards(m *model.Model, a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if m.Cards[a[k]] != m.Cards[b[k]] {
			return false
		}
	}
	return true
}

// alloc sets aside a table over vars within the entry limit.
func (p *parser) alloc(m *model.Model, vars []int, what string) ([]float64, error) {
	size := 1
	for _, v := range vars {
		if size > (p.limit-p.used)/m.Cards[v] {
			return nil, p.errf("%s: table of more than %d entries exceeds the entry limit (%d left of %d)", what, size, p.limit-p.used, p.limit)
		}
		size *= m.Cards[v]
	}
	p.used += size
	return make([]float64, size), nil
}

// share adds a function whose table is that of the function named src,
// defined later; its table is filled then.
func (p *parser) share(m *model.Model, vars []int, src, what string) error {
	table, err := p.alloc(m, vars, what)
	if err != nil {
		return err
	}
	m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: vars, Table: table})
	if k, ok := p.defined[src]; ok { // toulbar2 wants it later; earlier is as clear
		g := p.funcs[k]
		if !sameCards(m, m.Factors[g.factor].Vars, vars) {
			return p.errf("%s: cannot share the table of %s over domain sizes %v", what, src, cardsOf(m, m.Factors[g.factor].Vars))
		}
		copy(table, m.Factors[g.factor].Table)
		p.funcs = append(p.funcs, function{factor: len(m.Factors) - 1, min: g.min, finite: g.finite})
		return nil
	}
	if _, ok := p.shares[src]; !ok {
		p.shareLine[src] = p.line
	}
	p.shares[src] = append(p.shares[src], len(p.funcs))
	p.funcs = append(p.funcs, function{factor: len(m.Factors) - 1})
	return nil
}

// constantFunc reads a constant's table (its opening brace read) and the
// function's closing brace.
func (p *parser) constantFunc(def int64, defBad, sparse bool, what string) error {
	t, err := p.next("the cost of " + what)
	if err != nil {
		return err
	}
	c, bad := def, defBad
	if !isClose(t) {
		if c, bad, err = p.cost(t, "cost of "+what); err != nil {
			return err
		}
		if err := p.close("the costs of " + what); err != nil {
			return err
		}
	} else if !sparse {
		return p.errf("%s: a constant without a cost or a default cost", what)
	}
	if bad {
		p.forbidAll = true
	} else {
		p.constant = satAdd(p.constant, c)
	}
	return p.close(what)
}

// table reads a table over vars (its opening brace read, up to its closing
// brace) and adds its factor.
func (p *parser) table(m *model.Model, vars []int, sparse bool, def int64, defBad bool, what string) (function, error) {
	table, err := p.alloc(m, vars, what)
	if err != nil {
		return function{}, err
	}
	f := function{factor: len(m.Factors), min: math.MaxInt64}
	note := func(c int64, bad bool) {
		if !bad {
			f.min, f.finite = min(f.min, c), true
		}
	}
	if sparse {
		set := make([]bool, len(table))
		listed := 0
		for {
			e := 0
			for k, v := range vars {
				t, err := p.next("a tuple of " + what)
				if err != nil {
					return f, err
				}
				if k == 0 && isClose(t) {
					goto done
				}
				s, err := p.valueIndex(m, v, t)
				if err != nil {
					return f, err
				}
				e = e*m.Cards[v] + s
			}
			t, err := p.next("the cost of a tuple of " + what)
			if err != nil {
				return f, err
			}
			c, bad, err := p.cost(t, "cost of a tuple of "+what)
			if err != nil {
				return f, err
			}
			if set[e] {
				return f, p.errf("%s: tuple %d listed twice", what, e)
			}
			set[e] = true
			listed++
			table[e] = p.score(c, bad)
			note(c, bad)
		}
	done:
		ds := p.score(def, defBad)
		for e := range table {
			if !set[e] {
				table[e] = ds
			}
		}
		if listed < len(table) {
			note(def, defBad)
		}
	} else {
		for e := range table {
			t, err := p.next("a cost of " + what)
			if err != nil {
				return f, err
			}
			if isClose(t) {
				return f, p.errf("%s: %d costs for a table of %d entries", what, e, len(table))
			}
			c, bad, err := p.cost(t, "cost of "+what)
			if err != nil {
				return f, err
			}
			table[e] = p.score(c, bad)
			note(c, bad)
		}
		t, err := p.next("the end of the costs of " + what)
		if err != nil {
			return f, err
		}
		if !isClose(t) {
			return f, p.errf("%s: more costs than its %d entries", what, len(table))
		}
	}
	m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: vars, Table: table})
	p.funcs = append(p.funcs, f)
	return f, nil
}

// applyBound sets the constant and forbids every entry that cannot be part
// of an assignment within the bound: minimising, an entry c of a function
// whose best entry is min, when c - min + (the sum of every function's best
// entry and the constants) reaches the bound (toulbar2's shifted costs
// against its shifted upper bound).
func (p *parser) applyBound(m *model.Model) {
	scale := pow10[p.h.Precision]
	m.Constant = float64(-p.constant) / scale
	ub := p.h.Bound
	if p.h.Maximize {
		ub = -ub
	}
	best := p.constant
	for _, f := range p.funcs {
		if !f.finite {
			return // no assignment is feasible: the model says so already
		}
		best = satAdd(best, f.min)
	}
	if p.forbidAll || best >= ub { // no assignment is feasible
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{}, Table: []float64{math.Inf(-1)}})
		return
	}
	slack := satAdd(ub, -best) // an entry may exceed its function's best by less
	for _, f := range p.funcs {
		t := m.Factors[f.factor].Table
		for e, s := range t {
			if math.IsInf(s, -1) {
				continue
			}
			if c := int64(math.Round(-s * scale)); satAdd(c, -f.min) >= slack {
				t[e] = math.Inf(-1)
			}
		}
	}
}
