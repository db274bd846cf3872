package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// Job is one distributed job as a coordinator runs it from start to end:
// its model and how it is laid out on the workers, where its checkpoints
// go and what it resumes from, and who it is (to refuse resuming another
// job's checkpoints). RunJob runs it on a single coordinator,
// RunReplicated as a member of a Raft group; both run either kind of job
// through the same epochs, checkpoints and resume.
type Job struct {
	// Name names the model in the errors of a failed run (its file).
	Name      string
	Transport transport.Transport
	// The model: either Model (and Evidence), which this coordinator
	// holds and splits into slaves placed on the workers; or Shards, a
	// sharded layout whose workers read their parts themselves (package
	// shard) while this coordinator keeps the boundary.
	Model    *model.Model
	Evidence model.Evidence
	Shards   *shard.Layout
	// StateDir, for a sharded job, is where its workers save their parts'
	// states for checkpoints (WorkerOptions.ShardStates): a directory
	// every worker sees.
	StateDir string
	// Deliver, for a sharded job, gets the best assignment found, when
	// its score is finite, before the workers are released: the workers
	// hold it (but for its boundary), so Result.Assignment is nil.
	Deliver func(ctx context.Context, a *ShardAssignment) error
	Options consensus.Options
	// Run configures the run: Base is the job's id, Workers its workers
	// (a sharded job's are its layout's parts); Run.Checkpoint, when not
	// nil, says when states are taken (its Save is set here). The epoch
	// and what it resumes from are set here (Epoch is ignored).
	Run      RunOptions
	Progress func(solver.Progress)
	Identity Identity
	// Logger logs the job's course (resuming, checkpoints, leadership);
	// nil: Run.Logger.
	Logger *slog.Logger

	// Started, for RunJob, is when the job started, for its wall time
	// (zero: when RunJob is called); a resumed job's start is the one its
	// checkpoint recorded.
	Started time.Time

	// Dir, for RunJob, keeps the checkpoints: the blobs and, next to
	// them, the manifests of the job (the latest two). Nil: states live
	// only in the coordinator's memory, for restarting lost workers'
	// parts.
	Dir *checkpoint.Dir
	// Resume, for RunJob, is where the job continues from (see
	// LoadResume); nil starts it afresh.
	Resume *ResumePoint

	// Store, for RunReplicated, keeps the checkpoint blobs that the
	// group's leaders share; the manifests go in the group's log.
	Store checkpoint.Store
	// Record, for RunReplicated, encodes the result the leader that ends
	// the job commits to the group (small: see jobstate.MaxCommandBytes),
	// for a member that leads later to report it (Outcome.Recorded).
	Record func(res solver.Result, info JobInfo) (json.RawMessage, error)
}

// JobInfo is what a distributed job adds to its result.
type JobInfo struct {
	Workers int
	// Failovers counts, over every epoch, the workers replaced and the
	// coordinators that took the job over; Redone the iterations run again
	// after resuming from a checkpoint.
	Failovers, Redone int
}

// Outcome is how a job ended for this coordinator.
type Outcome struct {
	// Ran: this coordinator drove the job until it ended or was
	// interrupted (Result.Status); Result and Info are to be reported.
	Ran bool
	// Result's Elapsed is the job's wall time since it first started,
	// outages included: the start time is in the Raft log
	// (jobstate.JobState.Started) and in every checkpoint's manifest
	// (CheckpointMeta.Started), so a job resumed by RunJob from a
	// checkpoint counts from the start recorded there, however long it
	// was stopped.
	Result solver.Result
	Info   JobInfo
	Stats  RunStats // of this coordinator's last run
	// Recorded, when not nil, is the result that the leader that ended
	// the job recorded (see Job.Record) and did not live to report.
	Recorded json.RawMessage
}

