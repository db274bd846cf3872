package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/ddrun/ddrun/internal/ratelimit"
	"github.com/ddrun/ddrun/model/uai"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trace"
)

// State is where a job is in its life.
type State string

// The states of a job. Queued, running: not finished; the others are final.
const (
	Queued    State = "queued"
	Running   State = "running"
	Done      State = "done"
	Failed    State = "failed"
	Cancelled State = "cancelled"
)

func (s State) final() bool { return s == Done || s == Failed || s == Cancelled }

// Plan is what a Runner's Check learns of a job: enough for the queue and
// the status (the workers it needs, 0 for one in the service's process, and
// its limits for the estimated time left).
type Plan struct {
	Workers   int
	MaxIter   int
	TimeLimit time.Duration
}

// Runner checks and runs jobs. Check and Run get the path of the job's
// model file (named by its format: model.uai, model.json, ...) and the
// job's parameters (API names, one value each).
type Runner interface {
	// Check validates the parameters and the model before the job is
	// queued. An error wrapped by Invalid is the client's (HTTP 400).
	Check(ctx context.Context, model string, params map[string]string) (Plan, error)
	// Run runs the job until it ends or ctx is cancelled, reporting
	// progress; it returns the result and its JSON form (the object
	// `coordinator solve --json` prints). A result after cancellation
	// (status interrupted) is kept.
	Run(ctx context.Context, id, model string, params map[string]string, progress func(solver.Progress)) (solver.Result, json.RawMessage, error)
}

// InvalidError marks an error caused by what the client sent.
type InvalidError struct{ Err error }

func (e InvalidError) Error() string { return e.Err.Error() }
func (e InvalidError) Unwrap() error { return e.Err }

// Invalid marks err as the client's (HTTP 400).
func Invalid(err error) error { return InvalidError{err} }

// Options configure a Service.
type Options struct {
	// Dir holds the jobs, one directory each (required).
	Dir string
	// Runner checks and runs the jobs (required).
	Runner Runner
	// MaxJobs bounds the jobs kept: a new job evicts the oldest finished
	// one, and is refused (503) when all are unfinished. Default 1000.
	MaxJobs int
	// MaxUpload bounds a model upload in bytes (413 beyond). Default 256 MiB.
	MaxUpload int64
	// MaxModel bounds a model's bytes once decompressed: a gzip upload
	// is decompressed as it is stored, and refused (413) as soon as it
	// passes the bound. Default MaxUpload.
	MaxModel int64
	// MaxLocal is how many jobs run at once in this process (workers=0);
	// distributed jobs wait for their workers in the pool instead.
	// Default 1.
	MaxLocal int
	// MaxStarted bounds the distributed jobs started at once: each holds
	// its model in memory while it waits for its workers, so the others
	// stay queued with their models on disk only. Default 4.
	MaxStarted int
	// MaxChecks bounds the submissions whose models are checked (read
	// into memory by Runner.Check) at once; the others wait their turn.
	// Default 2.
	MaxChecks int
	// Tokens are the API's tokens: an HTTP request (RequireToken) or a
	// NATS request without one of them gets 401 and changes nothing. A
	// service without tokens lets no API request in (the Go methods are
	// not checked: their caller is trusted).
	Tokens []Token
	// MaxClientJobs bounds a client's unfinished (queued or running)
	// jobs: beyond, a submission gets 429. Default 16.
	MaxClientJobs int
	// Params are the names of the parameters a job may have (the
	// Runner's); others are refused (400).
	Params []string
	// Nonces, when set, records the nonces of the NATS API's submits
	// for every service of the cluster (sharednonce.go); without it a
	// service remembers its own only.
	Nonces SharedNonces
	// Ready, when set, says whether the service can take work (/readyz):
	// nil when it can, else why not.
	Ready func() error
	// Logger gets the jobs' lifecycle (default: discard).
	Logger *slog.Logger
}

