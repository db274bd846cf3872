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
	"time"

	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/cmp"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/model/uai"
	"github.com/ddrun/ddrun/tighten"
	"github.com/ddrun/ddrun/trws"
)

// solveFlags are the flags of `coordinator solve`; other commands that run a
// job (run, in the distributed mode) reuse them.
type solveFlags struct {
	evidence  string
	algo      string
	slaves    string
	step      string
	threads   int
	maxIter   int
	timeLimit time.Duration
	tol       float64
	eta       float64
	adaptEta  bool
	tau       float64
	json      bool
	exact     bool
	epsDesc   bool
	tighten   string
	out       string
	quiet     bool
}

func (f *solveFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	Float64Var(*float64, string, float64, string)
	BoolVar(*bool, string, bool, string)
}) {
	d := consensus.DefaultOptions()
	fs.StringVar(&f.evidence, "evidence", "", "evidence `FILE` (UAI .evid layout)")
	fs.StringVar(&f.algo, "algo", string(d.Algo), "algorithm: admm (DD-ADMM), subgradient (DD-subgradient), trws (TRW-S, pairwise models) or cmp (convex max-product)")
	fs.BoolVar(&f.epsDesc, "eps-descent", false, "with --algo cmp: steepest eps-descent when block updates stall (converges to the LP optimum)")
	fs.StringVar(&f.slaves, "slaves", string(d.Slaves), "decomposition: factor (one slave per factor), chains (rows and columns, or a path cover) or trees (spanning forests)")
	fs.StringVar(&f.step, "step", string(d.Step), "subgradient step rule: polyak, 1/t or 1/sqrt(t)")
	fs.IntVar(&f.threads, "threads", runtime.GOMAXPROCS(0), "goroutines for the slave and variable loops")
	fs.IntVar(&f.maxIter, "max-iter", d.MaxIter, "iteration limit")
	fs.DurationVar(&f.timeLimit, "time-limit", 0, "time limit, e.g. 30s (0: none)")
	fs.Float64Var(&f.tol, "tol", d.Tol, "relative gap for status optimal: gap <= tol*max(1,|primal|)")
	fs.Float64Var(&f.eta, "eta", d.Eta, "ADMM penalty eta (fixed when given without --adapt-eta); with --algo subgradient the step scale eta0, which defaults to 1")
	fs.BoolVar(&f.adaptEta, "adapt-eta", d.AdaptEta, "adapt eta by residual balancing; turned off when --eta is given without it")
	fs.Float64Var(&f.tau, "tau", d.Tau, "multiplier step factor tau in (0, 1.618]")
	fs.BoolVar(&f.json, "json", false, "print one JSON result object on stdout")
	fs.StringVar(&f.tighten, "tighten", "none", "tighten the relaxation: none, or cycles (3- and 4-cycles: with --algo trws, TRW-S(LP-C) with cycle inequalities in its dual; otherwise pairwise potentials regrouped into factors over the cycles; same MAP, tighter bound)")
	fs.BoolVar(&f.exact, "exact", false, "branch and bound on top of the algorithm's dual bound: optimal only when the gap is closed (--max-iter bounds each node, --time-limit the search)")
	fs.StringVar(&f.out, "out", "", "write the best assignment to `FILE` in UAI MPE format")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines on stderr")
}

func (f *solveFlags) options(etaGiven, adaptGiven bool) consensus.Options {
	o := consensus.DefaultOptions()
	o.Algo = consensus.Algo(f.algo)
	o.Slaves = consensus.Decomposition(f.slaves)
	o.Step = consensus.StepRule(f.step)
	o.Threads = f.threads
	o.MaxIter = f.maxIter
	o.TimeLimit = f.timeLimit
	o.Tol = f.tol
	o.Eta = f.eta
	o.Tau = f.tau
	o.AdaptEta = f.adaptEta
	if etaGiven && !adaptGiven {
		o.AdaptEta = false
	}
	if o.Algo == consensus.Subgradient && !etaGiven {
		o.Eta = 1
	}
	return o
}

