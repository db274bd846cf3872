package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/internal/rusage"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/transport"
)

// WorkerOptions configures a worker process.
type WorkerOptions struct {
	Name    string // a transport.ValidName, unique among the workers
	Threads int    // goroutines for its slaves (>= 1)
	Logger  *slog.Logger
	// LoadShard builds the part of a sharded job from its spec (package
	// shard's Load); nil: the worker refuses sharded parts.
	LoadShard func(ctx context.Context, spec []byte) (*consensus.Part, error)
	// OnStep, when not nil, is told of every step computed and answered:
	// it took d. OnParts, when not nil, of the parts held (1 when a part
	// is built, 0 when its job ends). Both must return at once.
	OnStep  func(d time.Duration)
	OnParts func(n int)
	// ShardStates saves and loads a sharded part's states (package
	// shard's StateFiles); nil: the worker cannot save them (a sharded
	// run then takes no checkpoints) nor restore them.
	ShardStates ShardStates
}

// ShardStates keeps a sharded part's states where every worker of the job
// can read them, in the worker's own state directory (never one that a
// message names: the assignment's StateDir is not used): Save returns a
// reference to the state saved, which Load takes back for the part of
// worker w.
type ShardStates interface {
	Save(ctx context.Context, at shard.StateAt, st *consensus.ShardPartState) ([]byte, error)
	Load(ctx context.Context, at shard.StateAt, ref []byte, w *consensus.Worker) (*consensus.ShardPartState, error)
}

