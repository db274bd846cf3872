package trace

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"

	"github.com/ddrun/ddrun/solver"
)

// Columns is the CSV header, in order. Scripts rely on these names.
var Columns = []string{"iteration", "seconds", "dual", "primal", "gap", "primal_res", "dual_res", "eta", "nodes"}

// Row is one line of a trace. Primal is -Inf before any assignment is
// known, and Gap then +Inf; they are written as "-Inf" and "+Inf".
type Row struct {
	Iteration int
	Seconds   float64
	Dual      float64
	Primal    float64
	Gap       float64
	PrimalRes float64
	DualRes   float64
	Eta       float64
	Nodes     int // branch and bound nodes solved (0 outside --exact)
}

// FromProgress is the row of a progress report.
func FromProgress(p solver.Progress) Row {
	return Row{Iteration: p.Iteration, Seconds: p.Elapsed.Seconds(), Dual: p.Dual, Primal: p.Primal, Gap: p.Gap,
		PrimalRes: p.PrimalRes, DualRes: p.DualRes, Eta: p.Eta, Nodes: p.Nodes}
}

func (r Row) fields(b []string) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return append(b[:0], strconv.Itoa(r.Iteration), f(r.Seconds), f(r.Dual), f(r.Primal), f(r.Gap),
		f(r.PrimalRes), f(r.DualRes), f(r.Eta), strconv.Itoa(r.Nodes))
}

// Writer writes rows as CSV, the header first. It is safe for concurrent
// use and flushes after every row, so that a trace read while the run goes
// on (or after it was killed) ends on a whole row.
type Writer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	csv *csv.Writer
	buf []string
	err error
}

// NewWriter writes the header to w and returns the Writer.
func NewWriter(w io.Writer) (*Writer, error) {
	bw := bufio.NewWriter(w)
	tw := &Writer{w: bw, csv: csv.NewWriter(bw)}
	tw.write(Columns)
	return tw, tw.err
}

func (t *Writer) write(rec []string) {
	if t.err != nil {
		return
	}
	if err := t.csv.Write(rec); err != nil {
		t.err = fmt.Errorf("trace: %w", err)
		return
	}
	t.csv.Flush()
	if err := t.csv.Error(); err != nil {
		t.err = fmt.Errorf("trace: %w", err)
		return
	}
	if err := t.w.Flush(); err != nil {
		t.err = fmt.Errorf("trace: %w", err)
	}
}

// Write appends r. After the first failure every call returns that error.
func (t *Writer) Write(r Row) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = r.fields(t.buf)
	t.write(t.buf)
	return t.err
}

// Err is the first write error, if any.
func (t *Writer) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Read parses a trace written by Writer. A header other than Columns, a
// row of another width or a field that is not a number is an error that
// names the line.
func Read(r io.Reader) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(Columns)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("trace: empty file, no header")
	}
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	for i, c := range Columns {
		if head[i] != c {
			return nil, fmt.Errorf("trace: line 1: column %d is %q, want %q", i+1, head[i], c)
		}
	}
	var rows []Row
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		var row Row
		var perr error
		num := func(k int) float64 {
			v, err := strconv.ParseFloat(rec[k], 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("trace: line %d: %s %q is not a number", line, Columns[k], rec[k])
			}
			return v
		}
		count := func(k int) int {
			v, err := strconv.Atoi(rec[k])
			if (err != nil || v < 0) && perr == nil {
				perr = fmt.Errorf("trace: line %d: %s %q is not a count", line, Columns[k], rec[k])
			}
			return v
		}
		row.Iteration, row.Seconds, row.Dual, row.Primal, row.Gap = count(0), num(1), num(2), num(3), num(4)
		row.PrimalRes, row.DualRes, row.Eta, row.Nodes = num(5), num(6), num(7), count(8)
		if perr == nil && (math.IsNaN(row.Seconds) || row.Seconds < 0) {
			perr = fmt.Errorf("trace: line %d: seconds %q", line, rec[1])
		}
		if perr != nil {
			return nil, perr
		}
		rows = append(rows, row)
	}
}

// Recorder turns a run's progress reports into rows, one per report, and
// makes the last row the run's result (Finish). It holds the latest row
// back until the next report comes, so that a report and the result for
// the same iteration (the result may carry a better primal, found by a
// final polish, or a primal rescored on the original model) become one
// row. It is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	w       *Writer
	pending Row
	has     bool
}

// NewRecorder writes the header to w and returns the Recorder.
func NewRecorder(w io.Writer) (*Recorder, error) {
	tw, err := NewWriter(w)
	if err != nil {
		return nil, err
	}
	return &Recorder{w: tw}, nil
}

// Progress records p. A write error is kept for Finish.
func (r *Recorder) Progress(p solver.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.has {
		_ = r.w.Write(r.pending)
	}
	r.pending, r.has = FromProgress(p), true
}

// Flush writes the row held back, if any: for a run that ended without a
// result (an error), whose trace then ends on its last report. It returns
// the first write error of the whole trace.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.has {
		r.has = false
		return r.w.Write(r.pending)
	}
	return r.w.Err()
}

// Finish writes the last row: the result's iterations, seconds, dual,
// primal and gap, with the residuals, eta and nodes of the last report.
// When the last report was of the same iteration the two are one row;
// otherwise the report's row comes first. It returns the first write
// error of the whole trace.
func (r *Recorder) Finish(res solver.Result) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.pending
	if r.has && r.pending.Iteration != res.Iterations {
		_ = r.w.Write(r.pending)
	}
	r.has = false
	last.Iteration, last.Seconds = res.Iterations, res.Elapsed.Seconds()
	last.Dual, last.Primal, last.Gap = res.Dual, res.Primal, res.Gap
	return r.w.Write(last)
}
