package engine

import (
	"math"
	"time"

	"github.com/ddrun/ddrun/anytime"
	"github.com/ddrun/ddrun/solver"
)

// Result is the one result schema of a run: what `coordinator solve
// --json` and `coordinator run --json` print, what a Raft leader records
// for a later leader to print, and the job service's result body
// (docs/openapi.yaml, Result, names these fields). Numbers that are not
// finite (no feasible assignment, an infeasible model) are null.
type Result struct {
	// Status is why the run stopped (solver.Status).
	Status solver.Status `json:"status"`
	// Primal is the best assignment's score, Dual the bound (the lowest
	// of every phase), Gap Dual-Primal, Relaxed the relaxation's own
	// bound.
	Primal  *float64 `json:"primal"`
	Dual    *float64 `json:"dual"`
	Gap     *float64 `json:"gap"`
	Relaxed *float64 `json:"relaxed"`
	// Cost is the best assignment's objective in the model file's own
	// units and direction, where the file has one (a .wcsp or .cfn file's cost,
	// what toulbar2 prints as its optimum); absent otherwise.
	Cost *float64 `json:"cost,omitempty"`
	// Iterations of every phase added up, and the run's seconds.
	Iterations int     `json:"iterations"`
	Seconds    float64 `json:"seconds"`
	// Assignment is the best assignment (null without a finite primal).
	Assignment []int `json:"assignment"`
	// AssignmentFile is where --out wrote the assignment; Omitted says
	// that the assignment, over MaxAssignment variables, is not in this
	// object (it is in the file, when there is one).
	AssignmentFile string `json:"assignment_file,omitempty"`
	Omitted        bool   `json:"assignment_omitted,omitempty"`
	// Algo ran on Threads threads (each worker's, in a distributed run).
	Algo    string `json:"algo"`
	Threads int    `json:"threads"`
	// Workers, Failovers and Redone (iterations run again after a
	// checkpoint) describe a distributed run.
	Workers   int  `json:"workers,omitempty"`
	Failovers *int `json:"failovers,omitempty"`
	Redone    *int `json:"redone_iterations,omitempty"`
	// Insecure: a distributed run without a job key (--insecure), whose
	// messages were not authenticated (docs/security.md).
	Insecure bool `json:"insecure,omitempty"`
	// Sharded describes a sharded run (run --sharded).
	Sharded *Sharded  `json:"sharded,omitempty"`
	Model   ModelSize `json:"model"`
	// Why the algorithm was chosen, when none was given.
	Why string `json:"why,omitempty"`
	// Phase closed the gap of an anytime run (or was its last), and
	// Phases is how each phase went.
	Phase  string  `json:"phase,omitempty"`
	Phases []Phase `json:"phases,omitempty"`
}

// ModelSize is the model's size in a Result: its variables, and its
// factors as the file has them.
type ModelSize struct {
	Variables int `json:"variables"`
	Factors   int `json:"factors"`
}

// Phase is one phase of an anytime run in a Result.
type Phase struct {
	Phase      string   `json:"phase"`
	About      string   `json:"about"`
	Status     string   `json:"status"`
	Dual       *float64 `json:"dual"`
	Primal     *float64 `json:"primal"`
	Iterations int      `json:"iterations"`
	Nodes      int      `json:"nodes,omitempty"`
	Seconds    float64  `json:"seconds"`
}

// Sharded describes a sharded run in a Result.
type Sharded struct {
	Boundary int `json:"boundary_variables"`
	// PlanSeconds: the coordinator's passes over the file; SetupSeconds:
	// from the start of the command until every worker had built its part
	// (the time to the first iteration).
	PlanSeconds  float64 `json:"plan_seconds"`
	SetupSeconds float64 `json:"setup_seconds"`
	// Peak RSS in MiB: the coordinator's at the end, each worker's once it
	// had built its part.
	CoordinatorRSSMB int64   `json:"coordinator_peak_rss_mb"`
	WorkerRSSMB      []int64 `json:"worker_peak_rss_mb"`
	// BytesPerIteration is the coordinator's NATS traffic (in and out)
	// over the run, per iteration.
	BytesPerIteration uint64 `json:"bytes_per_iteration"`
	// Failovers counts the epochs a lost worker ended, Restored those
	// that went on from a checkpoint, Redone the iterations run again.
	Failovers int `json:"failovers"`
	Restored  int `json:"restored"`
	Redone    int `json:"redone"`
}

// Distributed is what a distributed run adds to its Result: its workers
// (0: the run was in one process), the failovers and the redone
// iterations.
type Distributed struct {
	Workers, Failovers, Redone int
}

// MaxAssignment is the largest assignment (in variables) that a Result
// holds: a bigger one only goes to the --out file. It also keeps the
// result a Raft leader records well under jobstate.MaxCommandBytes (1 MiB).
const MaxAssignment = 100_000

// Finite is v, or nil when it is not finite.
func Finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// NewResult is res of job j in the result schema; a distributed run's
// (d.Workers > 0) with its workers, failovers and redone iterations, and
// out the --out file ("": none).
func NewResult(res solver.Result, j *Job, d Distributed, out string) Result {
	r := Result{
		Status:     res.Status,
		Primal:     Finite(res.Primal),
		Dual:       Finite(res.Dual),
		Gap:        Finite(res.Gap),
		Relaxed:    Finite(res.Relaxed),
		Iterations: res.Iterations,
		Seconds:    res.Elapsed.Seconds(),
		Assignment: res.Assignment,
		Algo:       j.Algorithm.Name,
		Threads:    j.Threads,
		Model:      ModelSize{Variables: j.Model.NumVars(), Factors: len(j.Model.Factors) + j.Folded},
		Workers:    d.Workers,
		Why:        j.Why,
		Phase:      string(j.Phase),
		Phases:     phases(j.Phases),
	}
	if d.Workers > 0 {
		r.Failovers, r.Redone = &d.Failovers, &d.Redone
	}
	if r.Primal == nil {
		r.Assignment = nil
	} else if j.Cost != nil {
		r.Cost = Finite(j.Cost(res.Primal))
	}
	if r.Assignment != nil && out != "" {
		r.AssignmentFile = out
	}
	if len(r.Assignment) > MaxAssignment {
		r.Assignment, r.Omitted = nil, true
	}
	return r
}

func phases(ps []anytime.PhaseResult) []Phase {
	var out []Phase
	for _, p := range ps {
		out = append(out, Phase{Phase: string(p.Phase), About: p.About, Status: string(p.Status), Dual: Finite(p.Dual),
			Primal: Finite(p.Primal), Iterations: p.Iterations, Nodes: p.Nodes, Seconds: p.Seconds})
	}
	return out
}

// Solver is the result as a solver.Result, as far as the schema holds it
// (a result recorded by a Raft leader, printed by the next).
func (r *Result) Solver() solver.Result {
	val := func(v *float64, none float64) float64 {
		if v == nil {
			return none
		}
		return *v
	}
	return solver.Result{Status: r.Status, Iterations: r.Iterations, Elapsed: time.Duration(r.Seconds * float64(time.Second)),
		Dual: val(r.Dual, math.Inf(1)), Primal: val(r.Primal, math.Inf(-1)), Gap: val(r.Gap, math.NaN())}
}
