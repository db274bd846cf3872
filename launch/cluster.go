package launch

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/internal/rusage"
	"github.com/ddrun/ddrun/jobstate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/uai"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// Every call of the front door into packages cluster and shard is in this
// file: the job of dual decomposition on workers (runJob), under Raft
// (runReplicated), sharded (runSharded), and their checkpoints.

// Raft runs a job as a member of a Raft group (cluster.RunReplicated): the
// group's members share the job, a later leader resumes it from the
// group's checkpoints and prints the result a dead leader recorded.
type Raft struct {
	// ID is this member's id in the group, Bind its address for Raft
	// traffic, Peers every member (ID=ADDR,...: ParsePeers), Dir its
	// Raft log and snapshots; Logger logs Raft's own chatter.
	ID, Bind, Peers, Dir string
	Logger               *slog.Logger
	// CheckpointDir is a checkpoint directory the group shares; without
	// it the checkpoints go to the JetStream object store Bucket (default
	// ddrun-ckpt-JOB) with Replicas, over NATS.
	CheckpointDir string
	Bucket        string
	Replicas      int
	NATS          *transport.NATS
	// Joined, when not nil, gets the group once it is open (the metrics'
	// readiness follows it): whether this member leads, and the leader it
	// knows ("": none yet).
	Joined func(isLeader func() bool, leader func() (id, addr string))
	// TLS, when set, makes the members' Raft traffic mutual TLS.
	TLS RaftTLS
}

// RaftTLS are the files of a Raft group's mutual TLS
// (jobstate.MutualTLS): this member's certificate and key, and the CA
// that signed every member's. All empty: plain TCP.
type RaftTLS struct{ Cert, Key, CA string }

// Register adds --raft-tls-cert, --raft-tls-key and --raft-tls-ca to fs.
func (r *RaftTLS) Register(fs interface {
	StringVar(*string, string, string, string)
}) {
	fs.StringVar(&r.Cert, "raft-tls-cert", "", "PEM `FILE` of this coordinator's certificate for Raft traffic (mutual TLS, with --raft-tls-key and --raft-tls-ca; it must name the host of its --raft-peers address)")
	fs.StringVar(&r.Key, "raft-tls-key", "", "PEM `FILE` of the key of --raft-tls-cert")
	fs.StringVar(&r.CA, "raft-tls-ca", "", "PEM `FILE` of the CA that signed every member's certificate: only its members are accepted and dialled")
}

// config is the TLS configuration of r, nil when r is empty.
func (r RaftTLS) config() (*tls.Config, error) {
	if r == (RaftTLS{}) {
		return nil, nil
	}
	return jobstate.MutualTLS(r.Cert, r.Key, r.CA)
}

// Sharded has each worker read its part of an indexed model file (.ddx),
// which every worker sees; the coordinator keeps the boundary only
// (package shard; the job runs through cluster.RunJob or
// cluster.RunReplicated). A model file at Path in another format is
// converted into StateDir first (shardInput).
type Sharded struct {
	Path string
	// StateDir is where the model is converted to (when it is not .ddx)
	// and where the workers save their parts' states for checkpoints ("":
	// Path.state): a directory every worker sees, as its own --state-dir
	// (WorkerDirs).
	StateDir string
	// MaxEntries bounds the tables the file may declare.
	MaxEntries int
	// Evidence is an evidence file folded into the model as it is
	// converted ("": none, or a UAI model's FILE.evid beside it, as
	// toulbar2 reads it; an indexed model takes none: WholeReason).
	Evidence string
	// Parts is how the workers get their parts ("": PartsAuto); Local
	// says the workers are this machine's processes (run --local), which
	// read the file: PartsAuto then hashes nothing to serve.
	Parts Parts
	Local bool
	// Fallback, when not nil, is the input of the whole-model run that
	// takes the job when its plan refuses the model
	// (shard.UnshardableError: a forbidden state, fewer factors than
	// workers): a run that is sharded by default, not by request.
	Fallback *Input
}