// load checks the positional arguments and the options shared by solve and
// run, and reads the model and the evidence. When h is not nil it gets
// the bytes of the model file, a 0 byte, and those of the evidence file
// followed by a 0 byte when there is one (the job identity's hash).
func (f *solveFlags) load(fs *flag.FlagSet, cmd string, pos []string, h io.Writer) (consensus.Options, *model.Model, model.Evidence, error) {
	fail := func(err error) (consensus.Options, *model.Model, model.Evidence, error) {
		return consensus.Options{}, nil, nil, err
	}
	if len(pos) != 1 {
		return fail(usagef("%s: want exactly one MODEL argument, got %d", cmd, len(pos)))
	}
	opts := f.options(isSet(fs, "eta"), isSet(fs, "adapt-eta"))
	if err := opts.Validate(); err != nil {
		return fail(usageError{err})
	}
	if f.epsDesc && opts.Algo != consensus.CMP {
		return fail(usagef("--eps-descent goes with --algo cmp"))
	}
	if f.out != "" {
		if st, err := os.Stat(filepath.Dir(f.out)); err != nil || !st.IsDir() {
			return fail(usagef("--out: directory %s does not exist", filepath.Dir(f.out)))
		}
	}
	var m *model.Model
	var err error
	if h == nil {
		m, err = modelfile.Load(pos[0])
	} else if m, err = modelfile.LoadTee(pos[0], h); err == nil {
		_, err = h.Write([]byte{0})
	}
	if err != nil {
		return fail(usageError{err})
	}
	var ev model.Evidence
	if f.evidence != "" {
		if h == nil {
			ev, err = uai.ReadEvidenceFile(f.evidence, m)
		} else if ev, err = modelfile.LoadEvidenceTee(f.evidence, m, h); err == nil {
			_, err = h.Write([]byte{0})
		}
		if err != nil {
			return fail(usageError{err})
		}
	}
	switch f.tighten {
	case "none":
	case "cycles":
		if opts.Algo == consensus.TRWS {
			break // TRW-S(LP-C) adds the cycle inequalities to its own dual
		}
		if m, err = tightenCycles(m); err != nil {
			return fail(usageError{fmt.Errorf("%s: %w", pos[0], err)})
		}
	default:
		return fail(usagef("--tighten: unknown value %q (want none or cycles)", f.tighten))
	}
	return opts, m, ev, nil
}

func cmdSolve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if os.Getenv("GOGC") == "" {
		// The solvers' iterations allocate nothing, so collecting at half
		// the default heap growth costs nothing per iteration; it lowers
		// the peak memory of loading and setting up (8-label 100x100
		// Potts: 61-73 MB -> 54-57 MB). A GOGC given by the user wins.
		debug.SetGCPercent(50)
	}
	fs := flagSet("solve")
	var f solveFlags
	f.register(fs)
	pos, err := parseInterleaved(fs, args, stderr)
	if err != nil {
		return err
	}
	opts, m, ev, err := f.load(fs, "solve", pos, nil)
	if err != nil {
		return err
	}
	var progress func(consensus.Progress)
	if !f.quiet {
		progress = func(p consensus.Progress) { printProgress(stderr, p) }
	}
	dual := func(ctx context.Context, m *model.Model, ev model.Evidence, progress func(consensus.Progress)) (consensus.Result, error) {
		switch opts.Algo {
		case consensus.TRWS:
			to := trws.DefaultOptions()
			to.MaxIter, to.TimeLimit, to.Tol = opts.MaxIter, opts.TimeLimit, opts.Tol
			to.Cycles = f.tighten == "cycles"
			res, st, err := trws.SolveStats(ctx, m, ev, to, progress)
			if err == nil && to.Cycles && progress != nil {
				c := st.Cycles
				fmt.Fprintf(stderr, "cycle inequalities: %d cycles (%d skipped: two edges in one chain), %d steps lowered the bound, %d held at the end, %d LP failures\n",
					c.Cycles, c.Shared, c.Steps, c.Active, c.Failed)
			}
			return res, err
		case consensus.CMP:
			co := cmp.DefaultOptions()
			co.MaxIter, co.TimeLimit, co.Tol, co.EpsDescent = opts.MaxIter, opts.TimeLimit, opts.Tol, f.epsDesc
			return cmp.Solve(ctx, m, ev, co, progress)
		}
		return consensus.Solve(ctx, m, ev, opts, progress)
	}
	var res consensus.Result
	if f.exact {
		node := func(ctx context.Context, m *model.Model, ev model.Evidence) (consensus.Result, error) {
			return dual(ctx, m, ev, nil)
		}
		opts.TimeLimit = 0 // the limit bounds the search, not each node
		var st exact.Stats
		eo := exact.Options{Tol: opts.Tol, TimeLimit: f.timeLimit}
		if opts.Algo == consensus.ADMM && opts.Slaves == consensus.PerFactor {
			// Children start from their parent's multipliers, and a node
			// stops once its bound falls to the incumbent.
			res, st, err = exact.SolveWarm(ctx, m, ev, exact.ADMM(opts), eo, progress)
		} else {
			res, st, err = exact.Solve(ctx, m, ev, node, eo, progress)
		}
		if err == nil && !f.quiet {
			fmt.Fprintf(stderr, "branch and bound: %d nodes solved, %d pruned, %d open\n", st.Nodes, st.Pruned, st.Open)
		}
	} else {
		res, err = dual(ctx, m, ev, progress)
	}
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", pos[0], err)}
	}
	return report(res, opts, m, f, cluster.JobInfo{}, stdout, stderr)
}

