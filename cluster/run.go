package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/partition/multilevel"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// RunOptions configures a distributed job.
type RunOptions struct {
	Workers int // how many workers to wait for
	// WaitWorkers bounds the wait for the workers to announce themselves.
	WaitWorkers time.Duration
	// StepTimeout bounds the wait for every worker's answer to one step.
	StepTimeout time.Duration
	// ResendEvery: an assignment or a step not answered within this time is
	// sent again (a message can be lost). Default 10s.
	ResendEvery time.Duration
	// LostAfter: a worker silent this long (no heartbeat, no answer) is
	// taken as lost; its part moves to a spare worker (one that announced
	// itself and holds no part of the job), which restarts it. Default 3s.
	LostAfter time.Duration
	// SpareWait: how long a lost worker's part waits for a spare before
	// the job continues on the workers left. Default 10s.
	SpareWait time.Duration
	// ReleaseAfter: the workers this job holds give themselves back to
	// the pool when its coordinator is silent (no beat, no step) this
	// long. Default max(3*LostAfter, 5s).
	ReleaseAfter time.Duration

	// lost names workers lost in earlier epochs of this run: a hung
	// worker may still announce itself, so they are claimed again only
	// once they speak again (lostWorker).
	lost map[string]lostWorker
	// parts is the part each worker held in the last epoch of a sharded
	// run: the next epoch gives the workers left their parts again, which
	// they kept (keptPart), so that only the lost worker's part is read
	// again (or none, when the lost worker is taken back).
	parts map[string]int
	// Place assigns each slave of the plan to a worker; nil uses the
	// multilevel partitioner (multilevel.Place).
	Place  func(m *model.Model, plan partition.Plan, workers int) ([]int32, error)
	Logger *slog.Logger

	// Base and Epoch name the job across a succession of coordinators
	// (Raft leaders): Base is its id (a transport.ValidName); epoch e runs
	// as job EpochJob(Base, e) on the transport, and workers still serving
	// an earlier epoch of Base are taken over. Epoch 0 runs as Base itself
	// and takes only idle workers.
	Base  string
	Epoch uint64
	// Checkpoint, when not nil, takes states of the run (see
	// consensus.Checkpointing); a lost worker's part restarts from the
	// latest one.
	Checkpoint *CheckpointOptions
	// resume, when not nil, continues a run from a checkpoint (its State
	// and Where): the same model, settings and number of workers, the
	// placement it recorded. RunJob and RunReplicated set it (Job.Resume,
	// the group's committed checkpoint), and the epoch loop for every
	// epoch after a lost worker.
	resume *ResumePoint
	// Hooks tell the process what the run does, for its operators.
	Hooks Hooks
}

// Hooks let the process that runs a job watch it (the commands feed
// package metrics from them). Each is optional, is called from the run's
// goroutines at most once per worker and iteration, and must return at
// once.
type Hooks struct {
	// Step: worker answered an iteration's step d after it was first
	// sent (resent requests and a failover's wait included).
	Step func(worker string, d time.Duration)
	// Workers: the number of workers holding a part of the job, when an
	// epoch claims them (n > 0) and gives them back (0).
	Workers func(n int)
	// Checkpoint: a checkpoint was taken in d: kept in memory, or with a
	// store, encoded, written and recorded (err: it failed).
	Checkpoint func(d time.Duration, err error)
}

// CheckpointOptions says when states are taken and what is done with them.
type CheckpointOptions struct {
	Every    int           // iterations between states (0: not by count)
	Interval time.Duration // time between states (0: not by time)
	// Save, when not nil, stores a state with the placement of the slaves
	// on the parts; an error ends the run.
	Save func(ctx context.Context, st *consensus.State, where []int32) error
}

// EpochJob names epoch e of job base: the transport job of that epoch
// (epoch 0 is base itself).
func EpochJob(base string, e uint64) string {
	if e == 0 {
		return base
	}
	return fmt.Sprintf("%s-e%d", base, e)
}

