package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// ShardJob is a sharded job as its coordinator holds it: one opaque spec
// per worker (each worker's WorkerOptions.LoadShard builds its part from
// it) and the boundary (package shard's Layout).
type ShardJob struct {
	Specs [][]byte
	// Boundary holds the boundary variables' cardinalities and unaries
	// and the model's constant; BoundaryVars maps them to the model's
	// variables; Of and Deg say which worker holds which of them, over how
	// many slaves (consensus.NewShardBoundary).
	Boundary     *model.Model
	BoundaryVars []int
	Of, Deg      [][]int
	NumVars      int
	// StateDir is where the workers save their parts' states for
	// checkpoints (assignBody.StateDir): a directory every worker sees.
	StateDir string
}

// fetchSeq numbers the fetches of the best assignment above every
// evaluation of the run (the worker's answer cache is keyed by number).
const fetchSeq = 1 << 40

// ShardAssignment reaches the best assignment of a sharded run, which the
// workers hold but for its boundary. Valid only during the deliver
// callback of RunShards.
type ShardAssignment struct {
	NumVars int
	c       *coordinator
	job     *ShardJob
	states  []int // the boundary's
	seq     int
}

// Pieces calls fn with the whole assignment in pieces (variables of the
// model and their states; fn must not keep the slices): the boundary
// first, then each worker's interior, at most 65,536 variables at a time,
// fetched one after the other, so that no more than one piece is held.
func (a *ShardAssignment) Pieces(ctx context.Context, fn func(vars []int, states []int32) error) error {
	vars := make([]int, len(a.states))
	states := make([]int32, len(a.states))
	for j, v := range a.job.BoundaryVars {
		vars[j], states[j] = v, int32(a.states[j])
	}
	if err := fn(vars, states); err != nil {
		return err
	}
	for w := range a.job.Specs {
		for k := 0; ; k++ {
			a.seq++
			r, err := (&remoteLink{c: a.c, w: w}).request(ctx, &evalBody{Seq: a.seq, Op: opFetch, Piece: k})
			if err != nil {
				return err
			}
			if len(r.Vars) != len(r.X) || len(r.Vars) > pieceVars {
				return fmt.Errorf("worker %s: a piece of %d variables and %d states", a.c.name(w), len(r.Vars), len(r.X))
			}
			vars = vars[:0]
			for _, v := range r.Vars {
				if v < 0 || int(v) >= a.NumVars {
					return fmt.Errorf("worker %s: variable %d out of range [0,%d)", a.c.name(w), v, a.NumVars)
				}
				vars = append(vars, int(v))
			}
			if err := fn(vars, r.X); err != nil {
				return err
			}
			if r.Last {
				break
			}
		}
	}
	return nil
}

// ShardStats describes a sharded run's setup and failures.
type ShardStats struct {
	// Setup is the time from the start of RunShards until every worker
	// had built its part (in the first epoch).
	Setup time.Duration
	// WorkerRSSMB is each worker's peak RSS (MiB) in the last epoch: the
	// largest it reported, when its part was built or with its answers to
	// the evaluations and the fetches of the assignment that end the run.
	WorkerRSSMB []int64
	// Failovers counts the epochs ended by a lost worker, and Restored
	// those of them that continued from a checkpoint; Redone counts the
	// iterations run again (from the checkpoint's to the last one
	// completed).
	Failovers, Restored, Redone int
}

// shardLostError ends an epoch of a sharded run: a worker was lost.
type shardLostError struct{ name string }

func (e *shardLostError) Error() string {
	return fmt.Sprintf("worker %s lost", e.name)
}

