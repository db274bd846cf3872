package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/jobstate"
	"github.com/ddrun/ddrun/solver"
)

// RunReplicated runs j as a member of the Raft group g. It waits while it
// follows; when it leads, it takes a new epoch, resumes the job from the
// latest committed checkpoint (its blobs in j.Store) and drives it,
// committing each checkpoint's manifest to g. The leader that ends the job
// records j.Record's encoding of the result in g and returns it to be
// reported (Outcome.Ran); every other member returns once it learns the
// job is done, and one that leads a job already done returns the recorded
// result (Outcome.Recorded): the leader that ended it died before it could
// report it. An interrupted leader (Result.Status solver.Interrupted)
// leaves the job open: the group resumes it when it restarts.
func RunReplicated(ctx context.Context, j Job, g *jobstate.Group) (Outcome, error) {
	if j.Record == nil {
		return Outcome{}, errors.New("cluster: RunReplicated: Job.Record is nil")
	}
	log := j.logger()
	leading := watchRoles(ctx, g, log)
	for {
		// Follow until this member leads or the job is done.
		st := g.State()
		if st.Done {
			if g.IsLeader() {
				return Outcome{Recorded: st.Result}, nil
			}
			log.Info("job done; exiting", "job", st.Job)
			return Outcome{}, nil
		}
		if !g.IsLeader() {
			select {
			case <-ctx.Done():
				return Outcome{}, fmt.Errorf("interrupted while following")
			case <-g.Changed():
			case <-leading:
			case <-time.After(time.Second):
			}
			continue
		}
		out, done, err := j.lead(ctx, g)
		if done || err != nil && !errors.Is(err, jobstate.ErrNotLeader) {
			return out, err
		}
		log.Warn("leadership lost; following", "err", err)
	}
}

// watchRoles logs g's role changes as they happen; the channel it returns
// holds whether g leads, as of the latest change.
func watchRoles(ctx context.Context, g *jobstate.Group, log *slog.Logger) <-chan bool {
	leading := make(chan bool, 1)
	go func() {
		last := jobstate.Role("")
		for {
			select {
			case <-ctx.Done():
				return
			case r, ok := <-g.Roles():
				if !ok {
					return
				}
				if r != last {
					id, _ := g.Leader()
					log.Info("raft role changed", "role", string(r), "leader", id)
					last = r
				}
				select {
				case <-leading:
				default:
				}
				leading <- r == jobstate.RoleLeader
			}
		}
	}()
	return leading
}

// lead drives the job for one epoch. It returns done when the job ended
// here (its result to be reported), or an error wrapping
// jobstate.ErrNotLeader when leadership was lost.
func (j *Job) lead(ctx context.Context, g *jobstate.Group) (Outcome, bool, error) {
	log := j.logger()
	ro := j.Run
	if err := g.Start(ctx, ro.Base, j.Identity.ModelHash, j.Identity.Settings); err != nil {
		if errors.Is(err, jobstate.ErrRejected) {
			return Outcome{}, true, refusedf("raft group %s: %v", ro.Base, err)
		}
		return Outcome{}, false, err
	}
	epoch, err := g.TakeEpoch(ctx)
	if err != nil {
		return Outcome{}, false, err
	}
	out := Outcome{Info: JobInfo{Workers: ro.Workers}}
	ro.Epoch = epoch
	// The job's wall time counts from its first start, in the log; a log
	// written before it was kept has none: from the checkpoint's, or from
	// this epoch's start.
	started := g.State().Started
	rp, err := j.committed(ctx, g)
	if err != nil {
		return Outcome{}, true, err
	}
	if rp != nil {
		ro.resume = rp
		out.Info.Redone, out.Info.Failovers = rp.Redone, rp.Failovers
		if started.IsZero() {
			started = rp.Started
		}
	}
	if started.IsZero() {
		started = time.Now()
	}
	if epoch > 1 {
		out.Info.Failovers++ // this coordinator took the job over
	}
	from := 0
	if ro.resume != nil {
		from = ro.resume.State.Iter
	}
	log.Info("leading the job", "job", ro.Base, "epoch", epoch, "from_iteration", from)
	// Leadership lost: the run stops at once (its ctx), and so does a
	// checkpoint that can no longer be committed.
	leadCtx, cancel := whileLeader(ctx, g)
	defer cancel()
	var cpr *Checkpointer
	if ro.Checkpoint != nil {
		cpr = j.checkpointer(&ro, epoch, out.Info, started, j.Store,
			func(ctx context.Context, m checkpoint.Manifest) error { return g.SaveCheckpoint(ctx, m) }, nil)
	}
	// A sharded job's assignment goes out (Deliver) only from a leader: a
	// deposed one's run ends on its cancelled context with its best so far,
	// which must not overwrite the job's (an interrupted leader's, like a
	// whole-model job's, does go out).
	deposed := func() bool { return !g.IsLeader() || ctx.Err() == nil && leadCtx.Err() != nil }
	lj := *j
	if deliver := j.Deliver; deliver != nil {
		lj.Deliver = func(ctx context.Context, a *ShardAssignment) error {
			if deposed() {
				return fmt.Errorf("the assignment not delivered: %w", jobstate.ErrNotLeader)
			}
			return deliver(ctx, a)
		}
	}
	res, stats, err := lj.run(leadCtx, ro, cpr, started)
	if deposed() {
		return Outcome{}, false, fmt.Errorf("epoch %d ended: %w", epoch, jobstate.ErrNotLeader)
	}
	if err != nil {
		return Outcome{}, true, j.runErr(err)
	}
	out.Ran, out.Result, out.Stats = true, res, stats
	if res.Status == solver.Interrupted {
		// Stopped by a signal: the job stays open; a restart resumes it.
		log.Warn("interrupted; the job resumes from its latest checkpoint when the group restarts")
		return out, true, nil
	}
	out.Info.Failovers += stats.Failovers
	out.Info.Redone += stats.Redone
	data, err := j.Record(res, out.Info)
	if err != nil {
		return Outcome{}, true, err
	}
	if err := g.Finish(ctx, data); err != nil {
		return Outcome{}, false, err
	}
	// Let the followers learn the commit before this member goes away.
	time.Sleep(time.Second)
	return out, true, nil
}

// committed loads the checkpoint committed to g, if any: nil when there
// is none, or when it is torn (the job starts afresh).
func (j *Job) committed(ctx context.Context, g *jobstate.Group) (*ResumePoint, error) {
	st := g.State()
	if st.Checkpoint == nil {
		return nil, nil
	}
	rp, err := LoadResume(ctx, j.Store, []checkpoint.Manifest{*st.Checkpoint}, j.Identity, j.logger())
	if errors.Is(err, checkpoint.ErrNoCheckpoint) {
		j.logger().Warn("the committed checkpoint is torn; starting the job afresh", "iteration", st.Checkpoint.Iteration, "err", err)
		return nil, nil
	}
	return rp, err
}

// whileLeader returns a context cancelled when g stops leading (checked
// every 100ms) or ctx ends.
func whileLeader(ctx context.Context, g *jobstate.Group) (context.Context, context.CancelFunc) {
	leadCtx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			select {
			case <-leadCtx.Done():
				return
			case <-time.After(100 * time.Millisecond):
				if !g.IsLeader() {
					cancel()
					return
				}
			}
		}
	}()
	return leadCtx, cancel
}