// RunStats describes what happened to a distributed job.
type RunStats struct {
	// Failovers counts parts moved from a lost worker to a spare and the
	// epochs a lost worker ended; Restored those of them that restarted
	// from a checkpoint.
	Failovers, Restored int
	// Resumed is the iteration the run continued from (0: from the
	// start), and Redone how many iterations were run again: those an
	// earlier epoch had already run past the checkpoint it continued from,
	// as its workers reported (a lower bound when they were lost too).
	Resumed, Redone int
	// Rejoined counts workers lost to silence that spoke again and were
	// taken back (lostWorker): claimed by a later epoch or as a spare.
	Rejoined int
	// Setup, in a sharded run, is the time from the start of the run until
	// every worker had built its part (in the first epoch).
	Setup time.Duration
	// WorkerRSSMB, in a sharded run, is each worker's peak RSS (MiB) in
	// the last epoch: the largest it reported, when its part was built or
	// with its answers to the evaluations and the fetches of the
	// assignment that end the run.
	WorkerRSSMB []int64
}

// runEpochs runs a job of layout lay from the first epoch ro names to its
// end (the run of RunJob and of a Raft leader's epoch): each epoch claims its workers and runs the layout's epoch; a lost
// worker that ends one (lostError) starts the next, when the layout
// continues, from the latest checkpoint (every epoch keeps it in its
// coordinator's latest), regrouped by the layout.
func runEpochs(ctx context.Context, tr transport.Transport, lay layout, opts consensus.Options, ro RunOptions, progress func(solver.Progress)) (solver.Result, RunStats, error) {
	var stats RunStats
	if err := opts.Validate(); err != nil {
		return solver.Result{}, stats, err
	}
	ro = ro.withDefaults() // epoch 0 runs as the job itself
	if err := transport.ValidName(ro.Base); err != nil {
		return solver.Result{}, stats, fmt.Errorf("job id %q: %w", ro.Base, err)
	}
	if done, err := lay.prepare(opts, &ro, &stats); done != nil || err != nil {
		if done == nil {
			return solver.Result{}, stats, err
		}
		return *done, stats, err
	}
	if ro.resume != nil {
		stats.Resumed = ro.resume.State.Iter
	}
	for first := true; ; first = false {
		res, c, err := runEpoch(ctx, tr, lay, opts, ro, &stats, progress)
		if c != nil {
			stats.Failovers += c.failovers
			stats.Restored += c.restored
			stats.Rejoined += c.rejoined
			if first && ro.resume != nil {
				// Iterations an earlier coordinator ran past the
				// checkpoint, as its workers say.
				stats.Redone += max(0, c.priorIter-ro.resume.State.Iter)
			}
		}
		var lost *lostError
		if !errors.As(err, &lost) || !lay.continues(ro) {
			if err != nil {
				return res, stats, err
			}
			if stats.Failovers > 0 {
				ro.Logger.Warn("job finished after worker losses", "failovers", stats.Failovers, "restored", stats.Restored, "redone", stats.Redone)
			}
			return lay.finish(res), stats, nil
		}
		// Continue in the next epoch, from the latest checkpoint.
		if ro.lost == nil {
			ro.lost = map[string]lostWorker{}
		}
		c.mu.Lock()
		maps.Copy(ro.lost, c.gone) // the epoch's lost workers whose parts moved to spares
		c.mu.Unlock()
		ro.lost[lost.name] = lost.was
		ro.parts = nil
		if c.sharded {
			// The lost worker's part too: taken back, it holds it again.
			ro.parts = map[string]int{}
			for w, name := range c.names {
				ro.parts[name] = w
			}
		}
		ro.Epoch++
		stats.Failovers++
		st := c.latestState()
		from := 0
		if st != nil {
			from = st.Iter
			stats.Restored++
		}
		stats.Redone += max(0, c.completed()-from)
		if err := lay.regroup(&ro, st, c.where); err != nil {
			return res, stats, err
		}
		ro.Logger.Warn("worker lost: the job continues in the next epoch, from the latest checkpoint", "lost", lost.name,
			"silent", lost.silent, "workers", ro.Workers, "epoch", ro.Epoch, "from_iteration", from)
	}
}

