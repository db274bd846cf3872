package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ddrun/ddrun/anytime"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/tighten"
)

// Hooks are where a run reports beyond its result. Every field may be nil.
type Hooks struct {
	// Progress gets the solver's reports.
	Progress func(solver.Progress)
	// Print gets the lines a front end shows (the command line unless
	// --quiet): a key, the text line, and key-value pairs for a
	// structured record. nil: nothing is shown.
	Print func(key, text string, kv ...any)
	// EndLine is called before the lines that close a stage (a live
	// progress line is taken away).
	EndLine func()
	// Start, when not zero, is when the command started: the times a
	// job reports (progress, the anytime phases' lines, the result's
	// Elapsed) count from it, reading included, as a run on workers
	// counts them; zero: from the solver's start.
	Start time.Time
}

func (h *Hooks) endLine() {
	if h.EndLine != nil {
		h.EndLine()
	}
}

// Job is an algorithm with its options (Prepare), then on a model (Bind):
// what a run runs, in this process (Solve) or on workers.
type Job struct {
	// Settings, settled; Algo is the algorithm that runs.
	Settings  Settings
	Algorithm *Algorithm
	// Threads is the threads the algorithm runs on.
	Threads int
	// Why the algorithm was chosen (no algorithm given); empty otherwise.
	Why string
	// Model and Evidence, from Bind; Folded is the factors of the file
	// that the front end read into the model's unaries and constant (for
	// the result's count of factors).
	Model    *model.Model
	Evidence model.Evidence
	Folded   int
	// Cost, when not nil, turns a score into the objective in the model
	// file's own terms (a toulbar2 .wcsp or .cfn file's cost), for the
	// result's Cost; the front end that read the file sets it.
	Cost func(score float64) float64
	// Anytime are the anytime run's options (Settings.AnytimeOn).
	Anytime anytime.Options
	// Phase closed the gap (or was the last to run) and Phases is how
	// each went, after an anytime run.
	Phase  anytime.Phase
	Phases []anytime.PhaseResult

	cfg   configured
	hooks Hooks
	lead  time.Duration // Hooks.Start to the solver's start
}

// Prepare settles s, checks it and configures the algorithm, before any
// model is read. Its errors are *Error (bad settings), or the solver's
// option errors that name no setting.
func Prepare(s Settings) (*Job, error) {
	s.Settle()
	why := ""
	if s.Auto {
		s.Algo, why = s.provisional()
	}
	a, err := Find(s.Algo)
	if err != nil {
		return nil, err
	}
	if err := a.check(&s); err != nil {
		return nil, err
	}
	if s.Threads < 1 {
		return nil, errorf("%s: %d < 1", Name("threads"), s.Threads)
	}
	if s.AnytimeOn && s.Exact {
		return nil, errorf("%s and %s: %s already ends in branch and bound", Name("anytime"), Name("exact"), Name("anytime"))
	}
	j := &Job{Settings: s, Algorithm: a, Threads: a.threadsFor(&s), Why: why}
	if err := j.configure(); err != nil {
		return nil, err
	}
	return j, nil
}

func (j *Job) configure() (err error) {
	j.cfg, err = j.Algorithm.configure(&j.Settings, j.Settings.Limits(), &j.hooks)
	return err
}

// DD is the options of a dual-decomposition job: what a distributed run
// ships to its workers and records in its checkpoints.
func (j *Job) DD() consensus.Options { return j.cfg.dd }

// checkTighten rejects an unknown tightening, and the SOC constraints
// with another algorithm than TRW-S (they live in TRW-S's dual).
func (s *Settings) checkTighten() error {
	switch s.Tighten {
	case "none", "cycles":
	case "soc", "cycles,soc", "soc,cycles":
		if s.Algo != "trws" {
			return errorf("%s %s: the SOC constraints need %s trws", Name("tighten"), s.Tighten, Name("algo"))
		}
	default:
		return errorf("%s: unknown value %q (want none, cycles, soc or cycles,soc)", Name("tighten"), s.Tighten)
	}
	return nil
}

// tightenCycles: the tightening holds the cycle inequalities (TRW-S(LP-C),
// or the model regrouped into cycle factors for the other algorithms).
func (s *Settings) tightenCycles() bool {
	return s.Tighten == "cycles" || s.Tighten == "cycles,soc" || s.Tighten == "soc,cycles"
}

