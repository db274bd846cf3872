package engine

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/elim"
	"github.com/ddrun/ddrun/solver"
)

// Settings are the settings of one run, whichever front end filled them.
// Each has a name (Name), the command line's flag without its dashes:
// "algo", "slaves", "step", "threads", "max-iter", "time-limit", "tol",
// "eta", "adapt-eta", "tau", "exact", "eps-descent", "tighten",
// "elim-memory" and "anytime". Start from Defaults, set what was given and
// record its name in Given: some defaults depend on whether a setting was
// given (Settle).
type Settings struct {
	// Algo names the algorithm (Algorithms); "" or "auto": chosen by the
	// model's class (Choose), or DD-ADMM for a distributed run.
	Algo string
	// Slaves and Step are dual decomposition's decomposition and
	// subgradient step rule (consensus.Decomposition, consensus.StepRule).
	Slaves, Step string
	// Threads is the goroutines of the algorithms that take them.
	Threads int
	// MaxIter, TimeLimit and Tol are the limits (solver.Limits); with
	// TimeLimit and no MaxIter given there is no iteration limit (Settle).
	MaxIter   int
	TimeLimit time.Duration
	Tol       float64
	// Eta, AdaptEta and Tau are DD-ADMM's (consensus.Options); Eta is
	// also the subgradient's step scale.
	Eta      float64
	AdaptEta bool
	Tau      float64
	// EpsDescent is convex max-product's (convexmp.Options).
	EpsDescent bool
	// Exact: branch and bound on the algorithm's dual bound, after bucket
	// elimination when it fits ElimMemory.
	Exact bool
	// Tighten is "none" or "cycles" (package tighten).
	Tighten string
	// ElimMemory is the memory budget of bucket elimination (0: never
	// tried).
	ElimMemory int64
	// Anytime: the run goes on through the anytime phases (package
	// anytime); its default depends on the others (Settle).
	Anytime bool
	// Distributed: the run goes to workers (a cluster job), so the
	// default algorithm is DD-ADMM.
	Distributed bool
	// Given holds the names of the settings given explicitly.
	Given map[string]bool

	// Set by Settle: Auto when no algorithm was given (it is chosen by
	// model class), AnytimeOn when the run goes through the anytime
	// phases. A front end may turn AnytimeOn off where the phases cannot
	// run.
	Auto, AnytimeOn bool
	settled         bool
}

// Defaults returns the settings' defaults.
func Defaults() Settings {
	d := consensus.DefaultOptions()
	return Settings{Slaves: string(d.Slaves), Step: string(d.Step), Threads: runtime.GOMAXPROCS(0), MaxIter: d.MaxIter,
		Tol: d.Tol, Eta: d.Eta, AdaptEta: d.AdaptEta, Tau: d.Tau, Tighten: "none", ElimMemory: elim.DefaultMemory}
}

// given reports whether the setting name was given explicitly.
func (s *Settings) given(name string) bool { return s.Given[name] }

// Settle applies the defaults that depend on other settings, once: no
// algorithm means it is chosen (Auto); a time limit without max-iter means
// no iteration limit (except with exact, where max-iter bounds each node);
// with a time limit and no algorithm the run goes through the anytime
// phases unless anytime was given false.
func (s *Settings) Settle() {
	if s.settled {
		return
	}
	s.settled = true
	s.Auto = !s.given("algo") || s.Algo == "" || s.Algo == "auto"
	if s.TimeLimit > 0 && !s.given("max-iter") && !s.Exact {
		s.MaxIter = math.MaxInt
	}
	if s.given("anytime") {
		s.AnytimeOn = s.Anytime
	} else {
		s.AnytimeOn = s.TimeLimit > 0 && s.Auto && !s.Exact
	}
}

// Limits are the stopping settings. With Exact the time limit bounds the
// search, not each node. Progress comes every iteration.
func (s *Settings) Limits() solver.Limits {
	lim := consensus.DefaultOptions().Limits
	lim.MaxIter, lim.TimeLimit, lim.Tol = s.MaxIter, s.TimeLimit, s.Tol
	lim.ProgressEvery = 0
	if s.Exact {
		lim.TimeLimit = 0
	}
	return lim
}

// provisional is the algorithm when none was given, before the model is
// read: DD-ADMM, with why when the settings decide it (a distributed run,
// or a setting of dual decomposition given), without when the model's
// class is to decide (Job.Bind). The settings of other algorithms (step,
// eps-descent) still need their algorithm, as before.
func (s *Settings) provisional() (string, string) {
	if s.Distributed {
		return string(consensus.ADMM), "run distributes dual decomposition: DD-ADMM"
	}
	for _, n := range []string{"step", "eps-descent"} {
		if s.given(n) {
			return string(consensus.ADMM), "the default before the model is read" // check rejects the setting
		}
	}
	for _, n := range []string{"slaves", "eta", "adapt-eta", "tau"} {
		if s.given(n) {
			return string(consensus.ADMM), "--" + n + " is a setting of dual decomposition: DD-ADMM"
		}
	}
	return string(consensus.ADMM), ""
}

// Validate checks the settings without a model: the algorithm is known,
// takes the settings given, and its options are valid. It settles s first.
func (s *Settings) Validate() error {
	_, err := Prepare(*s)
	return err
}

// Name is a setting's name inside an Error; a front end writes it its own
// way (Error.Named).
type Name string

// Error is a bad setting. Its message names settings by Name, written as
// flags (--max-iter) by Error and as the front end likes by Named.
type Error struct {
	format string
	args   []any
}

func errorf(format string, args ...any) *Error { return &Error{format: format, args: args} }

// Error is the message with the settings named as flags (Flag).
func (e *Error) Error() string { return e.Named(Flag) }

// Named is the message with each setting written by name.
func (e *Error) Named(name func(string) string) string {
	args := slices.Clone(e.args)
	for i, a := range args {
		if n, ok := a.(Name); ok {
			args[i] = name(string(n))
		}
	}
	return fmt.Sprintf(e.format, args...)
}

// Flag writes a setting as the command line's flag: --max-iter.
func Flag(name string) string { return "--" + name }

// Param writes a setting as the job service's parameter: max_iter.
func Param(name string) string { return strings.ReplaceAll(name, "-", "_") }

// optionSettings maps the solver options that come from settings to them.
var optionSettings = map[string]string{
	"MaxIter": "max-iter", "TimeLimit": "time-limit", "Tol": "tol", "Threads": "threads",
	"Memory": "elim-memory", "Algo": "algo", "Slaves": "slaves", "Step": "step", "Eta": "eta", "Tau": "tau",
}

// optionError turns a *solver.OptionError into an *Error that names the
// setting the option came from; other errors stay as they are.
func optionError(err error) error {
	var oe *solver.OptionError
	if errors.As(err, &oe) {
		if n, ok := optionSettings[oe.Option]; ok {
			return errorf("%s: %s", Name(n), oe.Problem)
		}
	}
	return err
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
