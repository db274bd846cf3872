package dsearch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/internal/jobworker"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/native"
	"github.com/ddrun/ddrun/transport"
)

// WorkerOptions configures a worker's search service.
type WorkerOptions struct {
	Name    string // a transport.ValidName, unique among the workers
	Threads int    // goroutines of its node solver (>= 1)
	Logger  *slog.Logger
	// MaxEntries bounds the model a coordinator may ship (native
	// ReadOptions.MaxEntries; 0: model.DefaultMaxEntries).
	MaxEntries int
	// ReleaseAfter: a job whose coordinator is silent this long is
	// dropped (default 15s).
	ReleaseAfter time.Duration
	// OnTask, when not nil, is told when a subtree's search starts; it
	// must return at once.
	OnTask func(job string, id uint64)
	// ModelPath checks the indexed file an open names and returns the
	// path to read (launch: shard.Dirs.ModelPath, the worker's state
	// directory and model roots only); nil: the worker reads no file, only
	// models sent in the open. Its errors must hold no path.
	ModelPath func(path string) (string, error)
}

// Timings of the protocol.
const (
	helloEvery = 500 * time.Millisecond
	busyEvery  = 250 * time.Millisecond
	beatEvery  = 500 * time.Millisecond
)

// wjob is the job a worker holds.
type wjob struct {
	name  string
	cid   uint64
	m     *model.Model
	solve exact.WarmSolver
	beat  time.Time // the coordinator's last sign of life
	// The task being searched (0: none) and its cancel, the last answered
	// and its encoded answer (sent again when its task comes again).
	current uint64
	cancel  context.CancelFunc
	done    uint64
	answer  []byte
}

type wserver struct {
	*jobworker.Sender
	opts WorkerOptions

	mu  sync.Mutex
	job *wjob
	// freed is signalled when the worker drops a job.
	freed chan struct{}
}

// Serve answers search jobs until ctx ends: it announces itself on the
// hello subject, takes the model of the first coordinator that opens a job
// on it while it is free, searches the subtrees that coordinator sends,
// one at a time, and is free again when the job is closed or its
// coordinator falls silent for ReleaseAfter.
func Serve(ctx context.Context, tr transport.Transport, opts WorkerOptions) error {
	sender, err := jobworker.NewSender(tr, opts.Name, opts.Logger, "search: ")
	if err != nil {
		return err
	}
	if opts.Threads < 1 {
		return fmt.Errorf("threads: %d < 1", opts.Threads)
	}
	if opts.ReleaseAfter <= 0 {
		opts.ReleaseAfter = 15 * time.Second
	}
	s := &wserver{Sender: sender, opts: opts, freed: make(chan struct{}, 1)}
	sub, err := tr.Subscribe(taskWildcard(opts.Name), s.onTask)
	if err != nil {
		return fmt.Errorf("subscribing for search tasks: %w", err)
	}
	defer sub.Unsubscribe()
	beats, err := tr.Subscribe(beatsWildcard, s.onBeat)
	if err != nil {
		return fmt.Errorf("subscribing for coordinators' beats: %w", err)
	}
	defer beats.Unsubscribe()
	defer s.release(nil)
	loop := jobworker.Loop{Solicit: solicitSubject, Solicitations: "solicitations", HelloEvery: helloEvery,
		Announce: s.announce, Lapse: s.lapse, Freed: s.freed, Beat: s.heartbeat, BeatEvery: busyEvery}
	return loop.Run(ctx, tr)
}

func (s *wserver) announce(ctx context.Context) {
	s.mu.Lock()
	h := helloBody{Threads: s.opts.Threads}
	if s.job != nil {
		h.Job = s.job.name
	}
	s.mu.Unlock()
	s.Publish(ctx, helloSubject, transport.Header{}, h)
}

func (s *wserver) heartbeat(ctx context.Context) {
	s.mu.Lock()
	j := s.job
	var b busyBody
	if j != nil {
		b = busyBody{CID: j.cid, Current: j.current, Done: j.done}
	}
	s.mu.Unlock()
	if j != nil {
		s.Publish(ctx, answerSubject(j.name, s.opts.Name), transport.Header{Job: j.name}, b)
	}
}

// lapse drops a job whose coordinator fell silent.
func (s *wserver) lapse() {
	s.mu.Lock()
	j := s.job
	silent := j != nil && time.Since(j.beat) > s.opts.ReleaseAfter
	s.mu.Unlock()
	if silent {
		s.Log.Warn("search: job dropped, its coordinator is silent", "job", j.name)
		s.release(j)
	}
}

