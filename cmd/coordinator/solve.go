package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/elim"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/model/uai"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/tighten"
	"github.com/ddrun/ddrun/trace"
)

// solveFlags are the flags of `coordinator solve`; other commands that run a
// job (run, in the distributed mode) reuse them.
type solveFlags struct {
	evidence   string
	algo       string
	slaves     string
	step       string
	threads    int
	maxIter    int
	timeLimit  time.Duration
	tol        float64
	eta        float64
	adaptEta   bool
	tau        float64
	json       bool
	exact      bool
	epsDesc    bool
	tighten    string
	out        string
	quiet      bool
	maxEntries int
	trace      string
	// elimMemory is --elim-memory: the memory budget of bucket
	// elimination (0: never tried).
	elimMemory int64
	// anytime is --anytime as given; see settle for its default.
	anytime bool
	// dist: the command distributes the run (run, a service job on
	// workers), so the default algorithm is DD-ADMM.
	dist bool
	// Set by settle once the flags are parsed: auto when no --algo was
	// given (the algorithm is chosen by model class, choose), anytimeOn
	// when the run goes on through the anytime phases.
	settled, auto, anytimeOn bool
}

func (f *solveFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	Var(flag.Value, string, string)
	Float64Var(*float64, string, float64, string)
	BoolVar(*bool, string, bool, string)
}) {
	d := consensus.DefaultOptions()
	fs.StringVar(&f.evidence, "evidence", "", "evidence `FILE` (UAI .evid layout)")
	var algos []string
	for _, a := range algorithms {
		algos = append(algos, fmt.Sprintf("%s (%s)", a.name, a.about))
	}
	fs.StringVar(&f.algo, "algo", "", "algorithm: "+orList(algos)+"; by default chosen by model class: trws for pairwise models, else admm (run: admm); what was chosen and why is printed")
	fs.BoolVar(&f.anytime, "anytime", false, "go on until the gap closes or --time-limit: bucket elimination when it fits --elim-memory, else the relaxation, a mini-bucket search, tightening (cycle constraints) and branch and bound (run: the relaxation, then branch and bound on the same workers); the default with --time-limit and no --algo (--anytime=false turns it off)")
	fs.BoolVar(&f.epsDesc, "eps-descent", false, "with --algo cmp: steepest eps-descent when block updates stall (converges to the LP optimum)")
	fs.StringVar(&f.slaves, "slaves", string(d.Slaves), "decomposition: factor (one slave per factor), chains (rows and columns, or a path cover) or trees (spanning forests)")
	fs.StringVar(&f.step, "step", string(d.Step), "subgradient step rule: polyak, 1/t or 1/sqrt(t)")
	fs.IntVar(&f.threads, "threads", runtime.GOMAXPROCS(0), "goroutines for the slave and variable loops")
	fs.IntVar(&f.maxIter, "max-iter", d.MaxIter, "iteration limit (with --time-limit and without --exact: none unless given)")
	fs.Var(cli.Duration(&f.timeLimit, 0), "time-limit", "time limit, e.g. 30s, 5m or 1h, or a number of seconds (0: none)")
	fs.Float64Var(&f.tol, "tol", d.Tol, "relative gap for status optimal: gap <= tol*max(1,|primal|); the convergence tests follow it (0: only a closed gap or the limits stop a run)")
	fs.Float64Var(&f.eta, "eta", d.Eta, "ADMM penalty eta (fixed when given without --adapt-eta); with --algo subgradient the step scale eta0, which defaults to 1")
	fs.BoolVar(&f.adaptEta, "adapt-eta", d.AdaptEta, "adapt eta by residual balancing; turned off when --eta is given without it")
	fs.Float64Var(&f.tau, "tau", d.Tau, "multiplier step factor tau in (0, 1.618]")
	fs.BoolVar(&f.json, "json", false, "print one JSON result object on stdout")
	fs.StringVar(&f.tighten, "tighten", "none", "tighten the relaxation: none, or cycles (3- and 4-cycles: with --algo trws, TRW-S(LP-C) with cycle inequalities in its dual; otherwise pairwise potentials regrouped into factors over the cycles; same MAP, tighter bound), soc or cycles,soc (--algo trws only: the SOC clique constraints of every triangle in TRW-S's dual, docs/soc.md)")
	fs.BoolVar(&f.exact, "exact", false, "branch and bound on top of the algorithm's dual bound: optimal only when the gap is closed (--max-iter bounds each node, --time-limit the search)")
	fs.StringVar(&f.out, "out", "", "write the best assignment to `FILE` in UAI MPE format")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines on stderr (the final status line is still printed)")
	fs.StringVar(&f.trace, "trace", "", "write the convergence trace to `FILE` (CSV: "+strings.Join(trace.Columns, ",")+"), one row per iteration (under --exact per node), the last row the result")
	f.elimMemory = elim.DefaultMemory
	fs.Var(byteSize{&f.elimMemory}, "elim-memory", "memory `SIZE` (e.g. 512MiB, 2GiB) of exact bucket elimination, tried first by the anytime default and by --exact when its estimated tables fit (0: never); with --algo elim, the budget of its tables")
	fs.IntVar(&f.maxEntries, "max-entries", model.DefaultMaxEntries, "most table entries a model file may declare in all, and, on its own, most variable states; checked before memory is set aside")
}

