package metrics

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ddrun/ddrun/solver"
)

// Role says which series a process exports.
type Role string

// The roles.
const (
	// Coordinator: a job's progress, its workers' step times, checkpoints,
	// leadership and the job service's queue.
	Coordinator Role = "coordinator"
	// Worker: the steps answered and the parts held.
	Worker Role = "worker"
)

// Options configures New.
type Options struct {
	Role Role
	// Now is the clock of the checkpoint age (nil: time.Now).
	Now func() time.Time
}

// stepBuckets are the step times' histogram buckets, in seconds: from a
// millisecond (a small part) to a minute (a part of millions of factors).
var stepBuckets = prometheus.ExponentialBucketsRange(0.001, 60, 12)

// Metrics is one process's registry and its series. Its methods are safe
// for concurrent use, and a nil *Metrics ignores them, so that callers
// need not test whether --metrics was given.
type Metrics struct {
	role Role
	reg  *prometheus.Registry
	now  func() time.Time

	// Coordinator.
	iteration, dual, primal, gap prometheus.Gauge
	primalRes, dualRes, eta      prometheus.Gauge
	workerStep                   *prometheus.HistogramVec
	workers                      prometheus.Gauge
	leads                        func() bool // guarded by mu
	jobsQueued, jobsRunning      prometheus.Gauge
	checkpoints                  *prometheus.CounterVec
	checkpointDur                prometheus.Histogram
	checkpointAt                 time.Time // guarded by mu
	answered                     prometheus.Counter
	stepSeconds                  prometheus.Histogram
	parts                        prometheus.Gauge
	mu                           sync.Mutex
	traffic                      func() (in, out uint64)
	ready                        error // nil: ready, as far as SetReady says
	checks                       []func() error
	created                      time.Time
}

// New returns the Metrics of a process in role o.Role, its series
// registered on a registry of its own, with the Go runtime's and the
// process's collectors. It starts not ready ("starting").
func New(o Options) (*Metrics, error) {
	if o.Role != Coordinator && o.Role != Worker {
		return nil, fmt.Errorf("metrics: role %q: want %q or %q", o.Role, Coordinator, Worker)
	}
	m := &Metrics{role: o.Role, reg: prometheus.NewRegistry(), now: o.Now, ready: errors.New("starting")}
	if m.now == nil {
		m.now = time.Now
	}
	m.created = m.now()
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	cs := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ddrun_transport_received_bytes_total",
			Help: "Bytes received on the NATS connection."}, func() float64 { in, _ := m.bytes(); return float64(in) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ddrun_transport_sent_bytes_total",
			Help: "Bytes sent on the NATS connection."}, func() float64 { _, out := m.bytes(); return float64(out) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ddrun_ready",
			Help: "1 when /readyz answers 200, else 0."}, func() float64 {
			if m.Ready() != nil {
				return 0
			}
			return 1
		}),
	}
	switch o.Role {
	case Coordinator:
		m.iteration = gauge("ddrun_coordinator_iteration", "The latest iteration reported by the running job.")
		m.dual = gauge("ddrun_coordinator_dual_bound", "The best (lowest) valid upper bound on the MAP score so far (+Inf before any).")
		m.primal = gauge("ddrun_coordinator_primal_score", "The score of the best assignment found so far (-Inf before any).")
		m.gap = gauge("ddrun_coordinator_gap", "Dual bound minus primal score.")
		m.primalRes = gauge("ddrun_coordinator_primal_residual", "The latest normalised primal residual (disagreement of the replicas).")
		m.dualRes = gauge("ddrun_coordinator_dual_residual", "The latest normalised dual residual (change of the consensus).")
		m.eta = gauge("ddrun_coordinator_eta", "The ADMM penalty eta (the step size for DD-subgradient).")
		m.workerStep = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ddrun_coordinator_worker_step_seconds",
			Help: "Time from sending a worker an iteration's step to accepting its answer, by worker.", Buckets: stepBuckets}, []string{"worker"})
		m.workers = gauge("ddrun_coordinator_workers", "Workers holding a part of the running job.")
		m.jobsQueued = gauge("ddrun_jobs_queued", "Jobs accepted by the job service and waiting to run.")
		m.jobsRunning = gauge("ddrun_jobs_running", "Jobs running.")
		m.checkpoints = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ddrun_coordinator_checkpoints_total",
			Help: "Checkpoints taken, by result (ok or failed)."}, []string{"result"})
		m.checkpointDur = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ddrun_coordinator_checkpoint_duration_seconds",
			Help: "Time to take a checkpoint: encoding the state and, with a store, writing and recording it.", Buckets: stepBuckets})
		cs = append(cs, m.iteration, m.dual, m.primal, m.gap, m.primalRes, m.dualRes, m.eta, m.workerStep,
			m.workers, m.jobsQueued, m.jobsRunning, m.checkpoints, m.checkpointDur,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ddrun_coordinator_leader",
				Help: "1 while this coordinator leads its job (always, without Raft), else 0."}, func() float64 {
				m.mu.Lock()
				f := m.leads
				m.mu.Unlock()
				return b2f(f != nil && f())
			}),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ddrun_coordinator_checkpoint_age_seconds",
				Help: "Seconds since the latest checkpoint succeeded (since the process started, before the first)."}, m.checkpointAge))
		m.dual.Set(math.Inf(1))
		m.primal.Set(math.Inf(-1))
		m.gap.Set(math.Inf(1))
		m.checkpoints.WithLabelValues("ok")
		m.checkpoints.WithLabelValues("failed")
	case Worker:
		m.answered = prometheus.NewCounter(prometheus.CounterOpts{Name: "ddrun_worker_iterations_total",
			Help: "Iterations (steps) this worker computed and answered."})
		m.stepSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ddrun_worker_step_seconds",
			Help: "Time to compute one step of the part held.", Buckets: stepBuckets})
		m.parts = gauge("ddrun_worker_parts", "Parts of a job this worker holds (0 or 1).")
		cs = append(cs, m.answered, m.stepSeconds, m.parts)
	}
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return m, nil
}

