package cli

import (
	"errors"
	"flag"
	"io"

	"github.com/ddrun/ddrun/engine"
)

// ErrHelp is what ParseInterleaved returns after printing the flags for
// -h or --help.
var ErrHelp = errors.New("help requested")

// ParseInterleaved parses flags that may come before or after positional
// arguments (`solve MODEL --json` as well as `solve --json MODEL`), and
// returns the positional arguments. On -h it prints the flags' defaults to
// stderr and returns ErrHelp; other errors are the flag package's.
func ParseInterleaved(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stderr)
				fs.PrintDefaults()
				return nil, ErrHelp
			}
			return nil, err
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

// IsSet reports whether the flag was given on the command line.
func IsSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

// ByteSize is a flag of a number of bytes stored in p: a number with an
// optional unit (B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB; all binary
// multiples, case-insensitive), e.g. 1GiB, 512M, 1.5g or 0
// (engine.ParseSize).
func ByteSize(p *int64) flag.Value { return byteSize{p} }

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