// Serve runs a worker until ctx is cancelled: it announces itself on the
// control subject, takes the part a coordinator assigns it, answers every
// iteration of that job, and after the job ends waits for the next one.
func Serve(ctx context.Context, tr transport.Transport, opts WorkerOptions) error {
	if err := transport.ValidName(opts.Name); err != nil {
		return fmt.Errorf("worker name %q: %w", opts.Name, err)
	}
	if opts.Threads < 1 {
		return fmt.Errorf("threads: %d < 1", opts.Threads)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &server{tr: tr, opts: opts, log: log, faults: newFaultLog(log), seq: transport.NewSequence(), assigns: make(chan assignment, 1)}
	sub, err := tr.Subscribe(assignWildcard(opts.Name), s.onAssign)
	if err != nil {
		return fmt.Errorf("subscribing for assignments: %w", err)
	}
	defer sub.Unsubscribe()
	beats, err := tr.Subscribe(beatsWildcard, s.onBeat)
	if err != nil {
		return fmt.Errorf("subscribing for coordinators' beats: %w", err)
	}
	defer beats.Unsubscribe()
	// The worker announces itself all the time, busy or not: a coordinator
	// that takes a job over (a new Raft leader) finds its predecessor's
	// workers from their announcements.
	go func() {
		tick := time.NewTicker(helloEvery)
		defer tick.Stop()
		for {
			s.lapse()
			s.announce(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var letGo <-chan time.Time // when to let the kept part go
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-letGo:
			s.kept, letGo = keptPart{}, nil
		case a := <-s.assigns:
			jobCtx, cancel := context.WithCancel(ctx)
			s.mu.Lock()
			s.cancel = cancel
			s.mu.Unlock()
			err := s.runJob(jobCtx, a)
			cancel()
			if err != nil && ctx.Err() == nil {
				if jobCtx.Err() != nil {
					log.Warn("job taken over by a new coordinator", "job", a.job)
				} else {
					log.Error("job failed", "job", a.job, "err", err)
				}
			}
			s.announce(ctx)
			if s.kept.part != nil {
				letGo = time.After(keepPartFor)
			}
		}
	}
}

// announce publishes the worker's hello with the job it serves.
func (s *server) announce(ctx context.Context) {
	s.mu.Lock()
	h := helloBody{Name: s.opts.Name, Threads: s.opts.Threads, Job: s.job, Iter: s.iter}
	if s.job == "" {
		h.Claimed = s.claim
	}
	s.mu.Unlock()
	data, err := transport.Encode(transport.Header{Kind: kindHello, From: s.opts.Name, Seq: s.seq.Next()}, h)
	if err == nil {
		err = s.tr.Publish(ctx, controlSubject, data)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("announcing", "err", err)
	}
}

type assignment struct {
	job  string
	body *assignBody
}

type server struct {
	mu     sync.Mutex
	job    string // the job being served, "" between jobs
	ready  []byte // its encoded acknowledgement
	iter   int    // the last iteration answered in it
	base   string // its Base and Epoch (see assignBody)
	epoch  uint64
	cancel context.CancelFunc // ends it
	// The job that claimed the worker (pool.go), with its Base and Epoch;
	// the claim lasts while its coordinator beats, releaseAfter at most
	// after lastBeat.
	claim        string
	claimBase    string
	claimEpoch   uint64
	releaseAfter time.Duration
	lastBeat     time.Time
	// beatSeq is the Seq of the holder's claim or newest beat: only a
	// newer beat is a sign of life (a replayed one is not). released is
	// the Seq of the release of each recent job: a claim of that job not
	// newer than it is a replay (at most maxReleased jobs).
	beatSeq  uint64
	released map[string]uint64

	tr      transport.Transport
	opts    WorkerOptions
	log     *slog.Logger
	faults  *faultLog
	seq     *transport.Sequence
	assigns chan assignment
	// kept is the last sharded part, for the job's next epoch (touched by
	// Serve's loop only).
	kept keptPart
}

// onAssign takes what a coordinator sends on the worker's assignment
// subject: claims, releases and assignments.
func (s *server) onAssign(_ string, data []byte) {
	h, raw, err := transport.Decode(data)
	if err != nil {
		s.faults.drop("undecodable assignment dropped", "err", err)
		return
	}
	switch h.Kind {
	case kindClaim:
		var c claimBody
		if err := transport.DecodeBody(raw, &c); err != nil {
			s.faults.drop("undecodable claim dropped", "job", h.Job, "err", err)
			return
		}
		s.onClaim(h.Job, h.Seq, c)
	case kindRelease:
		s.mu.Lock()
		if s.released == nil || len(s.released) >= maxReleased {
			s.released = map[string]uint64{} // forget the old ones
		}
		s.released[h.Job] = max(s.released[h.Job], h.Seq)
		if s.claim == h.Job && s.job == "" {
			s.claim = ""
		}
		s.mu.Unlock()
	case kindAssign:
		var a assignBody
		if err := transport.DecodeBody(raw, &a); err != nil {
			s.faults.drop("undecodable assignment dropped", "job", h.Job, "err", err)
			return
		}
		s.onPart(h.Job, &a)
	}
}

// onClaim grants the claim of job (numbered seq) when the worker is free
// for it (see pool.go) and answers it. A claim of a job released after it
// was sent is a replay, and is dropped.
func (s *server) onClaim(job string, seq uint64, c claimBody) {
	s.mu.Lock()
	if r, ok := s.released[job]; ok && seq <= r {
		s.mu.Unlock()
		s.faults.drop("a replayed claim of a released job dropped", "job", job)
		return
	}
	holder := s.job
	if holder == "" {
		holder = s.claim
	}
	lapsed := s.job == "" && s.claim != "" && time.Since(s.lastBeat) > s.releaseAfter
	takeover := c.Base != "" && (s.job != "" && s.base == c.Base && c.Epoch > s.epoch ||
		s.job == "" && s.claim != "" && s.claimBase == c.Base && c.Epoch > s.claimEpoch)
	grant := holder == "" || holder == job || lapsed || takeover
	if grant {
		if takeover && s.job != "" && s.job != job {
			// A new coordinator leads the job: drop the old epoch's part.
			s.cancel()
		}
		s.claim, s.claimBase, s.claimEpoch = job, c.Base, c.Epoch
		s.releaseAfter = time.Duration(c.ReleaseAfterMs) * time.Millisecond
		if s.releaseAfter <= 0 {
			s.releaseAfter = defaultReleaseAfter
		}
		s.releaseAfter = min(s.releaseAfter, maxReleaseAfter)
		s.lastBeat, s.beatSeq = time.Now(), seq
	}
	s.mu.Unlock()
	answer := claimedBody{Granted: grant}
	if !grant {
		answer.Busy = holder
	}
	data, err := s.encode(transport.Header{Job: job, Kind: kindClaimed}, answer)
	if err == nil {
		err = s.tr.Publish(context.Background(), reportSubject(job, s.opts.Name), data)
	}
	if err != nil {
		s.log.Warn("answering a claim", "job", job, "err", err)
	}
}

// onPart queues the part of job, which must hold the worker's claim.
func (s *server) onPart(job string, a *assignBody) {
	s.mu.Lock()
	current, ready, claim := s.job, s.ready, s.claim
	s.mu.Unlock()
	if current == job {
		// The coordinator did not hear our acknowledgement: repeat it.
		if ready != nil {
			_ = s.tr.Publish(context.Background(), reportSubject(job, s.opts.Name), ready)
		}
		return
	}
	if claim != job {
		s.faults.drop("a part of a job that does not hold this worker dropped", "job", job, "held_by", claim)
		return
	}
	// The claim is this job's: an assignment still queued is an earlier
	// epoch's, which the claim took over.
	next := assignment{job: job, body: a}
	for {
		select {
		case s.assigns <- next:
			return
		default:
		}
		select {
		case <-s.assigns:
		default:
		}
	}
}

// onBeat takes a coordinator's beat as a sign of life of the job it
// holds this worker for.
func (s *server) onBeat(_ string, data []byte) {
	h, _, err := transport.Decode(data)
	if err != nil || h.Kind != kindBeat {
		return
	}
	s.mu.Lock()
	if h.Job != "" && (h.Job == s.claim || h.Job == s.job) && h.Seq > s.beatSeq {
		s.lastBeat, s.beatSeq = time.Now(), h.Seq
	}
	s.mu.Unlock()
}

// coordinatorSilent reports whether the coordinator holding the worker
// has been silent (no beat, no step) for longer than it asked, and for
// how long.
func (s *server) coordinatorSilent() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := time.Since(s.lastBeat)
	return d, d > s.releaseAfter
}

// lapse gives up an unused claim whose coordinator went silent.
func (s *server) lapse() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.job == "" && s.claim != "" && time.Since(s.lastBeat) > s.releaseAfter && len(s.assigns) == 0 {
		s.log.Info("claim lapsed: its coordinator went silent", "job", s.claim)
		s.claim = ""
	}
}

