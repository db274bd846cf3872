package main

import (
	"errors"
	"flag"

	"github.com/ddrun/ddrun/internal/cli"
)

// parseFlags adds --log-format (con) to fs and parses args
// (cli.ParseInterleaved: flags before or after the positional arguments,
// which it returns); a flag error is a usage error (exit 2).
func parseFlags(fs *flag.FlagSet, args []string, con *cli.Console) ([]string, error) {
	con.Register(fs)
	pos, err := cli.ParseInterleaved(fs, args, con.Writer())
	if err != nil && !errors.Is(err, cli.ErrHelp) {
		return nil, usageError{err}
	}
	return pos, err
}

// parseQuiet is parseFlags with --quiet, then con started quiet or not:
// the start of the commands whose only console option is --quiet.
func parseQuiet(fs *flag.FlagSet, args []string, con *cli.Console) (pos []string, quiet bool, err error) {
	q := fs.Bool("quiet", false, "no progress on stderr")
	if pos, err = parseFlags(fs, args, con); err == nil {
		con.Start(cli.Options{Quiet: *q})
	}
	return pos, *q, err
}

// flagSet returns a FlagSet that reports errors instead of exiting and
// prints nothing itself (the caller prints one line).
func flagSet(name string) *flag.FlagSet { return flag.NewFlagSet(name, flag.ContinueOnError) }
