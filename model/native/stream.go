package native

import (
	"bufio"
	"fmt"
	"io"
	"math"

	"github.com/ddrun/ddrun/model"
)

// WriteStream writes the model src gives in format f to w, byte for byte as
// Write would write it, holding one piece at a time: it passes over the
// unaries twice (whether any is non-zero, then the output) and over the
// factors once. progress, when not nil, is called now and then.
func WriteStream(w io.Writer, src model.Source, f Format, progress model.Progress) error {
	if f != JSON && f != Msgpack {
		return fmt.Errorf("native: unknown format %v", f)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	s := &streamer{src: src, progress: progress, check: model.PieceChecker{NumVars: src.NumVars(), Card: src.Card}}
	s.total = int64(2*src.NumVars() + src.NumFactors())
	if err := s.prepare(); err != nil {
		return fmt.Errorf("native: invalid model: %w", err)
	}
	if !s.unaries {
		s.total -= int64(src.NumVars()) // no second pass over them
		if s.progress != nil && s.done == s.total {
			s.progress(s.done, s.total) // nothing but the header is left
		}
	}
	d := &modelDoc{
		n:           src.NumVars(),
		card:        src.Card,
		constant:    s.constant,
		unaries:     s.unaries,
		nfactors:    src.NumFactors(),
		eachUnaries: s.eachUnaries,
		eachFactor:  s.eachFactor,
	}
	var err error
	if f == JSON {
		err = writeJSON(bw, d)
	} else {
		err = writeMsgpack(bw, d)
	}
	if s.err != nil {
		return fmt.Errorf("native: invalid model: %w", s.err)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// WriteStreamFile is WriteStream to path, its format given by its extension
// (see FormatOf); a .gz suffix compresses it.
func WriteStreamFile(path string, src model.Source, progress model.Progress) error {
	f, err := FormatOf(path)
	if err != nil {
		return err
	}
	return writeFile(path, func(w io.Writer) error { return WriteStream(w, src, f, progress) })
}

// streamer writes a Source's pieces.
type streamer struct {
	src      model.Source
	check    model.PieceChecker
	unaries  bool // whether any unary differs from +0
	constant float64
	err      error
	done     int64
	total    int64
	progress model.Progress
}

// prepare checks what it can before the first byte: the cardinalities, the
// constant and the unaries, and whether there are unaries to write.
func (s *streamer) prepare() error {
	total := 0
	for i := range s.src.NumVars() {
		c := s.src.Card(i)
		if c < 1 {
			return fmt.Errorf("variable %d: cardinality %d < 1", i, c)
		}
		if total += c; total > maxUnaryEntries {
			return fmt.Errorf("more than %d unary entries, the format allows %d", maxUnaryEntries, maxUnaryEntries)
		}
	}
	if s.constant = s.src.Constant(); math.IsNaN(s.constant) || math.IsInf(s.constant, 0) {
		return fmt.Errorf("constant %v is not finite", s.constant)
	}
	var err error
	s.src.EachUnaries(func(i int, u []float64) {
		s.progress.Step(&s.done, s.total)
		if err != nil {
			return
		}
		err = s.check.Unaries(i, u)
		for _, v := range u {
			s.unaries = s.unaries || math.Float64bits(v) != 0
		}
	})
	return err
}

// eachFactor calls fn with each factor that passes the checks, stopping at
// the first that does not.
func (s *streamer) eachFactor(fn func(a int, f *model.Factor)) {
	s.src.EachFactor(func(a int, f *model.Factor) {
		s.progress.Step(&s.done, s.total)
		if s.err != nil {
			return
		}
		if _, err := s.check.Factor(a, f); err != nil {
			s.err = err
			return
		}
		if f.Kind == model.Sequence && len(f.Table) > model.MaxTableEntries {
			s.err = fmt.Errorf("factor %d (%s): transitions have %d entries, the format allows %d", a, f.Kind, len(f.Table), model.MaxTableEntries)
			return
		}
		fn(a, f)
	})
}

// eachUnaries calls fn with each variable's unaries (checked by prepare).
func (s *streamer) eachUnaries(fn func(i int, u []float64)) {
	s.src.EachUnaries(func(i int, u []float64) {
		s.progress.Step(&s.done, s.total)
		fn(i, u)
	})
}