// limits are the stopping settings from the flags. With --exact the time
// limit bounds the search, not each node. Progress comes every iteration:
// the --trace file takes every report, the console throttles itself.
func (f *solveFlags) limits() solver.Limits {
	lim := consensus.DefaultOptions().Limits
	lim.MaxIter, lim.TimeLimit, lim.Tol = f.maxIter, f.timeLimit, f.tol
	lim.ProgressEvery = 0
	if f.exact {
		lim.TimeLimit = 0
	}
	return lim
}

// spec is what solve and run run: an algorithm with its options, on a model
// under evidence.
type spec struct {
	algo *algorithm
	configured
	threads int
	m       *model.Model
	ev      model.Evidence
	// folded is how many of the file's factors were read into m's
	// unaries and constant (modelfile.Options.FoldUnary).
	folded int
	// info is what the result reports beyond solver.Result: why the
	// algorithm was chosen, and the phases of an anytime run.
	info *runInfo
}

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
	j, err := f.prepare(fs, cmd, pos, con)
	if err != nil {
		return spec{}, err
	}
	a, set := j.algo, func(name string) bool { return isSet(fs, name) }
	lctx := ctx
	if f.timeLimit > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithDeadlineCause(ctx, start.Add(f.timeLimit), fmt.Errorf("--time-limit %v reached while loading", f.timeLimit))
		defer cancel()
	}
	opts := modelfile.Options{MaxEntries: f.maxEntries, Tee: h}
	if cmd == "solve" {
		// solve owns the model it reads: a UAI file's unary tables go
		// straight into the unaries (what every algorithm's Reduce would
		// do), so that they take no factor of their own in memory.
		opts.FoldUnary, opts.Folded = true, &j.folded
	}
	if j.m, err = modelfile.LoadWith(lctx, pos[0], opts); err == nil && h != nil {
		_, err = h.Write([]byte{0})
	}
	if err != nil {
		return spec{}, usageError{err}
	}
	if f.evidence != "" {
		if j.ev, err = modelfile.LoadEvidenceWith(lctx, f.evidence, j.m, h); err == nil && h != nil {
			_, err = h.Write([]byte{0})
		}
		if err != nil {
			return spec{}, usageError{err}
		}
	}
	reconfigure := false
	if f.auto && j.info.why == "" {
		// No flag decided the algorithm: the model's class does.
		if a, err = f.choose(j.m, &j); err != nil {
			return spec{}, err
		}
		reconfigure = a.name != string(consensus.ADMM)
	}
	if f.timeLimit > 0 {
		// The time limit counts from the start of the command: the
		// algorithm gets what loading left.
		left := f.timeLimit - time.Since(start)
		if left <= 0 {
			return spec{}, usagef("%s: --time-limit %v reached while loading", pos[0], f.timeLimit)
		}
		f.timeLimit = left
		reconfigure = true
	}
	if reconfigure {
		if j.configured, err = a.configure(f, f.limits(), set, con); err != nil {
			return spec{}, err
		}
	}

	switch f.tighten {
	case "none":
	case "cycles":
		if a.name == "trws" {
			break // TRW-S(LP-C) adds the cycle inequalities to its own dual
		}
		if j.m, err = tightenCycles(j.m); err != nil {
			return spec{}, usageError{fmt.Errorf("%s: %w", pos[0], err)}
		}
	case "soc", "cycles,soc", "soc,cycles":
		if a.name != "trws" {
			return spec{}, usagef("--tighten %s: the SOC constraints need --algo trws", f.tighten)
		}
		if cyc, _, err := tighten.FindCycles(j.m, tighten.Options{}); err == nil && !f.quiet && !slices.ContainsFunc(cyc, func(c []int) bool {
			return len(c) == 3 && !slices.ContainsFunc(c, func(v int) bool { return j.m.Cards[v] > 8 })
		}) {
			con.Print("soc", "soc: no triangle of pairwise factors over variables of at most 8 states: the SOC constraints add nothing here", "triangles", 0)
		}
	default:
		return spec{}, usagef("--tighten: unknown value %q (want none, cycles, soc or cycles,soc)", f.tighten)
	}
	if f.anytimeOn {
		if j.info.opts, err = f.anytimeOptions(j, set); err != nil {
			return spec{}, err
		}
	}
	if f.auto && !f.quiet {
		con.Print("algorithm", fmt.Sprintf("algorithm: %s (%s)", a.name, j.info.why), "algo", a.name, "why", j.info.why)
	}
	return j, nil
}

