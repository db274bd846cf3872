package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"github.com/ddrun/ddrun/launch"
	"io"
	"time"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/internal/natsflags"
	"github.com/ddrun/ddrun/metrics"
	"github.com/ddrun/ddrun/solver"
)

// runFlags are the flags of `coordinator run` beyond solve's.
type runFlags struct {
	nats                                    natsflags.Flags
	key                                     natsflags.JobKey
	workers                                 int
	job, listen                             string
	local, sharded                          bool
	stateDir                                string
	parts                                   launch.Parts
	wait, stepTimeout, lostAfter, spareWait time.Duration
	ck                                      checkpointFlags
	raft                                    raftFlags
	metrics                                 string
	obs                                     *metrics.Metrics // --metrics' series, nil without it
}

func (r *runFlags) register(fs *flag.FlagSet) {
	r.nats.Register(fs)
	r.nats.RegisterRetry(fs, 10*time.Second)
	r.key.Register(fs)
	fs.StringVar(&r.metrics, "metrics", "", "serve /metrics (Prometheus), /healthz and /readyz on `ADDR` (host:port; port 0 picks one, printed as metrics=URL)")
	fs.IntVar(&r.workers, "workers", 2, "number of workers to wait for")
	fs.StringVar(&r.job, "job", "", "job `ID` (default: random); namespaces the NATS subjects")
	fs.StringVar(&r.listen, "nats-listen", "127.0.0.1:0", "`ADDR` of the embedded NATS server when --nats is not given")
	fs.BoolVar(&r.local, "local", false, "start the worker processes on this machine and stop them at the end")
	fs.BoolVar(&r.sharded, "sharded", false, "fail rather than hold the whole model; --sharded=false: hold it (runs are sharded by default: each worker reads its part of MODEL, converted to .ddx in --state-dir, and the coordinator keeps the boundary; docs/scaling.md)")
	fs.Var(cli.Duration(&r.wait, 30*time.Second), "wait", "how long to wait for enough workers to join the pool (a job whose workers are busy with other jobs waits for them)")
	fs.Var(cli.Duration(&r.stepTimeout, 5*time.Minute), "step-timeout", "how long to wait for the workers' answers to one iteration")
	fs.Var(cli.Duration(&r.lostAfter, 3*time.Second), "lost-after", "a worker silent this long is lost; its part restarts on a spare worker")
	fs.Var(cli.Duration(&r.spareWait, 10*time.Second), "spare-wait", "how long a lost worker's part waits for a spare worker before the job continues on the workers left")
	fs.StringVar(&r.stateDir, "state-dir", "", "the `DIR` every worker sees where a sharded run's model is converted to .ddx and its parts' states saved (default: MODEL.state beside the model file)")
	fs.Func("parts", "how sharded parts reach the workers: file (they read --state-dir's .ddx), nats (received from the coordinator), auto (file where readable, else nats; default)", func(s string) (err error) {
		r.parts, err = launch.ParseParts(s)
		return err
	})
	r.ck.register(fs)
	r.raft.register(fs)
}

// check resolves the NATS secrets (flag, file or environment), checks
// the target's settings (launch's Target.Check) and draws a job id when
// none was given.
func (r *runFlags) check(t *launch.Target) error {
	if err := r.nats.Resolve(); err != nil {
		return usageError{err}
	}
	if err := t.Check(r.nats.URL != "", r.local); err != nil {
		return inputError(err)
	}
	if r.job == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		r.job = "job-" + hex.EncodeToString(b[:])
		t.Job = r.job
	}
	if err := natsflags.ValidJob(r.job); err != nil {
		return usagef("--job %q: %v", r.job, err)
	}
	seal, err := r.key.CheckpointSealer() // checkpoint blobs sealed with a given key
	if err != nil {
		return usageError{err}
	}
	t.Checkpoints.Seal = seal
	return nil
}

// localWorkers are n worker processes (--local, --local-workers) of
// threads each for job, logging as the console does (natsflags.Workers;
// the session fills in the server and the job key).
func (r *runFlags) localWorkers(job string, n, threads int, quiet bool, con *cli.Console) natsflags.Workers {
	return natsflags.Workers{Job: job, N: n, Threads: threads, Quiet: quiet, JSONLog: con.Format == cli.JSON, Stderr: con.Writer()}
}

