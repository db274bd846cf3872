package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/ddrun/ddrun/launch"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trace"
)

// solveFlags are the flags of `coordinator solve`; other commands that run a
// job (run, in the distributed mode) reuse them. The run's settings are
// package engine's (s); the others say where the model and the output are.
type solveFlags struct {
	s          engine.Settings
	evidence   string
	json       bool
	out        string
	quiet      bool
	maxEntries int
	trace      string
}

// settle records which flags were given and applies the settings'
// defaults that depend on them (engine.Settings.Settle).
func (f *solveFlags) settle(fs *flag.FlagSet) {
	if f.s.Given == nil {
		f.s.Given = map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { f.s.Given[fl.Name] = true })
	}
	f.s.Settle()
}

func (f *solveFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	Var(flag.Value, string, string)
	Float64Var(*float64, string, float64, string)
	BoolVar(*bool, string, bool, string)
}) {
	d := engine.Defaults()
	f.s = d
	fs.StringVar(&f.evidence, "evidence", "", "evidence `FILE` (UAI .evid layout)")
	var algos []string
	for _, a := range engine.Algorithms() {
		algos = append(algos, fmt.Sprintf("%s (%s)", a.Name, a.About))
	}
	fs.StringVar(&f.s.Algo, "algo", "", "algorithm: "+orList(algos)+"; by default chosen by model class: trws for pairwise models, else admm (run: admm); what was chosen and why is printed")
	fs.BoolVar(&f.s.Anytime, "anytime", false, "go on until the gap closes or --time-limit: bucket elimination when it fits --elim-memory, else the relaxation, a mini-bucket search, tightening (cycle constraints) and branch and bound (run: the relaxation, then branch and bound on the same workers); the default with --time-limit and no --algo (--anytime=false turns it off)")
	fs.BoolVar(&f.s.EpsDescent, "eps-descent", false, "with --algo cmp: steepest eps-descent when block updates stall (converges to the LP optimum)")
	fs.StringVar(&f.s.Slaves, "slaves", d.Slaves, "decomposition: factor (one slave per factor), chains (rows and columns, or a path cover) or trees (spanning forests)")
	fs.StringVar(&f.s.Step, "step", d.Step, "subgradient step rule: polyak, 1/t or 1/sqrt(t)")
	fs.IntVar(&f.s.Threads, "threads", d.Threads, "goroutines for the slave and variable loops")
	fs.IntVar(&f.s.MaxIter, "max-iter", d.MaxIter, "iteration limit (with --time-limit and without --exact: none unless given)")
	fs.Var(cli.Duration(&f.s.TimeLimit, 0), "time-limit", "time limit, e.g. 30s, 5m or 1h, or a number of seconds (0: none)")
	fs.Float64Var(&f.s.Tol, "tol", d.Tol, "relative gap for status optimal: gap <= tol*max(1,|primal|); the convergence tests follow it (0: only a closed gap or the limits stop a run)")
	fs.Float64Var(&f.s.Eta, "eta", d.Eta, "ADMM penalty eta (fixed when given without --adapt-eta); with --algo subgradient the step scale eta0, which defaults to 1")
	fs.BoolVar(&f.s.AdaptEta, "adapt-eta", d.AdaptEta, "adapt eta by residual balancing; turned off when --eta is given without it")
	fs.Float64Var(&f.s.Tau, "tau", d.Tau, "multiplier step factor tau in (0, 1.618]")
	fs.BoolVar(&f.json, "json", false, "print one JSON result object on stdout")
	fs.StringVar(&f.s.Tighten, "tighten", "none", "tighten the relaxation: none, or cycles (3- and 4-cycles: with --algo trws, TRW-S(LP-C) with cycle inequalities in its dual; otherwise pairwise potentials regrouped into factors over the cycles; same MAP, tighter bound), soc or cycles,soc (--algo trws only: the SOC clique constraints of every triangle in TRW-S's dual, docs/soc.md)")
	fs.BoolVar(&f.s.Exact, "exact", false, "branch and bound on top of the algorithm's dual bound: optimal only when the gap is closed (--max-iter bounds each node, --time-limit the search)")
	fs.StringVar(&f.out, "out", "", "write the best assignment to `FILE` in UAI MPE format (toulbar2's solution line for a .sol FILE)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines on stderr (the final status line is still printed)")
	fs.StringVar(&f.trace, "trace", "", "write the convergence trace to `FILE` (CSV: "+strings.Join(trace.Columns, ",")+"), one row per iteration (under --exact per node), the last row the result")
	fs.Var(cli.ByteSize(&f.s.ElimMemory), "elim-memory", "memory `SIZE` (e.g. 512MiB, 2GiB) of exact bucket elimination, tried first by the anytime default and by --exact when its estimated tables fit (0: never); with --algo elim, the budget of its tables")
	fs.IntVar(&f.maxEntries, "max-entries", modelfile.DefaultMaxEntries, "most table entries a model file may declare in all, and, on its own, most variable states; checked before memory is set aside (run: in each worker's part)")
}

// spec is what solve and run run: package engine's job (an algorithm with
// its options, on a model under evidence).
type spec = *engine.Job