// release drops job j if it is still the worker's job (any job when j is
// nil): by identity, so that a stale lapse or close cannot drop a job of
// the same name opened since, as in dtrws/remote.
func (s *wserver) release(j *wjob) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.job == nil || j != nil && s.job != j {
		return
	}
	if s.job.cancel != nil {
		s.job.cancel()
	}
	s.job = nil
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

func (s *wserver) onBeat(_ string, data []byte) {
	var b beatBody
	h, err := transport.DecodeInto(data, &b)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.job != nil && s.job.name == h.Job && s.job.cid == b.CID {
		s.job.beat = time.Now()
	}
	s.mu.Unlock()
}

// onTask takes what a coordinator sends on the worker's task subject.
func (s *wserver) onTask(subject string, data []byte) {
	h, raw, err := transport.Decode(data)
	if err != nil {
		s.Dropped("undecodable message dropped", "err", err)
		return
	}
	if subject != taskSubject(h.Job, s.opts.Name) {
		s.Dropped("message for another job or worker dropped", "subject", subject, "job", h.Job)
		return
	}
	switch h.Kind {
	case kindOpen:
		var o openBody
		if err := transport.DecodeBody(raw, &o); err != nil {
			s.Dropped("undecodable open dropped", "job", h.Job, "err", err)
			return
		}
		s.onOpen(h.Job, &o)
	case kindTask:
		var t taskBody
		if err := transport.DecodeBody(raw, &t); err != nil {
			s.Dropped("undecodable task dropped", "job", h.Job, "err", err)
			return
		}
		s.onSubtree(h.Job, &t)
	case kindClose:
		var c closeBody
		if transport.DecodeBody(raw, &c) != nil {
			return
		}
		s.mu.Lock()
		j := s.job
		mine := j != nil && j.name == h.Job && j.cid == c.CID
		s.mu.Unlock()
		if mine {
			s.release(j)
			s.Log.Info("search: job closed", "job", h.Job)
		}
	default:
		s.Dropped("message of an unknown kind dropped", "job", h.Job, "kind", h.Kind)
	}
}

// model reads the model an open message hands over: its bytes, or the
// indexed file it names when that file is the one the coordinator checked
// (its size and structure checksum; the file's own checks verify the
// rest as it is read).
func (s *wserver) model(job string, o *openBody) (*model.Model, error) {
	ro := native.ReadOptions{MaxEntries: s.opts.MaxEntries}
	if len(o.Model) > 0 || o.File == "" {
		return native.ReadWith(bytes.NewReader(o.Model), "model of job "+job, native.Msgpack, ro)
	}
	// Answers name no path and no size: a forged open learns nothing of
	// the worker's files.
	if !filepath.IsAbs(o.File) || filepath.Ext(o.File) != indexed.Ext {
		return nil, fmt.Errorf("the model file: not an absolute path to an indexed (%s) file", indexed.Ext)
	}
	if s.opts.ModelPath == nil {
		return nil, errors.New("the model file: this worker reads no model file (no directories given)")
	}
	path, err := s.opts.ModelPath(o.File)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.New("the model file: cannot be opened")
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, errors.New("the model file: not a regular file")
	}
	sc, err := indexed.OpenScan(f, st.Size(), "the model file", indexed.ReadOptions{MaxEntries: s.opts.MaxEntries})
	if err != nil {
		return nil, err
	}
	if sc.Size() != o.Size || sc.StructureCRC() != o.CRC {
		return nil, errors.New("the model file: its size or structure checksum differs from the coordinator's: another file")
	}
	return indexed.ReadOpened(f, "the model file", indexed.ReadOptions{MaxEntries: s.opts.MaxEntries})
}

// onOpen takes a job when the worker is free (or the job's coordinator
// asks again) and answers.
func (s *wserver) onOpen(job string, o *openBody) {
	ctx := context.Background()
	reply := func(err string) {
		s.Publish(ctx, answerSubject(job, s.opts.Name), transport.Header{Job: job}, openedBody{CID: o.CID, Err: err})
	}
	s.mu.Lock()
	cur := s.job
	s.mu.Unlock()
	if cur != nil {
		if cur.name == job && cur.cid == o.CID {
			reply("") // our acknowledgement was lost
			return
		}
		reply(fmt.Sprintf("busy with search job %s", cur.name))
		return
	}
	m, err := s.model(job, o)
	if err != nil {
		reply(err.Error())
		return
	}
	if _, err := evidence(onModel(m), o.Vars, o.States); err != nil {
		reply("job evidence: " + err.Error())
		return
	}
	solve, err := o.Settings.NodeSolver(s.opts.Threads)
	if err != nil {
		reply(err.Error())
		return
	}
	s.mu.Lock()
	if s.job != nil { // another open won the race
		s.mu.Unlock()
		reply(fmt.Sprintf("busy with search job %s", s.job.name))
		return
	}
	s.job = &wjob{name: job, cid: o.CID, m: m, solve: solve, beat: time.Now()}
	s.mu.Unlock()
	s.Log.Info("search: job opened", "job", job, "variables", m.NumVars(), "factors", len(m.Factors), "algo", o.Settings.Algo)
	reply("")
}

