package cluster

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/solver"
)

// layout is how a job's model is spread over the workers of an epoch; the
// epoch loop (runEpochs) is the same for every layout. Its two kinds:
// wholeModel, a model this coordinator holds and splits by a plan of
// slaves and a placement; and sharded, a shard.Layout whose workers read
// their parts themselves while this coordinator keeps the boundary.
type layout interface {
	// prepare checks the layout against opts and ro (its resume point)
	// and sets ro.Workers; done, when not nil, is the job's result
	// without a run.
	prepare(opts consensus.Options, ro *RunOptions, stats *RunStats) (done *solver.Result, err error)
	// epoch ships the parts to the workers c claimed, from ro.resume
	// when not nil, and runs the iterations; Save keeps every state
	// taken in c.latest. Its result is in the layout's variables.
	epoch(ctx context.Context, c *coordinator, opts consensus.Options, ro RunOptions, stats *RunStats,
		progress func(solver.Progress)) (solver.Result, error)
	// continues says whether the job goes on after a lost worker ended
	// an epoch of ro.
	continues(ro RunOptions) bool
	// regroup sets ro.resume (and ro.Workers) for the next epoch, from st,
	// the latest checkpoint, taken on the placement where (st nil: from
	// the start).
	regroup(ro *RunOptions, st *consensus.State, where []int32) error
	// finish turns the last epoch's result into the job's.
	finish(res solver.Result) solver.Result
}

// wholeModel is a model this coordinator holds: it splits it into slaves
// (consensus.PartitionPlan) placed on the workers, and a lost worker's part
// moves to a spare, or, with none, the job continues on the workers left
// from the latest checkpoint regrouped onto them (consensus.Regroup).
type wholeModel struct {
	m    *model.Model
	ev   model.Evidence
	red  *model.Reduced
	plan partition.Plan
}

func (l *wholeModel) prepare(opts consensus.Options, ro *RunOptions, _ *RunStats) (*solver.Result, error) {
	if ro.Workers < 1 {
		return nil, fmt.Errorf("workers: %d < 1", ro.Workers)
	}
	start := time.Now()
	red, err := solver.Reduce(l.m, l.ev)
	if red == nil {
		res := solver.InfeasibleResult(time.Since(start)) // nothing to distribute
		return &res, err
	}
	l.red = red
	if l.plan, err = consensus.PartitionPlan(red.Model, opts.Slaves); err != nil {
		return nil, err
	}
	if ro.resume != nil {
		if len(ro.resume.Where) != len(l.plan.Slaves) || len(ro.resume.State.Parts) != ro.Workers {
			return nil, fmt.Errorf("resuming: the checkpoint places %d slaves on %d parts; this job has %d slaves on %d workers",
				len(ro.resume.Where), len(ro.resume.State.Parts), len(l.plan.Slaves), ro.Workers)
		}
	}
	return nil, nil
}

func (l *wholeModel) epoch(ctx context.Context, c *coordinator, opts consensus.Options, ro RunOptions, _ *RunStats,
	progress func(solver.Progress)) (solver.Result, error) {
	m := l.red.Model
	var err error
	if ro.resume != nil {
		c.where = ro.resume.Where
	} else if c.where, err = placement(ro, m, l.plan, len(c.names)); err != nil {
		return solver.Result{}, err
	}
	parts, b, err := consensus.Split(m, l.plan, c.where, len(c.names))
	if err != nil {
		return solver.Result{}, err
	}
	ro.Logger.Info("model split", "slaves", len(l.plan.Slaves), "boundary", len(b.Vars()))
	cp := c.checkpointing(ro, c.where)
	if err := c.assign(ctx, parts, opts); err != nil {
		return solver.Result{}, err
	}
	return consensus.Coordinate(ctx, m, parts, b, c.links(), opts, cp, progress)
}

// continues: with one worker left there is none to continue on.
func (l *wholeModel) continues(ro RunOptions) bool { return ro.Workers > 1 }

func (l *wholeModel) regroup(ro *RunOptions, st *consensus.State, was []int32) error {
	ro.Workers--
	ro.resume = nil
	where, err := placement(*ro, l.red.Model, l.plan, ro.Workers)
	if err != nil || st == nil {
		return err
	}
	moved, err := consensus.Regroup(l.red.Model, l.plan, st, was, where, ro.Workers)
	if err != nil {
		return err
	}
	ro.resume = &ResumePoint{State: moved, Where: where}
	return nil
}

// finish returns the result in the variables of the model before its
// reduction.
func (l *wholeModel) finish(res solver.Result) solver.Result { return solver.Finish(l.m, l.red, res) }