// WorkerDirs are the directories a worker of s on this machine (run
// --local) is given (Worker.StateDir, Worker.ModelRoots): the state
// directory, and the model's own directory as its model root. Nil s or a
// path that cannot be made absolute: none (the workers take no sharded
// parts).
func (s *Sharded) WorkerDirs() (state string, roots []string) {
	if s == nil {
		return "", nil
	}
	path, err := filepath.Abs(s.Path)
	if err != nil {
		return "", nil
	}
	state, err = filepath.Abs(cmp.Or(s.StateDir, path+".state"))
	if err != nil {
		return "", nil
	}
	return state, []string{filepath.Dir(path)}
}

// refused reports whether the runtime refused the job for its input.
func refused(err error) bool {
	var re *cluster.RefusedError
	return errors.As(err, &re)
}

// asInput makes a job that cluster refused for its input an *InputError.
func asInput(err error) error {
	if refused(err) {
		return &InputError{err}
	}
	return err
}

// runOptions are the distributed run's settings.
func (t *Target) runOptions() cluster.RunOptions {
	ro := cluster.RunOptions{Base: t.Job, Workers: t.Workers, WaitWorkers: t.Wait, StepTimeout: t.StepTimeout, LostAfter: t.LostAfter,
		SpareWait: t.SpareWait, Logger: t.Logger, Checkpoint: &cluster.CheckpointOptions{Every: t.Checkpoints.Every, Interval: t.Checkpoints.Interval}}
	if t.Checkpoints.Every == 0 && t.Checkpoints.Interval == 0 {
		ro.Checkpoint = nil
	}
	return ro
}

func (h *Hooks) cluster() cluster.Hooks {
	return cluster.Hooks{Step: h.Step, Workers: h.Workers, Checkpoint: h.Checkpoint}
}

func info(i cluster.JobInfo) engine.Distributed {
	return engine.Distributed{Workers: i.Workers, Failovers: i.Failovers, Redone: i.Redone}
}

// runJob runs j's dual decomposition on the workers (cluster.RunJob), or
// its anytime phases (the relaxation there, then branch and bound on the
// same workers: anytimeDist), or, under Raft, as a member of the group.
func runJob(ctx context.Context, j *engine.Job, t Target, h Hooks) (Outcome, error) {
	ro := t.runOptions()
	id, err := cluster.NewIdentity(t.Hash, j.DD(), ro.Workers)
	if err != nil {
		return Outcome{}, err
	}
	job := cluster.Job{Name: t.Name, Model: j.Model, Evidence: j.Evidence, Options: j.DD(), Run: ro, Identity: id}
	if t.Checkpoints.Dir != "" && t.Raft == nil {
		if job.Dir, job.Resume, err = localCheckpoints(ctx, t.Checkpoints, t.Job, id, t); err != nil {
			return Outcome{}, err
		}
	}
	if err := t.connect(ctx, &h); err != nil {
		return Outcome{}, err
	}
	job.Run.Hooks = h.cluster()
	job.Transport = t.Transport
	job.Progress = h.Progress
	job.Logger = t.Logger
	if t.Raft != nil {
		return runReplicated(ctx, job, t, recordWhole(j, t), func(out cluster.Outcome) Outcome {
			return Outcome{Ran: true, Result: out.Result, Report: engine.NewResult(out.Result, j, info(out.Info), t.Out)}
		})
	}
	before := t.traffic()
	var o Outcome
	var resumed int
	var di engine.Distributed
	if j.Settings.AnytimeOn {
		relax := func(ctx context.Context, progress func(solver.Progress)) (solver.Result, engine.Distributed, int, error) {
			job.Progress = progress
			oc, err := cluster.RunJob(ctx, job)
			return oc.Result, info(oc.Info), oc.Stats.Resumed, err
		}
		o.Result, di, resumed, err = anytimeDist(ctx, j, t, h, relax)
	} else {
		var oc cluster.Outcome
		job.Started = t.Start // its times from the command's start, reading included, as a sharded job's
		oc, err = cluster.RunJob(ctx, job)
		o.Result, di, resumed = oc.Result, info(oc.Info), oc.Stats.Resumed
	}
	if err != nil {
		return Outcome{}, err
	}
	o.Ran, o.Report = true, engine.NewResult(o.Result, j, di, t.Out)
	o.Traffic = t.since(before, o.Result.Iterations-resumed)
	return o, nil
}