// Service is the job service. Start it with New, stop it with Close.
type Service struct {
	opts Options
	log  *slog.Logger

	ctx    context.Context // cancelled by Close
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	jobs   map[string]*job
	order  []string // ids by creation, oldest first
	local  int      // jobs running in this process
	dist   int      // distributed jobs started (holding their models)
	closed bool
	// checks holds a slot per submission being checked (MaxChecks).
	checks chan struct{}
	// digests are the SHA-256 of Tokens' secrets, in their order.
	digests [][sha256.Size]byte
	// refusals rate-limits the log lines of refused requests.
	refusals ratelimit.Repeats[string]
	// nonces are those of the NATS API's recent submits (nonce.go).
	nonces nonces
}

// job is one job: its record (what job.json holds) and, while it runs, its
// cancel function and trace writer.
type job struct {
	rec    record
	plan   Plan
	cancel context.CancelFunc
	// cancelled: a client asked; the run's end is recorded as cancelled.
	cancelled bool
	started   time.Time
}

// record is a job's persisted state (job.json) and, with the id, its
// status in the API.
type record struct {
	ID       string            `json:"id"`
	State    State             `json:"state"`
	Format   string            `json:"format"`
	Params   map[string]string `json:"params"`
	Client   string            `json:"client,omitempty"`
	Workers  int               `json:"workers"`
	MaxIter  int               `json:"max_iter"`
	Limit    float64           `json:"time_limit_seconds,omitempty"`
	Created  time.Time         `json:"created"`
	Started  *time.Time        `json:"started,omitempty"`
	Finished *time.Time        `json:"finished,omitempty"`
	Error    string            `json:"error,omitempty"`
	Status   solver.Status     `json:"status,omitempty"`
	Iter     int               `json:"iteration"`
	Dual     *float64          `json:"dual"`
	Primal   *float64          `json:"primal"`
	Gap      *float64          `json:"gap"`
	Seconds  float64           `json:"seconds"`
	// Crashes counts the services that ended while the job ran without
	// recording it (killed, or crashed): after maxCrashes the job fails
	// instead of running again.
	Crashes int `json:"crashes,omitempty"`
}

// maxCrashes is how many service ends a running job may go through
// unrecorded (a kill, a crash) before a restarted service fails it
// instead of running it again: a job that brings its service down must
// not do so forever.
const maxCrashes = 2

// Status is a job's status in the API.
type Status struct {
	ID         string            `json:"id"`
	State      State             `json:"state"`
	Iteration  int               `json:"iteration"`
	Dual       *float64          `json:"dual"`
	Primal     *float64          `json:"primal"`
	Gap        *float64          `json:"gap"`
	Workers    int               `json:"workers"`
	ETA        *float64          `json:"eta_seconds"`
	Seconds    float64           `json:"seconds"`
	Status     solver.Status     `json:"status,omitempty"`
	Error      string            `json:"error,omitempty"`
	Format     string            `json:"format"`
	Params     map[string]string `json:"params"`
	Client     string            `json:"client,omitempty"`
	Created    time.Time         `json:"created"`
	StartedAt  *time.Time        `json:"started,omitempty"`
	FinishedAt *time.Time        `json:"finished,omitempty"`
}

