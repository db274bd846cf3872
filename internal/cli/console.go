package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/ddrun/ddrun/solver"
)

// Format is the --log-format value: text (the default: today's lines) or
// json (one slog JSON record per line, progress and results included).
type Format string

// The log formats.
const (
	Text Format = "text"
	JSON Format = "json"
)

// String is the format's name (text when unset).
func (f *Format) String() string {
	if f == nil || *f == "" {
		return string(Text)
	}
	return string(*f)
}

// Set parses a --log-format value.
func (f *Format) Set(s string) error {
	switch Format(s) {
	case Text, JSON:
		*f = Format(s)
		return nil
	}
	return errors.New("want text or json")
}

// FormatIn is the --log-format value in args, text when there is none or
// it is not json: for the error line of a command whose flags did not
// parse up to --log-format.
func FormatIn(args []string) Format {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		switch {
		case a == "log-format=json", a == "log-format" && i+1 < len(args) && args[i+1] == "json":
			return JSON
		case args[i] == "--":
			return Text
		}
	}
	return Text
}

// Options are what a command tells its Console once its flags are parsed.
type Options struct {
	// Level of the logger: slog.LevelWarn under --quiet.
	Level slog.Level
	// Quiet: no progress.
	Quiet bool
	// MaxIter and TimeLimit are what the live line's bar measures the run
	// against (the nearer of the two); zero: no such limit.
	MaxIter   int
	TimeLimit time.Duration
	// Exact: the reports are branch and bound's (nodes, open nodes, bound,
	// incumbent), and MaxIter bounds each node, not the run.
	Exact bool
	// Live forces the live status line on (true) or off (false); nil: on
	// when the Console writes to a terminal in text format.
	Live *bool
}

// Plain lines come at most this often; the live line is redrawn at most
// every liveEvery.
const (
	lineEvery = 250 * time.Millisecond
	liveEvery = 100 * time.Millisecond
)

// Console is a command's stderr. Everything the command prints there goes
// through it: in text format as plain lines (or, on a terminal, with one
// status line redrawn in place under them), in JSON format as one slog
// record per line.
type Console struct {
	// Format is set by the --log-format flag (Register).
	Format Format

	mu      sync.Mutex
	out     io.Writer
	o       Options
	log     *slog.Logger
	live    bool
	width   int
	shown   string // the live line now on the screen
	midLine bool   // the last write of others ended without a newline
	printed bool
	last    time.Duration // Elapsed of the last line or draw
}

// New returns the Console of stderr, in text format until Register's flag
// says otherwise.
func New(stderr io.Writer) *Console { return &Console{out: stderr} }

// Register adds --log-format to fs.
func (c *Console) Register(fs *flag.FlagSet) {
	fs.Var(&c.Format, "log-format", "what stderr holds: text (lines for people) or json (one JSON object per line, progress and results included)")
}

// Start applies o; call it once the flags are parsed, before printing.
func (c *Console) Start(o Options) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.o = o
	c.live = false
	if c.Format != JSON && !o.Quiet {
		if o.Live != nil {
			c.live, c.width = *o.Live, 100
		} else {
			c.width, c.live = terminalWidth(c.out)
		}
	}
	c.log = c.loggerAt(o.Level)
}

// LoggerAt is a logger in the console's format that logs from level up
// (a chatty library's, say, at warnings only).
func (c *Console) LoggerAt(level slog.Level) *slog.Logger { return c.loggerAt(level) }

func (c *Console) loggerAt(level slog.Level) *slog.Logger {
	w := &consoleWriter{c}
	if c.Format == JSON {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// terminalWidth reports whether w is a terminal, and its width.
func terminalWidth(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0, false
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width < 20 {
		width = 80
	}
	return width, true
}

// Logger is the command's logger, in the chosen format (Start with the
// zero Options when the command did not start the Console).
func (c *Console) Logger() *slog.Logger {
	c.mu.Lock()
	l := c.log
	c.mu.Unlock()
	if l == nil {
		c.Start(Options{})
		c.mu.Lock()
		l = c.log
		c.mu.Unlock()
	}
	return l
}

// Writer is stderr for what writes its own lines (child processes): a
// write takes the live line away and puts it back after the write's last
// newline.
func (c *Console) Writer() io.Writer { return &consoleWriter{c} }

type consoleWriter struct{ c *Console }

func (w *consoleWriter) Write(p []byte) (int, error) {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shown != "" && !c.midLine {
		io.WriteString(c.out, "\r\x1b[K")
	}
	n, err := c.out.Write(p)
	c.midLine = len(p) > 0 && p[len(p)-1] != '\n'
	if c.shown != "" && !c.midLine {
		c.draw(c.shown)
	}
	return n, err
}

func (c *Console) draw(line string) {
	io.WriteString(c.out, "\r"+line+"\x1b[K")
	c.shown = line
}

// Print prints one line: text in text format, a record msg with args in
// JSON format (non-finite floats become null). Like the text line, the
// record comes whatever the logger's level: a command prints what it
// means to print (the result line also under --quiet).
func (c *Console) Print(msg, text string, args ...any) {
	if c.Format == JSON {
		c.Logger() // started
		c.LoggerAt(slog.LevelInfo).Info(msg, jsonArgs(args)...)
		return
	}
	c.Logger() // started
	fmt.Fprintln(&consoleWriter{c}, text)
}

// Error prints a failed command's one line: "prog: msg" in text format, an
// ERROR record in JSON format. It takes the live line away for good.
func (c *Console) Error(prog, msg string) {
	c.Close()
	if c.Format == JSON {
		slog.New(slog.NewJSONHandler(c.out, nil)).Error(msg, "prog", prog)
		return
	}
	fmt.Fprintln(c.out, prog+":", msg)
}

// Close takes the live line away (the run is over: the result follows).
func (c *Console) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shown != "" {
		io.WriteString(c.out, "\r\x1b[K")
		c.shown = ""
	}
}

func jsonArgs(args []any) []any {
	for i, a := range args {
		if f, ok := a.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			args[i] = nil
		}
	}
	return args
}