// tightenSOC: the tightening holds the SOC clique constraints of every
// triangle (TRW-S only, docs/soc.md).
func (s *Settings) tightenSOC() bool {
	return s.Tighten == "soc" || s.Tighten == "cycles,soc" || s.Tighten == "soc,cycles"
}

// SOCNote is a one-line note when the job tightens by the SOC constraints
// on a model that has no triangle they could hold (over variables of at
// most 8 states, as TRW-S(LP-C)'s cycles): they add nothing there; else "".
func (j *Job) SOCNote() string {
	if !j.Settings.tightenSOC() || j.Model == nil {
		return ""
	}
	cyc, _, err := tighten.FindCycles(j.Model, tighten.Options{})
	if err != nil || slices.ContainsFunc(cyc, func(c []int) bool {
		return len(c) == 3 && !slices.ContainsFunc(c, func(v int) bool { return j.Model.Cards[v] > 8 })
	}) {
		return ""
	}
	return "soc: no triangle of pairwise factors over variables of at most 8 states: the SOC constraints add nothing here"
}

// Bind puts the job on model m under evidence ev: with no algorithm given
// and no setting to decide it, the model's class chooses it (Choose); the
// algorithm is configured again for what changed (a front end that spent
// part of the time limit reading the model lowers Settings.TimeLimit
// first); tighten cycles regroups the model (except for TRW-S, which adds
// the cycle inequalities to its own dual); an anytime run gets its options.
func (j *Job) Bind(m *model.Model, ev model.Evidence) error {
	j.Model, j.Evidence = m, ev
	reconfigure := false
	if j.Settings.Auto && j.Why == "" {
		// No setting decided the algorithm: the model's class does.
		r, why := Choose(m)
		a, err := Find(string(r))
		if err != nil {
			return err
		}
		if !a.Threads && j.Settings.Threads > 1 {
			why += "; it runs on one thread"
		}
		j.Settings.Algo, j.Algorithm, j.Threads, j.Why = a.Name, a, a.threadsFor(&j.Settings), why
		reconfigure = a.Name != string(consensus.ADMM)
	}
	if j.Settings.TimeLimit > 0 {
		reconfigure = true
	}
	if reconfigure {
		if err := j.configure(); err != nil {
			return err
		}
	}
	if err := j.Settings.checkTighten(); err != nil {
		return err
	}
	if j.Settings.tightenCycles() && j.Algorithm.Name != "trws" {
		tm, _, err := tighten.Cycles(j.Model, tighten.Options{})
		if err != nil {
			return &ModelError{err}
		}
		j.Model = tm
	}
	if j.Settings.AnytimeOn {
		var err error
		if j.Anytime, err = j.anytimeOptions(); err != nil {
			return err
		}
	}
	return nil
}

// ModelError is a model that the settings cannot run on (tighten cycles
// cannot regroup it): the caller's input, as a bad setting is.
type ModelError struct{ Err error }

func (e *ModelError) Error() string { return e.Err.Error() }
func (e *ModelError) Unwrap() error { return e.Err }

// Choose picks the algorithm by m's class and says why: the relaxation
// anytime.Choose picks (TRW-S for sparse pairwise models, DD-ADMM
// otherwise). Every choice by model class goes through here.
func Choose(m *model.Model) (anytime.Relaxation, string) { return anytime.Choose(m) }

// anytimeOptions are the anytime run's options from the settings: the
// relaxation of the job's algorithm (TRW-S or DD-ADMM; another algorithm
// runs the first phase, and the model's class decides the later ones),
// tol, the time left, no iteration limit per phase unless max-iter is
// given (which then also bounds each branch and bound node).
func (j *Job) anytimeOptions() (anytime.Options, error) {
	s := &j.Settings
	o := anytime.DefaultOptions()
	lim := s.Limits()
	o.Limits = lim
	var err error
	if o.DD, err = ddOptions(s, consensus.ADMM, lim); err != nil {
		return o, err
	}
	if o.TRWS, err = trwsOptions(s, lim); err != nil {
		return o, err
	}
	switch j.Algorithm.Name {
	case string(anytime.TRWS):
		o.Relax = anytime.TRWS
	case string(anytime.ADMM):
		o.Relax = anytime.ADMM
	default:
		o.Relax, _ = Choose(j.Model)
		if o.Relax != anytime.TRWS || o.TRWS.Cycles {
			o.First = j.cfg.solve
		}
		// (TRW-S, the choice for pairwise models, runs as anytime's own
		// relaxation: the same solver and options, and its stall ends
		// the phase even under tol 0.)
	}
	if s.given("max-iter") {
		o.NodeMaxIter = s.MaxIter
	}
	// Branch and bound solves Threads nodes at once (each node's solver
	// then runs on one); internal/primal's search looks for better
	// assignments after every phase, for at most a second (a twentieth of
	// the time limit when that is less).
	o.Search.Threads = s.Threads
	o.Eliminate, o.MiniBuckets = s.ElimMemory, true
	budget := time.Second
	if s.TimeLimit > 0 {
		budget = min(budget, s.TimeLimit/20)
	}
	o.Primal = anytime.PrimalSearch(budget)
	if err := o.Validate(); err != nil {
		return o, optionError(err)
	}
	return o, nil
}