// New opens (or creates) opts.Dir, lists the jobs kept there and queues
// again those a previous service left unfinished.
func New(opts Options) (*Service, error) {
	if opts.Dir == "" || opts.Runner == nil {
		return nil, errors.New("service: Dir and Runner are required")
	}
	if opts.MaxJobs <= 0 {
		opts.MaxJobs = 1000
	}
	if opts.MaxUpload <= 0 {
		opts.MaxUpload = 256 << 20
	}
	if opts.MaxModel <= 0 {
		opts.MaxModel = opts.MaxUpload
	}
	if opts.MaxLocal <= 0 {
		opts.MaxLocal = 1
	}
	if opts.MaxStarted <= 0 {
		opts.MaxStarted = 4
	}
	if opts.MaxChecks <= 0 {
		opts.MaxChecks = 2
	}
	if opts.MaxClientJobs <= 0 {
		opts.MaxClientJobs = 16
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{opts: opts, log: opts.Logger, jobs: map[string]*job{}, checks: make(chan struct{}, opts.MaxChecks)}
	s.refusals.Every = 10 * time.Second
	for _, t := range opts.Tokens {
		s.digests = append(s.digests, sha256.Sum256(t.Secret))
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	if err := os.MkdirAll(s.jobsDir(), 0o755); err != nil {
		return nil, fmt.Errorf("service: data directory: %w", err)
	}
	recs, err := loadRecords(s.jobsDir(), s.log)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		j := &job{rec: r, plan: Plan{Workers: r.Workers, MaxIter: r.MaxIter, TimeLimit: time.Duration(r.Limit * float64(time.Second))}}
		if r.State == Running {
			// The previous service ended without recording the job's
			// end: killed or crashed, perhaps by the job.
			j.rec.Crashes++
		}
		switch {
		case !r.State.final() && j.rec.Crashes >= maxCrashes:
			now := time.Now().UTC()
			j.rec.State, j.rec.Finished = Failed, &now
			j.rec.Error = fmt.Sprintf("the service ended %d times while the job ran (killed or crashed): not run again", j.rec.Crashes)
			s.log.Warn("job failed: it was running at each of the last service ends", "job", r.ID, "ends", j.rec.Crashes)
			_ = s.save(j)
		case !r.State.final():
			// Interrupted by the previous service's end: run it again,
			// from the start (its trace starts over too).
			j.rec.State, j.rec.Started, j.rec.Iter = Queued, nil, 0
			j.rec.Dual, j.rec.Primal, j.rec.Gap = nil, nil, nil
			_ = s.save(j)
			s.log.Info("job queued again after a restart", "job", r.ID)
		}
		s.jobs[r.ID] = j
		s.order = append(s.order, r.ID)
	}
	s.mu.Lock()
	s.dispatch()
	s.mu.Unlock()
	return s, nil
}

// Close cancels the running jobs and waits for them. Unfinished jobs stay
// on disk as queued, and a later service runs them again.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
}

func (s *Service) jobsDir() string          { return filepath.Join(s.opts.Dir, "jobs") }
func (s *Service) dir(id string) string     { return filepath.Join(s.jobsDir(), id) }
func (s *Service) file(id, f string) string { return filepath.Join(s.dir(id), f) }

// modelFile is the name of a job's model file in format.
func modelFile(format string) string { return "model." + format }

// Submit stores the model read from body in format (a key of Formats),
// checks it with params, and queues the job. The job is its context's
// client's (the token's name that RequireToken or the NATS API found),
// within that client's MaxClientJobs.
func (s *Service) Submit(ctx context.Context, body io.Reader, format string, params map[string]string) (Status, error) {
	if _, ok := Formats[format]; !ok {
		return Status{}, Invalid(fmt.Errorf("format %q: want one of %s", format, formatList()))
	}
	client := clientOf(ctx)
	s.mu.Lock()
	closed := s.closed
	err := s.clientRoom(client)
	s.mu.Unlock()
	if closed {
		return Status{}, errUnavailable("the service is stopping")
	}
	if err != nil {
		return Status{}, err
	}
	id := newID()
	dir := s.dir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Status{}, fmt.Errorf("job %s: %w", id, err)
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	path := s.file(id, modelFile(format))
	if err := writeFile(path, func(w io.Writer) error {
		n, err := copyModel(w, body, s.opts.MaxModel)
		if err == nil && n == 0 {
			err = Invalid(errors.New("model: empty request body"))
		}
		return err
	}); err != nil {
		return Status{}, err
	}
	// The check reads the model into memory: MaxChecks at a time.
	select {
	case s.checks <- struct{}{}:
	case <-ctx.Done():
		return Status{}, errUnavailable(fmt.Sprintf("waiting to check the model: %v", context.Cause(ctx)))
	}
	plan, err := s.opts.Runner.Check(ctx, path, params) // its errors name the parameter or model.FORMAT
	<-s.checks
	if err != nil {
		return Status{}, err
	}
	rec := record{ID: id, State: Queued, Format: format, Params: params, Client: client, Workers: plan.Workers, MaxIter: plan.MaxIter,
		Limit: plan.TimeLimit.Seconds(), Created: time.Now().UTC()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Status{}, errUnavailable("the service is stopping")
	}
	if err := s.clientRoom(client); err != nil {
		return Status{}, err
	}
	if err := s.makeRoom(); err != nil {
		return Status{}, err
	}
	j := &job{rec: rec, plan: plan}
	if err := s.save(j); err != nil {
		return Status{}, err
	}
	keep = true
	s.jobs[id] = j
	s.order = append(s.order, id)
	s.log.Info("job queued", "job", id, "format", format, "workers", plan.Workers)
	s.dispatch()
	return s.status(j), nil
}