// RunShards runs a sharded job on workers reached through tr: no process
// but each worker, for its own part, holds anything of the model beyond
// the boundary (see consensus.CoordinateShards). When the run found an
// assignment with a finite score, deliver gets it before the workers are
// released.
//
// Checkpoints (ro.Checkpoint) are taken by the workers, each saving its
// part's state where job.StateDir says (WorkerOptions.ShardStates), and by
// the coordinator, whose consensus.State holds its boundary, its bounds
// and the workers' references to their states (State.Refs), and no part of
// the model: ro.Checkpoint.Save gets it with a nil placement. A lost worker
// ends the epoch: the job continues in the next one, on a spare and the
// workers left, every part restarting from the latest checkpoint (its
// spec and its state's reference), or from the start before the first.
// ro.Resume continues from such a state the same way.
func RunShards(ctx context.Context, tr transport.Transport, job *ShardJob, opts consensus.Options, ro RunOptions,
	deliver func(ctx context.Context, a *ShardAssignment) error, progress func(solver.Progress)) (consensus.ShardResult, ShardStats, error) {
	var res consensus.ShardResult
	var stats ShardStats
	start := time.Now()
	if err := opts.Validate(); err != nil {
		return res, stats, err
	}
	if job.NumVars > math.MaxInt32 {
		return res, stats, fmt.Errorf("%d variables: a sharded run numbers them in 31 bits", job.NumVars)
	}
	var latest *consensus.State
	if ro.Resume != nil {
		latest = ro.Resume.State
		if len(latest.Refs) != len(job.Specs) || ro.Resume.Where != nil {
			return res, stats, fmt.Errorf("resuming: the checkpoint references %d part states (and places %d slaves); this sharded job has %d parts",
				len(latest.Refs), len(ro.Resume.Where), len(job.Specs))
		}
	}
	ro.Workers = len(job.Specs)
	ro = ro.withDefaults()
	if err := transport.ValidName(ro.Base); err != nil {
		return res, stats, fmt.Errorf("job id %q: %w", ro.Base, err)
	}
	b, err := consensus.NewShardBoundary(job.Boundary.Cards, job.Of, job.Deg)
	if err != nil {
		return res, stats, fmt.Errorf("the sharded boundary: %w", err)
	}
	for first := true; ; first = false {
		completed := 0
		res, completed, err = runShardEpoch(ctx, tr, job, b, opts, ro, &latest, &stats, start, first, deliver, progress)
		var lost *shardLostError
		if !errors.As(err, &lost) {
			return res, stats, err
		}
		if ro.lost == nil {
			ro.lost = map[string]bool{}
		}
		ro.lost[lost.name] = true
		ro.Epoch++
		stats.Failovers++
		from := 0
		if latest != nil {
			from = latest.Iter
			stats.Restored++
		}
		stats.Redone += max(0, completed-from)
		ro.Logger.Warn("worker lost: every part restarts from the latest checkpoint in the next epoch", "lost", lost.name,
			"epoch", ro.Epoch, "from_iteration", from)
	}
}

// runShardEpoch runs one epoch of a sharded job, from *latest when not
// nil, which it updates with every state taken. It returns the last
// iteration the workers completed too.
func runShardEpoch(ctx context.Context, tr transport.Transport, job *ShardJob, b *consensus.Boundary, opts consensus.Options, ro RunOptions,
	latest **consensus.State, stats *ShardStats, start time.Time, first bool,
	deliver func(ctx context.Context, a *ShardAssignment) error, progress func(solver.Progress)) (consensus.ShardResult, int, error) {
	var res consensus.ShardResult
	c, closeEpoch, err := openEpoch(ctx, tr, ro)
	if err != nil {
		return res, 0, err
	}
	defer closeEpoch()
	c.sharded = true
	c.bodies = make([]*assignBody, len(job.Specs))
	all := make([]int, len(job.Specs))
	from := *latest
	for w, spec := range job.Specs {
		c.bodies[w] = &assignBody{Part: w, Parts: len(job.Specs), Options: optionsWire{Algo: string(opts.Algo), Tau: opts.Tau},
			Shard: spec, StateDir: job.StateDir, Base: c.base, Epoch: c.epoch, Coord: c.cid, Next: 1}
		if from != nil {
			c.bodies[w].StateRef, c.bodies[w].Next = from.Refs[w], from.Iter+1
		}
		all[w] = w
	}
	if err := c.deliver(ctx, all); err != nil {
		return res, c.completed(), err
	}
	sums := make([]consensus.PartSummary, len(job.Specs))
	interior := 0
	stats.WorkerRSSMB = stats.WorkerRSSMB[:0]
	for w, s := range c.summaries {
		if s == nil {
			return res, 0, fmt.Errorf("worker %s built its part but did not describe it", c.name(w))
		}
		sums[w] = consensus.PartSummary{ReplicaEntries: s.ReplicaEntries, UnaryEntries: s.UnaryEntries, Interior: s.Interior}
		stats.WorkerRSSMB = append(stats.WorkerRSSMB, s.PeakRSSMB)
		interior += s.Interior
	}
	if interior+len(job.BoundaryVars) != job.NumVars {
		return res, 0, fmt.Errorf("the parts hold %d interior and %d boundary variables, the model has %d", interior, len(job.BoundaryVars), job.NumVars)
	}
	if first {
		stats.Setup = time.Since(start)
	}
	ro.Logger.Info("parts built", "workers", len(job.Specs), "boundary", len(job.BoundaryVars), "epoch", c.epoch,
		"seconds", time.Since(start).Seconds(), "worker_rss_mb", fmt.Sprint(stats.WorkerRSSMB))
	var cp *consensus.Checkpointing
	if from != nil || ro.Checkpoint != nil {
		cp = &consensus.Checkpointing{Resume: from}
	}
	if ro.Checkpoint != nil {
		cp.Every, cp.Interval = ro.Checkpoint.Every, ro.Checkpoint.Interval
		cp.Save = func(ctx context.Context, st *consensus.State) error {
			c.mu.Lock()
			*latest = st
			c.mu.Unlock()
			if ro.Checkpoint.Save == nil {
				return nil
			}
			return ro.Checkpoint.Save(ctx, st, nil)
		}
	}
	res, err = consensus.CoordinateShards(ctx, job.Boundary, sums, b, c.links(), opts, cp, progress)
	if err == nil && res.Boundary != nil && deliver != nil {
		err = deliver(context.WithoutCancel(ctx), &ShardAssignment{NumVars: job.NumVars, c: c, job: job, states: res.Boundary, seq: fetchSeq})
	}
	c.mu.Lock()
	for w, rss := range c.peakRSS {
		stats.WorkerRSSMB[w] = max(stats.WorkerRSSMB[w], rss)
	}
	c.mu.Unlock()
	return res, c.completed(), err
}