func (s *server) encode(h transport.Header, body any) ([]byte, error) {
	h.From = s.opts.Name
	h.Seq = s.seq.Next()
	return transport.Encode(h, body)
}

// runJob builds the assigned part and answers steps until the job stops.
func (s *server) runJob(ctx context.Context, a assignment) error {
	job := a.job
	report := reportSubject(job, s.opts.Name)
	received, err := s.encode(transport.Header{Job: job, Kind: kindReady}, readyBody{Received: true})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.job, s.ready, s.iter, s.base, s.epoch = job, received, 0, a.body.Base, a.body.Epoch
	s.lastBeat = time.Now()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.job, s.ready, s.iter = "", nil, 0
		if s.claim == job {
			s.claim = ""
		}
		s.mu.Unlock()
	}()
	if err := s.tr.Publish(ctx, report, received); err != nil {
		return err
	}
	stopBeat, err := s.heartbeat(ctx, job)
	if err != nil {
		return err
	}
	defer stopBeat()
	part, w, err := newPartWorker(ctx, a.body, s.opts, &s.kept)
	ready := readyBody{}
	if err != nil {
		ready.Err = err.Error()
	} else if a.body.Shard != nil {
		sum := w.Summary()
		ready.Summary = &summaryWire{ReplicaEntries: sum.ReplicaEntries, UnaryEntries: sum.UnaryEntries, Interior: sum.Interior, PeakRSSMB: rusage.PeakRSSMB()}
	}
	steps, err2 := s.subscribeSteps(job)
	if err2 != nil {
		return err2
	}
	defer steps.close()
	readyData, err2 := s.encode(transport.Header{Job: job, Kind: kindReady}, ready)
	if err2 != nil {
		return err2
	}
	s.mu.Lock()
	s.ready = readyData
	s.mu.Unlock()
	if err := s.tr.Publish(ctx, report, readyData); err != nil {
		return err
	}
	if w == nil {
		return err
	}
	defer w.Close()
	if f := s.opts.OnParts; f != nil {
		f(1)
		defer f(0)
	}
	s.log.Info("job assigned", "job", job, "part", a.body.Part, "slaves", part.NumSlaves(), "variables", len(part.Vars), "boundary", len(part.Boundary))
	in := &consensus.StepIn{}
	out := &consensus.StepOut{}
	exp := expect{coord: a.body.Coord, next: a.body.Next}
	var lastReport reportBody
	var evals evalCache
	saver := func(ctx context.Context, iter int) ([]byte, error) {
		if s.opts.ShardStates == nil || a.body.Shard == nil {
			return nil, errors.New("this worker cannot save sharded parts' states")
		}
		if iter != exp.last {
			return nil, fmt.Errorf("asked to save the state of iteration %d after iteration %d", iter, exp.last)
		}
		st := w.ShardState()
		at := shard.StateAt{Job: a.body.Base, Epoch: a.body.Epoch, Iter: iter, Part: a.body.Part, Spec: a.body.Shard}
		return s.opts.ShardStates.Save(ctx, at, &st)
	}
	// Until the first step arrives, the acknowledgement is repeated: if it
	// was lost, the coordinator would otherwise wait in vain.
	again := time.NewTicker(readyAgainEvery)
	defer again.Stop()
	live := time.NewTicker(heartbeatEvery)
	defer live.Stop()
	for {
		select {
		case <-live.C:
			if d, silent := s.coordinatorSilent(); silent {
				return fmt.Errorf("the coordinator has been silent for %v: job abandoned, the worker is free again", d.Round(time.Second))
			}
		case <-again.C:
			if exp.last == 0 {
				if err := s.tr.Publish(ctx, report, readyData); err != nil {
					return err
				}
			} else {
				again.Stop()
			}
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-steps.ev:
			if ev.Coord != exp.coord {
				s.faults.drop("evaluation dropped", "job", job, "reason", "not from this job's coordinator")
				continue
			}
			data, err := s.encode(transport.Header{Job: job, Iter: uint64(exp.last), Kind: kindEvaled}, evals.answer(ctx, w, ev, saver))
			if err != nil {
				return err
			}
			if err := s.tr.Publish(ctx, report, data); err != nil {
				return err
			}
		case st := <-steps.c:
			what, err := exp.take(st, w)
			if err != nil {
				s.faults.drop("step dropped", "job", job, "iteration", st.Iter, "reason", err)
				continue
			}
			s.mu.Lock()
			s.lastBeat = time.Now() // a step of the job's coordinator is a sign of life too
			s.mu.Unlock()
			switch what {
			case stepStop:
				s.log.Info("job done", "job", job, "iterations", exp.last, "peak_rss_mb", rusage.PeakRSSMB())
				return nil
			case stepOld:
				continue
			case stepRepeat:
				// The coordinator lost our report, or rejected a forged
				// one: the same report, under a new sequence number.
			case stepNext:
				t0 := time.Now()
				lastReport = answer(w, st, in, out)
				if f := s.opts.OnStep; f != nil {
					f(time.Since(t0))
				}
				exp.last = st.Iter
				s.mu.Lock()
				s.iter = exp.last
				s.mu.Unlock()
				steps.advance(st.Iter)
			}
			data, err := s.encode(transport.Header{Job: job, Iter: uint64(exp.last), Kind: kindReport}, lastReport)
			if err != nil {
				return err
			}
			if err := s.tr.Publish(ctx, report, data); err != nil {
				return err
			}
		}
	}
}

