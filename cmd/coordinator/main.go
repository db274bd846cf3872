// Command coordinator is ddrun's master: it reads a factor graph, splits it
// into slaves and runs dual decomposition on it.
//
//	coordinator solve [flags] MODEL     solve in this process (shared memory)
//	coordinator run [flags] --workers N MODEL   solve on worker processes over NATS
//	coordinator gen potts|ising|logic [flags] -o FILE
//	coordinator gen sequence|multilabel [flags] -o DIR   planted learning data
//	coordinator train --algo gdmm|bcfw|ssg [flags] --data TRAIN -o WEIGHTS
//	coordinator predict --weights WEIGHTS --data TEST [--json]
//	coordinator convert [--max-entries N] [--keep-unary-factors] [--quiet] IN OUT
//	coordinator serve --listen ADDR [--nats URL] [--data-dir DIR]   the job service (package service)
//	coordinator plot -o OUT.png|OUT.svg TRACE...
//	coordinator version
//
// Exit status: 0 when a result was produced, 2 for bad input or usage (one
// line on stderr), 1 for an internal failure.
//
// It owns the command line: flags, messages, exit status and the printed
// result. Policy and orchestration are the libraries': which algorithm
// with which settings is package engine's, where a job runs package
// launch's (the one front door), the job service package service's, the
// files package model/modelfile's, learning package learn's, pictures of
// traces package trace/plot's.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/internal/natsflags"
)

// usageError marks errors caused by the user's input or flags (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

const usage = `usage:
  coordinator solve [flags] MODEL        MODEL: .uai | .LG | .json | .msgpack | .wcsp | .cfn (also .gz, .xz) | .ddx
  coordinator run [solve's flags] --workers N [--nats URL] [--job ID] [--local] MODEL
  coordinator gen potts|ising|logic [flags] -o FILE
  coordinator gen sequence|multilabel --labels L --train N --test M [--seed S] -o DIR
  coordinator train --algo gdmm|bcfw|ssg [--c C] [--time-limit D] [--threads N] [--json] [--trace FILE] --data TRAIN -o WEIGHTS
  coordinator predict --weights WEIGHTS --data TEST [--json]   (structural SVM learning: docs/learning.md)
  coordinator convert [--max-entries N] [--keep-unary-factors] [--quiet] IN OUT
                                          (any two of the formats; .ddx: indexed)
  coordinator serve --listen ADDR [--nats URL] [--workers-min N] [--data-dir DIR]
                                          (the job service: HTTP API and NATS request/reply)
  coordinator plot -o OUT.png|OUT.svg TRACE...   dual and primal of --trace files
  coordinator version
run 'coordinator solve -h', 'coordinator gen -h' or 'coordinator serve -h' for the flags`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var err error
	con := cli.New(stderr) // every command's stderr; --log-format picks its format
	switch args[0] {
	case "solve":
		err = cmdSolve(ctx, args[1:], stdout, con)
	case "run":
		err = cmdRun(ctx, args[1:], stdout, con)
	case "gen":
		err = cmdGen(ctx, args[1:], stdout, con)
	case "train":
		err = cmdTrain(ctx, args[1:], stdout, con)
	case "predict":
		err = cmdPredict(ctx, args[1:], stdout, con)
	case "convert":
		err = cmdConvert(ctx, args[1:], con)
	case "serve":
		err = cmdServe(ctx, args[1:], con)
	case "plot":
		err = cmdPlot(args[1:], con)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, cli.VersionLine("coordinator"))
		return 0
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	default:
		err = usagef("unknown command %q\n%s", args[0], usage)
	}
	if err == nil {
		return 0
	}
	if errors.Is(err, cli.ErrHelp) {
		return 0
	}
	if con.Format == "" { // the flags did not parse as far as --log-format
		con.Format = cli.FormatIn(args)
	}
	con.Error("coordinator", natsflags.Redact(err.Error())) // URL passwords; run hides its secrets too
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}