// Solve runs the job in this process: through the anytime phases
// (Settings.AnytimeOn), with Exact bucket elimination or branch and bound
// on the algorithm's bound (solveExact), or the algorithm alone. What it
// reports beyond the result goes to h.
func (j *Job) Solve(ctx context.Context, h Hooks) (solver.Result, error) {
	var lead time.Duration // what the command spent before the solver
	if !h.Start.IsZero() {
		lead = time.Since(h.Start)
	}
	h.Progress = Later(lead, h.Progress)
	j.hooks, j.lead = h, lead
	var res solver.Result
	var err error
	switch {
	case j.Settings.AnytimeOn:
		res, err = j.solveAnytime(ctx)
	case j.Settings.Exact:
		res, err = j.solveExact(ctx)
	default:
		res, err = j.cfg.solve(ctx, j.Model, j.Evidence, h.Progress)
	}
	res.Elapsed += lead
	return res, err
}

// Later returns progress with lead added to every report's Elapsed: the
// reports of a stage that began lead after the times' origin (the
// command's start), counted from that origin. progress itself when lead
// is 0 or progress nil.
func Later(lead time.Duration, progress func(solver.Progress)) func(solver.Progress) {
	if lead <= 0 || progress == nil {
		return progress
	}
	return func(p solver.Progress) {
		p.Elapsed += lead
		progress(p)
	}
}

// LaterEvents is Later for the anytime phases' events.
func LaterEvents(lead time.Duration, events func(anytime.Event)) func(anytime.Event) {
	if lead <= 0 || events == nil {
		return events
	}
	return func(e anytime.Event) {
		e.Elapsed += lead
		events(e)
	}
}

// Solve prepares s, binds it to m under ev and solves it in this process:
// the local entry point of the front ends that hold the model.
func Solve(ctx context.Context, m *model.Model, ev model.Evidence, s Settings, h Hooks) (solver.Result, *Job, error) {
	j, err := Prepare(s)
	if err != nil {
		return solver.Result{}, nil, err
	}
	if err := j.Bind(m, ev); err != nil {
		return solver.Result{}, nil, err
	}
	res, err := j.Solve(ctx, h)
	return res, j, err
}

// solveAnytime runs the job through the anytime phases (package anytime),
// printing each phase and the improved primals.
func (j *Job) solveAnytime(ctx context.Context) (solver.Result, error) {
	o := j.Anytime
	h := &j.hooks
	if h.Print != nil {
		o.Events = LaterEvents(j.lead, PhaseLines(h.Print, j.Cost))
	}
	res, err := anytime.Solve(ctx, j.Model, j.Evidence, o, h.Progress)
	if err != nil {
		return solver.Result{}, err
	}
	j.Phase, j.Phases = res.Phase, res.Phases
	if h.Print != nil {
		h.endLine()
		PrintAnytime(h.Print, res)
		if st := res.Search; st.Nodes > 0 {
			h.Print("branch and bound", fmt.Sprintf("branch and bound: %d nodes solved, %d pruned, %d open", st.Nodes, st.Pruned, st.Open),
				"nodes", st.Nodes, "pruned", st.Pruned, "open", st.Open)
		}
	}
	return res.Result, nil
}