// heartbeat publishes the worker's heartbeats for job until stop is
// called: they tell the coordinator this worker is alive, also while it
// builds a big part or solves a long iteration.
//
// Each carries a new sequence number: the coordinator takes only a
// heartbeat newer than the ones before as a sign of life, so that a
// recorded one, replayed, does not keep a dead worker alive.
func (s *server) heartbeat(ctx context.Context, job string) (stop func(), err error) {
	if _, err := s.encode(transport.Header{Job: job, Kind: kindHeartbeat}, heartbeatBody{}); err != nil {
		return nil, err
	}
	ctx, stop = context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if beat, err := s.encode(transport.Header{Job: job, Kind: kindHeartbeat}, heartbeatBody{}); err == nil {
					_ = s.tr.Publish(ctx, heartbeatSubject(job, s.opts.Name), beat)
				}
			}
		}
	}()
	return stop, nil
}

// newPartWorker builds the consensus worker of an assigned part, restored
// to the part's state when the assignment carries one.
func newPartWorker(ctx context.Context, body *assignBody, wo WorkerOptions, kept *keptPart) (*consensus.Part, *consensus.Worker, error) {
	var part *consensus.Part
	var err error
	switch {
	case body.Shard == nil:
		part, err = decodePart(body)
	case wo.LoadShard == nil:
		err = errors.New("this worker cannot read sharded parts")
	default:
		part, err = kept.load(ctx, body, wo.LoadShard)
	}
	if err != nil {
		return nil, nil, err
	}
	opts := consensus.DefaultOptions()
	opts.Algo = consensus.Algo(body.Options.Algo)
	opts.Tau = body.Options.Tau
	opts.Threads = wo.Threads
	w, err := consensus.NewWorker(part, opts)
	if err != nil {
		return part, nil, err
	}
	if body.State != nil {
		if err := w.Restore(body.State.state()); err != nil {
			w.Close()
			return part, nil, err
		}
	}
	if body.StateRef != nil {
		if err := restoreShard(ctx, body, wo, w); err != nil {
			w.Close()
			return part, nil, err
		}
	}
	return part, w, nil
}

