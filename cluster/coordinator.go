package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/transport"
)

// RunOptions configures a distributed job.
type RunOptions struct {
	Job     string // a transport.ValidName
	Workers int    // how many workers to wait for
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
	// Place assigns each slave of the plan to a worker; nil uses the
	// multilevel partitioner (partition.Place).
	Place  func(m *model.Model, plan partition.Plan, workers int) ([]int32, error)
	Logger *slog.Logger

	// Base and Epoch name the job across a succession of coordinators
	// (Raft leaders): epoch e of base B runs as job EpochJob(B, e), and
	// workers still serving an earlier epoch of B are taken over. Empty
	// Base: Job alone names the job and only idle workers are taken.
	Base  string
	Epoch uint64
	// Checkpoint, when not nil, takes states of the run (see
	// consensus.Checkpointing); a lost worker's part restarts from the
	// latest one.
	Checkpoint *CheckpointOptions
	// Resume, when not nil, continues a run from a checkpoint: the same
	// model, settings and number of workers, the placement it recorded.
	Resume *Resume
}

// CheckpointOptions says when states are taken and what is done with them.
type CheckpointOptions struct {
	Every    int           // iterations between states (0: not by count)
	Interval time.Duration // time between states (0: not by time)
	// Save, when not nil, stores a state with the placement of the slaves
	// on the parts; an error ends the run.
	Save func(ctx context.Context, st *consensus.State, where []int32) error
}

// Resume is a checkpoint to continue from.
type Resume struct {
	State *consensus.State
	Where []int32 // the worker of each slave, as recorded with the state
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
	// Failovers counts parts moved from a lost worker to a spare, and
	// Restored those of them that restarted from a checkpoint.
	Failovers, Restored int
	// Resumed is the iteration the run continued from (0: from the
	// start), and Redone how many iterations an earlier epoch had already
	// run past it, as its workers reported (a lower bound when they were
	// lost too).
	Resumed, Redone int
}