func placement(ro RunOptions, m *model.Model, plan partition.Plan, workers int) ([]int32, error) {
	place := ro.Place
	if place == nil {
		place = multilevelPlacement
	}
	where, err := place(m, plan, workers)
	if err != nil {
		return nil, fmt.Errorf("placing slaves: %w", err)
	}
	return where, nil
}

// runEpoch runs one epoch of the job: it claims the epoch's workers and
// runs lay's epoch on them. The coordinator it returns, when not nil,
// tells what happened in the epoch.
func runEpoch(ctx context.Context, tr transport.Transport, lay layout, opts consensus.Options, ro RunOptions, stats *RunStats,
	progress func(solver.Progress)) (solver.Result, *coordinator, error) {
	c, closeEpoch, err := openEpoch(ctx, tr, ro)
	if err != nil {
		return solver.Result{}, c, err
	}
	defer closeEpoch()
	res, err := lay.epoch(ctx, c, opts, ro, stats, progress)
	return res, c, c.certify(ctx, res, err)
}

// checkpointing is the epoch's consensus.Checkpointing (nil: none): it
// continues from ro.resume, and takes states as ro.Checkpoint says, each
// kept as c.latest and saved with the placement where (nil in a sharded
// run).
func (c *coordinator) checkpointing(ro RunOptions, where []int32) *consensus.Checkpointing {
	if ro.resume == nil && ro.Checkpoint == nil {
		return nil
	}
	cp := &consensus.Checkpointing{}
	if ro.resume != nil {
		c.latest = ro.resume.State
		cp.Resume = ro.resume.State
	}
	if ro.Checkpoint == nil {
		return cp
	}
	cp.Every, cp.Interval = ro.Checkpoint.Every, ro.Checkpoint.Interval
	cp.Save = func(ctx context.Context, st *consensus.State) error {
		t0 := time.Now()
		c.mu.Lock()
		c.latest = st
		c.mu.Unlock()
		if ro.Checkpoint.Save == nil {
			if h := ro.Hooks.Checkpoint; h != nil {
				h(time.Since(t0), nil)
			}
			return nil
		}
		return ro.Checkpoint.Save(ctx, st, where)
	}
	return cp
}