// runReplicated runs job (whole or sharded) as a member of a Raft group
// (cluster.RunReplicated) over the checkpoint store the group shares; the
// leader that ends the job records its result (record: the job's
// cluster.Job.Record), which a later leader reports when that one died
// before reporting it; report is the outcome of a run this member ended.
func runReplicated(ctx context.Context, job cluster.Job, t Target, record func(solver.Result, cluster.JobInfo) (json.RawMessage, error),
	report func(cluster.Outcome) Outcome) (Outcome, error) {
	rf := t.Raft
	peers, err := jobstate.ParsePeers(rf.Peers)
	if err != nil {
		return Outcome{}, &InputError{err}
	}
	tlsConfig, err := rf.TLS.config()
	if err != nil {
		return Outcome{}, &InputError{err}
	}
	g, err := jobstate.Open(jobstate.Config{ID: rf.ID, Bind: rf.Bind, Peers: peers, Dir: rf.Dir, Logger: rf.Logger, TLS: tlsConfig})
	if err != nil {
		return Outcome{}, fmt.Errorf("raft: %w", err)
	}
	defer g.Close()
	if rf.Joined != nil {
		rf.Joined(g.IsLeader, g.Leader)
	}
	if rf.CheckpointDir != "" {
		d, err := checkpoint.OpenDir(rf.CheckpointDir)
		if err != nil {
			return Outcome{}, inputf("--checkpoint-dir: %v", err)
		}
		d.Seal(t.Checkpoints.Seal)
		job.Store = d
	} else {
		bucket := rf.Bucket
		if bucket == "" {
			bucket = "ddrun-ckpt-" + job.Run.Base
		}
		obj, err := checkpoint.OpenObjectStore(ctx, rf.NATS.Conn(), bucket, checkpoint.ObjectStoreOptions{Replicas: rf.Replicas})
		if err != nil {
			return Outcome{}, fmt.Errorf("checkpoint store (does the NATS server run JetStream?): %w", err)
		}
		job.Store = checkpoint.Seal(obj, t.Checkpoints.Seal)
	}
	job.Logger = t.Logger.With("raft_id", rf.ID)
	job.Record = record
	out, err := cluster.RunReplicated(ctx, job, g)
	switch {
	case err != nil:
		return Outcome{}, asInput(err)
	case out.Recorded != nil:
		var r engine.Result
		if err := json.Unmarshal(out.Recorded, &r); err != nil {
			return Outcome{}, fmt.Errorf("the recorded result: %w", err)
		}
		return Outcome{Recorded: true, Result: r.Solver(), Report: r}, nil
	case out.Ran:
		return report(out), nil
	}
	return Outcome{}, nil
}

// recordWhole is the Raft record of a whole-model job's result: the
// result, without a big assignment (engine.MaxAssignment), which goes to
// --out before the record commits, so that the job's --out exists once it
// is done.
func recordWhole(j *engine.Job, t Target) func(solver.Result, cluster.JobInfo) (json.RawMessage, error) {
	return func(res solver.Result, ci cluster.JobInfo) (json.RawMessage, error) {
		if t.Out != "" && res.Assignment != nil && len(res.Assignment) > engine.MaxAssignment {
			if err := WriteMPE(t.Out, res.Assignment); err != nil {
				return nil, err
			}
		}
		return json.Marshal(engine.NewResult(res, j, info(ci), t.Out))
	}
}