// clientRoom is nil when client may have one more unfinished job
// (MaxClientJobs), else the error (HTTP 429). s.mu is held.
func (s *Service) clientRoom(client string) error {
	n := 0
	for _, j := range s.jobs {
		if j.rec.Client == client && !j.rec.State.final() {
			n++
		}
	}
	if n >= s.opts.MaxClientJobs {
		who := "this client"
		if client != "" {
			who = "client " + client
		}
		return &apiError{http.StatusTooManyRequests, fmt.Sprintf("%s has %d unfinished jobs, the most allowed (--max-client-jobs); try again when one ends", who, n)}
	}
	return nil
}

// makeRoom evicts the oldest finished jobs until a new one fits under
// MaxJobs. s.mu is held.
func (s *Service) makeRoom() error {
	for len(s.order) >= s.opts.MaxJobs {
		i := slices.IndexFunc(s.order, func(id string) bool { return s.jobs[id].rec.State.final() })
		if i < 0 {
			return errUnavailable(fmt.Sprintf("%d jobs are queued or running, the most kept (--max-jobs); try again later", len(s.order)))
		}
		id := s.order[i]
		if err := os.RemoveAll(s.dir(id)); err != nil {
			return fmt.Errorf("evicting job %s: %w", id, err)
		}
		s.log.Info("job evicted", "job", id)
		delete(s.jobs, id)
		s.order = slices.Delete(s.order, i, i+1)
	}
	return nil
}

// dispatch starts the queued jobs that can start: distributed ones up to
// MaxStarted (they load their models and wait in the pool for their
// workers, reported queued until their first iteration), local ones while
// a slot is free; the others stay queued, their models on disk only. s.mu
// is held.
func (s *Service) dispatch() {
	if s.closed {
		return
	}
	for _, id := range s.order {
		j := s.jobs[id]
		if j.rec.State != Queued || j.cancel != nil {
			continue
		}
		if j.plan.Workers == 0 {
			if s.local >= s.opts.MaxLocal {
				continue
			}
			s.local++
			j.rec.State = Running
			now := time.Now().UTC()
			j.rec.Started = &now
		} else {
			if s.dist >= s.opts.MaxStarted {
				continue
			}
			s.dist++
		}
		ctx, cancel := context.WithCancel(s.ctx)
		j.cancel = cancel
		j.started = time.Now()
		_ = s.save(j)
		s.wg.Add(1)
		go s.run(ctx, j)
	}
}

