package cli

import (
	"fmt"
	"math"
	"os"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trace"
)

// Output is where a run's progress reports go: the console, which
// throttles what it shows, and the --trace file, which gets every report
// and ends on the result (trace.Recorder).
type Output struct {
	con   *Console
	quiet bool
	rec   *trace.Recorder
	file  *os.File
	path  string
}

// OpenOutput creates the trace file at path, if any ("": none); quiet:
// no progress on the console. A file that cannot be created is os.Create's
// error (an *os.PathError whose Op is "open"). Call Close on every path
// that does not reach Finish.
func (c *Console) OpenOutput(path string, quiet bool) (*Output, error) {
	o := &Output{con: c, quiet: quiet, path: path}
	if path == "" {
		return o, nil
	}
	file, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if o.rec, err = trace.NewRecorder(file); err != nil {
		file.Close()
		return nil, fmt.Errorf("--trace %s: %w", path, err)
	}
	o.file = file
	return o, nil
}

// Progress is the callback for the solver: nil when nothing takes reports.
func (o *Output) Progress() func(solver.Progress) {
	switch {
	case o.rec == nil && o.quiet:
		return nil
	case o.rec == nil:
		return o.con.Progress
	}
	return func(p solver.Progress) {
		o.rec.Progress(p)
		o.con.Progress(p)
	}
}

// Finish takes the live line away and ends the trace on res.
func (o *Output) Finish(res solver.Result) error {
	o.con.Close()
	if o.rec == nil {
		return nil
	}
	err := o.rec.Finish(res)
	if cerr := o.file.Close(); err == nil {
		err = cerr
	}
	o.rec = nil
	if err != nil {
		return fmt.Errorf("--trace %s: %w", o.path, err)
	}
	return nil
}

// Close closes the trace file when the run did not finish (an error).
func (o *Output) Close() {
	o.con.Close()
	if o.rec != nil {
		o.file.Close()
		o.rec = nil
	}
}

// Console is the console the output prints to.
func (o *Output) Console() *Console { return o.con }

// Result prints the final line (stderr also under --quiet).
func (c *Console) Result(res solver.Result) {
	c.Print("result", fmt.Sprintf("status=%s iterations=%d dual=%s primal=%s gap=%s seconds=%.3f",
		res.Status, res.Iterations, Num(res.Dual), Num(res.Primal), Num(res.Gap), res.Elapsed.Seconds()),
		"status", string(res.Status), "iterations", res.Iterations, "dual", res.Dual, "primal", res.Primal,
		"gap", res.Gap, "seconds", res.Elapsed.Seconds())
}

// Traffic prints the coordinator's NATS traffic over n iterations.
func (c *Console) Traffic(in, out uint64, n int) {
	per := (in + out) / uint64(n)
	c.Close()
	c.Print("traffic", fmt.Sprintf("traffic: %d bytes in, %d bytes out at the coordinator, %d bytes per iteration", in, out, per),
		"bytes_in", in, "bytes_out", out, "bytes_per_iteration", per)
}

// Recorded prints the final line of a result recorded in the Raft log by
// a leader that died before printing it.
func (c *Console) Recorded(r engine.Result) {
	res := r.Solver()
	c.Print("result", fmt.Sprintf("status=%s iterations=%d dual=%s primal=%s (recorded by the previous leader)",
		r.Status, r.Iterations, ptrNum(r.Dual), ptrNum(r.Primal)),
		"status", string(r.Status), "iterations", r.Iterations, "dual", res.Dual, "primal", res.Primal, "recorded", true)
}

func ptrNum(v *float64) string {
	if v == nil {
		return Num(math.Inf(1))
	}
	return Num(*v)
}