// RunJob runs j on this coordinator alone, in epoch 1, or in the epoch
// after the one of j.Resume. With j.Dir and j.Run.Checkpoint it writes
// checkpoints to j.Dir, keeping the latest two of the job.
func RunJob(ctx context.Context, j Job) (Outcome, error) {
	log := j.logger()
	ro := j.Run
	ro.Epoch = 1
	out := Outcome{Info: JobInfo{Workers: ro.Workers}}
	started := j.Started
	if started.IsZero() {
		started = time.Now()
	}
	if rp := j.Resume; rp != nil {
		ro.resume, ro.Epoch = rp, rp.Epoch+1
		out.Info.Redone, out.Info.Failovers = rp.Redone, rp.Failovers
		if !rp.Started.IsZero() {
			started = rp.Started
		}
	}
	var cpr *Checkpointer
	if j.Dir != nil && ro.Checkpoint != nil {
		d, job := j.Dir, ro.Base
		cpr = j.checkpointer(&ro, ro.Epoch, out.Info, started, d,
			func(ctx context.Context, m checkpoint.Manifest) error { return d.SaveManifest(ctx, &m) },
			func(ctx context.Context) error { return d.Prune(ctx, job, 2) })
	}
	res, stats, err := j.run(ctx, ro, cpr, started)
	if cpr != nil {
		if cs := cpr.Stats(); cs.Written > 0 {
			log.Info("checkpoints", "written", cs.Written, "failed", cs.Failed, "bytes", cs.Bytes,
				"encode_seconds", cs.Encode.Seconds(), "write_seconds", cs.Write.Seconds())
		}
	}
	if err != nil {
		return out, j.runErr(err)
	}
	out.Ran, out.Result, out.Stats = true, res, stats
	out.Info.Failovers += stats.Failovers
	out.Info.Redone += stats.Redone
	return out, nil
}

// run runs the job with ro; with cpr, it waits for its last checkpoint,
// whose failure to be recorded fails the run. The result's Elapsed, and
// every progress report's, is the wall time since started (zero:
// unknown), or more: the run's own count (the checkpointed elapsed plus
// this run), when another clock recorded started.
func (j *Job) run(ctx context.Context, ro RunOptions, cpr *Checkpointer, started time.Time) (solver.Result, RunStats, error) {
	var lay layout = &wholeModel{m: j.Model, ev: j.Evidence}
	switch {
	case j.Shards != nil && j.Model != nil:
		return solver.Result{}, RunStats{}, errors.New("cluster: a Job with both a Model and Shards")
	case j.Shards != nil:
		lay = &sharded{l: j.Shards, stateDir: j.StateDir, deliver: j.Deliver}
	case j.Model == nil:
		return solver.Result{}, RunStats{}, errors.New("cluster: a Job with neither a Model nor Shards")
	}
	progress := j.Progress
	if progress != nil && !started.IsZero() {
		// The reports on the result's clock: since started, or more.
		progress = func(p solver.Progress) {
			p.Elapsed = max(p.Elapsed, time.Since(started))
			j.Progress(p)
		}
	}
	res, stats, err := runEpochs(ctx, j.Transport, lay, j.Options, ro, progress)
	if cpr != nil {
		if werr := cpr.Wait(context.Background()); werr != nil && err == nil {
			err = werr
		}
	}
	if !started.IsZero() {
		res.Elapsed = max(res.Elapsed, time.Since(started))
	}
	return res, stats, err
}

// checkpointer returns the Checkpointer of epoch of j, writing to store,
// and makes it ro.Checkpoint's Save (on a copy of *ro.Checkpoint).
func (j *Job) checkpointer(ro *RunOptions, epoch uint64, info JobInfo, started time.Time, store checkpoint.Store,
	record func(context.Context, checkpoint.Manifest) error, prune func(context.Context) error) *Checkpointer {
	cpr := NewCheckpointer(CheckpointerOptions{Store: store, Base: ro.Base, Epoch: epoch,
		ModelHash: j.Identity.ModelHash, Settings: j.Identity.Settings,
		Redone: info.Redone, Failovers: info.Failovers, Started: started, Logger: j.logger(), Record: record, Prune: prune,
		Done: ro.Hooks.Checkpoint})
	co := *ro.Checkpoint
	co.Save = cpr.Save
	ro.Checkpoint = &co
	return cpr
}

func (j *Job) logger() *slog.Logger {
	switch {
	case j.Logger != nil:
		return j.Logger
	case j.Run.Logger != nil:
		return j.Run.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// runErr names the model in the error of a run.
func (j *Job) runErr(err error) error {
	if j.Name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", j.Name, err)
}