// localCheckpoints opens a single coordinator's checkpoint directory and
// finds where the job continues from: nowhere without Resume, which it
// refuses over existing checkpoints of the job; the latest valid
// checkpoint with it.
func localCheckpoints(ctx context.Context, c Checkpoints, job string, id cluster.Identity, t Target) (*checkpoint.Dir, *cluster.ResumePoint, error) {
	d, err := checkpoint.OpenDir(c.Dir)
	if err != nil {
		return nil, nil, inputf("--checkpoint-dir: %v", err)
	}
	d.Seal(c.Seal)
	ms, err := d.Manifests(job)
	if err != nil {
		return nil, nil, fmt.Errorf("--checkpoint-dir %s: %w", c.Dir, err)
	}
	if !c.Resume {
		if len(ms) > 0 {
			return nil, nil, inputf("--checkpoint-dir %s holds checkpoints of job %s (the latest of iteration %d): pass --resume to continue it, or choose another --job", c.Dir, job, ms[0].Iteration)
		}
		return d, nil, nil
	}
	if len(ms) == 0 {
		return nil, nil, inputf("--resume: no checkpoint of job %s in %s", job, c.Dir)
	}
	rp, err := cluster.LoadResume(ctx, d, ms, id, t.Logger)
	if errors.Is(err, checkpoint.ErrNoCheckpoint) {
		return nil, nil, fmt.Errorf("--resume: %w", err)
	}
	return d, rp, asInput(err)
}

// shardPlan is a sharded run's plan, made once for whichever algorithm
// runs it: the layout, where the workers keep their states, the model's
// class (summed up in the plan's first pass, for engine.Job.ChooseForRun)
// and when planning ended.
type shardPlan struct {
	layout   *shard.Layout
	stateDir string
	class    engine.Class
	planned  time.Duration
	// evidence folded into the converted file: its observed variables
	// have one state there, which stands for the observed one (observed).
	evidence model.Evidence
	// input is the indexed file in the model's own factor order (the
	// layout's may be its reordering: localize), which scores as solve does.
	input string
	// summary, when input was converted by this run, is the plan's first
	// pass taken as input was written (shard.Summary), until the plan
	// takes it.
	summary *shard.Summary
	// blocks is the file's digest when workers may receive their parts,
	// and partsFile the file open (hashParts, serveParts, release).
	blocks    *shard.Blocks
	partsFile *os.File
}

// observed is pieces of an assignment of the planned file with the
// observed variables' states set to their observed ones (state 0 in the
// file: modelfile's evidence.go).
func (p *shardPlan) observed(pieces func(put func([]int, []int32) error) error) func(put func([]int, []int32) error) error {
	if len(p.evidence) == 0 {
		return pieces
	}
	return func(put func([]int, []int32) error) error {
		return pieces(func(vars []int, states []int32) error {
			for k, v := range vars {
				if s, ok := p.evidence[v]; ok {
					states[k] = int32(s)
				}
			}
			return put(vars, states)
		})
	}
}

// planShards converts t.Sharded's model into its state directory when it
// is not an indexed file (shardInput) and plans it on t.Workers workers,
// within --time-limit; a model the plan refuses is a
// *shard.UnshardableError. cut, when not nil, is called once the plan's
// first pass has cut the ranges (shard.PlanOptions.Cut).
func planShards(ctx context.Context, j *engine.Job, t Target, first func(), cut func(engine.Class)) (*shardPlan, error) {
	ctx, cancel := withTimeLimit(ctx, j, t, "planning the shards")
	defer cancel()
	sh, log := t.Sharded, t.Logger
	// The model's class: from the factors as the conversion writes them,
	// or as the plan's first pass reads an indexed input.
	class := engine.Class{Higher: -1}
	visit := func(a int, f *model.Factor) {
		if first != nil {
			first()
			first = nil
		}
		class.Add(a, f)
	}
	p, err := shardedInput(ctx, t, shard.NewSummary(visit))
	if err != nil {
		return nil, err
	}
	path := p.input
	p.layout, err = shard.PlanLayout(path, t.Workers, shard.PlanOptions{MaxEntries: sh.MaxEntries, Context: ctx, Logger: log,
		Visit: visit, Summary: p.summary, Cut: func() {
			if cut != nil {
				cut(class)
			}
		}})
	p.class, p.summary = class, nil
	var ue *shard.UnshardableError
	if errors.As(err, &ue) {
		return nil, err
	}
	if err != nil {
		return nil, &InputError{err}
	}
	p.class.Vars = p.layout.NumVars
	if t.Workers > 1 && 4*len(p.layout.BoundaryVars) > p.layout.NumVars {
		if err := p.localize(ctx, path, t.Workers, sh.MaxEntries, log); err != nil {
			return nil, err
		}
	}
	mode := sh.Parts
	if sh.Local && (mode == "" || mode == PartsAuto) {
		mode = PartsFile
	}
	if err := p.hashParts(ctx, mode, log); err != nil {
		return nil, err
	}
	p.planned = time.Since(t.Start)
	return p, nil
}

