package uai

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// unset marks, in an MPEWriter's scratch file, a variable not given yet.
const unset = math.MaxUint32

// MPEWriter writes an assignment of N variables in the UAI MPE solution
// format (byte for byte as WriteMPE) to a file, from pieces of (variables,
// states) that come in any order, without holding the assignment: each
// piece goes into a scratch file of 4 bytes per variable beside the
// output, at the variables' offsets; Close turns the scratch file into the
// text, in a temporary file renamed into place, so that a failed or
// interrupted write never leaves a partial solution. Every variable must
// be given exactly once. Memory: the piece in hand and two 64 KiB buffers.
// A path ending in .sol gets toulbar2's solution line instead (the states,
// space-separated, on one line: what its -w option writes, and what
// launch.WriteMPE writes for such a path), so that --out names the format
// whichever way the assignment is gathered.
type MPEWriter struct {
	path    string
	n       int
	scratch *os.File
	given   int    // variables given so far
	run     []byte // the states of consecutive variables from..
	from    int
	old     []byte // run's slots as they were, read back for the check
	err     error  // the first error; the writer is then useless
	sol     bool   // toulbar2's solution line, not UAI MPE
}

// CreateMPE starts writing an assignment of n variables to path (see
// MPEWriter). Abort removes what it set aside when Close is not reached.
func CreateMPE(path string, n int) (*MPEWriter, error) {
	if n < 0 || n > math.MaxInt32 {
		return nil, fmt.Errorf("uai: write MPE %s: %d variables", path, n)
	}
	scratch, err := os.CreateTemp(filepath.Dir(path), ".mpe-scratch-*")
	if err != nil {
		return nil, fmt.Errorf("uai: write MPE: %w", err)
	}
	w := &MPEWriter{path: path, n: n, scratch: scratch, sol: strings.HasSuffix(strings.ToLower(path), ".sol")}
	if err := fill(scratch, int64(n)*4); err != nil {
		w.Abort()
		return nil, fmt.Errorf("uai: write MPE %s: %w", path, err)
	}
	return w, nil
}

// fill writes n bytes 0xff (unset slots) to f.
func fill(f *os.File, n int64) error {
	block := make([]byte, 1<<16)
	for i := range block {
		block[i] = 0xff
	}
	for ; n > 0; n -= int64(len(block)) {
		if _, err := f.Write(block[:min(n, int64(len(block)))]); err != nil {
			return err
		}
	}
	return nil
}

// Put records the states of vars (states[k] is variable vars[k]'s). A
// variable out of range, given twice or with a negative state is an
// error, which every later call returns too.
func (w *MPEWriter) Put(vars []int, states []int32) error {
	if w.err != nil {
		return w.err
	}
	if len(vars) != len(states) {
		return w.fail(fmt.Errorf("a piece of %d variables and %d states", len(vars), len(states)))
	}
	for k, v := range vars {
		switch {
		case v < 0 || v >= w.n:
			return w.fail(fmt.Errorf("variable %d out of range [0,%d)", v, w.n))
		case states[k] < 0:
			return w.fail(fmt.Errorf("variable %d in state %d", v, states[k]))
		}
		// One write per run of consecutive variables (a part's interior
		// mostly is one), not one per variable.
		if len(w.run) > 0 && v != w.from+len(w.run)/4 {
			if err := w.flush(); err != nil {
				return err
			}
		}
		if len(w.run) == 0 {
			w.from = v
		}
		w.run = binary.LittleEndian.AppendUint32(w.run, uint32(states[k]))
	}
	return w.flush()
}

// flush writes the run in hand to its slots, which must all be unset.
func (w *MPEWriter) flush() error {
	if len(w.run) == 0 {
		return nil
	}
	off := int64(w.from) * 4
	w.old = append(w.old[:0], make([]byte, len(w.run))...)
	if _, err := w.scratch.ReadAt(w.old, off); err != nil {
		return w.fail(fmt.Errorf("reading back: %w", err))
	}
	for k := 0; k < len(w.old); k += 4 {
		if binary.LittleEndian.Uint32(w.old[k:]) != unset {
			return w.fail(fmt.Errorf("variable %d given twice", w.from+k/4))
		}
	}
	if _, err := w.scratch.WriteAt(w.run, off); err != nil {
		return w.fail(err)
	}
	w.given += len(w.run) / 4
	w.run = w.run[:0]
	return nil
}

func (w *MPEWriter) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("uai: write MPE %s: %w", w.path, err)
	}
	return w.err
}