// Run solves m under evidence ev on workers reached through tr, and returns
// the result in m's variables (like consensus.Solve).
//
// A worker lost with no spare to replace it within SpareWait ends the
// epoch: the job continues on the remaining workers, in the next epoch,
// from the latest checkpoint regrouped onto them (consensus.Regroup), or
// from the start when there is none.
func Run(ctx context.Context, tr transport.Transport, m *model.Model, ev model.Evidence, opts consensus.Options, ro RunOptions, progress func(consensus.Progress)) (consensus.Result, RunStats, error) {
	var stats RunStats
	if err := opts.Validate(); err != nil {
		return consensus.Result{}, stats, err
	}
	if ro.Base == "" {
		ro.Base, ro.Epoch = ro.Job, 0 // epoch 0 runs as the job itself
	}
	if err := transport.ValidName(ro.Base); err != nil {
		return consensus.Result{}, stats, fmt.Errorf("job id %q: %w", ro.Base, err)
	}
	if ro.Workers < 1 {
		return consensus.Result{}, stats, fmt.Errorf("workers: %d < 1", ro.Workers)
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
	if ro.ResendEvery <= 0 {
		ro.ResendEvery = resendEvery
	}
	if ro.Logger == nil {
		ro.Logger = slog.New(slog.DiscardHandler)
	}
	red, err := model.Reduce(m, ev)
	if errors.Is(err, model.ErrInfeasible) {
		res, err := consensus.Solve(ctx, m, ev, opts, progress) // nothing to distribute
		return res, stats, err
	}
	if err != nil {
		return consensus.Result{}, stats, err
	}
	plan, err := consensus.Plan(red.Model, opts.Slaves)
	if err != nil {
		return consensus.Result{}, stats, err
	}
	if ro.Resume != nil {
		stats.Resumed = ro.Resume.State.Iter
		if len(ro.Resume.Where) != len(plan.Slaves) || len(ro.Resume.State.Parts) != ro.Workers {
			return consensus.Result{}, stats, fmt.Errorf("resuming: the checkpoint places %d slaves on %d parts; this job has %d slaves on %d workers",
				len(ro.Resume.Where), len(ro.Resume.State.Parts), len(plan.Slaves), ro.Workers)
		}
	}
	for first := true; ; first = false {
		res, c, err := runEpoch(ctx, tr, red.Model, plan, opts, ro, progress)
		if c != nil {
			stats.Failovers += c.failovers
			stats.Restored += c.restored
			if first && ro.Resume != nil {
				// Iterations an earlier coordinator ran past the
				// checkpoint, as its workers say.
				stats.Redone += max(0, c.priorIter-ro.Resume.State.Iter)
			}
		}
		var lost *noSpareError
		if !errors.As(err, &lost) || ro.Workers == 1 {
			if err != nil {
				return res, stats, err
			}
			if stats.Failovers > 0 {
				ro.Logger.Warn("job finished after worker losses", "failovers", stats.Failovers)
			}
			return consensus.Finish(m, red, res), stats, nil
		}
		// Continue on the workers left, from the latest checkpoint.
		ro.Workers--
		ro.Epoch++
		stats.Failovers++
		where, err := placement(ro, red.Model, plan, ro.Workers)
		if err != nil {
			return res, stats, err
		}
		ro.Resume = nil
		from := 0
		if st := c.latestState(); st != nil {
			from = st.Iter
			moved, err := consensus.Regroup(red.Model, plan, st, c.where, where, ro.Workers)
			if err != nil {
				return res, stats, err
			}
			ro.Resume = &Resume{State: moved, Where: where}
			stats.Restored++
			stats.Redone += max(0, c.completed()-st.Iter)
		} else {
			stats.Redone += c.completed()
		}
		ro.Logger.Warn("worker lost and no spare: the job continues on the workers left", "lost", lost.name,
			"workers", ro.Workers, "epoch", ro.Epoch, "from_iteration", from)
	}
}

// noSpareError ends an epoch: a lost worker had no replacement.
type noSpareError struct {
	name string
	wait time.Duration
}

func (e *noSpareError) Error() string {
	return fmt.Sprintf("worker %s is lost and no spare worker joined within %v", e.name, e.wait)
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

// runEpoch runs one epoch of the job on the reduced model m and returns its
// result in m's variables.
func runEpoch(ctx context.Context, tr transport.Transport, m *model.Model, plan partition.Plan, opts consensus.Options, ro RunOptions, progress func(consensus.Progress)) (consensus.Result, *coordinator, error) {
	log := ro.Logger
	job := EpochJob(ro.Base, ro.Epoch)
	if err := transport.ValidName(job); err != nil {
		return consensus.Result{}, nil, fmt.Errorf("job id %q: %w", job, err)
	}
	joinable := joinableFor(ro.Base, ro.Epoch)
	names, priorIter, err := waitWorkers(ctx, tr, ro.Workers, ro.WaitWorkers, joinable)
	if err != nil {
		return consensus.Result{}, nil, err
	}
	log.Info("workers joined", "workers", strings.Join(names, ","))
	var where []int32
	if ro.Resume != nil {
		where = ro.Resume.Where
	} else if where, err = placement(ro, m, plan, len(names)); err != nil {
		return consensus.Result{}, nil, err
	}
	parts, b, err := consensus.Split(m, plan, where, len(names))
	if err != nil {
		return consensus.Result{}, nil, err
	}
	log.Info("model split", "slaves", len(plan.Slaves), "boundary", len(b.Vars()))
	c := &coordinator{tr: tr, job: job, names: names, seq: transport.NewSequence(), timeout: ro.StepTimeout,
		lostAfter: ro.LostAfter, waitSpare: ro.SpareWait, resendEvery: ro.ResendEvery, log: log,
		base: ro.Base, epoch: ro.Epoch, joinable: joinable, priorIter: priorIter, where: where,
		byName: map[string]int{}, spares: map[string]time.Time{},
		reports: make([]chan *reportBody, len(names)), filters: make([]*transport.Filter, len(names)),
		ready: make([]chan *readyBody, len(names)), lastSeen: make([]time.Time, len(names))}
	for w, name := range names {
		c.byName[name] = w
		c.reports[w] = make(chan *reportBody, 4)
		c.ready[w] = make(chan *readyBody, 4)
		c.filters[w] = transport.NewFilter(job, transport.FilterOptions{})
	}
	sub, err := tr.Subscribe(reportsWildcard(job), c.onReport)
	if err != nil {
		return consensus.Result{}, nil, err
	}
	defer sub.Unsubscribe()
	beats, err := tr.Subscribe(heartbeatsWildcard(job), c.onHeartbeat)
	if err != nil {
		return consensus.Result{}, nil, err
	}
	defer beats.Unsubscribe()
	control, err := tr.Subscribe(controlSubject, c.onHello)
	if err != nil {
		return consensus.Result{}, nil, err
	}
	defer control.Unsubscribe()
	defer c.stop(context.WithoutCancel(ctx))
	var cp *consensus.Checkpointing
	if ro.Resume != nil {
		c.latest = ro.Resume.State
		cp = &consensus.Checkpointing{Resume: ro.Resume.State}
	}
	if ro.Checkpoint != nil {
		if cp == nil {
			cp = &consensus.Checkpointing{}
		}
		cp.Every, cp.Interval = ro.Checkpoint.Every, ro.Checkpoint.Interval
		cp.Save = func(ctx context.Context, st *consensus.State) error {
			c.mu.Lock()
			c.latest = st
			c.mu.Unlock()
			if ro.Checkpoint.Save == nil {
				return nil
			}
			return ro.Checkpoint.Save(ctx, st, where)
		}
	}
	if err := c.assign(ctx, parts, opts); err != nil {
		return consensus.Result{}, c, err
	}
	links := make([]consensus.WorkerLink, len(names))
	for w := range names {
		links[w] = &remoteLink{c: c, w: w}
	}
	res, err := consensus.Coordinate(ctx, m, parts, b, links, opts, cp, progress)
	return res, c, err
}

// multilevelPlacement balances the slaves' estimated solve cost over the
// workers and minimises the variable replicas that cross them.
func multilevelPlacement(m *model.Model, plan partition.Plan, workers int) ([]int32, error) {
	p, err := partition.Place(m, plan, workers, partition.MultilevelOptions{Seed: 1})
	return p.Worker, err
}

// joinableFor returns the test of whether a worker serving job (its hello's
// Job) can join epoch e of base: idle workers, and those serving an earlier
// epoch of the same base (their coordinator is gone).
func joinableFor(base string, e uint64) func(job string) bool {
	return func(job string) bool {
		if job == "" {
			return true
		}
		if base == "" {
			return false
		}
		for old := uint64(0); old < e; old++ {
			if job == EpochJob(base, old) {
				return true
			}
		}
		return false
	}
}

// waitWorkers collects n distinct joinable workers announcing themselves
// on the control subject, sorted by name, and the highest iteration those
// serving an earlier epoch had reached.
func waitWorkers(ctx context.Context, tr transport.Transport, n int, wait time.Duration, joinable func(string) bool) ([]string, int, error) {
	var mu sync.Mutex
	seen := map[string]bool{}
	prior := 0
	enough := make(chan struct{})
	sub, err := tr.Subscribe(controlSubject, func(_ string, data []byte) {
		var h helloBody
		if _, err := transport.DecodeInto(data, &h); err != nil || transport.ValidName(h.Name) != nil || !joinable(h.Job) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if h.Job != "" {
			prior = max(prior, h.Iter)
		}
		if len(seen) < n && !seen[h.Name] {
			seen[h.Name] = true
			if len(seen) == n {
				close(enough)
			}
		}
	})
	if err != nil {
		return nil, 0, err
	}
	defer sub.Unsubscribe()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-enough:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	case <-timer.C:
		mu.Lock()
		defer mu.Unlock()
		var got []string
		for name := range seen {
			got = append(got, name)
		}
		sort.Strings(got)
		return nil, 0, fmt.Errorf("waited %v for %d workers, %d joined [%s]; start more with: worker --nats URL", wait, n, len(got), strings.Join(got, " "))
	}
	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, n)
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, prior, nil
}

