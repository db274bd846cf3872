package uai

import (
	"bufio"
	"fmt"
	"io"
	"math"

	"github.com/ddrun/ddrun/model"
)

// WriteStream writes the model src gives to w, byte for byte as Write would
// write it, holding one piece at a time: it passes over the source three
// times (planning the tables, their scopes, their entries). progress, when
// not nil, is called now and then.
func WriteStream(w io.Writer, src model.Source, opts WriteOptions, progress model.Progress) error {
	if err := writeStream(w, src, opts, progress); err != nil {
		return fmt.Errorf("uai: write: %w", err)
	}
	return nil
}

// WriteStreamFile is WriteStream to the file at path, named as for WriteFile.
func WriteStreamFile(path string, src model.Source, progress model.Progress) error {
	opts := WriteOptions{Log: OptionsFor(path).Log}
	return writeFile(path, func(w io.Writer) error { return writeStream(w, src, opts, progress) })
}

// streamer turns a Source's pieces into output tables.
type streamer struct {
	src      model.Source
	log      LogBase
	check    model.PieceChecker
	x        []int
	entries  []float64
	err      error
	done     int64
	total    int64
	progress model.Progress
}

// fail keeps the first error.
func (s *streamer) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// factorTable returns factor a's output table, its range planned.
func (s *streamer) factorTable(a int, f *model.Factor) (outTable, error) {
	local, err := s.check.Factor(a, f)
	if err != nil {
		return outTable{}, fmt.Errorf("invalid model: %w", err)
	}
	t := outTable{vars: f.Vars, copies: 1}
	if f.Kind == model.Dense {
		t.entries = f.Table
	} else {
		if _, err := local.TableSize(local.Factors[0].Vars); err != nil {
			return outTable{}, fmt.Errorf("factor %d (%s): %w", a, f.Kind, err)
		}
		if len(s.x) < len(f.Vars) {
			s.x = make([]int, len(f.Vars))
		}
		s.entries = s.entries[:0]
		enumerate(local, 0, s.x, func(v float64) { s.entries = append(s.entries, v) })
		t.entries = s.entries
	}
	return t, s.plan(&t, fmt.Sprintf("factor %d (%s)", a, f.Kind))
}

// unaryTable returns variable i's unary table, its range planned; ok is
// false when its unaries are all zero (Write writes no table then).
func (s *streamer) unaryTable(i int, u []float64, scope *[1]int) (t outTable, ok bool, err error) {
	if err := s.check.Unaries(i, u); err != nil {
		return t, false, fmt.Errorf("invalid model: %w", err)
	}
	if allZero(u) {
		return t, false, nil
	}
	scope[0] = i
	t = outTable{vars: scope[:], entries: u, copies: 1}
	return t, true, s.plan(&t, "unary table")
}

// plan sets t's shift and copies, as writeModel does.
func (s *streamer) plan(t *outTable, name string) error {
	if s.log != Potentials {
		return nil
	}
	if err := planRange(func(fn func(float64)) {
		for _, v := range t.entries {
			fn(v)
		}
	}, t); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// eachTable calls fn with every factor's table, then every non-zero unary
// table, in Write's order; it stops calling fn after the first error.
func (s *streamer) eachTable(fn func(t *outTable)) {
	var scope [1]int
	s.src.EachFactor(func(a int, f *model.Factor) {
		s.progress.Step(&s.done, s.total)
		if s.err != nil {
			return
		}
		t, err := s.factorTable(a, f)
		if err != nil {
			s.fail(err)
			return
		}
		fn(&t)
	})
	s.src.EachUnaries(func(i int, u []float64) {
		s.progress.Step(&s.done, s.total)
		if s.err != nil {
			return
		}
		t, ok, err := s.unaryTable(i, u, &scope)
		if err != nil {
			s.fail(err)
			return
		}
		if ok {
			fn(&t)
		}
	})
}

// writeStream writes src as writeModel writes a model.
func writeStream(w io.Writer, src model.Source, opts WriteOptions, progress model.Progress) error {
	if !opts.Log.valid() {
		return fmt.Errorf("invalid log base %v", opts.Log)
	}
	n := src.NumVars()
	for i := range n {
		if c := src.Card(i); c < 1 {
			return fmt.Errorf("invalid model: variable %d: cardinality %d < 1", i, c)
		}
	}
	constant := src.Constant()
	if math.IsNaN(constant) || math.IsInf(constant, 0) {
		return fmt.Errorf("invalid model: constant %v is not finite", constant)
	}
	s := &streamer{src: src, log: opts.Log, check: model.PieceChecker{NumVars: n, Card: src.Card}, progress: progress, total: 3 * int64(n+src.NumFactors())}
	// Pass 1: count the tables and gather the shifts into the constant.
	tables := 0
	s.eachTable(func(t *outTable) {
		tables += t.copies
		constant += t.shift
	})
	if s.err != nil {
		return s.err
	}
	consts, err := constantTables(constant, opts.Log)
	if err != nil {
		return err
	}
	for i := range consts {
		tables += consts[i].copies
	}
	mw := &modelWriter{bw: bufio.NewWriterSize(w, 64<<10), card: src.Card, base: opts.Log}
	mw.preamble(n, tables)
	// Pass 2: the scopes; pass 3: the tables.
	s.eachTable(mw.scope)
	for i := range consts {
		mw.scope(&consts[i])
	}
	s.eachTable(mw.table)
	for i := range consts {
		mw.table(&consts[i])
	}
	if s.err != nil {
		return s.err
	}
	return mw.bw.Flush()
}