// report prints the final line, writes --out and the --json result.
func report(res consensus.Result, opts consensus.Options, m *model.Model, f solveFlags, ri cluster.JobInfo, stdout, stderr io.Writer) error {
	if !f.quiet {
		fmt.Fprintf(stderr, "status=%s iterations=%d dual=%s primal=%s gap=%s seconds=%.3f\n",
			res.Status, res.Iterations, num(res.Dual), num(res.Primal), num(res.Gap), res.Elapsed.Seconds())
	}
	if f.out != "" && res.Assignment != nil {
		if err := writeMPE(f.out, res.Assignment); err != nil {
			return err
		}
	}
	if f.json {
		return writeJSON(stdout, newResultJSON(res, opts, m, ri))
	}
	return nil
}

func printProgress(w io.Writer, p consensus.Progress) {
	fmt.Fprintf(w, "iter=%d dual=%s primal=%s gap=%s pres=%.2e dres=%.2e eta=%.3g elapsed=%.3fs\n",
		p.Iteration, num(p.Dual), num(p.Primal), num(p.Gap), p.PrimalRes, p.DualRes, p.Eta, p.Elapsed.Seconds())
}

func num(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "none"
	}
	return fmt.Sprintf("%.9g", v)
}

// writeMPE writes the assignment atomically: a temporary file renamed into
// place, so a crash never leaves a partial solution behind.
func writeMPE(path string, x []int) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mpe-*")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := uai.WriteMPE(tmp, x); err != nil {
		tmp.Close()
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	return nil
}

// resultJSON is the result schema of `coordinator solve --json`. Numbers
// that are not finite (no feasible assignment, infeasible model) are null.
type resultJSON struct {
	Status     consensus.Status `json:"status"`
	Primal     *float64         `json:"primal"`
	Dual       *float64         `json:"dual"`
	Gap        *float64         `json:"gap"`
	Relaxed    *float64         `json:"relaxed"`
	Iterations int              `json:"iterations"`
	Seconds    float64          `json:"seconds"`
	Assignment []int            `json:"assignment"`
	Algo       consensus.Algo   `json:"algo"`
	Threads    int              `json:"threads"`
	Workers    int              `json:"workers,omitempty"`
	Failovers  *int             `json:"failovers,omitempty"`
	Redone     *int             `json:"redone_iterations,omitempty"`
	Model      modelJSON        `json:"model"`
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
// > 0) with its workers, failovers and redone iterations. It is also the
// result a Raft leader records for a later leader to print.
func newResultJSON(res consensus.Result, opts consensus.Options, m *model.Model, ri cluster.JobInfo) resultJSON {
	r := resultJSON{
		Status:     res.Status,
		Primal:     finite(res.Primal),
		Dual:       finite(res.Dual),
		Gap:        finite(res.Gap),
		Relaxed:    finite(res.Relaxed),
		Iterations: res.Iterations,
		Seconds:    res.Elapsed.Seconds(),
		Assignment: res.Assignment,
		Algo:       opts.Algo,
		Threads:    opts.Threads,
		Model:      modelJSON{Variables: m.NumVars(), Factors: len(m.Factors)},
		Workers:    ri.Workers,
	}
	if ri.Workers > 0 {
		r.Failovers, r.Redone = &ri.Failovers, &ri.Redone
	}
	if r.Primal == nil {
		r.Assignment = nil
	}
	return r
}

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