// prepare checks the positional arguments and the flags shared by solve
// and run and configures the algorithm, without reading anything.
func (f *solveFlags) prepare(fs *flag.FlagSet, cmd string, pos []string, con *cli.Console) (spec, error) {
	if len(pos) != 1 {
		return spec{}, usagef("%s: want exactly one MODEL argument, got %d", cmd, len(pos))
	}
	f.settle(fs)
	set := func(name string) bool { return isSet(fs, name) }
	why := ""
	if f.auto {
		f.algo, why = f.provisional(set)
	}
	a, err := findAlgorithm(f.algo)
	if err != nil {
		return spec{}, err
	}
	if err := a.check(f, set); err != nil {
		return spec{}, err
	}
	if f.threads < 1 {
		return spec{}, usagef("--threads: %d < 1", f.threads)
	}
	if f.maxEntries < 1 {
		return spec{}, usagef("--max-entries: %d < 1", f.maxEntries)
	}
	if f.anytimeOn && f.exact {
		return spec{}, usagef("--anytime and --exact: --anytime already ends in branch and bound")
	}
	j := spec{algo: a, threads: a.threadsFor(f), info: &runInfo{why: why}}
	if j.configured, err = a.configure(f, f.limits(), set, con); err != nil {
		return spec{}, err
	}
	if err := f.checkTrace(); err != nil {
		return spec{}, err
	}
	if f.out != "" {
		if st, err := os.Stat(filepath.Dir(f.out)); err != nil || !st.IsDir() {
			return spec{}, usagef("--out: directory %s does not exist", filepath.Dir(f.out))
		}
	}
	return j, nil
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
	con.Register(fs)
	pos, err := parseInterleaved(fs, args, con.Writer())
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
	defer out.close()
	res, err := j.solveHere(ctx, f, out.progress(), con)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", pos[0], err)}
	}
	if f.auto && !f.anytimeOn && !f.exact && !f.quiet && res.Status == solver.Converged {
		// The chosen relaxation stopped with the gap open: say what goes
		// further (without a time limit the anytime phases could run for
		// ever, so they are not the default then).
		con.Print("hint", "the relaxation converged with the gap open: --time-limit T goes on with cycle constraints and branch and bound for T (anytime)")
	}
	return report(res, j, f, cluster.JobInfo{}, out, stdout)
}

