package uai

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"iter"

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
// input twice, open giving a fresh reader of the same bytes each time. The
// first reader reads and checks the variables and every scope (all the
// errors ReadWith finds there, in the same order), then calls vars with the
// cardinalities (only valid during the call) and the number of factors;
// the second reader then reads the scopes again, one at a time, in step
// with the first reading the tables, and factor gets each factor's scope and table (both
// valid during the call only). Memory is a few words per variable (the
// cardinalities and the lines they lie on, in each reader, and a scope
// check's stamps) plus the largest scope and table. Callback errors are
// returned as they are; the file's errors are ReadWith's *ParseError
// values, and a second read that does not match the first is an error.
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
	tables.onScope = func(int, []int, int) error { return nil }
	for _, step := range []func() error{tables.preamble, tables.variables, tables.factorScopes} {
		if err := step(); err != nil {
			return err
		}
	}
	if err := vars(tables.m.Cards, tables.nf); err != nil {
		return err
	}
	// What the caller was given, for a fallback that reads the file again.
	firstCards, firstFactors := cardsDigest(tables.m.Cards), tables.nf
	tables.m.Cards, tables.cardLines = nil, nil // the second reader has them
	scopes, closeScopes, err := parser()
	if err != nil {
		return err
	}
	defer func() { closeScopes() }()
	type scoped struct {
		vars []int
		size int
	}
	var scopeErr error
	next, stop := iter.Pull(func(yield func(scoped) bool) {
		scopes.onScope = func(_ int, scope []int, size int) error {
			if !yield(scoped{scope, size}) {
				return errStopped
			}
			return nil
		}
		for _, step := range []func() error{scopes.preamble, scopes.variables, scopes.factorScopes} {
			if scopeErr = step(); scopeErr != nil {
				return
			}
		}
	})
	defer stop()
	tables.tableSize = func(a int) (int, error) {
		s, ok := next()
		if !ok {
			if scopeErr != nil {
				return 0, scopeErr
			}
			return 0, fmt.Errorf("uai: %s: the second read has %d scopes, the first %d (did the file change?)", name, a, tables.nf)
		}
		tables.cur = s.vars
		return s.size, nil
	}
	if opts.Converters > 0 {
		done, err := tables.windowTables(opts.Converters, factor)
		if err != errFallback {
			return err
		}
		// Read again sequentially for what the windows left (windows.go),
		// past the tables handed over.
		stop()
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
		return err
	}
	return tables.end()
}

// errStopped ends the second reader of StreamScopes when the first stops.
var errStopped = errors.New("stopped")

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