// withTimeLimit bounds ctx by j's --time-limit counted from t.Start (what:
// the stage that it cuts short, for its message).
func withTimeLimit(ctx context.Context, j *engine.Job, t Target, what string) (context.Context, context.CancelFunc) {
	timeLimit := j.Settings.TimeLimit
	if timeLimit <= 0 {
		return ctx, func() {}
	}
	return context.WithDeadlineCause(ctx, t.Start.Add(timeLimit), fmt.Errorf("--time-limit %v reached while %s", timeLimit, what))
}

// shardedInput begins the plan of t.Sharded's model: its state directory
// and its indexed file (input), the model itself when it is one, else
// converted there by shardInput with the evidence given, or beside a UAI
// model, folded in (evidence); sum, when not nil, is filled as the
// conversion writes (summary). Both the sharded relaxation (planShards)
// and the sharded search (shardSource) start here.
func shardedInput(ctx context.Context, t Target, sum *shard.Summary) (*shardPlan, error) {
	sh, log := t.Sharded, t.Logger
	path, err := filepath.Abs(sh.Path)
	if err != nil {
		return nil, &InputError{err}
	}
	p := &shardPlan{}
	if p.stateDir, err = filepath.Abs(cmp.Or(sh.StateDir, path+".state")); err != nil {
		return nil, inputf("--state-dir: %v", err)
	}
	evidence := sh.Evidence
	if evidence == "" {
		if evidence = EvidenceBeside(path); evidence != "" {
			log.Info("sharding: evidence beside the model, read as toulbar2 does (--evidence overrides)", "evidence", evidence)
		}
	}
	var report indexed.WriteReport
	if sum != nil {
		report = sum.Report()
	}
	if p.input, err = shardInput(ctx, path, p.stateDir, sh.MaxEntries, evidence, func(ev model.Evidence) { p.evidence = ev }, report, log); err != nil {
		return nil, err
	}
	if p.input != path {
		p.summary = sum
	}
	return p, nil
}

// localize rewrites a model whose plan shares more than a quarter of its
// variables between the parts (a file whose factors are not in a local
// order: any order but the rows of a grid, most conversions from UAI) in
// breadth-first factor order into the state directory (shard.Reorder,
// NAME.bfs.ddx) and plans that instead, when its boundary is smaller.
func (p *shardPlan) localize(ctx context.Context, path string, workers, maxEntries int, log *slog.Logger) error {
	t0 := time.Now()
	if err := os.MkdirAll(p.stateDir, 0o755); err != nil {
		return inputf("--state-dir: %v", err)
	}
	out := filepath.Join(p.stateDir, strings.TrimSuffix(filepath.Base(path), indexed.Ext)+".bfs"+indexed.Ext)
	if err := writeRenamed(out, func(tmp string) error {
		return shard.Reorder(path, tmp, shard.ReorderOptions{MaxEntries: maxEntries, Context: ctx})
	}); err != nil {
		return err
	}
	l, err := shard.PlanLayout(out, workers, shard.PlanOptions{MaxEntries: maxEntries, Context: ctx, Logger: log})
	if err != nil {
		return &InputError{err}
	}
	before, after := len(p.layout.BoundaryVars), len(l.BoundaryVars)
	log.Info("sharding: the file's factors are not in a local order: reordered breadth-first", "to", out,
		"boundary_before", before, "boundary_after", after, "seconds", time.Since(t0).Seconds())
	if after < before {
		p.layout = l
	}
	return nil
}