// keptPart is the sharded part a worker built for its last job, kept
// for keepPartFor after the job so that the next epoch of the same job
// (after another worker's loss: every part restarts from the latest
// checkpoint, and the coordinator gives each worker left its part again)
// restores it from its state without reading the part again. A worker
// holds at most one; the zero value holds none.
type keptPart struct {
	base string
	spec []byte
	part *consensus.Part
}

// keepPartFor is how long a worker keeps its last sharded part (keptPart)
// after its job: a next epoch starts within the coordinator's --lost-after
// and its claims.
const keepPartFor = time.Minute

// load returns the part of a sharded assignment: the one kept when it is
// the same job's same spec, else the one LoadShard builds (kept in turn;
// the one kept before is let go first, not to hold two).
func (k *keptPart) load(ctx context.Context, body *assignBody, loadShard func(context.Context, []byte) (*consensus.Part, error)) (*consensus.Part, error) {
	if k == nil {
		return loadShard(ctx, body.Shard)
	}
	if k.part != nil && k.base == body.Base && bytes.Equal(k.spec, body.Shard) {
		return k.part, nil
	}
	*k = keptPart{}
	part, err := loadShard(ctx, body.Shard)
	if err == nil {
		*k = keptPart{base: body.Base, spec: slices.Clone(body.Shard), part: part}
	}
	return part, err
}