// run runs j and records how it ended.
func (s *Service) run(ctx context.Context, j *job) {
	defer s.wg.Done()
	id := j.rec.ID
	s.log.Info("job started", "job", id)
	rec, closeTrace, err := s.openTrace(id)
	var res solver.Result
	var out json.RawMessage
	if err == nil {
		progress := func(p solver.Progress) {
			rec.Progress(p)
			s.mu.Lock()
			if j.rec.State == Queued { // a distributed job got its workers
				j.rec.State = Running
				now := time.Now().UTC()
				j.rec.Started = &now
				_ = s.save(j)
			}
			j.rec.Iter, j.rec.Seconds = p.Iteration, p.Elapsed.Seconds()
			j.rec.Dual, j.rec.Primal, j.rec.Gap = finite(p.Dual), finite(p.Primal), finite(p.Gap)
			s.mu.Unlock()
		}
		res, out, err = s.opts.Runner.Run(ctx, id, s.file(id, modelFile(j.rec.Format)), j.rec.Params, progress)
		if err == nil {
			// The trace ends on the result, as --trace's does: its last
			// row is the result's, merged with the last report's when
			// they are of the same iteration (trace.Recorder).
			err = rec.Finish(res)
		} else if ferr := rec.Flush(); ferr != nil {
			s.log.Warn("trace", "job", id, "err", ferr)
		}
		closeTrace()
	}
	if err == nil {
		err = writeFile(s.file(id, "result.json"), func(w io.Writer) error { _, err := w.Write(out); return err })
	}
	if err == nil && res.Assignment != nil && finite(res.Primal) != nil {
		err = writeFile(s.file(id, "result.mpe"), func(w io.Writer) error { return uai.WriteMPE(w, res.Assignment) })
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.plan.Workers == 0 {
		s.local-- // dispatch took a slot for it
	} else {
		s.dist--
	}
	j.cancel = nil
	switch {
	case s.closed && !j.cancelled:
		// Stopped with the service: queued again by the next one.
		j.rec.State = Queued
		s.log.Info("job interrupted by the service's end", "job", id)
	case err != nil:
		j.rec.State, j.rec.Error = Failed, err.Error()
		if j.cancelled {
			j.rec.State = Cancelled
		}
		s.log.Warn("job failed", "job", id, "err", err)
	default:
		j.rec.State = Done
		if j.cancelled {
			j.rec.State = Cancelled
		}
		j.rec.Status, j.rec.Iter, j.rec.Seconds = res.Status, res.Iterations, res.Elapsed.Seconds()
		j.rec.Dual, j.rec.Primal, j.rec.Gap = finite(res.Dual), finite(res.Primal), finite(res.Gap)
		s.log.Info("job finished", "job", id, "state", j.rec.State, "status", res.Status, "iterations", res.Iterations)
	}
	if j.rec.State.final() {
		now := time.Now().UTC()
		j.rec.Finished = &now
	}
	if err := s.save(j); err != nil {
		s.log.Error("saving job", "job", id, "err", err)
	}
	s.dispatch()
}

// openTrace starts the job's trace.csv afresh.
func (s *Service) openTrace(id string) (*trace.Recorder, func(), error) {
	f, err := os.Create(s.file(id, "trace.csv"))
	if err != nil {
		return nil, nil, fmt.Errorf("trace: %w", err)
	}
	rec, err := trace.NewRecorder(f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return rec, func() { f.Close() }, nil
}

// Cancel cancels a queued or running job; a finished one is left as it is.
func (s *Service) Cancel(id string) (Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return Status{}, errNotFound(id)
	}
	switch {
	case j.rec.State.final():
	case j.cancel != nil:
		j.cancelled = true
		j.cancel()
		s.log.Info("job cancel requested", "job", id)
	default: // queued, not started
		j.rec.State = Cancelled
		now := time.Now().UTC()
		j.rec.Finished = &now
		if err := s.save(j); err != nil {
			return Status{}, err
		}
	}
	return s.status(j), nil
}

// Get is a job's status.
func (s *Service) Get(id string) (Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return Status{}, errNotFound(id)
	}
	return s.status(j), nil
}

// List is every job's status, oldest first.
func (s *Service) List() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.status(s.jobs[id]))
	}
	return out
}

// Result is a finished job's result: the solve --json object, or with mpe
// the assignment in UAI MPE format. Unfinished or failed jobs have none
// (errNotReady, HTTP 409).
func (s *Service) Result(id string, mpe bool) ([]byte, error) {
	st, err := s.Get(id)
	if err != nil {
		return nil, err
	}
	if st.State != Done && st.State != Cancelled {
		return nil, errNotReady(st)
	}
	name := "result.json"
	if mpe {
		name = "result.mpe"
	}
	b, err := os.ReadFile(s.file(id, name))
	if errors.Is(err, os.ErrNotExist) {
		// Cancelled before any result, or no feasible assignment.
		return nil, errNotReady(st)
	}
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	return b, nil
}

// Trace is the job's convergence trace so far, as CSV.
func (s *Service) Trace(id string) ([]byte, error) {
	if _, err := s.Get(id); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(s.file(id, "trace.csv"))
	if errors.Is(err, os.ErrNotExist) {
		var buf bytesBuffer
		_, err = trace.NewWriter(&buf) // the header alone: no iteration yet
		return buf, err
	}
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	return b, nil
}

type bytesBuffer []byte