// deliver writes the assignment of n variables that pieces gives (the
// workers' pieces, one at a time) into --out, with the observed states set,
// and into *x when the caller wants the assignment and it is small enough.
func (p *shardPlan) deliver(t Target, x *[]int, n int, pieces func(put func([]int, []int32) error) error) error {
	if t.Assignment && n <= engine.MaxAssignment {
		*x = make([]int, n)
	}
	if err := uai.WriteMPEPieces(t.Out, n, *x, p.observed(pieces)); err != nil {
		return fmt.Errorf("--out: the assignment: %w", err)
	}
	return nil
}

// outcome is a sharded run's outcome in the result schema: res with the
// plan's model size and boundary, the traffic since before, the sharded
// statistics sj (its boundary, plan time and traffic filled in here) and
// the assignment x (nil: in --out only).
func (p *shardPlan) outcome(res solver.Result, j *engine.Job, t Target, before Traffic, sj *engine.Sharded, x []int) Outcome {
	l := p.layout
	sj.Boundary, sj.PlanSeconds = len(l.BoundaryVars), p.planned.Seconds()
	o := Outcome{Ran: true, Result: res}
	if o.Traffic = t.since(before, res.Iterations); o.Traffic.Iterations > 0 {
		sj.BytesPerIteration = (o.Traffic.In + o.Traffic.Out) / uint64(o.Traffic.Iterations)
	}
	o.Report = engine.Result{Status: res.Status, Primal: engine.Finite(res.Primal), Dual: engine.Finite(res.Dual), Gap: engine.Finite(res.Gap),
		Relaxed: engine.Finite(res.Relaxed), Iterations: res.Iterations, Seconds: res.Elapsed.Seconds(), Assignment: x,
		Algo: j.Algorithm.Name, Why: j.Why, Threads: j.Threads, Workers: t.Workers,
		Model: engine.ModelSize{Variables: l.NumVars, Factors: l.NumFactors}, Sharded: sj}
	if o.Report.Primal != nil {
		if t.Out != "" {
			o.Report.AssignmentFile = t.Out
		}
		o.Report.Omitted = x == nil
	}
	return o
}

// runSharded runs j with the workers reading their parts of the indexed
// model file themselves, and this process keeping only the boundary
// between them (package shard; cluster runs the job, alone or as a member
// of a Raft group). The assignment streams to Target.Out.
func runSharded(ctx context.Context, j *engine.Job, t Target, h Hooks, p *shardPlan) (Outcome, error) {
	sh, start, log, layout, stateDir := t.Sharded, t.Start, t.Logger, p.layout, p.stateDir
	timeLimit := j.Settings.TimeLimit
	// The job's identity for its checkpoints: the layout (each spec binds
	// the file by its size and structure checksum) and the settings.
	digest, err := layout.Digest()
	if err != nil {
		return Outcome{}, err
	}
	id, err := cluster.NewIdentity(digest, j.DD(), t.Workers)
	if err != nil {
		return Outcome{}, err
	}
	job := cluster.Job{Name: t.Name, Shards: layout, StateDir: stateDir, Options: j.DD(), Run: t.runOptions(), Identity: id, Started: start, Logger: log}
	if t.Checkpoints.Dir != "" && t.Raft == nil {
		if job.Dir, job.Resume, err = localCheckpoints(ctx, t.Checkpoints, t.Job, id, t); err != nil {
			return Outcome{}, err
		}
	}
	if timeLimit > 0 {
		left := timeLimit - time.Since(start)
		if left <= 0 {
			return Outcome{}, inputf("%s: --time-limit %v reached while planning the shards", sh.Path, timeLimit)
		}
		job.Options.TimeLimit = left
	}
	if err := t.connect(ctx, &h); err != nil {
		return Outcome{}, err
	}
	job.Transport, job.Progress = t.Transport, h.Progress
	stopParts, err := p.serveParts(ctx, t.Transport, log)
	if err != nil {
		return Outcome{}, err
	}
	defer stopParts()
	var x []int // the assignment for the result, when small enough
	job.Deliver = func(ctx context.Context, a *cluster.ShardAssignment) error {
		return p.deliver(t, &x, a.NumVars, func(put func([]int, []int32) error) error { return a.Pieces(ctx, put) })
	}
	before := t.traffic()
	job.Run.Hooks = h.cluster()
	planned := p.planned
	// report is the job's result in the result schema, with what this
	// coordinator saw of the run (stats: none when it did not run it).
	report := func(res solver.Result, ci cluster.JobInfo, stats cluster.RunStats) Outcome {
		sj := &engine.Sharded{SetupSeconds: (planned + stats.Setup).Seconds(), CoordinatorRSSMB: rusage.PeakRSSMB(), WorkerRSSMB: stats.WorkerRSSMB,
			Failovers: stats.Failovers, Restored: stats.Restored, Redone: stats.Redone}
		o := p.outcome(res, j, t, before, sj, x)
		o.Report.Failovers, o.Report.Redone = &ci.Failovers, &ci.Redone
		return o
	}
	// ended is the outcome of a run this coordinator ended.
	ended := func(o cluster.Outcome) Outcome {
		if o.Stats.Failovers > 0 {
			log.Warn("job finished after worker losses", "failovers", o.Stats.Failovers, "restored", o.Stats.Restored, "redone", o.Stats.Redone)
		}
		return report(o.Result, o.Info, o.Stats)
	}
	if t.Raft != nil {
		// The recorded result holds what the job's last leader saw at its
		// end; the assignment is already in --out (Deliver).
		record := func(res solver.Result, ci cluster.JobInfo) (json.RawMessage, error) {
			return json.Marshal(report(res, ci, cluster.RunStats{}).Report)
		}
		return runReplicated(ctx, job, t, record, ended)
	}
	o, err := cluster.RunJob(ctx, job)
	if err != nil {
		return Outcome{}, asInput(err)
	}
	return ended(o), nil
}

// Pool counts the workers that announced themselves on the control
// subject (cluster/subjects.go: workers say hello there every 500 ms)
// within the last two seconds.
type Pool struct {
	mu   sync.Mutex
	seen map[string]time.Time
	sub  transport.Subscription
}

// WatchPool watches the worker pool on tr.
func WatchPool(tr transport.Transport) (*Pool, error) {
	p := &Pool{seen: map[string]time.Time{}}
	sub, err := tr.Subscribe(cluster.ControlSubject, func(_ string, data []byte) {
		h, _, err := transport.Decode(data)
		if err != nil || transport.ValidName(h.From) != nil {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.seen) < 1<<16 {
			p.seen[h.From] = time.Now()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watching the worker pool: %w", err)
	}
	p.sub = sub
	return p, nil
}

// Count is the number of workers that said hello within two seconds.
func (p *Pool) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for name, t := range p.seen {
		if time.Since(t) < 2*time.Second {
			n++
		} else {
			delete(p.seen, name)
		}
	}
	return n
}

// Stop stops watching.
func (p *Pool) Stop() { _ = p.sub.Unsubscribe() }

// sizeOnly is a plan's layout of no parts, the model's size only: a
// sharded search's (runSearchFile), whose workers each read the whole file.
func sizeOnly(numVars, numFactors int) *shard.Layout {
	return &shard.Layout{NumVars: numVars, NumFactors: numFactors}
}

// searched is the outcome of a search on the plan's file (p.outcome, with
// the coordinator's peak RSS).
func (p *shardPlan) searched(res solver.Result, j *engine.Job, t Target, before Traffic, x []int) Outcome {
	return p.outcome(res, j, t, before, &engine.Sharded{SetupSeconds: p.planned.Seconds(), CoordinatorRSSMB: rusage.PeakRSSMB()}, x)
}
