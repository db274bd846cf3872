package launch

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/service"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// ServiceParams are the job service's parameters beyond workers (the
// service's own: 0 runs a job in the service's process, N on N workers):
// each is the engine setting of its name written as a parameter
// (engine.Param: max_iter is max-iter).
var ServiceParams = []string{"algo", "max-iter", "time-limit", "tol", "threads", "exact", "tighten", "slaves", "step", "eta", "adapt-eta", "tau", "eps-descent"}

// Params are the names of the parameters the job service takes (for
// service.Options.Params): the settings' in order, then workers.
func Params() []string {
	var names []string
	for _, n := range ServiceParams {
		names = append(names, engine.Param(n))
	}
	slices.Sort(names)
	return append(names, "workers")
}

// ServiceRunner is the job service's Runner: a job's parameters are the
// engine's settings, its model is read as solve reads one, and it runs
// through Run, in the service's process or on workers over Transport.
type ServiceRunner struct {
	Transport         transport.Transport
	Wait, StepTimeout time.Duration
	Logger            *slog.Logger
}

// settings parses a job's parameters into the engine's settings (and the
// workers), settled.
func (r *ServiceRunner) settings(params map[string]string) (engine.Settings, int, error) {
	s := engine.Defaults()
	s.Given = map[string]bool{}
	workers := 0
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		if k == "workers" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return s, 0, service.Invalid(fmt.Errorf("workers=%q: want a number >= 0", v))
			}
			workers = n
			continue
		}
		name := strings.ReplaceAll(k, "_", "-")
		if !slices.Contains(ServiceParams, name) || engine.Param(name) != k {
			return s, 0, service.Invalid(fmt.Errorf("parameter %q: unknown", k))
		}
		if err := s.Set(name, v); err != nil {
			return s, 0, service.Invalid(fmt.Errorf("invalid value %q for flag %s: %v", v, k, err))
		}
	}
	if n := runtime.GOMAXPROCS(0); s.Threads > n {
		// More goroutines than CPUs buy nothing, and a huge number
		// takes the machine (and the job's cancellation) with it.
		return s, 0, service.Invalid(fmt.Errorf("threads=%d: at most %d on this machine (its CPUs)", s.Threads, n))
	}
	s.Distributed = workers > 0
	s.Settle()
	return s, workers, nil
}

// load reads the job's model under its settings, as solve does; h (nil:
// none) gets the model's bytes for a distributed job's identity. A job on
// workers that runs sharded (WholeReason says none of why it would not)
// is not read: its model is converted instead (shardedModel), and sharded
// tells the run where the workers read it.
func (r *ServiceRunner) load(ctx context.Context, path string, params map[string]string, h io.Writer) (j *engine.Job, workers int, sharded *Sharded, err error) {
	s, workers, err := r.settings(params)
	if err != nil {
		return nil, 0, nil, err
	}
	j, err = engine.Prepare(s)
	if err == nil && workers > 0 && WholeReason(j, path, false) == "" {
		sharded, err = r.shardedModel(ctx, path)
	} else if err == nil {
		err = Load(ctx, j, Input{Path: path, Tee: h})
		if err == nil && workers > 0 && !j.Settings.Exact {
			err = j.Distributable("workers > 0") // exact runs any algorithm's nodes on workers (dsearch)
		}
	}
	if err != nil {
		return nil, 0, nil, serviceError(err, path)
	}
	return j, workers, sharded, nil
}

// shardedModel is where the workers of a sharded job on the model at path
// read it: the model converted, streaming, into the job's directory
// (STATE/NAME.ddx beside it, STATE its state directory), once: by the
// check at submission, which so validates the model without holding it,
// and kept for the run (a queued job's model waits there, converted).
func (r *ServiceRunner) shardedModel(ctx context.Context, path string) (*Sharded, error) {
	stateDir := filepath.Join(filepath.Dir(path), "state")
	converted := filepath.Join(stateDir, filepath.Base(path)+indexed.Ext)
	if _, err := os.Stat(converted); err != nil {
		log := r.Logger
		if log == nil {
			log = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		if converted, err = shardInput(ctx, path, stateDir, 0, "", nil, indexed.WriteReport{}, log); err != nil {
			return nil, err
		}
	}
	return &Sharded{Path: converted, StateDir: stateDir, Fallback: &Input{Path: path}}, nil
}

// serviceError is err as the job service says it: the settings named as
// parameters and the model by its file name, not the service's path; an
// error of the client's input is service.Invalid.
func serviceError(err error, path string) error {
	msg := err.Error()
	var se *engine.Error
	if errors.As(err, &se) {
		msg = se.Named(engine.Param)
	}
	msg = strings.ReplaceAll(msg, filepath.Join(filepath.Dir(path), "state")+string(filepath.Separator), "")
	msg = strings.ReplaceAll(msg, path, filepath.Base(path))
	msg = strings.ReplaceAll(msg, "--time-limit", "time_limit")
	if IsInput(err) {
		return service.Invalid(errors.New(msg))
	}
	return errors.New(msg)
}

// Check validates a job's parameters and model (service.Runner).
func (r *ServiceRunner) Check(ctx context.Context, path string, params map[string]string) (service.Plan, error) {
	s, _, err := r.settings(params) // the time limit before load spends some of it
	if err != nil {
		return service.Plan{}, err
	}
	_, workers, _, err := r.load(ctx, path, params, nil)
	if err != nil {
		return service.Plan{}, err
	}
	return service.Plan{Workers: workers, MaxIter: s.MaxIter, TimeLimit: s.TimeLimit}, nil
}

// Run runs a job (service.Runner): its result, and that result in the one
// result schema (engine.Result) as JSON.
func (r *ServiceRunner) Run(ctx context.Context, id, path string, params map[string]string, progress func(solver.Progress)) (solver.Result, json.RawMessage, error) {
	h := sha256.New()
	j, workers, sharded, err := r.load(ctx, path, params, h)
	if err != nil {
		return solver.Result{}, nil, err
	}
	t := Target{Workers: workers, Transport: r.Transport, Job: id, Name: id, Hash: h.Sum(nil), Wait: r.Wait, StepTimeout: r.StepTimeout,
		Sharded: sharded, Assignment: true, Logger: r.Logger.With("job", id)}
	if what, _ := t.NoSearch(&j.Settings); what != "" && j.Settings.AnytimeOn {
		j.Settings.AnytimeOn = false // as run: the relaxation alone (time_limit without algo)
	}
	if sharded != nil {
		// The workers stream the assignment to the job's result file,
		// which the service serves (?format=uai) as it is.
		t.Out = filepath.Join(filepath.Dir(path), "result.mpe")
	}
	o, err := Run(ctx, j, t, Hooks{Hooks: engine.Hooks{Progress: progress}})
	if err != nil {
		return o.Result, nil, err
	}
	if o.Report.AssignmentFile != "" {
		o.Report.AssignmentFile = filepath.Base(o.Report.AssignmentFile) // the service's paths are its own
	}
	b, err := json.Marshal(o.Report)
	return o.Result, b, err
}