func (b *bytesBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

// status is j's API status. s.mu is held.
func (s *Service) status(j *job) Status {
	r := j.rec
	st := Status{ID: r.ID, State: r.State, Iteration: r.Iter, Dual: r.Dual, Primal: r.Primal, Gap: r.Gap,
		Workers: r.Workers, Seconds: r.Seconds, Status: r.Status, Error: r.Error, Format: r.Format, Params: r.Params,
		Client: r.Client, Created: r.Created, StartedAt: r.Started, FinishedAt: r.Finished}
	switch {
	case r.State.final():
		st.ETA = new(float64)
	case r.State == Running && r.Iter > 0:
		el := time.Since(j.started).Seconds()
		eta := math.Inf(1)
		if j.plan.MaxIter > 0 {
			eta = float64(j.plan.MaxIter-r.Iter) * el / float64(r.Iter)
		}
		if j.plan.TimeLimit > 0 {
			eta = min(eta, j.plan.TimeLimit.Seconds()-el)
		}
		st.ETA = finite(max(0, eta))
	}
	return st
}

// save writes j's record atomically. s.mu is held.
func (s *Service) save(j *job) error {
	b, err := json.MarshalIndent(j.rec, "", "  ")
	if err != nil {
		return fmt.Errorf("job %s: %w", j.rec.ID, err)
	}
	return writeFile(s.file(j.rec.ID, "job.json"), func(w io.Writer) error { _, err := w.Write(b); return err })
}

func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// newID draws a job id: "j" and 16 hex digits, a valid NATS token.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "j" + hex.EncodeToString(b[:])
}

// validID reports whether id could be one of newID's: anything else is
// unknown without touching the file system.
func validID(id string) bool {
	if len(id) != 17 || id[0] != 'j' {
		return false
	}
	_, err := hex.DecodeString(id[1:])
	return err == nil
}

// writeFile writes path through write atomically (a temporary file renamed
// into place).
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// loadRecords reads the job.json of every job directory under dir, oldest
// first. A directory without a readable record (a submission cut short) is
// removed.
func loadRecords(dir string, log *slog.Logger) ([]record, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	var recs []record
	for _, e := range ents {
		if !e.IsDir() || !validID(e.Name()) {
			continue
		}
		var r record
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "job.json"))
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err == nil && (r.ID != e.Name() || Formats[r.Format] == "") {
			err = fmt.Errorf("record of %s names job %q, format %q", e.Name(), r.ID, r.Format)
		}
		if err != nil {
			log.Warn("removing a job without a valid record", "job", e.Name(), "err", err)
			os.RemoveAll(filepath.Join(dir, e.Name()))
			continue
		}
		recs = append(recs, r)
	}
	slices.SortStableFunc(recs, func(a, b record) int { return a.Created.Compare(b.Created) })
	return recs, nil
}

// Formats are the model formats a job may be uploaded in, with the
// Content-Type that names each.
var Formats = map[string]string{
	"uai":     "text/plain",
	"uai.gz":  "application/gzip",
	"json":    "application/json",
	"msgpack": "application/msgpack",
	// toulbar2's formats are named by ?format= only (a .cfn body would
	// be taken for ddrun's JSON, a .wcsp body for UAI text).
	"wcsp":    "text/plain",
	"wcsp.gz": "application/gzip",
	"cfn":     "application/json",
	"cfn.gz":  "application/gzip",
}

func formatList() string { return "uai, uai.gz, json, msgpack, wcsp, wcsp.gz, cfn or cfn.gz" }

// ParseParams turns a query's values into a job's parameters: one value
// each, names from the given list.
func ParseParams(q url.Values, allowed []string) (map[string]string, error) {
	p := map[string]string{}
	for k, vs := range q {
		if k == "format" {
			continue
		}
		if !slices.Contains(allowed, k) {
			return nil, Invalid(fmt.Errorf("query parameter %q: unknown (want %v)", k, allowed))
		}
		if len(vs) != 1 {
			return nil, Invalid(fmt.Errorf("query parameter %q: given %d times", k, len(vs)))
		}
		p[k] = vs[0]
	}
	return p, nil
}

// Counts returns how many jobs are queued and how many are running.
func (s *Service) Counts() (queued, running int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs {
		switch j.rec.State {
		case Queued:
			queued++
		case Running:
			running++
		}
	}
	return queued, running
}