type coordinator struct {
	tr          transport.Transport
	job         string
	seq         *transport.Sequence
	timeout     time.Duration
	lostAfter   time.Duration
	waitSpare   time.Duration
	resendEvery time.Duration
	log         *slog.Logger
	bodies      []*assignBody // each part's assignment, kept for failover
	failovers   int
	restored    int
	base        string
	epoch       uint64
	joinable    func(job string) bool
	priorIter   int
	where       []int32 // the placement of the epoch

	mu       sync.Mutex // guards the fields below
	names    []string   // the worker holding each part
	byName   map[string]int
	lastSeen []time.Time
	spares   map[string]time.Time // workers announcing themselves outside the job
	latest   *consensus.State     // the latest checkpoint, nil before the first
	sent     int                  // the highest iteration sent
	reports  []chan *reportBody
	filters  []*transport.Filter
	ready    []chan *readyBody
}

// index returns the part held by the named worker, or -1.
func (c *coordinator) index(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.byName[name]; ok {
		return w
	}
	return -1
}

func (c *coordinator) name(w int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.names[w]
}

func (c *coordinator) seen(w int) {
	c.mu.Lock()
	c.lastSeen[w] = time.Now()
	c.mu.Unlock()
}

func (c *coordinator) lost(w int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Since(c.lastSeen[w]) > c.lostAfter
}