// solveHere runs j in this process: its algorithm, or with --exact branch
// and bound on the algorithm's bound (whose counts go to con unless
// --quiet). solve and the job service's local jobs run through it.
func (j spec) solveHere(ctx context.Context, f solveFlags, progress func(solver.Progress), con *cli.Console) (solver.Result, error) {
	if f.anytimeOn {
		return j.solveAnytime(ctx, f, progress, con)
	}
	if !f.exact {
		return j.solve(ctx, j.m, j.ev, progress)
	}
	if f.elimMemory > 0 && j.algo.name != "elim" {
		t0 := time.Now()
		if res, ran, err := j.eliminate(ctx, f, progress, con); ran || err != nil {
			return res, err
		}
		if f.timeLimit > 0 {
			// What the mini-bucket search left.
			if f.timeLimit -= time.Since(t0); f.timeLimit <= 0 {
				f.timeLimit = time.Nanosecond
			}
		}
	}
	eo := exact.Options{Tol: f.tol, TimeLimit: f.timeLimit}
	warm := j.warm
	if warm == nil {
		warm = exact.Cold(func(ctx context.Context, m *model.Model, ev model.Evidence) (solver.Result, error) {
			return j.solve(ctx, m, ev, nil)
		})
	}
	res, st, err := exact.SolveWarm(ctx, j.m, j.ev, warm, eo, progress)
	if err == nil && !f.quiet {
		con.Close()
		con.Print("branch and bound", fmt.Sprintf("branch and bound: %d nodes solved, %d pruned, %d open", st.Nodes, st.Pruned, st.Open),
			"nodes", st.Nodes, "pruned", st.Pruned, "open", st.Open)
	}
	return res, err
}

// eliminate runs exact bucket elimination (package elim) before --exact's
// branch and bound when its estimated tables fit --elim-memory, and says
// on con (unless --quiet) whether it does and why. ran reports that it
// ran (it then decides the result: optimal, or cut short by the limits).
func (j spec) eliminate(ctx context.Context, f solveFlags, progress func(solver.Progress), con *cli.Console) (res solver.Result, ran bool, err error) {
	e, err := elim.EstimateOf(ctx, j.m, j.ev, f.elimMemory)
	if err != nil {
		return res, false, err
	}
	if !f.quiet {
		what := "bucket elimination first"
		if !e.Fits {
			what = "no bucket elimination, branch and bound"
		}
		con.Print("elimination", fmt.Sprintf("exact: %s (%s; --elim-memory)", what, e.Verdict()), "fits", e.Fits, "bytes", e.Bytes, "budget", f.elimMemory, "width", e.Width)
	}
	if !e.Fits {
		if f.timeLimit <= 0 || j.m.NumVars() > 4096 {
			return res, false, nil
		}
		// Half the time to the mini-bucket search; the branch and bound
		// on the dual bound gets the rest when it does not certify.
		o := elim.DefaultOptions()
		o.TimeLimit, o.Tol, o.Memory, o.Search = f.timeLimit/2, f.tol, f.elimMemory, true
		res, err = elim.Solve(ctx, j.m, j.ev, o, progress)
		if err != nil {
			if !f.quiet {
				con.Print("elimination", fmt.Sprintf("exact: no mini-bucket search (%v)", err), "error", err.Error())
			}
			return res, false, nil
		}
		if !f.quiet {
			con.Close()
			con.Print("elimination", fmt.Sprintf("exact: mini-bucket search %s (bound %s, primal %s)", res.Status, num(res.Dual), num(res.Primal)), "status", string(res.Status))
		}
		if res.Status == solver.Optimal || res.Status == solver.Infeasible || ctx.Err() != nil {
			return res, true, nil
		}
		return res, false, nil
	}
	// With a time limit, an elimination whose work is over the search's
	// (elim.Options.MaxWork) is searched with mini-buckets instead, which
	// usually certifies sooner (CSP_11: 1.3 s, not 8.5 s); without one the
	// exact elimination always ends.
	o := elim.DefaultOptions()
	o.TimeLimit, o.Tol, o.Memory, o.Search = f.timeLimit, f.tol, f.elimMemory, f.timeLimit > 0
	res, err = elim.Solve(ctx, j.m, j.ev, o, progress)
	return res, true, err
}

// report ends the trace, prints the final line, writes --out and the
// --json result. The final status line goes to stderr also with --quiet
// (which silences progress only); --json adds the result object on stdout.
func report(res solver.Result, j spec, f solveFlags, ri cluster.JobInfo, out *runOutput, stdout io.Writer) error {
	if err := out.finish(res); err != nil {
		return err
	}
	printResult(out.con, res)
	if f.out != "" && res.Assignment != nil {
		if err := writeMPE(f.out, res.Assignment); err != nil {
			return err
		}
	}
	if f.json {
		return writeJSON(stdout, newResultJSON(res, j, ri, f.out))
	}
	return nil
}