// flagsError makes an error that natsflags blames on the flags (a
// *FlagError, no worker binary for --local) a usage error (exit 2).
func flagsError(err error) error {
	var fe *natsflags.FlagError
	if errors.As(err, &fe) || errors.Is(err, natsflags.ErrNoWorker) {
		return usageError{err}
	}
	return err
}

// jobSession is what a distributed command sets up before its job: the
// session launch runs the job in (the job's transport over NATS, sealed
// with --job-key, its traffic and the hooks), the local workers (--local)
// and the output; close releases them in reverse order.
type jobSession struct {
	ls    *launch.Session
	out   *cli.Output
	close func()
}

// natsSession is the command's NATS session (natsflags.Session): the
// --metrics endpoint, the connection to --nats or an embedded server on
// --nats-listen, and the local workers, if any.
func (r *runFlags) natsSession(local natsflags.Workers, con *cli.Console) *natsflags.Session {
	return &natsflags.Session{Flags: &r.nats, Key: &r.key, Listen: r.listen, Client: "coordinator-" + r.job, MetricsAddr: r.metrics,
		Local: local, Log: con.Logger(), Print: con.Print}
}

// session opens the NATS session (natsSession) with the --local workers
// of f.threads/workers threads each, gives a Raft group (raft, when not
// nil) the connection for its checkpoint bucket and opens the output.
func (r *runFlags) session(ctx context.Context, f *solveFlags, raft *launch.Raft, sh *launch.Sharded, con *cli.Console) (*jobSession, error) {
	var local natsflags.Workers
	if r.local {
		local = r.localWorkers(r.job, r.workers, max(1, f.s.Threads/r.workers), f.quiet, con)
		local.StateDir, local.ModelRoots = sh.WorkerDirs() // a sharded run's files
	}
	ns := r.natsSession(local, con)
	if err := ns.Open(ctx); err != nil {
		return nil, flagsError(err)
	}
	r.obs = ns.Metrics
	out, err := f.openOutput(con)
	if err != nil {
		ns.Close()
		return nil, err
	}
	if raft != nil {
		raft.NATS = ns.NATS // the group's checkpoint bucket
	}
	ls := &launch.Session{Transport: ns.Transport, Traffic: ns.Traffic, Hooks: r.launchHooks(*f, out.Progress(), con)}
	return &jobSession{ls: ls, out: out, close: func() { out.Close(); ns.Close() }}, nil
}

// cmdRun is `coordinator run`: the same job as solve, spread over worker
// processes that talk over NATS (launch.Run, with a Target of this
// command's flags).
func cmdRun(ctx context.Context, args []string, stdout io.Writer, con *cli.Console) (err error) {
	start := time.Now()
	fs := flagSet("run")
	var f solveFlags
	f.register(fs)
	var r runFlags
	r.register(fs)
	defer func() {
		if err != nil {
			err = redactedError{err, r.nats.Redact}
		}
	}()
	pos, err := parseFlags(fs, args, con)
	if err != nil {
		return err
	}
	f.s.Distributed = true
	f.settle(fs)
	f.startConsole(con)
	h := sha256.New() // the job's identity: the files, hashed as they are read
	sp, t, err := r.checkJob(ctx, start, fs, &f, pos, h, con)
	if err != nil {
		return err
	}
	t.Hash = h.Sum(nil)
	var ses *jobSession
	t.Connect = func(ctx context.Context) (*launch.Session, error) {
		if ses, err = r.session(ctx, &f, t.Raft, t.Sharded, con); err != nil {
			return nil, err
		}
		return ses.ls, nil
	}
	defer func() {
		if ses != nil {
			ses.close()
		}
	}()
	o, err := launch.Run(ctx, sp, t, launch.Hooks{})
	switch {
	case err != nil:
		return inputError(err)
	case o.Recorded: // a result a dead leader recorded: report prints it
	case !o.Ran:
		return nil // a Raft member whose group reports the result
	default:
		r.obs.ObserveResult(o.Result)
		o.Report.Insecure = r.key.Insecure
		if tr := o.Traffic; !f.quiet && tr.Iterations > 0 {
			con.Traffic(tr.In, tr.Out, tr.Iterations)
		}
	}
	return report(o, f, ses.out, stdout)
}