// sharded is a shard.Layout: no process but each worker, for its own
// part, holds anything of the model beyond the boundary (see
// consensus.CoordinateShards). Each worker gets its part's spec (package
// shard's encoding, opaque here) and builds its part
// (WorkerOptions.LoadShard); it saves its part's state for a checkpoint
// itself, in stateDir (WorkerOptions.ShardStates), and the coordinator's
// consensus.State holds the boundary, the bounds and the workers'
// references to their states (State.Refs), no part of the model. A lost
// worker ends the epoch: in the next, on a spare and the workers left,
// every part restarts from the latest checkpoint (its spec and its state's
// reference), or from the start before the first; the workers left hold
// their parts again and restore them from their states without reading
// them again (keptPart), so that only the lost worker's part is read. deliver, when not nil,
// gets the best assignment of a finite score before the workers are
// released.
type sharded struct {
	l        *shard.Layout
	stateDir string
	deliver  func(ctx context.Context, a *ShardAssignment) error
	specs    [][]byte
	b        *consensus.Boundary
	start    time.Time
}

func (s *sharded) prepare(_ consensus.Options, ro *RunOptions, _ *RunStats) (*solver.Result, error) {
	s.start = time.Now()
	if s.l.NumVars > math.MaxInt32 {
		return nil, fmt.Errorf("%d variables: a sharded run numbers them in 31 bits", s.l.NumVars)
	}
	var err error
	if s.specs, err = s.l.EncodeSpecs(); err != nil {
		return nil, err
	}
	if rp := ro.resume; rp != nil && (len(rp.State.Refs) != len(s.specs) || rp.Where != nil) {
		return nil, fmt.Errorf("resuming: the checkpoint references %d part states (and places %d slaves); this sharded job has %d parts",
			len(rp.State.Refs), len(rp.Where), len(s.specs))
	}
	ro.Workers = len(s.specs)
	if s.b, err = consensus.NewShardBoundary(s.l.Boundary.Cards, s.l.Of, s.l.Deg); err != nil {
		return nil, fmt.Errorf("the sharded boundary: %w", err)
	}
	return nil, nil
}

func (s *sharded) epoch(ctx context.Context, c *coordinator, opts consensus.Options, ro RunOptions, stats *RunStats,
	progress func(solver.Progress)) (solver.Result, error) {
	c.sharded = true
	c.bodies = make([]*assignBody, len(s.specs))
	all := make([]int, len(s.specs))
	for w, spec := range s.specs {
		c.bodies[w] = &assignBody{Part: w, Parts: len(s.specs), Options: optionsWire{Algo: string(opts.Algo), Tau: opts.Tau},
			Shard: spec, StateDir: s.stateDir, Base: c.base, Epoch: c.epoch, Coord: c.cid, Next: 1}
		if from := ro.resume; from != nil {
			c.bodies[w].StateRef, c.bodies[w].Next = from.State.Refs[w], from.State.Iter+1
		}
		all[w] = w
	}
	if err := c.deliver(ctx, all); err != nil {
		return solver.Result{}, err
	}
	sums := make([]consensus.PartSummary, len(s.specs))
	interior := 0
	stats.WorkerRSSMB = stats.WorkerRSSMB[:0]
	for w, sum := range c.summaries {
		if sum == nil {
			return solver.Result{}, fmt.Errorf("worker %s built its part but did not describe it", c.name(w))
		}
		sums[w] = consensus.PartSummary{ReplicaEntries: sum.ReplicaEntries, UnaryEntries: sum.UnaryEntries, Interior: sum.Interior}
		stats.WorkerRSSMB = append(stats.WorkerRSSMB, sum.PeakRSSMB)
		interior += sum.Interior
	}
	if interior+len(s.l.BoundaryVars) != s.l.NumVars {
		return solver.Result{}, fmt.Errorf("the parts hold %d interior and %d boundary variables, the model has %d", interior, len(s.l.BoundaryVars), s.l.NumVars)
	}
	if stats.Setup == 0 {
		stats.Setup = time.Since(s.start)
	}
	ro.Logger.Info("parts built", "workers", len(s.specs), "boundary", len(s.l.BoundaryVars), "epoch", c.epoch,
		"seconds", time.Since(s.start).Seconds(), "worker_rss_mb", fmt.Sprint(stats.WorkerRSSMB))
	cp := c.checkpointing(ro, nil)
	res, err := consensus.CoordinateShards(ctx, s.l.Boundary, sums, s.b, c.links(), opts, cp, progress)
	if err == nil && res.Boundary != nil && s.deliver != nil {
		err = s.deliver(context.WithoutCancel(ctx), &ShardAssignment{NumVars: s.l.NumVars, c: c, boundaryVars: s.l.BoundaryVars,
			parts: len(s.specs), states: res.Boundary, seq: fetchSeq})
	}
	c.mu.Lock()
	for w, rss := range c.peakRSS {
		stats.WorkerRSSMB[w] = max(stats.WorkerRSSMB[w], rss)
	}
	c.mu.Unlock()
	return res.Result, err
}

// continues: a spare takes the lost worker's part in the next epoch.
func (s *sharded) continues(RunOptions) bool { return true }

func (s *sharded) regroup(ro *RunOptions, st *consensus.State, _ []int32) error {
	ro.resume = nil
	if st != nil {
		ro.resume = &ResumePoint{State: st}
	}
	return nil
}

func (s *sharded) finish(res solver.Result) solver.Result { return res }