func num(v float64) string { return cli.Num(v) }

// writeMPE writes the assignment atomically: a temporary file renamed into
// place, so a crash never leaves a partial solution behind.
func writeMPE(path string, x []int) error {
	return writeAtomic("--out", path, func(w io.Writer) error { return uai.WriteMPE(w, x) })
}

// writeAtomic writes the file at path (given by flag, which errors name)
// through write: into a temporary file beside it, renamed into place once
// complete.
func writeAtomic(flag, path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ddrun-*")
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return nil
}

// resultJSON is the result schema of `coordinator solve --json`. Numbers
// that are not finite (no feasible assignment, infeasible model) are null.
type resultJSON struct {
	Status     solver.Status `json:"status"`
	Primal     *float64      `json:"primal"`
	Dual       *float64      `json:"dual"`
	Gap        *float64      `json:"gap"`
	Relaxed    *float64      `json:"relaxed"`
	Iterations int           `json:"iterations"`
	Seconds    float64       `json:"seconds"`
	Assignment []int         `json:"assignment"`
	// AssignmentFile is where --out wrote the assignment; Omitted says
	// that the assignment, over maxJSONAssignment variables, is not in
	// this object (it is in the file, when there is one).
	AssignmentFile string `json:"assignment_file,omitempty"`
	Omitted        bool   `json:"assignment_omitted,omitempty"`
	Algo           string `json:"algo"`
	Threads        int    `json:"threads"`
	Workers        int    `json:"workers,omitempty"`
	Failovers      *int   `json:"failovers,omitempty"`
	Redone         *int   `json:"redone_iterations,omitempty"`
	// Sharded describes a sharded run (run --sharded).
	Sharded *shardedJSON `json:"sharded,omitempty"`
	Model   modelJSON    `json:"model"`
	// Why the algorithm was chosen, when no --algo was given.
	Why string `json:"why,omitempty"`
	// Phase closed the gap of an anytime run (or was its last), and
	// Phases is how each phase went.
	Phase  string      `json:"phase,omitempty"`
	Phases []phaseJSON `json:"phases,omitempty"`
}

type modelJSON struct {
	Variables int `json:"variables"`
	Factors   int `json:"factors"`
}

func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// newResultJSON is res in the result schema; a distributed run's (ri.Workers
// > 0) with its workers, failovers and redone iterations, and out the
// --out file. It is also the result a Raft leader records for a later
// leader to print.
func newResultJSON(res solver.Result, j spec, ri cluster.JobInfo, out string) resultJSON {
	r := resultJSON{
		Status:     res.Status,
		Primal:     finite(res.Primal),
		Dual:       finite(res.Dual),
		Gap:        finite(res.Gap),
		Relaxed:    finite(res.Relaxed),
		Iterations: res.Iterations,
		Seconds:    res.Elapsed.Seconds(),
		Assignment: res.Assignment,
		Algo:       j.algo.name,
		Threads:    j.threads,
		Model:      modelJSON{Variables: j.m.NumVars(), Factors: len(j.m.Factors) + j.folded},
		Workers:    ri.Workers,
	}
	if ri.Workers > 0 {
		r.Failovers, r.Redone = &ri.Failovers, &ri.Redone
	}
	if j.info != nil {
		r.Why, r.Phase, r.Phases = j.info.why, string(j.info.phase), phasesJSON(j.info.phases)
	}
	if r.Primal == nil {
		r.Assignment = nil
	}
	if r.Assignment != nil && out != "" {
		r.AssignmentFile = out
	}
	if len(r.Assignment) > maxJSONAssignment {
		r.Assignment, r.Omitted = nil, true
	}
	return r
}

// maxJSONAssignment is the largest assignment (in variables) that the JSON
// result holds: a bigger one only goes to --out. It also keeps the result
// a Raft leader records well under jobstate.MaxCommandBytes (1 MiB).
const maxJSONAssignment = 100_000

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing result: %w", err)
	}
	return nil
}

// tightenCycles regroups the pairwise potentials of m into cycle factors.
// The returned model has the same variables and the same score for every
// assignment, so results need no translation.
func tightenCycles(m *model.Model) (*model.Model, error) {
	out, _, err := tighten.Cycles(m, tighten.Options{})
	return out, err
}
