package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/transport"
)

// WorkerOptions configures a worker process.
type WorkerOptions struct {
	Name    string // a transport.ValidName, unique among the workers
	Threads int    // goroutines for its slaves (>= 1)
	Logger  *slog.Logger
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
	// The worker announces itself all the time, busy or not: a coordinator
	// that takes a job over (a new Raft leader) finds its predecessor's
	// workers from their announcements.
	go func() {
		tick := time.NewTicker(helloEvery)
		defer tick.Stop()
		for {
			s.announce(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
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
		}
	}
}

// announce publishes the worker's hello with the job it serves.
func (s *server) announce(ctx context.Context) {
	s.mu.Lock()
	h := helloBody{Name: s.opts.Name, Threads: s.opts.Threads, Job: s.job, Iter: s.iter}
	s.mu.Unlock()
	data, err := transport.Encode(transport.Header{Kind: kindHello, From: s.opts.Name}, h)
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

	tr      transport.Transport
	opts    WorkerOptions
	log     *slog.Logger
	faults  *faultLog
	seq     *transport.Sequence
	assigns chan assignment
}

func (s *server) onAssign(_ string, data []byte) {
	var a assignBody
	h, err := transport.DecodeInto(data, &a)
	if err != nil {
		s.log.Warn("bad assignment", "err", err)
		return
	}
	s.mu.Lock()
	current, ready := s.job, s.ready
	preempt := current != "" && current != h.Job && a.Base != "" && a.Base == s.base && a.Epoch > s.epoch
	if preempt {
		// A new coordinator leads the job: drop the old epoch's part.
		s.cancel()
	}
	s.mu.Unlock()
	if current == h.Job {
		// The coordinator did not hear our acknowledgement: repeat it.
		if ready != nil {
			_ = s.tr.Publish(context.Background(), reportSubject(h.Job, s.opts.Name), ready)
		}
		return
	}
	next := assignment{job: h.Job, body: &a}
	select {
	case s.assigns <- next:
	default:
		if !preempt {
			s.log.Warn("assignment while busy: ignored", "job", h.Job)
			return
		}
		// Replace a queued older assignment.
		select {
		case <-s.assigns:
		default:
		}
		select {
		case s.assigns <- next:
		default:
		}
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
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.job, s.ready, s.iter = "", nil, 0
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
	part, w, err := newPartWorker(a.body, s.opts.Threads)
	ready := readyBody{}
	if err != nil {
		ready.Err = err.Error()
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
	s.log.Info("job assigned", "job", job, "part", a.body.Part, "slaves", len(part.Plan.Slaves), "variables", len(part.Vars), "boundary", len(part.Boundary))
	in := &consensus.StepIn{}
	out := &consensus.StepOut{}
	exp := expect{coord: a.body.Coord, next: a.body.Next}
	var lastReport reportBody
	idle := time.NewTimer(jobIdleTimeout)
	defer idle.Stop()
	// Until the first step arrives, the acknowledgement is repeated: if it
	// was lost, the coordinator would otherwise wait in vain.
	again := time.NewTicker(readyAgainEvery)
	defer again.Stop()
	for {
		select {
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
		case <-idle.C:
			return errors.New("no step from the coordinator for " + jobIdleTimeout.String() + ": job abandoned")
		case st := <-steps.c:
			what, err := exp.take(st, w)
			if err != nil {
				s.faults.drop("step dropped", "job", job, "iteration", st.Iter, "reason", err)
				continue
			}
			idle.Reset(jobIdleTimeout)
			switch what {
			case stepStop:
				s.log.Info("job done", "job", job, "iterations", exp.last, "peak_rss_mb", peakRSSMB())
				return nil
			case stepOld:
				continue
			case stepRepeat:
				// The coordinator lost our report, or rejected a forged
				// one: the same report, under a new sequence number.
			case stepNext:
				lastReport = answer(w, st, in, out)
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
func (s *server) heartbeat(ctx context.Context, job string) (stop func(), err error) {
	beat, err := s.encode(transport.Header{Job: job, Kind: kindHeartbeat}, heartbeatBody{})
	if err != nil {
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
				_ = s.tr.Publish(ctx, heartbeatSubject(job, s.opts.Name), beat)
			}
		}
	}()
	return stop, nil
}

// newPartWorker builds the consensus worker of an assigned part, restored
// to the part's state when the assignment carries one.
func newPartWorker(body *assignBody, threads int) (*consensus.Part, *consensus.Worker, error) {
	part, err := decodePart(body)
	if err != nil {
		return nil, nil, err
	}
	opts := consensus.DefaultOptions()
	opts.Algo = consensus.Algo(body.Options.Algo)
	opts.Tau = body.Options.Tau
	opts.Threads = threads
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
	return part, w, nil
}

// stepFeed delivers a job's steps that pass the deduplication filter.
type stepFeed struct {
	c      chan *stepBody
	done   chan struct{} // closed when the job is over: nobody reads c any more
	mu     sync.Mutex
	filter *transport.Filter
	sub    transport.Subscription
}

// subscribeSteps subscribes to the worker's steps of job.
func (s *server) subscribeSteps(job string) (*stepFeed, error) {
	f := &stepFeed{c: make(chan *stepBody, 4), done: make(chan struct{}), filter: transport.NewFilter(job, transport.FilterOptions{})}
	sub, err := s.tr.Subscribe(stepSubject(job, s.opts.Name), func(_ string, data []byte) {
		var st stepBody
		h, err := transport.DecodeInto(data, &st)
		if err != nil {
			s.faults.drop("undecodable step dropped", "job", job, "err", err)
			return
		}
		f.mu.Lock()
		keep := f.filter.Check(h).Keep()
		f.mu.Unlock()
		if keep {
			select {
			case f.c <- &st:
			case <-f.done:
			}
		}
	})
	if err != nil {
		return nil, err
	}
	f.sub = sub
	return f, nil
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

// jobIdleTimeout is how long a worker waits for the next step before it
// gives the job up.
const jobIdleTimeout = 5 * time.Minute