// checkJob checks the flags of run and prepares its job and the target
// it runs on: sharded without reading the model (the workers read their
// parts), unless launch.WholeReason says why it holds the whole model
// (read, its bytes hashed into h).
func (r *runFlags) checkJob(ctx context.Context, start time.Time, fs *flag.FlagSet, f *solveFlags, pos []string, h io.Writer, con *cli.Console) (spec, launch.Target, error) {
	sp, err := f.prepare(fs, "run", pos)
	if err != nil {
		return nil, launch.Target{}, err
	}
	why := "" // --sharded asks for it, whatever the errors
	switch {
	case !r.sharded && cli.IsSet(fs, "sharded"):
		why = "--sharded=false"
	case !r.sharded:
		why = launch.WholeReason(sp, pos[0], f.evidence != "")
	}
	t := r.target(pos[0], *f, why == "", start, con)
	if why == "" {
		err = t.CheckSharded(sp, f.evidence != "")
	} else {
		if !f.quiet {
			con.Print("whole", "run: the coordinator holds the whole model: "+why, "why", why)
		}
		if sp, err = f.load(ctx, start, fs, "run", pos, h, con); err != nil {
			return nil, t, err
		}
		err = t.CheckMode(sp, "run")
	}
	if err != nil {
		return nil, t, inputError(err)
	}
	if err := r.check(&t); err != nil {
		return nil, t, err
	}
	return sp, t, noSearchPhase(&sp.Settings, &t, f.quiet, fs, con)
}

// target is where run's job runs, from the flags: the job named by the
// model file name (its Hash is set once the files are read), sharded or
// not (a run sharded by default falls back to the whole model when the
// plan refuses it).
func (r *runFlags) target(name string, f solveFlags, sharded bool, start time.Time, con *cli.Console) launch.Target {
	log := con.Logger()
	t := launch.Target{Workers: r.workers, Job: r.job, Name: name, Wait: r.wait, StepTimeout: r.stepTimeout, LostAfter: r.lostAfter,
		SpareWait: r.spareWait, Checkpoints: launch.Checkpoints{Every: r.ck.every, Interval: r.ck.interval, Dir: r.ck.dir, Resume: r.ck.resume},
		Out: f.out, Assignment: f.json, Start: start, Logger: log}
	if sharded {
		t.Sharded = &launch.Sharded{Path: name, StateDir: r.stateDir, MaxEntries: f.maxEntries, Evidence: f.evidence, Parts: r.parts, Local: r.local}
		if !r.sharded {
			t.Sharded.Fallback = &launch.Input{Path: name, Evidence: f.evidence, MaxEntries: f.maxEntries}
		}
	}
	if r.raft.enabled() {
		t.Raft = r.raft.target(r.ck.dir, con)
		t.Raft.Joined = func(isLeader func() bool, leader func() (string, string)) { r.obs.FollowRaft(isLeader, leader) }
	}
	return t
}

// launchHooks are where a distributed run reports: progress to the
// output and the metrics, the lines to con unless --quiet, the steps,
// workers and checkpoints to the metrics.
func (r *runFlags) launchHooks(f solveFlags, progress func(solver.Progress), con *cli.Console) launch.Hooks {
	h := launch.Hooks{Hooks: f.hooks(r.obs.Observed(progress), con, time.Time{})} // a run on workers counts from launch.Target.Start
	if m := r.obs; m != nil {
		h.Step, h.Workers, h.Checkpoint = m.ObserveStep, m.SetWorkers, m.ObserveCheckpoint
	}
	return h
}

// inputError makes an error the caller's input caused (launch.IsInput) a
// usage error (exit 2).
func inputError(err error) error {
	if launch.IsInput(err) {
		return usageError{err}
	}
	return err
}

// noSearchPhase handles an anytime run whose search phase cannot run on
// t (launch's Target.NoSearch): an error when --anytime was asked for,
// else a one-line note, and the relaxation runs alone.
func noSearchPhase(s *engine.Settings, t *launch.Target, quiet bool, fs *flag.FlagSet, con *cli.Console) error {
	what, why := t.NoSearch(s)
	if !s.AnytimeOn || what == "" {
		return nil
	}
	if cli.IsSet(fs, "anytime") {
		return usagef("run: --anytime and %s: %s (run --time-limit without --anytime runs the relaxation alone there)", what, why)
	}
	s.AnytimeOn = false
	if !quiet {
		con.Print("anytime", fmt.Sprintf("anytime: no branch and bound phase with %s (%s): the relaxation only", what, why), "skipped", "branch-and-bound", "why", why)
	}
	return nil
}

// redactedError prints err through redact (the NATS secrets and URL
// passwords hidden); errors.As and Is see err.
type redactedError struct {
	err    error
	redact func(string) string
}

func (e redactedError) Error() string { return e.redact(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }
