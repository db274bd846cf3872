package engine

import (
	"fmt"
	"strconv"
	"strings"
)

// Default is one setting's default, as solve, run, serve (a job's
// parameters) and the Python client (which sends only what it is given)
// all take it from Defaults and Settle.
type Default struct {
	Name  string // the setting (Names): the flag without its dashes; the job parameter with _ for -
	Value string // the default, from Defaults
	When  string // how Settle changes it, from which other settings; "" when it does not
}

// defaultText formats each setting's default from Defaults (threads: the
// machine's, so named rather than counted).
var defaultText = map[string]func(Settings) string{
	"algo":        func(s Settings) string { return "auto" },
	"slaves":      func(s Settings) string { return s.Slaves },
	"step":        func(s Settings) string { return s.Step },
	"threads":     func(s Settings) string { return "the number of CPUs (GOMAXPROCS)" },
	"max-iter":    func(s Settings) string { return strconv.Itoa(s.MaxIter) },
	"time-limit":  func(s Settings) string { return durationText(s) },
	"tol":         func(s Settings) string { return strconv.FormatFloat(s.Tol, 'g', -1, 64) },
	"eta":         func(s Settings) string { return strconv.FormatFloat(s.Eta, 'g', -1, 64) },
	"tau":         func(s Settings) string { return strconv.FormatFloat(s.Tau, 'g', -1, 64) },
	"adapt-eta":   func(s Settings) string { return strconv.FormatBool(s.AdaptEta) },
	"eps-descent": func(s Settings) string { return strconv.FormatBool(s.EpsDescent) },
	"exact":       func(s Settings) string { return strconv.FormatBool(s.Exact) },
	"anytime":     func(s Settings) string { return "see when" },
	"tighten":     func(s Settings) string { return s.Tighten },
	"elim-memory": func(s Settings) string { return FormatSize(s.ElimMemory) },
}

func durationText(s Settings) string {
	if s.TimeLimit == 0 {
		return "none"
	}
	return s.TimeLimit.String()
}

// defaultWhen says how Settle (and Choose) turn a default into the run's
// setting.
var defaultWhen = map[string]string{
	"algo":     "chosen by the model's class (Choose: TRW-S for a sparse pairwise model, DD-ADMM otherwise); on workers the same rule, on the class the sharded plan sums up (distributed TRW-S or DD-ADMM; DD-ADMM with checkpoints or Raft, and when the coordinator holds the whole model)",
	"max-iter": "no iteration limit when time-limit is given and max-iter is not (except with exact, where it bounds each node)",
	"anytime":  "on when time-limit is given, algo is not and exact is off: the run goes through the anytime phases",
}

// DefaultTable returns every setting's default and how it depends on the
// others, in the order of Names.
func DefaultTable() []Default {
	d := Defaults()
	var rows []Default
	for _, n := range Names() {
		rows = append(rows, Default{Name: n, Value: defaultText[n](d), When: defaultWhen[n]})
	}
	return rows
}

// DefaultsMarkdown is the table of DefaultTable as docs/defaults.md holds
// it (a test keeps the two equal).
func DefaultsMarkdown() string {
	var b strings.Builder
	b.WriteString("| setting (`--flag`, job parameter) | default | when it changes |\n|---|---|---|\n")
	for _, r := range DefaultTable() {
		fmt.Fprintf(&b, "| `--%s`, `%s` | %s | %s |\n", r.Name, Param(r.Name), r.Value, r.When)
	}
	return b.String()
}
