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

// flagSet returns a FlagSet that reports errors instead of exiting and
// prints nothing itself (the caller prints one line).
func flagSet(name string) *flag.FlagSet { return flag.NewFlagSet(name, flag.ContinueOnError) }