// restoreShard restores a sharded part's worker to the state its
// assignment references.
func restoreShard(ctx context.Context, body *assignBody, wo WorkerOptions, w *consensus.Worker) error {
	if wo.ShardStates == nil || body.Shard == nil {
		return errors.New("this worker cannot restore sharded parts' states")
	}
	at := shard.StateAt{Job: body.Base, Epoch: body.Epoch, Iter: body.Next - 1, Part: body.Part, Spec: body.Shard}
	st, err := wo.ShardStates.Load(ctx, at, body.StateRef, w)
	if err != nil {
		return err
	}
	if err := w.RestoreShard(st); err != nil {
		return fmt.Errorf("the state of iteration %d: %w", at.Iter, err)
	}
	return nil
}

// stepFeed delivers a job's steps that pass the deduplication filter.
type stepFeed struct {
	c      chan *stepBody
	ev     chan *evalBody // a sharded run's evaluations and fetches
	done   chan struct{}  // closed when the job is over: nobody reads c any more
	mu     sync.Mutex
	filter *transport.Filter
	sub    transport.Subscription
}

// subscribeSteps subscribes to the worker's steps of job.
func (s *server) subscribeSteps(job string) (*stepFeed, error) {
	f := &stepFeed{c: make(chan *stepBody, 4), ev: make(chan *evalBody, 4), done: make(chan struct{}), filter: transport.NewFilter(job, transport.FilterOptions{})}
	sub, err := s.tr.Subscribe(stepSubject(job, s.opts.Name), func(_ string, data []byte) {
		h, raw, err := transport.Decode(data)
		if err == nil && h.Kind == kindEval {
			var ev evalBody
			if err = transport.DecodeBody(raw, &ev); err == nil && f.keep(h) {
				select {
				case f.ev <- &ev:
				case <-f.done:
				}
			}
		} else if err == nil {
			var st stepBody
			if err = transport.DecodeBody(raw, &st); err == nil && f.keep(h) {
				select {
				case f.c <- &st:
				case <-f.done:
				}
			}
		}
		if err != nil {
			s.faults.drop("undecodable step dropped", "job", job, "err", err)
		}
	})
	if err != nil {
		return nil, err
	}
	f.sub = sub
	return f, nil
}

// keep runs the deduplication filter on a message's header.
func (f *stepFeed) keep(h transport.Header) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.filter.Check(h).Keep()
}

// advance tells the filter that iteration iter was answered.
func (f *stepFeed) advance(iter int) {
	f.mu.Lock()
	f.filter.Advance(0, uint64(iter))
	f.mu.Unlock()
}

func (f *stepFeed) close() {
	_ = f.sub.Unsubscribe()
	close(f.done)
}

// expect is what a worker takes of its steps: only from the coordinator
// id of its assignment, the next iteration or a repeat of the last one
// (the first step: the assignment's Next, any when 0), and vectors that
// fit the part, with finite values.
type expect struct {
	coord uint64
	next  int // the first step's iteration, 0: any
	last  int // the last iteration answered, 0 before the first
}

// What a step that passed the checks is.
const (
	stepNext   = iota // the next iteration: answer it
	stepRepeat        // the last one again: repeat the report
	stepOld           // an earlier one: nothing to do
	stepStop          // the end of the job
)

