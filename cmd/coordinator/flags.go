package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
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
	return formatSize(*b.p)
}

func (b byteSize) Set(s string) error {
	v, err := parseSize(s)
	if err != nil {
		return err
	}
	*b.p = v
	return nil
}

// parseSize reads a byte count (see byteSize).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	shift := 0
	switch unit {
	case "", "b":
	case "k", "kb", "kib":
		shift = 10
	case "m", "mb", "mib":
		shift = 20
	case "g", "gb", "gib":
		shift = 30
	case "t", "tb", "tib":
		shift = 40
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KiB, MiB, GiB or TiB)", s, t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("size %q: not a number of bytes with an optional unit, e.g. 1GiB", s)
	}
	v *= float64(int64(1) << shift)
	if v >= 1<<62 {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return int64(v), nil
}

// formatSize writes a byte count the way parseSize reads it.
func formatSize(v int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if v != 0 && v%(int64(1)<<u.shift) == 0 {
			return strconv.FormatInt(v>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(v, 10)
}
