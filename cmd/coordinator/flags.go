package main

import (
	"errors"
	"flag"
	"github.com/ddrun/ddrun/engine"
	"io"
)

var errHelp = errors.New("help requested")

// parseInterleaved parses flags that may come before or after positional
// arguments (`solve MODEL --json` as well as `solve --json MODEL`), and
// returns the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stderr)
				fs.PrintDefaults()
				return nil, errHelp
			}
			return nil, usageError{err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// flagSet returns a FlagSet that reports errors instead of exiting and
// prints nothing itself (the caller prints one line).
func flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	return fs
}

// isSet reports whether the flag was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

// byteSize is a flag of a number of bytes: a number with an optional unit
// (B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB; all binary multiples,
// case-insensitive), e.g. 1GiB, 512M, 1.5g or 0.
type byteSize struct{ p *int64 }

func (b byteSize) String() string {
	if b.p == nil {
		return ""
	}
	return engine.FormatSize(*b.p)
}

func (b byteSize) Set(s string) error {
	v, err := engine.ParseSize(s)
	if err != nil {
		return err
	}
	*b.p = v
	return nil
}
