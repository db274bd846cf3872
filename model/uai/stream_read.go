package uai

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"slices"

	"github.com/ddrun/ddrun/model"
)

// Stream reads a UAI model from r like ReadWith, but without keeping its
// tables: once the variables and the scopes are read and checked it calls
// structure with the model's structure (the cardinalities, zero unaries and
// one Dense factor per scope, with a nil Table), then table once per
// factor, in order, with the factor's log-potentials. t is a buffer that
// the next table reuses: table must copy what it keeps. Memory is the
// structure (O(variables + scope entries)) plus the largest table, whatever
// the file's size. An error from a callback stops the read and is returned
// as it is; the file's errors are the *ParseError values of ReadWith, and
// the trailing-garbage check runs after the last table.
func Stream(r io.Reader, name string, opts ReadOptions, structure func(*model.Model) error, table func(a int, t []float64) error) error {
	if !opts.Log.valid() {
		return fmt.Errorf("uai: %s: invalid log base %v", name, opts.Log)
	}
	src, err := openSource(r, name, opts.Context)
	if err != nil {
		return err
	}
	defer src.close()
	p := &modelParser{src: src, base: opts.Log, limit: model.EntryLimit(opts.MaxEntries), onTable: table}
	for _, step := range []func() error{p.preamble, p.variables, p.factorScopes} {
		if err := step(); err != nil {
			return err
		}
	}
	if err := structure(p.build()); err != nil {
		return err
	}
	if err := p.factorTables(); err != nil {
		return err
	}
	return p.end()
}

