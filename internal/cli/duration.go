package cli

import (
	"flag"
	"time"

	"github.com/ddrun/ddrun/engine"
)

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
// seconds (engine.ParseDuration: a duration's text is the settings'). Its
// error says how to write a duration.
func ParseDuration(s string) (time.Duration, error) { return engine.ParseDuration(s) }