func (c *coordinator) onHeartbeat(_ string, data []byte) {
	h, _, err := transport.Decode(data)
	if err != nil || h.Job != c.job {
		return
	}
	if w := c.index(h.From); w >= 0 {
		c.seen(w)
	}
}

// onHello records workers that could take over a lost part.
func (c *coordinator) onHello(_ string, data []byte) {
	var h helloBody
	if _, err := transport.DecodeInto(data, &h); err != nil || transport.ValidName(h.Name) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, busy := c.byName[h.Name]; !busy && c.joinable(h.Job) {
		c.spares[h.Name] = time.Now()
	}
}

// replace moves part w from a lost worker to a spare, which restarts the
// part from the latest checkpoint, or afresh before the first (zero
// multipliers on its interior: sum_a lambda_i^a = 0 still holds, so the
// dual stays valid; the coordinator keeps the boundary's). A checkpointed
// interior is older than the boundary; with DD-ADMM and tau = 1 one
// iteration restores sum_a lambda_i^a = 0 whatever lambda was (AD3 eq.
// 10-11: lambda^a += tau*eta*(nu^a - mu) with mu the replicas' mean plus
// the mean of lambda/eta), and the dual term of each slave is evaluated at
// re-centred multipliers anyway.
func (c *coordinator) replace(ctx context.Context, w int) (string, error) {
	old := c.name(w)
	deadline := time.Now().Add(c.waitSpare)
	for {
		c.mu.Lock()
		spare := ""
		for name, at := range c.spares {
			// Only workers heard from recently; ties by name.
			if time.Since(at) < 3*helloEvery && (spare == "" || name < spare) {
				spare = name
			}
		}
		if spare != "" {
			delete(c.spares, spare)
			delete(c.byName, old)
			c.names[w] = spare
			c.byName[spare] = w
			c.filters[w] = transport.NewFilter(c.job, transport.FilterOptions{})
			c.lastSeen[w] = time.Now()
			restored := c.latest != nil
			if restored {
				c.bodies[w].State = wireState(&c.latest.Parts[w])
			}
			c.mu.Unlock()
			for len(c.reports[w]) > 0 {
				<-c.reports[w]
			}
			c.log.Warn("worker lost; its part moves to a spare", "lost", old, "part", w, "spare", spare, "from_checkpoint", restored)
			c.failovers++
			if restored {
				c.restored++
			}
			if err := c.assignOne(ctx, w); err != nil {
				return "", err
			}
			return spare, nil
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			return "", &noSpareError{name: old, wait: c.waitSpare}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *coordinator) onReport(_ string, data []byte) {
	h, raw, err := transport.Decode(data)
	if err != nil {
		return
	}
	w := c.index(h.From)
	if w < 0 {
		return
	}
	c.mu.Lock()
	keep := c.filters[w].Check(h).Keep()
	c.lastSeen[w] = time.Now()
	c.mu.Unlock()
	if !keep {
		return
	}
	switch h.Kind {
	case kindReady:
		var r readyBody
		if transport.DecodeBody(raw, &r) == nil {
			select {
			case c.ready[w] <- &r:
			default: // repeated acknowledgements: the first ones suffice
			}
		}
	case kindReport:
		var r reportBody
		if transport.DecodeBody(raw, &r) == nil {
			select {
			case c.reports[w] <- &r:
			default: // a stray extra report: the step already has its answer
			}
		}
	}
}

func (c *coordinator) send(ctx context.Context, subject string, h transport.Header, body any) error {
	h.Job, h.From, h.Seq = c.job, "coordinator", c.seq.Next()
	data, err := transport.Encode(h, body)
	if err != nil {
		return err
	}
	return c.tr.Publish(ctx, subject, data)
}

// assign ships every worker its part and waits for the acknowledgements.
func (c *coordinator) assign(ctx context.Context, parts []*consensus.Part, opts consensus.Options) error {
	c.bodies = make([]*assignBody, len(parts))
	for w, p := range parts {
		body, err := encodePart(p, w, len(parts), opts)
		if err != nil {
			return err
		}
		body.Base, body.Epoch = c.base, c.epoch
		if c.latest != nil {
			body.State = wireState(&c.latest.Parts[w])
		}
		c.bodies[w] = body
	}
	all := make([]int, len(parts))
	for w := range all {
		all[w] = w
	}
	return c.deliver(ctx, all)
}

// assignOne ships part w again, to the worker now holding it.
func (c *coordinator) assignOne(ctx context.Context, w int) error {
	for len(c.ready[w]) > 0 {
		<-c.ready[w]
	}
	return c.deliver(ctx, []int{w})
}

// deliver sends the given parts, re-sends those whose receipt is not
// acknowledged, and waits until each worker reports its part built.
func (c *coordinator) deliver(ctx context.Context, which []int) error {
	sendPart := func(w int) error {
		name := c.name(w)
		if err := c.send(ctx, assignSubject(c.job, name), transport.Header{Kind: kindAssign}, c.bodies[w]); err != nil {
			return fmt.Errorf("sending part %d to worker %s: %w", w, name, err)
		}
		// Pace the parts: each is a burst of chunks.
		return c.tr.Flush(ctx)
	}
	for _, w := range which {
		if err := sendPart(w); err != nil {
			return err
		}
	}
	deadline := time.NewTimer(c.timeout)
	defer deadline.Stop()
	resend := time.NewTicker(c.resendEvery)
	defer resend.Stop()
	acked := map[int]bool{}
	received := map[int]bool{}
	for len(acked) < len(which) {
		for _, w := range which {
			if acked[w] {
				continue
			}
			select {
			case r := <-c.ready[w]:
				switch {
				case r.Err != "":
					return fmt.Errorf("worker %s could not take its part: %s", c.name(w), r.Err)
				case r.Received:
					received[w] = true
				default:
					acked[w] = true
					c.seen(w)
				}
			default:
			}
		}
		if len(acked) == len(which) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			for _, w := range which {
				if !acked[w] {
					return fmt.Errorf("worker %s did not acknowledge its part within %v", c.name(w), c.timeout)
				}
			}
		case <-resend.C:
			for _, w := range which {
				if !received[w] {
					if err := sendPart(w); err != nil {
						return err
					}
				}
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// stop ends the job on every worker.
func (c *coordinator) stop(ctx context.Context) {
	c.mu.Lock()
	names := append([]string(nil), c.names...)
	c.mu.Unlock()
	// Three times: a worker that misses the stop would hold the job until
	// its idle timeout. Ahead of every iteration, so no worker's filter
	// takes it as stale; repeats are filtered as duplicates or ignored.
	for range 3 {
		for _, name := range names {
			_ = c.send(ctx, stepSubject(c.job, name), transport.Header{Iter: math.MaxInt32, Kind: kindStep}, stepBody{Stop: true})
		}
	}
	_ = c.tr.Flush(ctx)
}

func (c *coordinator) latestState() *consensus.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest
}

// completed is the number of iterations the epoch completed.
func (c *coordinator) completed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(0, c.sent-1)
}

// remoteLink reaches one worker over the transport.
type remoteLink struct {
	c    *coordinator
	w    int
	body stepBody
}

// Step implements consensus.WorkerLink.
//
// It finishes the iteration even when ctx is cancelled, so that an
// interrupted run still ends on a complete iteration with its result; the
// step timeout bounds the wait.
func (l *remoteLink) Step(ctx context.Context, in *consensus.StepIn, out *consensus.StepOut) error {
	c := l.c
	ctx = context.WithoutCancel(ctx)
	c.mu.Lock()
	c.sent = max(c.sent, in.Iter)
	c.mu.Unlock()
	l.body = stepBody{Iter: in.Iter, Eta: in.Eta, PrevStep: in.PrevStep, Lambda: in.Lambda, Mu: in.Mu, GatherX: in.GatherX, Save: in.Save}
	send := func() error {
		name := c.name(l.w)
		if err := c.send(ctx, stepSubject(c.job, name), transport.Header{Iter: uint64(in.Iter), Kind: kindStep}, l.body); err != nil {
			return fmt.Errorf("step %d to worker %s: %w", in.Iter, name, err)
		}
		return nil
	}
	if err := send(); err != nil {
		return err
	}
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	resend := time.NewTicker(c.resendEvery)
	defer resend.Stop()
	check := time.NewTicker(c.lostAfter / 4)
	defer check.Stop()
	for {
		select {
		case <-check.C:
			if !c.lost(l.w) {
				continue
			}
			// The worker went silent: its part restarts on a spare, which
			// answers this same step.
			if _, err := c.replace(ctx, l.w); err != nil {
				return err
			}
			if err := send(); err != nil {
				return err
			}
			timer.Reset(c.timeout)
		case <-resend.C:
			// Lost, or a slow iteration: the worker answers a repeated
			// step with the report it already computed.
			if err := send(); err != nil {
				return err
			}
		case r := <-c.reports[l.w]:
			if r.Iter != in.Iter {
				continue // a late answer to an earlier step
			}
			if r.Err != "" {
				return fmt.Errorf("worker %s: %s", c.name(l.w), r.Err)
			}
			out.Iter, out.Nu, out.Dual, out.Relaxed, out.PrimalRes, out.DualRes, out.Changed, out.X =
				r.Iter, r.Nu, r.Dual, r.Relaxed, r.PrimalRes, r.DualRes, r.Changed, r.X
			out.State = r.State.state()
			if in.Save && out.State == nil {
				return fmt.Errorf("worker %s sent no state for step %d", c.name(l.w), in.Iter)
			}
			return nil
		case <-timer.C:
			return fmt.Errorf("worker %s did not answer step %d within %v", c.name(l.w), in.Iter, c.timeout)
		}
	}
}