// Close writes the MPE text from the states given, once every variable
// was given, atomically into place at the writer's path; it removes the
// scratch file either way.
func (w *MPEWriter) Close() error {
	defer w.Abort()
	if w.err != nil {
		return w.err
	}
	if w.given != w.n {
		return w.fail(w.missing())
	}
	tmp, err := os.CreateTemp(filepath.Dir(w.path), ".mpe-*")
	if err != nil {
		return w.fail(err)
	}
	defer os.Remove(tmp.Name())
	err = w.text(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), w.path)
	}
	if err != nil {
		return w.fail(err)
	}
	return nil
}

// missing names the first variable not given (given < n: there is one).
func (w *MPEWriter) missing() error {
	r := bufio.NewReaderSize(io.NewSectionReader(w.scratch, 0, int64(w.n)*4), 1<<16)
	var b [4]byte
	for v := range w.n {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return fmt.Errorf("reading back: %w", err)
		}
		if binary.LittleEndian.Uint32(b[:]) == unset {
			return fmt.Errorf("%d of %d variables given: variable %d has no state", w.given, w.n, v)
		}
	}
	return fmt.Errorf("%d of %d variables given", w.given, w.n)
}

// text writes the MPE text of the scratch file's states to out, reading
// and writing 64 KiB at a time; a state under 10, the usual, is one byte
// of text, not a strconv call (BenchmarkMPEWriter).
func (w *MPEWriter) text(out io.Writer) error {
	bw := bufio.NewWriterSize(out, 1<<16)
	if !w.sol {
		bw.WriteString("MPE\n" + strconv.Itoa(w.n))
	}
	raw := make([]byte, 1<<16)
	txt := make([]byte, 0, 1<<16+16)
	for from := 0; from < w.n; {
		k := min(len(raw)/4, w.n-from)
		if _, err := w.scratch.ReadAt(raw[:4*k], int64(from)*4); err != nil {
			return fmt.Errorf("reading back: %w", err)
		}
		txt = txt[:0]
		for i := range k {
			if from+i > 0 || !w.sol {
				txt = append(txt, ' ')
			}
			if s := binary.LittleEndian.Uint32(raw[4*i:]); s < 10 {
				txt = append(txt, '0'+byte(s))
			} else {
				txt = strconv.AppendUint(txt, uint64(s), 10)
			}
		}
		if _, err := bw.Write(txt); err != nil {
			return err
		}
		from += k
	}
	bw.WriteString("\n")
	return bw.Flush()
}

// Abort removes the scratch file, leaving the output untouched. It may be
// called after Close (it then does nothing) and more than once.
func (w *MPEWriter) Abort() {
	if w.scratch == nil {
		return
	}
	w.scratch.Close()
	os.Remove(w.scratch.Name())
	w.scratch = nil
	if w.err == nil {
		w.err = errors.New("uai: write MPE: the writer is closed")
	}
}

// WriteMPEPieces writes to path (none when empty) the assignment of n
// variables that pieces gives, by calling put with each piece in turn
// (MPEWriter); x, when not nil (of length n), gets the assignment too.
// Every variable must come exactly once, with a state >= 0.
func WriteMPEPieces(path string, n int, x []int, pieces func(put func(vars []int, states []int32) error) error) error {
	if path == "" && x == nil {
		return nil
	}
	if x != nil && len(x) != n {
		return fmt.Errorf("uai: write MPE: %d variables into %d", n, len(x))
	}
	var w *MPEWriter
	if path != "" {
		var err error
		if w, err = CreateMPE(path, n); err != nil {
			return err
		}
		defer w.Abort()
	}
	for v := range x {
		x[v] = -1 // not given yet
	}
	err := pieces(func(vars []int, states []int32) error {
		if w != nil {
			if err := w.Put(vars, states); err != nil {
				return err
			}
		}
		if x == nil {
			return nil
		}
		for k, v := range vars { // checked by Put too when there is a file
			switch {
			case len(states) != len(vars):
				return fmt.Errorf("uai: write MPE: a piece of %d variables and %d states", len(vars), len(states))
			case v < 0 || v >= len(x):
				return fmt.Errorf("uai: write MPE: variable %d out of range [0,%d)", v, len(x))
			case states[k] < 0:
				return fmt.Errorf("uai: write MPE: variable %d in state %d", v, states[k])
			case x[v] >= 0:
				return fmt.Errorf("uai: write MPE: variable %d given twice", v)
			}
			x[v] = int(states[k])
		}
		return nil
	})
	if err != nil {
		return err
	}
	for v, s := range x {
		if s < 0 {
			return fmt.Errorf("uai: write MPE: variable %d has no state", v)
		}
	}
	if w == nil {
		return nil
	}
	return w.Close()
}
