package main

import (
	"errors"
	"flag"
	"io"

	"github.com/ddrun/ddrun/internal/cli"
)

// parseInterleaved is cli.ParseInterleaved with a flag error made a usage
// error (exit 2).
func parseInterleaved(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	pos, err := cli.ParseInterleaved(fs, args, stderr)
	if err != nil && !errors.Is(err, cli.ErrHelp) {
		return nil, usageError{err}
	}
	return pos, err
}

// flagSet returns a FlagSet that reports errors instead of exiting and
// prints nothing itself (the caller prints one line).
func flagSet(name string) *flag.FlagSet { return flag.NewFlagSet(name, flag.ContinueOnError) }