// Progress shows a report, at most every 250 ms (the first always) as a
// line or a JSON record, on a terminal as the live line (redrawn at most
// every 100 ms). It may be called every iteration.
func (c *Console) Progress(p solver.Progress) {
	if c.o.Quiet {
		return
	}
	c.mu.Lock()
	every := lineEvery
	if c.live {
		every = liveEvery
	}
	if c.printed && p.Elapsed-c.last < every {
		c.mu.Unlock()
		return
	}
	c.printed, c.last = true, p.Elapsed
	if c.live {
		if !c.midLine {
			c.draw(c.liveLine(p))
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	if c.Format == JSON {
		args := []any{"iteration", p.Iteration, "dual", p.Dual, "primal", p.Primal, "gap", p.Gap}
		if c.o.Exact {
			args = append(args, "nodes", p.Nodes, "open", p.Open)
		} else {
			if p.Has(solver.HasPrimalRes) {
				args = append(args, "primal_res", p.PrimalRes)
			}
			if p.Has(solver.HasDualRes) {
				args = append(args, "dual_res", p.DualRes)
			}
			if p.Has(solver.HasEta) {
				args = append(args, "eta", p.Eta)
			}
		}
		c.Print("progress", "", append(args, "elapsed", p.Elapsed.Seconds())...)
		return
	}
	c.Print("progress", ProgressLine(p, c.o.Exact))
}

// ProgressLine is a report as a plain line, with the residuals and eta
// only when the algorithm fills them (Progress.Fields). iter counts the algorithm's
// iterations (under branch and bound: of every node's solver, added up),
// as the result's iterations do; nodes are branch and bound's nodes
// solved and open its nodes left, and there dual is the largest open bound
// and primal the incumbent.
func ProgressLine(p solver.Progress, exact bool) string {
	if exact {
		return fmt.Sprintf("iter=%d nodes=%d open=%d dual=%s primal=%s gap=%s elapsed=%.3fs",
			p.Iteration, p.Nodes, p.Open, Num(p.Dual), Num(p.Primal), Num(p.Gap), p.Elapsed.Seconds())
	}
	line := fmt.Sprintf("iter=%d dual=%s primal=%s gap=%s", p.Iteration, Num(p.Dual), Num(p.Primal), Num(p.Gap))
	if p.Has(solver.HasPrimalRes) {
		line += fmt.Sprintf(" pres=%.2e", p.PrimalRes)
	}
	if p.Has(solver.HasDualRes) {
		line += fmt.Sprintf(" dres=%.2e", p.DualRes)
	}
	if p.Has(solver.HasEta) {
		line += fmt.Sprintf(" eta=%.3g", p.Eta)
	}
	return line + fmt.Sprintf(" elapsed=%.3fs", p.Elapsed.Seconds())
}

// Num formats a bound or score: "none" when it is not finite.
func Num(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "none"
	}
	return fmt.Sprintf("%.9g", v)
}

// liveLine is the status line: a bar and the time left against the nearer
// limit (when there is one), then the run's numbers, cut to the width.
func (c *Console) liveLine(p solver.Progress) string {
	var b bytes.Buffer
	frac := -1.0
	if c.o.MaxIter > 0 && !c.o.Exact {
		frac = float64(p.Iteration) / float64(c.o.MaxIter)
	}
	if c.o.TimeLimit > 0 {
		frac = math.Max(frac, p.Elapsed.Seconds()/c.o.TimeLimit.Seconds())
	}
	if frac >= 0 {
		frac = math.Min(frac, 1)
		const cells = 20
		full := int(frac * cells)
		b.WriteString("[" + strings.Repeat("#", full) + strings.Repeat(".", cells-full) + "]")
		fmt.Fprintf(&b, " %3.0f%%", 100*frac)
		if frac > 0 {
			left := time.Duration(float64(p.Elapsed) * (1 - frac) / frac)
			fmt.Fprintf(&b, " ETA %s", left.Round(time.Second))
		}
		b.WriteString(" ")
	}
	short := func(v float64) string {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return "none"
		}
		return fmt.Sprintf("%.6g", v)
	}
	if c.o.Exact {
		fmt.Fprintf(&b, "nodes %d open %d bound %s incumbent %s gap %s iter %d", p.Nodes, p.Open,
			short(p.Dual), short(p.Primal), short(p.Gap), p.Iteration)
	} else {
		fmt.Fprintf(&b, "iter %d dual %s primal %s gap %s", p.Iteration, short(p.Dual), short(p.Primal), short(p.Gap))
	}
	fmt.Fprintf(&b, " %s", p.Elapsed.Round(100*time.Millisecond))
	line := []rune(b.String())
	if w := c.width - 1; w > 0 && len(line) > w {
		line = line[:w]
	}
	return string(line)
}
