package main

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"

	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trace"
)

// startConsole sets the console up for a run once the flags are parsed:
// warnings only and no progress under --quiet, and the limits the live
// line measures the run against.
func (f *solveFlags) startConsole(con *cli.Console) {
	level := slog.LevelInfo
	if f.quiet {
		level = slog.LevelWarn
	}
	maxIter := f.s.MaxIter
	if maxIter == math.MaxInt || f.s.AnytimeOn {
		maxIter = 0 // no iteration limit, or one per phase: the time limit measures the run
	}
	con.Start(cli.Options{Level: level, Quiet: f.quiet, MaxIter: maxIter, TimeLimit: f.s.TimeLimit, Exact: f.s.Exact})
}

// runOutput is where a run's progress reports go: the console, which
// throttles what it shows, and the --trace file, which gets every report
// and ends on the result (trace.Recorder).
type runOutput struct {
	con   *cli.Console
	quiet bool
	rec   *trace.Recorder
	file  *os.File
	path  string
}

// checkTrace rejects a --trace whose directory does not exist, before
// anything is read.
func (f *solveFlags) checkTrace() error {
	if f.trace == "" {
		return nil
	}
	if st, err := os.Stat(filepath.Dir(f.trace)); err != nil || !st.IsDir() {
		return usagef("--trace: directory %s does not exist", filepath.Dir(f.trace))
	}
	return nil
}

// openOutput creates the --trace file, if any. Call close on every path
// that does not reach finish.
func (f *solveFlags) openOutput(con *cli.Console) (*runOutput, error) {
	o := &runOutput{con: con, quiet: f.quiet, path: f.trace}
	if f.trace == "" {
		return o, nil
	}
	file, err := os.Create(f.trace)
	if err != nil {
		return nil, usagef("--trace: %v", err)
	}
	if o.rec, err = trace.NewRecorder(file); err != nil {
		file.Close()
		return nil, fmt.Errorf("--trace %s: %w", f.trace, err)
	}
	o.file = file
	return o, nil
}

// progress is the callback for the solver: nil when nothing takes reports.
func (o *runOutput) progress() func(solver.Progress) {
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

// finish takes the live line away and ends the trace on res.
func (o *runOutput) finish(res solver.Result) error {
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

// close closes the trace file when the run did not finish (an error).
func (o *runOutput) close() {
	o.con.Close()
	if o.rec != nil {
		o.file.Close()
		o.rec = nil
	}
}

// printResult prints the final line (stderr also under --quiet).
func printResult(con *cli.Console, res solver.Result) {
	con.Print("result", fmt.Sprintf("status=%s iterations=%d dual=%s primal=%s gap=%s seconds=%.3f",
		res.Status, res.Iterations, num(res.Dual), num(res.Primal), num(res.Gap), res.Elapsed.Seconds()),
		"status", string(res.Status), "iterations", res.Iterations, "dual", res.Dual, "primal", res.Primal,
		"gap", res.Gap, "seconds", res.Elapsed.Seconds())
}
