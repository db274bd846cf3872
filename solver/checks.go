package solver

import "time"

// The checks below are the common ones of the algorithms' Options.Validate:
// each returns nil when its option is good, and otherwise an *OptionError
// worded as every Validate words it. A Validate lists its checks in order
// in FirstBad, so that the error names the first bad option.

// FirstBad returns the first of errs that is not nil, or nil.
func FirstBad(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Want checks that ok holds for option; the problem is format with the
// values v (the option's, then any it is compared with). The values are
// boxed for formatting only when ok is false, so a good option costs no
// allocation, as with the typed checks below.
func Want[T any](ok bool, option, format string, v ...T) error {
	if ok {
		return nil
	}
	a := make([]any, len(v))
	for i, x := range v {
		a[i] = x
	}
	return Errorf(option, format, a...)
}

// WantAtLeast checks that the integer option v is at least low.
func WantAtLeast(option string, v, low int) error {
	if v >= low {
		return nil
	}
	return Errorf(option, "%d < %d", v, low)
}

// WantNotNegative checks that the count or duration v is not negative.
func WantNotNegative[T int | int64 | time.Duration](option string, v T) error {
	if v >= 0 {
		return nil
	}
	return Errorf(option, "%v is negative", v)
}

// WantNonNegative checks that v is a finite number >= 0 (NonNegative).
func WantNonNegative(option string, v float64) error {
	if NonNegative(v) {
		return nil
	}
	return Errorf(option, "%v is not a finite number >= 0", v)
}

// WantPositive checks that v is a finite number > 0 (Positive).
func WantPositive(option string, v float64) error {
	if Positive(v) {
		return nil
	}
	return Errorf(option, "%v is not a finite number > 0", v)
}