// openEpoch claims the workers of the epoch ro names and sets up its
// coordinator, listening to the workers. The function it returns stops
// the workers' parts and gives the workers back to the pool.
func openEpoch(ctx context.Context, tr transport.Transport, ro RunOptions) (*coordinator, func(), error) {
	log := ro.Logger
	job := EpochJob(ro.Base, ro.Epoch)
	if err := transport.ValidName(job); err != nil {
		return nil, nil, fmt.Errorf("job id %q: %w", job, err)
	}
	joinable := joinableFor(ro.Base, ro.Epoch)
	seq := transport.NewSequence()
	claims, err := newClaimer(ctx, tr, job, ro.Base, ro.Epoch, ro.ReleaseAfter, seq, log)
	if err != nil {
		return nil, nil, err
	}
	var undo []func()
	closeAll := func() {
		for k := len(undo) - 1; k >= 0; k-- {
			undo[k]()
		}
	}
	undo = append(undo, claims.close)
	names, priorIter, err := claimWorkers(ctx, claims, ro.Workers, ro.WaitWorkers, joinable, ro.lost)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	names = keepParts(names, ro.parts)
	// Whatever happens, the workers go back to the pool at the end (after
	// the stop below, for those that took a part).
	undo = append(undo, func() { claims.release(context.WithoutCancel(ctx), names...) })
	log.Info("workers joined", "workers", strings.Join(names, ","))
	if h := ro.Hooks.Workers; h != nil {
		h(len(names))
		undo = append(undo, func() { h(0) })
	}
	c := &coordinator{tr: tr, onStep: ro.Hooks.Step, job: job, names: names, seq: seq, claims: claims, timeout: ro.StepTimeout,
		lostAfter: ro.LostAfter, waitSpare: ro.SpareWait, resendEvery: ro.ResendEvery, log: log,
		base: ro.Base, epoch: ro.Epoch, joinable: joinable, priorIter: priorIter,
		cid: newCoordID(), faults: newFaultLog(log),
		byName: map[string]int{}, spares: map[string]time.Time{}, gone: maps.Clone(ro.lost),
		heardSeq: make([]uint64, len(names)), spoke: make([]bool, len(names)),
		reports: make([]chan *reportBody, len(names)), filters: make([]*transport.Filter, len(names)),
		ready: make([]chan *readyBody, len(names)), lastSeen: make([]time.Time, len(names)),
		evals: make([]chan *evaledBody, len(names)), summaries: make([]*summaryWire, len(names)), peakRSS: make([]int64, len(names)),
		sealed: transport.IsSealed(tr), heard: make([]map[int]*heardIter, len(names)), beatSeq: make([]uint64, len(names))}
	for w, name := range names {
		c.byName[name] = w
		c.beatSeq[w] = claims.answeredAt(name)
		c.heardSeq[w] = c.beatSeq[w]
		if rec, back := ro.lost[name]; back && !rec.taken {
			log.Info("a worker lost earlier spoke again: taken back", "worker", name, "part", w, "epoch", ro.Epoch)
			c.rejoined++
			rec.taken = true
			ro.lost[name] = rec
			c.gone[name] = rec
		}
		c.reports[w] = make(chan *reportBody, 4)
		c.ready[w] = make(chan *readyBody, 4)
		c.evals[w] = make(chan *evaledBody, 4)
		c.filters[w] = transport.NewFilter(job, transport.FilterOptions{})
	}
	for _, sub := range []struct {
		subject string
		fn      func(string, []byte)
	}{{reportsWildcard(job), c.onReport}, {heartbeatsWildcard(job), c.onHeartbeat}, {controlSubject, c.onHello}} {
		s, err := tr.Subscribe(sub.subject, sub.fn)
		if err != nil {
			closeAll()
			return c, nil, err
		}
		undo = append(undo, func() { _ = s.Unsubscribe() })
	}
	undo = append(undo, func() { c.stop(context.WithoutCancel(ctx)) })
	return c, closeAll, nil
}

// keepParts orders the workers claimed so that each that held a part in
// the last epoch (parts) holds it again; the others take the parts left,
// in their order.
func keepParts(names []string, parts map[string]int) []string {
	if len(parts) == 0 {
		return names
	}
	out := make([]string, len(names))
	var rest []string
	for _, name := range names {
		if w, ok := parts[name]; ok && w < len(out) && out[w] == "" {
			out[w] = name
		} else {
			rest = append(rest, name)
		}
	}
	for w := range out {
		if out[w] == "" {
			out[w], rest = rest[0], rest[1:]
		}
	}
	return out
}

// links returns a link to each of the epoch's workers.
func (c *coordinator) links() []consensus.WorkerLink {
	links := make([]consensus.WorkerLink, len(c.names))
	c.linkList = make([]*remoteLink, len(c.names))
	for w := range links {
		c.linkList[w] = &remoteLink{c: c, w: w}
		links[w] = c.linkList[w]
	}
	return links
}

// multilevelPlacement balances the slaves' estimated solve cost over the
// workers and minimises the variable replicas that cross them.
func multilevelPlacement(m *model.Model, plan partition.Plan, workers int) ([]int32, error) {
	p, err := multilevel.Place(m, plan, workers, multilevel.Options{Seed: 1})
	return p.Worker, err
}