// PrintAnytime prints the line that ends an anytime run.
func PrintAnytime(print func(key, text string, kv ...any), res anytime.Result) {
	closed := "the gap is open"
	if res.Status == solver.Optimal || res.Status == solver.Infeasible {
		closed = "closed by " + string(res.Phase)
	}
	print("anytime", fmt.Sprintf("anytime: %s, %s; bound %s (the lowest of every phase), primal %s", res.Status, closed, num(res.Dual), num(res.Primal)),
		"status", string(res.Status), "phase", string(res.Phase), "dual", res.Dual, "primal", res.Primal)
}

// PhaseLines prints an anytime run's events: each phase's start and end,
// and one line per new best solution (as toulbar2 prints "New solution:"),
// with its cost in the model file's own terms when cost is not nil (a
// .wcsp or .cfn file's objective: Job.Cost).
func PhaseLines(print func(key, text string, kv ...any), cost func(score float64) float64) func(anytime.Event) {
	var mu sync.Mutex
	best := math.Inf(-1) // the last primal printed
	return func(e anytime.Event) {
		mu.Lock()
		defer mu.Unlock()
		secs := e.Elapsed.Seconds()
		switch e.Kind {
		case anytime.PhaseStart:
			print("phase", fmt.Sprintf("phase %s: %s (bound %s, primal %s, %.3fs)", e.Phase, e.About, num(e.Dual), num(e.Primal), secs),
				"phase", string(e.Phase), "event", "start", "about", e.About, "dual", e.Dual, "primal", e.Primal, "elapsed", secs)
		case anytime.PhaseEnd:
			if e.Status == "skipped" {
				print("phase", fmt.Sprintf("phase %s: skipped, %s", e.Phase, e.About), "phase", string(e.Phase), "event", "skipped", "about", e.About)
				return
			}
			nodes := ""
			if e.Nodes > 0 {
				nodes = fmt.Sprintf(", %d nodes", e.Nodes)
			}
			print("phase", fmt.Sprintf("phase %s: %s after %d iterations%s, its bound %s; best bound %s, primal %s, gap %s (%.3fs)",
				e.Phase, e.Status, e.Iterations, nodes, num(e.PhaseDual), num(e.Dual), num(e.Primal), num(e.Dual-e.Primal), secs),
				"phase", string(e.Phase), "event", "end", "status", string(e.Status), "iterations", e.Iterations, "nodes", e.Nodes,
				"phase_dual", e.PhaseDual, "dual", e.Dual, "primal", e.Primal, "elapsed", secs)
		case anytime.Improved:
			if e.Primal <= best+1e-9*math.Max(1, math.Abs(best)) {
				return // a phase's start from the best so far, or float noise
			}
			best = e.Primal
			if cost != nil {
				c := cost(e.Primal)
				print("primal", fmt.Sprintf("new best: cost %s, primal %s (phase %s, iteration %d, %.3fs)", num(c), num(e.Primal), e.Phase, e.Iterations, secs),
					"phase", string(e.Phase), "primal", e.Primal, "cost", c, "iteration", e.Iterations, "elapsed", secs)
				return
			}
			print("primal", fmt.Sprintf("new best: primal %s (phase %s, iteration %d, %.3fs)", num(e.Primal), e.Phase, e.Iterations, secs),
				"phase", string(e.Phase), "primal", e.Primal, "iteration", e.Iterations, "elapsed", secs)
		}
	}
}

// Distributable reports whether the job can run on workers (what command
// does, the subject of the error): dual decomposition, without exact.
func (j *Job) Distributable(command string) error {
	if j.Settings.Exact {
		return errorf("%s: %s runs only in solve", command, Name("exact"))
	}
	if !j.Algorithm.Distributed {
		return errorf("%s: %s %s runs only in solve (run distributes dual decomposition: admm or subgradient)", command, Name("algo"), j.Algorithm.Name)
	}
	return nil
}

// num writes a bound or score as the command line does: "none" when it is
// not finite.
func num(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "none"
	}
	return fmt.Sprintf("%.9g", v)
}

// OpenGapHint is what to tell a user whose run ended with status: when
// the algorithm was chosen for them and its relaxation converged with the
// gap open, that a time limit goes on (without one the anytime phases
// could run for ever, so they are not the default then); else "".
func (j *Job) OpenGapHint(status solver.Status) string {
	s := j.Settings
	if !s.Auto || s.AnytimeOn || s.Exact || status != solver.Converged {
		return ""
	}
	return "the relaxation converged with the gap open: --time-limit T goes on with cycle constraints and branch and bound for T (anytime)"
}