// withDefaults fills in RunOptions' defaults (Run's).
func (ro RunOptions) withDefaults() RunOptions {
	if ro.Base == "" {
		ro.Base, ro.Epoch = ro.Job, 0
	}
	if ro.WaitWorkers <= 0 {
		ro.WaitWorkers = 30 * time.Second
	}
	if ro.StepTimeout <= 0 {
		ro.StepTimeout = 5 * time.Minute
	}
	if ro.LostAfter <= 0 {
		ro.LostAfter = 3 * time.Second
	}
	if ro.SpareWait <= 0 {
		ro.SpareWait = 10 * time.Second
	}
	if ro.ReleaseAfter <= 0 {
		ro.ReleaseAfter = max(3*ro.LostAfter, 5*time.Second)
	}
	if ro.ResendEvery <= 0 {
		ro.ResendEvery = resendEvery
	}
	if ro.Logger == nil {
		ro.Logger = slog.New(slog.DiscardHandler)
	}
	return ro
}

// Evaluate implements consensus.PrimalLink.
func (l *remoteLink) Evaluate(ctx context.Context, in *consensus.EvalIn, out *consensus.EvalOut) error {
	r, err := l.request(ctx, &evalBody{Seq: in.Seq, Op: uint8(in.Op), X: in.X, Repair: in.Repair, Fixed: in.Fixed, Iter: in.Iter})
	if err != nil {
		return err
	}
	out.Seq, out.Before, out.After, out.X, out.Settled, out.Ref = r.Seq, r.Before, r.After, r.X, r.Settled, nil
	if in.Op == consensus.EvalSave {
		switch {
		case r.SaveErr != "":
			l.c.log.Warn("no checkpoint: a worker could not save its part's state", "worker", l.c.name(l.w), "iteration", in.Iter, "err", r.SaveErr)
		case len(r.Ref) == 0 || len(r.Ref) > maxStateRef:
			l.c.faults.drop("a state reference of a bad size dropped", "worker", l.c.name(l.w), "bytes", len(r.Ref))
		default:
			out.Ref = r.Ref
		}
	}
	return nil
}

// request sends an evaluation or a fetch to the worker and waits for its
// answer, sending it again when none comes (the worker repeats its answer
// to a repeated request).
func (l *remoteLink) request(ctx context.Context, body *evalBody) (*evaledBody, error) {
	c := l.c
	ctx = context.WithoutCancel(ctx) // like Step: the run ends on a complete exchange
	body.Coord = c.cid
	c.mu.Lock()
	iter := c.sent
	c.mu.Unlock()
	send := func() error {
		name := c.name(l.w)
		if err := c.send(ctx, stepSubject(c.job, name), transport.Header{Iter: uint64(iter), Kind: kindEval}, body); err != nil {
			return fmt.Errorf("evaluation %d to worker %s: %w", body.Seq, name, err)
		}
		return nil
	}
	return exchange(ctx, c, l.w, fmt.Sprintf("evaluation %d", body.Seq), send, c.evals[l.w], func(r *evaledBody) (bool, error) {
		if r.Seq != body.Seq {
			return false, nil // a late answer to an earlier request
		}
		if r.Err != "" {
			return false, fmt.Errorf("worker %s: %s", c.name(l.w), r.Err)
		}
		if r.RSS > 0 && r.RSS < 1<<30 { // a report, only shown: bounded, not trusted further
			c.mu.Lock()
			c.peakRSS[l.w] = max(c.peakRSS[l.w], r.RSS)
			c.mu.Unlock()
		}
		return true, nil
	})
}
