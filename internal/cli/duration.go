package cli

import (
	"errors"
	"flag"
	"math"
	"strconv"
	"time"
)

// errDuration is what a bad duration flag says: how to write one.
var errDuration = errors.New("use e.g. 30s, 5m or 1h (a bare number is seconds)")

type durationValue struct{ p *time.Duration }

// Duration sets *p to value and returns the flag.Value of a duration flag
// (fs.Var(cli.Duration(&d, 30*time.Second), "wait", "...")): it takes
// what time.ParseDuration takes, and a bare number as seconds ("30" is
// 30s, "1.5" 1.5s).
func Duration(p *time.Duration, value time.Duration) flag.Value {
	*p = value
	return durationValue{p}
}

func (d durationValue) String() string {
	if d.p == nil {
		return "0s"
	}
	return d.p.String()
}

func (d durationValue) Set(s string) error {
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d.p = v
	return nil
}

// ParseDuration parses s as time.ParseDuration does, or a bare number as
// seconds. Its error says how to write a duration.
func ParseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) > float64(math.MaxInt64)/float64(time.Second) {
		return 0, errDuration
	}
	return time.Duration(f * float64(time.Second)), nil
}
