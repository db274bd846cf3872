// Package launch is the one front door for running a job: `coordinator
// solve`, `coordinator run` and `coordinator serve` hand it a job of
// package engine (an algorithm with its settings, on a model) and where to
// run it (Target: this process; N workers on a transport, sharded or not,
// with checkpoints or as a member of a Raft group; the distributed branch
// and bound of package dsearch; the distributed anytime run), and it
// returns the one result (Outcome, whose Report is engine.Result).
//
// It owns the orchestration between those modes, not the modes: the
// protocol is package cluster's (every call into cluster and shard is in
// cluster.go, and a worker's side in worker.go: ServeWorker), the search package dsearch's, the algorithms engine's. It
// must not know the command line: no flags, no console; what it reports
// beyond the result goes to Hooks, and errors caused by the caller's input
// are *InputError (or engine's *Error: IsInput).
package launch

import (
	"context"
	"errors"
	"fmt"
	"github.com/ddrun/ddrun/checkpoint"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/model/uai"
	"github.com/ddrun/ddrun/model/wcsp"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// Target says where a job runs.
type Target struct {
	// Workers is the number of workers that run the job; 0 runs it in
	// this process (engine's Job.Solve).
	Workers int
	// Transport carries the job to the workers (sealed with the job key
	// where there is one); Traffic, when not nil, reads the bytes in and
	// out of the connection under it, for Outcome.Traffic. Connect, when
	// not nil, provides them (and the hooks) once the job is checked,
	// before anything goes to the workers: a front end connects (starts
	// its workers, opens its output) only for a job that can run. A
	// --local sharded run calls it once the plan has read the model
	// through and found it shardable, while the plan finds the boundary
	// (earlyConnect).
	Transport transport.Transport
	Traffic   func() (in, out uint64)
	Connect   func(ctx context.Context) (*Session, error)
	// Job is the job's id (a transport.ValidName: it namespaces the
	// subjects, the checkpoints and the search); Name names the job in
	// logs (the model file); Hash is the identity of the job's files
	// (their bytes hashed as read), which checkpoints are bound to.
	Job, Name string
	Hash      []byte
	// Wait is how long the job waits for its workers; StepTimeout, for
	// the workers' answers to one iteration; LostAfter, for a silent
	// worker to be lost; SpareWait, for a spare worker to take a lost
	// one's part (0: the runtime's defaults).
	Wait, StepTimeout, LostAfter, SpareWait time.Duration
	// Checkpoints say when the job takes checkpoints and where a single
	// coordinator keeps them.
	Checkpoints Checkpoints
	// Raft, when not nil, runs the job as a member of a Raft group.
	Raft *Raft
	// Sharded, when not nil, has each worker read its part of an indexed
	// model file: no process holds the whole model.
	Sharded *Sharded
	// Out is the file the assignment goes to (UAI MPE; "": none). The
	// front end writes it from the result, except in a sharded run (which
	// streams it there) and a Raft run whose assignment is too big for
	// the record (written before the record commits).
	Out string
	// Assignment: the caller wants a sharded run's assignment in the
	// result (when small enough: engine.MaxAssignment).
	Assignment bool
	// Start is when the command started (a sharded run's times count from
	// it; zero: now).
	Start  time.Time
	Logger *slog.Logger
}

// Session is what Target.Connect provides: the transport, its traffic
// and the hooks of the run.
type Session struct {
	Transport transport.Transport
	Traffic   func() (in, out uint64)
	Hooks     Hooks
}

// connect calls t.Connect, when there is one, and takes its transport,
// traffic and hooks.
func (t *Target) connect(ctx context.Context, h *Hooks) error {
	if t.Connect == nil {
		return nil
	}
	s, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	t.Transport, t.Traffic, *h = s.Transport, s.Traffic, s.Hooks
	return nil
}

// Checkpoints say when a distributed job takes checkpoints (Every
// iterations, every Interval; neither: none beyond the coordinator's
// memory) and where a single coordinator keeps them (Dir: none), and
// whether the job continues from its latest one there (Resume).
type Checkpoints struct {
	Every    int
	Interval time.Duration
	Dir      string
	Resume   bool
	// Seal, when not nil, seals the checkpoint blobs with the job key
	// (in Dir, or a Raft group's store): a blob that does not open with
	// it is refused on resume.
	Seal *checkpoint.Sealer
}

// Hooks are where a run reports beyond its result: engine's (progress and
// lines), and the distributed runtime's steps, workers and checkpoints
// (for the metrics).
type Hooks struct {
	engine.Hooks
	Step       func(worker string, d time.Duration)
	Workers    func(n int)
	Checkpoint func(d time.Duration, err error)
}

// Outcome is how a job ended for this process.
type Outcome struct {
	// Ran: this process ran the job (or drove it on workers) until it
	// ended; Result and Report are to be reported. A Raft member may end
	// without having run it: then Recorded holds the result the leader
	// that ran it recorded (Report is that record, Result as far as it
	// holds one), or, when nil, another member reports it.
	Ran      bool
	Recorded bool
	Result   solver.Result
	// Report is the result in the one result schema.
	Report engine.Result
	// Traffic is the coordinator's traffic over the Iterations it ran
	// (Target.Traffic; zero without it).
	Traffic Traffic
}

// Traffic is a distributed run's bytes at the coordinator over the
// iterations it ran.
type Traffic struct {
	In, Out    uint64
	Iterations int
}

// InputError is a job that its input (the model, the settings, the
// flags of where it runs) does not allow.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputf(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// IsInput reports whether err is the caller's: an *InputError (a job the
// runtime refused for its input, another model, other settings or another
// job, included) or a bad setting (*engine.Error, *engine.ModelError).
func IsInput(err error) bool {
	var ie *InputError
	var se *engine.Error
	var me *engine.ModelError
	return errors.As(err, &ie) || errors.As(err, &se) || errors.As(err, &me)
}

// Run runs job j at t: in this process (t.Workers 0), or on t.Workers
// workers: branch and bound with the workers searching subtrees (Exact),
// the relaxation and then branch and bound on the same workers (the
// anytime phases), or the job of dual decomposition (sharded, under Raft,
// with checkpoints).
func Run(ctx context.Context, j *engine.Job, t Target, h Hooks) (Outcome, error) {
	if t.Start.IsZero() {
		t.Start = time.Now()
	}
	if t.Logger == nil {
		t.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if t.Workers == 0 {
		res, err := j.Solve(ctx, h.Hooks)
		if err != nil {
			return Outcome{}, err
		}
		return Outcome{Ran: true, Result: res, Report: engine.NewResult(res, j, engine.Distributed{}, t.Out)}, nil
	}
	if t.Sharded != nil && j.Settings.Exact {
		return runSearchFile(ctx, j, t, h)
	}
	if t.Sharded != nil {
		e := early(ctx, &t)
		defer e.settle()
		p, err := planShards(ctx, j, t, e.first(j, t), e.cut(j, t))
		var ue *shard.UnshardableError
		if errors.As(err, &ue) && t.Sharded.Fallback != nil {
			return runWhole(ctx, j, t, h, err)
		}
		if err != nil {
			return Outcome{}, err
		}
		defer p.release()
		if j.Settings.AnytimeOn && t.Raft == nil {
			return runShardedAnytime(ctx, j, t, h, p)
		}
		if o, done, err := runShardedChoice(ctx, j, t, h, p); done || err != nil {
			return o, err
		}
		return runSharded(ctx, j, t, h, p)
	}
	if j.Settings.Exact {
		return runSearch(ctx, j, t, h)
	}
	if err := j.Distributable("run"); err != nil {
		return Outcome{}, err
	}
	return runJob(ctx, j, t, h)
}

// traffic reads the connection's bytes so far (zero without Traffic).
func (t *Target) traffic() Traffic {
	if t.Traffic == nil {
		return Traffic{}
	}
	in, out := t.Traffic()
	return Traffic{In: in, Out: out}
}

// since is the traffic since before over n iterations.
func (t *Target) since(before Traffic, n int) Traffic {
	now := t.traffic()
	return Traffic{In: now.In - before.In, Out: now.Out - before.Out, Iterations: n}
}

// endLine takes a live line away, when there is one.
func (h *Hooks) endLine() {
	if h.EndLine != nil {
		h.EndLine()
	}
}

// WriteMPE writes the assignment x to path in UAI MPE format, or in
// toulbar2's solution format (one line of values, wcsp.WriteSolution) when
// path ends in .sol, atomically: a temporary file renamed into place, so a
// crash never leaves a partial solution behind. Errors name the file as
// --out does.
func WriteMPE(path string, x []int) error {
	if strings.HasSuffix(strings.ToLower(path), ".sol") {
		return WriteAtomic("--out", path, func(w io.Writer) error { return wcsp.WriteSolution(w, x) })
	}
	return WriteAtomic("--out", path, func(w io.Writer) error { return uai.WriteMPE(w, x) })
}

// WriteAtomic writes the file at path (given by flag, which errors name)
// through write: into a temporary file beside it, renamed into place once
// complete.
func WriteAtomic(flag, path string, write func(io.Writer) error) error {
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

// Check rejects, for run --sharded, what would otherwise keep job j on the
// whole model (WholeReason: the one list of those rules) and a model file
// of no known format (another than .ddx is converted: shardInput). Raft
// is fine: a sharded job has the whole-model job's lifecycle.
func (s *Sharded) Check(j *engine.Job, evidence bool) error {
	if why := WholeReason(j, s.Path, evidence); why != "" {
		if err := j.Distributable("run"); err != nil && j.Algorithm.Name != "trws" && !j.Settings.Exact {
			return err // an algorithm run does not distribute: its own error
		}
		return inputf("run --sharded: %s", why)
	}
	if modelfile.FormatOf(s.Path) == modelfile.Unknown {
		return inputf("run: %s: unknown model format", s.Path)
	}
	return nil
}