// StreamScopes reads a UAI model like Stream, without keeping the scopes
// either, so that memory does not grow with the factors: it reads the
// input twice, open giving a fresh reader of the same bytes each time.
// The first reader only skips the header and the scopes, counting their
// tokens (skipScopes); the second reads and checks the variables and the
// number of factors, then vars is called with the cardinalities (only
// valid during the call) and the number of factors; the second reader
// then reads and checks the scopes one at a time, in step with the first
// reading the tables, and factor gets each factor's scope and table
// (both valid during the call only). Memory is a few words per variable
// (the cardinalities and the lines they lie on, and a scope check's
// stamps) plus the largest scope and table.
//
// The errors are ReadWith's, the first it finds: its *ParseError values
// for the file (where a scope and a table both have one, the scope's,
// found by reading the rest of the scopes once something fails), callback
// errors as they are; a second read that does not match the first is an
// error. Since the scopes are checked as the tables are read, vars and
// factor may have been called before an error in the scopes is found:
// what they made is then to be thrown away.
//
// With opts.Converters the tables are read in windows on several
// goroutines (windows.go), and where the windows stop (a bad entry, a file
// cut short, ...) the input is read a third and fourth time sequentially,
// past the tables already handed over, for the sequential errors.
func StreamScopes(open func() (io.ReadCloser, error), name string, opts ReadOptions, vars func(cards []int, factors int) error, factor func(a int, scope []int, t []float64) error) error {
	if !opts.Log.valid() {
		return fmt.Errorf("uai: %s: invalid log base %v", name, opts.Log)
	}
	parser := func() (*modelParser, func(), error) {
		r, err := open()
		if err != nil {
			return nil, nil, fmt.Errorf("uai: %w", err)
		}
		src, err := openSource(r, name, opts.Context)
		if err != nil {
			r.Close()
			return nil, nil, err
		}
		p := &modelParser{src: src, base: opts.Log, limit: model.EntryLimit(opts.MaxEntries), eachPiece: opts.EachPiece}
		return p, func() { src.close(); r.Close() }, nil
	}
	tables, closeTables, err := parser()
	if err != nil {
		return err
	}
	defer func() { closeTables() }()
	scopes, closeScopes, err := parser()
	if err != nil {
		return err
	}
	defer func() { closeScopes() }()
	// The header's errors first, before the skip reads past them.
	for _, step := range []func() error{scopes.preamble, scopes.variables, scopes.factorCount} {
		if err := step(); err != nil {
			return err
		}
	}
	skipped := tables.skipScopes()
	changed := func(a int) error {
		return fmt.Errorf("uai: %s: the second read has %d scopes, the first %d (did the file change?)", name, a, tables.nf)
	}
	// The scopes are read one at a time, as the tables need them, into
	// one buffer.
	scopes.startScopes()
	reuse := func(k int) []int {
		scopes.scopes = slices.Grow(scopes.scopes[:0], k)[:k]
		return scopes.scopes
	}
	read := 0          // the scopes read
	var scopeErr error // the scopes' first error: they are read no further
	nextScope := func() ([]int, int, bool) {
		if scopeErr != nil || read == scopes.nf {
			return nil, 0, false
		}
		scope, size, err := scopes.readScope(read, reuse)
		scopeErr = err
		read++
		return scope, size, err == nil
	}
	// settle returns err unless the scopes have an error, which comes
	// first (ReadWith reads every scope before any table): the scopes not
	// read yet are read for it, then their last check is made. The end of
	// the reading is settle(nil).
	settle := func(err error) error {
		if err != nil && opts.Context != nil && opts.Context.Err() != nil {
			return err // cancelled: no more reading (without an error, the scopes' reads fail with the context's)
		}
		for {
			if _, _, ok := nextScope(); !ok {
				break
			}
		}
		if scopeErr == nil {
			scopeErr = scopes.checkFreeStates(scopes.stamp)
		}
		if scopeErr != nil {
			return scopeErr
		}
		return err
	}
	if !skipped {
		// The skip stopped at something that is not a count: an error of
		// the header or the scopes, which the full reading finds.
		if err := settle(nil); err != nil {
			return err
		}
		return fmt.Errorf("uai: %s: the first read stopped in the scopes, the second read all %d (did the file change?)", name, scopes.nf)
	}
	if scopes.nf != tables.nf {
		return changed(scopes.nf)
	}
	if err := vars(scopes.m.Cards, scopes.nf); err != nil {
		return settle(err)
	}
	// What the caller was given, for a fallback that reads the file again.
	firstCards, firstFactors := cardsDigest(scopes.m.Cards), scopes.nf
	tables.tableSize = func(a int) (int, error) {
		scope, size, ok := nextScope()
		if !ok {
			if scopeErr != nil {
				return 0, scopeErr
			}
			return 0, changed(a)
		}
		tables.cur = scope
		return size, nil
	}
	if opts.Converters > 0 {
		done, err := tables.windowTables(opts.Converters, factor)
		if err != errFallback {
			return settle(err)
		}
		// Read again sequentially for what the windows left (windows.go),
		// past the tables handed over.
		closeScopes()
		closeTables()
		closeScopes, closeTables = func() {}, func() {}
		opts.Converters = 0
		same := func(cards []int, factors int) error {
			if factors != firstFactors || cardsDigest(cards) != firstCards {
				return fmt.Errorf("uai: %s: the file changed between reads (%d factors, then %d, or other cardinalities)", name, firstFactors, factors)
			}
			return nil
		}
		return StreamScopes(open, name, opts, same, func(a int, scope []int, t []float64) error {
			if a < done {
				return nil
			}
			return factor(a, scope, t)
		})
	}
	tables.onTable = func(a int, t []float64) error { return factor(a, tables.cur, t) }
	if err := tables.factorTables(); err != nil {
		return settle(err)
	}
	if err := settle(nil); err != nil {
		return err
	}
	return tables.end()
}

// skipScopes moves p's scanner past the header and the scopes, reading
// them as counts without the checks of variables and factorScopes (the
// other reader of StreamScopes makes them), so that it stands where they
// would have left it, its line count included; p.nf is the number of
// factors. It is false at anything else (a token that is not a count, a
// scope over more variables than the model has, the end of the file):
// the full reading finds an error there or before.
func (p *modelParser) skipScopes() bool {
	if p.preamble() != nil {
		return false
	}
	what := func() string { return "a count" } // for an error not kept
	n, _, err := p.count(what)
	if err != nil {
		return false
	}
	for range n {
		if _, _, err := p.count(what); err != nil {
			return false
		}
	}
	nf, _, err := p.count(what)
	if err != nil {
		return false
	}
	for a := 0; a < nf; a++ {
		// Most scopes are skipped a buffer at a time; one that the fast
		// skip is not sure of is read by counts.
		if a += p.src.s.skipScopes(nf-a, n); a == nf {
			break
		}
		k, _, err := p.count(what)
		if err != nil || k > n {
			return false
		}
		for range k {
			if _, _, err := p.count(what); err != nil {
				return false
			}
		}
	}
	p.nf = nf
	return true
}

// cardsDigest is a digest of the cardinalities, to tell a file that
// changed between reads without keeping them.
func cardsDigest(cards []int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, c := range cards {
		binary.LittleEndian.PutUint64(b[:], uint64(c))
		h.Write(b[:])
	}
	return h.Sum64()
}
