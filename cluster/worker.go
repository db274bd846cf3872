package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	s := &server{tr: tr, opts: opts, log: log, seq: transport.NewSequence(), assigns: make(chan assignment, 1)}
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
	lastIter, lastReport := 0, []byte(nil)
	idle := time.NewTimer(jobIdleTimeout)
	defer idle.Stop()
	// Until the first step arrives, the acknowledgement is repeated: if it
	// was lost, the coordinator would otherwise wait in vain.
	again := time.NewTicker(readyAgainEvery)
	defer again.Stop()
	for {
		select {
		case <-again.C:
			if lastIter == 0 {
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
			idle.Reset(jobIdleTimeout)
			if st.Stop {
				s.log.Info("job done", "job", job, "iterations", lastIter, "peak_rss_mb", peakRSSMB())
				return nil
			}
			if st.Iter <= lastIter {
				// A repeated step: the coordinator lost our report.
				if st.Iter == lastIter && lastReport != nil {
					if err := s.tr.Publish(ctx, report, lastReport); err != nil {
						return err
					}
				}
				continue
			}
			data, err := s.encode(transport.Header{Job: job, Iter: uint64(st.Iter), Kind: kindReport}, answer(w, st, in, out))
			if err != nil {
				return err
			}
			lastIter, lastReport = st.Iter, data
			s.mu.Lock()
			s.iter = lastIter
			s.mu.Unlock()
			if err := s.tr.Publish(ctx, report, data); err != nil {
				return err
			}
			steps.advance(st.Iter)
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
			s.log.Warn("bad step", "err", err)
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

// answer runs one step on the part and returns the report: the step's
// vectors must fit the part's boundary.
func answer(w *consensus.Worker, st *stepBody, in *consensus.StepIn, out *consensus.StepOut) reportBody {
	in.Iter, in.Eta, in.PrevStep, in.GatherX, in.Save = st.Iter, st.Eta, st.PrevStep, st.GatherX, st.Save
	in.Lambda, in.Mu = st.Lambda, st.Mu
	rep := reportBody{Iter: st.Iter}
	if len(in.Lambda) != w.NumBoundaryReplicaEntries() || len(in.Mu) != w.NumBoundaryMuEntries() {
		rep.Err = fmt.Sprintf("step %d: %d multipliers and %d marginals, want %d and %d", st.Iter, len(in.Lambda), len(in.Mu), w.NumBoundaryReplicaEntries(), w.NumBoundaryMuEntries())
		return rep
	}
	w.Step(in, out)
	rep.Nu, rep.Dual, rep.Relaxed, rep.PrimalRes, rep.DualRes, rep.Changed = out.Nu, out.Dual, out.Relaxed, out.PrimalRes, out.DualRes, out.Changed
	rep.X = out.X
	rep.State = wireState(out.State)
	return rep
}

// jobIdleTimeout is how long a worker waits for the next step before it
// gives the job up.
const jobIdleTimeout = 5 * time.Minute