// onSubtree queues the search of a subtree of the job the worker holds.
func (s *wserver) onSubtree(job string, t *taskBody) {
	s.mu.Lock()
	j := s.job
	if j == nil || j.name != job || j.cid != t.CID {
		s.mu.Unlock()
		s.Dropped("task of a job this worker does not hold dropped", "job", job)
		return
	}
	j.beat = time.Now()
	if t.ID == j.current && j.current != 0 {
		s.mu.Unlock()
		return // a repeat of the task under way
	}
	if t.ID == j.done && j.answer != nil {
		answer := j.answer
		s.mu.Unlock()
		_ = s.Tr.Publish(context.Background(), answerSubject(job, s.opts.Name), answer) // our answer was lost
		return
	}
	s.mu.Unlock()
	ev, err := evidence(onModel(j.m), t.Vars, t.States)
	switch {
	case err != nil:
	case t.ID == 0:
		err = fmt.Errorf("task id 0")
	case t.MaxNodes < 0 || t.MaxNodes > maxTaskNodes:
		err = fmt.Errorf("node budget %d outside [0, %d]", t.MaxNodes, maxTaskNodes)
	case t.SliceMs < 0 || time.Duration(t.SliceMs)*time.Millisecond > maxSlice:
		err = fmt.Errorf("time slice %dms outside [0, %v]", t.SliceMs, maxSlice)
	case t.MaxNodes == 0 && t.SliceMs == 0:
		err = fmt.Errorf("a task without a budget")
	case t.Bound != t.Bound || t.Incumbent != t.Incumbent || !(t.Tol >= 0) || t.Tol > 1:
		err = fmt.Errorf("bound %v, incumbent %v, tolerance %v", t.Bound, t.Incumbent, t.Tol)
	}
	if err != nil {
		s.Dropped("malformed task dropped", "job", job, "err", err)
		return
	}
	s.search(j, t, ev)
}

// search starts the search of one subtree in its own goroutine, which
// answers when it ends; a task under way is cancelled (the coordinator
// gave up waiting for it).
func (s *wserver) search(j *wjob, t *taskBody, ev map[int]int) {
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	if s.job != j {
		s.mu.Unlock()
		cancel()
		return
	}
	if j.cancel != nil {
		j.cancel() // a task the coordinator gave up waiting for
	}
	j.current, j.cancel = t.ID, cancel
	s.mu.Unlock()
	if s.opts.OnTask != nil {
		s.opts.OnTask(j.name, t.ID)
	}
	go func() {
		defer cancel()
		opts := exact.SubtreeOptions{Options: exact.Options{Tol: t.Tol, MaxNodes: t.MaxNodes, TimeLimit: time.Duration(t.SliceMs) * time.Millisecond},
			Bound: t.Bound, Incumbent: t.Incumbent, Root: t.Root}
		res, st, open, err := exact.SolveSubtree(ctx, j.m, ev, j.solve, opts)
		a := answerBody{CID: t.CID, ID: t.ID, Nodes: st.Nodes, Pruned: st.Pruned, Iterations: res.Iterations, Primal: res.Primal}
		if err != nil {
			a.Err = err.Error()
		} else {
			if res.Assignment != nil {
				a.X = int32sOf(res.Assignment)
			}
			a.Open = make([]openWire, len(open))
			for i, o := range open {
				v, st := clamps(o.Evidence)
				a.Open[i] = openWire{Vars: v, States: st, Bound: o.Bound}
			}
		}
		data, eerr := s.Encode(transport.Header{Job: j.name, Kind: kindAnswer}, a)
		s.mu.Lock()
		live := s.job == j && j.current == t.ID && ctx.Err() == nil
		if live {
			j.current, j.done, j.answer = 0, t.ID, data
		}
		s.mu.Unlock()
		if !live {
			return
		}
		if eerr != nil {
			s.Log.Error("search: encoding an answer", "job", j.name, "err", eerr)
			return
		}
		if err := s.Tr.Publish(context.Background(), answerSubject(j.name, s.opts.Name), data); err != nil {
			s.Log.Warn("search: publishing an answer", "job", j.name, "err", err)
		}
	}()
}

func int32sOf(x []int) transport.Int32s {
	out := make(transport.Int32s, len(x))
	for i, v := range x {
		out[i] = int32(v)
	}
	return out
}
