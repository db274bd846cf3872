package main

import (
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"

	"github.com/ddrun/ddrun/internal/cli"
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

// openOutput opens the run's output (cli.Output): the console and the
// --trace file, if any. Call Close on every path that does not reach
// Finish.
func (f *solveFlags) openOutput(con *cli.Console) (*cli.Output, error) {
	o, err := con.OpenOutput(f.trace, f.quiet)
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "open" {
		return nil, usagef("--trace: %v", err)
	}
	return o, err
}