// take checks st against the part's worker w and says what it is.
func (e *expect) take(st *stepBody, w *consensus.Worker) (int, error) {
	switch {
	case st.Coord != e.coord:
		return 0, errors.New("not from this job's coordinator")
	case st.Stop:
		return stepStop, nil
	case st.Iter < 1:
		return 0, fmt.Errorf("iteration %d", st.Iter)
	case st.Iter == e.last:
		return stepRepeat, nil
	case st.Iter < e.last:
		return stepOld, nil
	case e.last > 0 && st.Iter != e.last+1 || e.last == 0 && e.next > 0 && st.Iter != e.next:
		return 0, fmt.Errorf("iteration %d out of order after %d", st.Iter, e.last)
	case !(st.Eta > 0) || math.IsInf(st.Eta, 1) || !(st.PrevStep >= 0) || math.IsInf(st.PrevStep, 1):
		return 0, fmt.Errorf("eta %v, step %v", st.Eta, st.PrevStep)
	case len(st.Lambda) != w.NumBoundaryReplicaEntries() || len(st.Mu) != w.NumBoundaryMuEntries():
		return 0, fmt.Errorf("%d multipliers and %d marginals, want %d and %d", len(st.Lambda), len(st.Mu), w.NumBoundaryReplicaEntries(), w.NumBoundaryMuEntries())
	}
	for _, v := range [][]float64{st.Lambda, st.Mu} {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return 0, fmt.Errorf("a boundary value is %v", x)
			}
		}
	}
	return stepNext, nil
}

// answer runs one step, checked by expect.take, on the part and returns
// the report.
func answer(w *consensus.Worker, st *stepBody, in *consensus.StepIn, out *consensus.StepOut) reportBody {
	in.Iter, in.Eta, in.PrevStep, in.GatherX, in.Save = st.Iter, st.Eta, st.PrevStep, st.GatherX, st.Save
	in.Lambda, in.Mu = st.Lambda, st.Mu
	w.Step(in, out)
	return reportBody{Iter: st.Iter, Nu: out.Nu, Dual: out.Dual, Relaxed: out.Relaxed, PrimalRes: out.PrimalRes,
		DualRes: out.DualRes, Changed: out.Changed, X: out.X, State: wireState(out.State)}
}

// defaultReleaseAfter is how long a claim whose coordinator said nothing
// of it lasts.
const defaultReleaseAfter = 10 * time.Second

// maxReleaseAfter bounds how long a claim outlives its coordinator's last
// beat, whatever the claim asks; maxReleased bounds the released jobs a
// worker remembers.
const (
	maxReleaseAfter = 10 * time.Minute
	maxReleased     = 1024
)

// evalCache answers a sharded run's evaluations and fetches, and repeats
// the last answer to a repeated request (the coordinator resends what it
// did not hear answered) instead of running it again.
type evalCache struct {
	seq  int
	last evaledBody
}

func (c *evalCache) answer(ctx context.Context, w *consensus.Worker, ev *evalBody, save func(context.Context, int) ([]byte, error)) evaledBody {
	if ev.Seq == c.seq && c.seq != 0 {
		return c.last
	}
	out := evaledBody{Seq: ev.Seq, RSS: rusage.PeakRSSMB()}
	if ev.Op == uint8(consensus.EvalSave) {
		ref, err := save(ctx, ev.Iter)
		if err == nil && (len(ref) == 0 || len(ref) > maxStateRef) {
			err = fmt.Errorf("a state reference of %d bytes", len(ref))
		}
		if err != nil {
			out.SaveErr = err.Error()
		} else {
			out.Ref = ref
		}
	} else if ev.Op == opFetch {
		vars, states, last, err := w.BestPiece(ev.Piece, pieceVars)
		if err != nil {
			out.Err = err.Error()
		}
		out.Vars, out.X, out.Last = int32s(vars), states, last
	} else {
		in := consensus.EvalIn{Seq: ev.Seq, Op: consensus.EvalOp(ev.Op), X: ev.X, Repair: ev.Repair, Fixed: ev.Fixed, Allowed: ev.Allowed, Block: ev.Block, Dom: ev.Dom}
		var res consensus.EvalOut
		if err := w.Evaluate(&in, &res); err != nil {
			out.Err = err.Error()
		}
		out.Before, out.After, out.X, out.Settled = res.Before, res.After, res.X, res.Settled
		out.Gains, out.Pairs, out.PairGains, out.Allowed = res.Gains, res.Pairs, res.PairGains, res.Allowed
	}
	c.seq, c.last = ev.Seq, out
	return out
}
