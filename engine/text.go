package engine

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"time"
)

// textSettings set each setting from its text: what the command line's
// flag of that name and the job service's parameter take (package flag's
// syntax for numbers and booleans; ParseDuration's for durations).
var textSettings = map[string]func(s *Settings, v string) error{
	"algo":        func(s *Settings, v string) error { s.Algo = v; return nil },
	"slaves":      func(s *Settings, v string) error { s.Slaves = v; return nil },
	"step":        func(s *Settings, v string) error { s.Step = v; return nil },
	"tighten":     func(s *Settings, v string) error { s.Tighten = v; return nil },
	"threads":     func(s *Settings, v string) error { return parseInt(&s.Threads, v) },
	"max-iter":    func(s *Settings, v string) error { return parseInt(&s.MaxIter, v) },
	"time-limit":  func(s *Settings, v string) error { return parseDuration(&s.TimeLimit, v) },
	"tol":         func(s *Settings, v string) error { return parseFloat(&s.Tol, v) },
	"eta":         func(s *Settings, v string) error { return parseFloat(&s.Eta, v) },
	"tau":         func(s *Settings, v string) error { return parseFloat(&s.Tau, v) },
	"adapt-eta":   func(s *Settings, v string) error { return parseBool(&s.AdaptEta, v) },
	"eps-descent": func(s *Settings, v string) error { return parseBool(&s.EpsDescent, v) },
	"exact":       func(s *Settings, v string) error { return parseBool(&s.Exact, v) },
	"anytime":     func(s *Settings, v string) error { return parseBool(&s.Anytime, v) },
	"elim-memory": func(s *Settings, v string) error {
		n, err := ParseSize(v)
		if err == nil {
			s.ElimMemory = n
		}
		return err
	},
}

// Names are the names of the settings that Set takes.
func Names() []string {
	var names []string
	for n := range textSettings {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Set sets the setting name from its text and records it as given. Its
// error says what is wrong with the text ("parse error", "value out of
// range", how to write a duration); the caller names the setting.
func (s *Settings) Set(name, text string) error {
	set, ok := textSettings[name]
	if !ok {
		return errorf("%s: unknown setting", Name(name))
	}
	if err := set(s, text); err != nil {
		return err
	}
	if s.Given == nil {
		s.Given = map[string]bool{}
	}
	s.Given[name] = true
	return nil
}

func parseInt(p *int, v string) error {
	n, err := strconv.ParseInt(v, 0, strconv.IntSize)
	if err == nil {
		*p = int(n)
	}
	return numError(err)
}

func parseFloat(p *float64, v string) error {
	x, err := strconv.ParseFloat(v, 64)
	if err == nil {
		*p = x
	}
	return numError(err)
}

func parseBool(p *bool, v string) error {
	b, err := strconv.ParseBool(v)
	if err == nil {
		*p = b
	}
	return numError(err)
}

func parseDuration(p *time.Duration, v string) error {
	d, err := ParseDuration(v)
	if err == nil {
		*p = d
	}
	return err
}

// numError is package flag's word for a value it cannot read.
func numError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strconv.ErrRange):
		return errors.New("value out of range")
	}
	return errors.New("parse error")
}

// errDuration is what a bad duration says: how to write one.
var errDuration = errors.New("use e.g. 30s, 5m or 1h (a bare number is seconds)")

// ParseDuration parses s as time.ParseDuration does, or a bare number as
// seconds ("30" is 30s, "1.5" 1.5s). Its error says how to write a
// duration.
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
