package uai

import (
	"fmt"
	"io"

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