// Registry returns the process's registry, for series of the caller's own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SetTraffic sets the function that reads the bytes received and sent on
// the connection (transport.NATS's connection statistics); it is called at
// every scrape, never in a hot loop.
func (m *Metrics) SetTraffic(f func() (in, out uint64)) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.traffic = f
	m.mu.Unlock()
}

func (m *Metrics) bytes() (in, out uint64) {
	m.mu.Lock()
	f := m.traffic
	m.mu.Unlock()
	if f == nil {
		return 0, 0
	}
	return f()
}

// SetReady says whether the process is ready, and why not (reason, one
// line) when it is not. Checks added by AddReadyCheck must pass too.
func (m *Metrics) SetReady(ok bool, reason string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ok {
		m.ready = nil
		return
	}
	if reason == "" {
		reason = "not ready"
	}
	m.ready = errors.New(reason)
}

// AddReadyCheck adds a condition of readiness, evaluated at every
// /readyz: the process is not ready while check returns an error (its
// message is the reason).
func (m *Metrics) AddReadyCheck(check func() error) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.checks = append(m.checks, check)
	m.mu.Unlock()
}

// Ready returns nil when the process is ready, else why not.
func (m *Metrics) Ready() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	err, checks := m.ready, m.checks
	m.mu.Unlock()
	if err != nil {
		return err
	}
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// ObserveProgress records a coordinator's progress report.
func (m *Metrics) ObserveProgress(p solver.Progress) {
	if !m.is(Coordinator) {
		return
	}
	m.bounds(p.Iteration, p.Dual, p.Primal, p.Gap)
	m.primalRes.Set(filled(p, solver.HasPrimalRes, p.PrimalRes))
	m.dualRes.Set(filled(p, solver.HasDualRes, p.DualRes))
	m.eta.Set(filled(p, solver.HasEta, p.Eta))
}

// filled is v when the algorithm reporting p fills field f, else NaN (TRW-S
// has no residuals or eta: a 0 would read as converged).
func filled(p solver.Progress, f solver.Field, v float64) float64 {
	if !p.Has(f) {
		return math.NaN()
	}
	return v
}

// ObserveResult records the end of a coordinator's run: its last
// iteration and bounds (the result may differ from the last report: a
// final polish, a rescoring, or a Raft member's run).
func (m *Metrics) ObserveResult(r solver.Result) {
	if !m.is(Coordinator) {
		return
	}
	m.bounds(r.Iterations, r.Dual, r.Primal, r.Gap)
}

func (m *Metrics) bounds(iter int, dual, primal, gap float64) {
	m.iteration.Set(float64(iter))
	m.dual.Set(dual)
	m.primal.Set(primal)
	m.gap.Set(gap)
}

// ObserveStep records that worker answered a step d after it was sent (a
// coordinator's view).
func (m *Metrics) ObserveStep(worker string, d time.Duration) {
	if !m.is(Coordinator) {
		return
	}
	m.workerStep.WithLabelValues(worker).Observe(d.Seconds())
}

// SetWorkers sets the number of workers holding a part of the job.
func (m *Metrics) SetWorkers(n int) {
	if !m.is(Coordinator) {
		return
	}
	m.workers.Set(float64(n))
}

// SetLeader says whether this coordinator leads its job.
func (m *Metrics) SetLeader(leads bool) {
	m.SetLeaderFunc(func() bool { return leads })
}

// SetLeaderFunc sets the function that says, at every scrape, whether
// this coordinator leads (a Raft group's IsLeader).
func (m *Metrics) SetLeaderFunc(leads func() bool) {
	if !m.is(Coordinator) {
		return
	}
	m.mu.Lock()
	m.leads = leads
	m.mu.Unlock()
}

// SetJobs sets the job service's queue: jobs waiting and running.
func (m *Metrics) SetJobs(queued, running int) {
	if !m.is(Coordinator) {
		return
	}
	m.jobsQueued.Set(float64(queued))
	m.jobsRunning.Set(float64(running))
}

// ObserveCheckpoint records a checkpoint that took d (err != nil: it
// failed; the age counts from the latest that succeeded).
func (m *Metrics) ObserveCheckpoint(d time.Duration, err error) {
	if !m.is(Coordinator) {
		return
	}
	if err != nil {
		m.checkpoints.WithLabelValues("failed").Inc()
		return
	}
	m.checkpoints.WithLabelValues("ok").Inc()
	m.checkpointDur.Observe(d.Seconds())
	m.mu.Lock()
	m.checkpointAt = m.now()
	m.mu.Unlock()
}

func (m *Metrics) checkpointAge() float64 {
	m.mu.Lock()
	at := m.checkpointAt
	m.mu.Unlock()
	if at.IsZero() {
		at = m.created
	}
	return m.now().Sub(at).Seconds()
}

// ObserveWorkerStep records a step a worker computed in d and answered.
func (m *Metrics) ObserveWorkerStep(d time.Duration) {
	if !m.is(Worker) {
		return
	}
	m.answered.Inc()
	m.stepSeconds.Observe(d.Seconds())
}

// SetParts sets the number of parts a worker holds.
func (m *Metrics) SetParts(n int) {
	if !m.is(Worker) {
		return
	}
	m.parts.Set(float64(n))
}

// is says whether m exports role's series (a nil m exports none).
func (m *Metrics) is(role Role) bool { return m != nil && m.role == role }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