// load checks the positional arguments and the flags shared by solve and
// run, configures the algorithm, and reads the model and the evidence.
//
// Reading runs under ctx and within --time-limit counted from start (the
// start of the command): a signal or the time limit stops it with an error
// (exit 2), and the algorithm gets the time that is left.
//
// When h is not nil it gets the bytes of the model file, a 0 byte, and
// those of the evidence file followed by a 0 byte when there is one (the
// job identity's hash).
func (f *solveFlags) load(ctx context.Context, start time.Time, fs *flag.FlagSet, cmd string, pos []string, h io.Writer, con *cli.Console) (spec, error) {
	j, err := f.prepare(fs, cmd, pos)
	if err != nil {
		return nil, err
	}
	in := launch.Input{Path: pos[0], Evidence: f.evidence, MaxEntries: f.maxEntries, Fold: cmd == "solve", Tee: h, Start: start, Note: con.Print}
	if err := launch.Load(ctx, j, in); err != nil {
		return nil, inputError(err)
	}
	if note := j.SOCNote(); note != "" && !f.quiet {
		con.Print("soc", note, "triangles", 0)
	}
	if j.Settings.Auto && !f.quiet {
		con.Print("algorithm", fmt.Sprintf("algorithm: %s (%s)", j.Algorithm.Name, j.Why), "algo", j.Algorithm.Name, "why", j.Why)
	}
	return j, nil
}

// prepare checks the positional arguments and the flags shared by solve
// and run and configures the algorithm, without reading anything.
func (f *solveFlags) prepare(fs *flag.FlagSet, cmd string, pos []string) (spec, error) {
	if len(pos) != 1 {
		return nil, usagef("%s: want exactly one MODEL argument, got %d", cmd, len(pos))
	}
	f.settle(fs)
	j, err := engine.Prepare(f.s)
	if err != nil {
		return nil, inputError(err)
	}
	if f.maxEntries < 1 {
		return nil, usagef("--max-entries: %d < 1", f.maxEntries)
	}
	if err := f.checkTrace(); err != nil {
		return nil, err
	}
	if f.out != "" {
		if st, err := os.Stat(filepath.Dir(f.out)); err != nil || !st.IsDir() {
			return nil, usagef("--out: directory %s does not exist", filepath.Dir(f.out))
		}
	}
	return j, nil
}

// hooks are where a run in this process reports on con: its progress, and
// its lines unless --quiet.
func (f *solveFlags) hooks(progress func(solver.Progress), con *cli.Console, start time.Time) engine.Hooks {
	h := engine.Hooks{Progress: progress, Start: start}
	if !f.quiet {
		h.Print, h.EndLine = con.Print, con.Close
	}
	return h
}

func cmdSolve(ctx context.Context, args []string, stdout io.Writer, con *cli.Console) error {
	if os.Getenv("GOGC") == "" {
		// The solvers' iterations allocate nothing, so collecting at half
		// the default heap growth costs nothing per iteration; it lowers
		// the peak memory of loading and setting up (8-label 100x100
		// Potts: 61-73 MB -> 54-57 MB). A GOGC given by the user wins.
		debug.SetGCPercent(50)
	}
	start := time.Now()
	fs := flagSet("solve")
	var f solveFlags
	f.register(fs)
	pos, err := parseFlags(fs, args, con)
	if err != nil {
		return err
	}
	f.settle(fs)
	f.startConsole(con)
	j, err := f.load(ctx, start, fs, "solve", pos, nil, con)
	if err != nil {
		return err
	}
	// What reading left behind (the parser's buffers and bookkeeping) goes
	// back to the system before the algorithm sets up: one collection, a
	// few milliseconds per 100 MB of model, for a lower and steadier peak
	// (4-label 300x300 Potts, TRW-S: 73-77 MB -> 72 MB).
	debug.FreeOSMemory()
	out, err := f.openOutput(con)
	if err != nil {
		return err
	}
	defer out.Close()
	o, err := launch.Run(ctx, j, launch.Target{Out: f.out}, launch.Hooks{Hooks: f.hooks(out.Progress(), con, start)})
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", pos[0], err)}
	}
	if hint := j.OpenGapHint(o.Result.Status); hint != "" && !f.quiet {
		con.Print("hint", hint)
	}
	return report(o, f, out, stdout)
}

// report ends the trace, prints the final line, writes --out and the
// --json result. The final status line goes to stderr also with --quiet
// (which silences progress only); --json adds the result object on stdout.
// A result recorded in the Raft log by a leader that died before printing
// it says so; a sharded run logs its times and wrote its assignment to
// --out as it came.
func report(o launch.Outcome, f solveFlags, out *cli.Output, stdout io.Writer) error {
	res, x := o.Result, o.Result.Assignment
	if o.Recorded {
		res, x = o.Report.Solver(), o.Report.Assignment
	}
	if err := out.Finish(res); err != nil {
		return err
	}
	switch sj := o.Report.Sharded; {
	case o.Recorded:
		out.Console().Recorded(o.Report)
	case sj != nil:
		out.Console().Logger().Info("sharded run", "plan_seconds", sj.PlanSeconds, "setup_seconds", sj.SetupSeconds, "coordinator_peak_rss_mb", sj.CoordinatorRSSMB)
		out.Console().Result(res)
		x = nil // the assignment went to --out as it came
	default:
		out.Console().Result(res)
	}
	if f.out != "" && x != nil {
		if err := launch.WriteMPE(f.out, x); err != nil {
			return err
		}
	}
	if f.json {
		return writeJSON(stdout, o.Report)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing result: %w", err)
	}
	return nil
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
