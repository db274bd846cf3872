package launch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/service"
)

func chain() *model.Model {
	m := model.New([]int{3, 3, 3})
	for i := 0; i < 2; i++ {
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{i, i + 1}, Table: []float64{2, 0, 1, 0, 2, 0, 1, 0, 2}})
	}
	return m
}

// A job in this process is the engine's: the same result, and its report
// in the one result schema.
func TestRunInProcess(t *testing.T) {
	s := engine.Defaults()
	s.Given = map[string]bool{"algo": true}
	s.Algo, s.Threads = "admm", 1
	want, _, err := engine.Solve(context.Background(), chain(), nil, s, engine.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := engine.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Bind(chain(), nil); err != nil {
		t.Fatal(err)
	}
	o, err := Run(context.Background(), j, Target{Out: "x.mpe"}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Ran || o.Result.Dual != want.Dual || o.Result.Primal != want.Primal || o.Result.Iterations != want.Iterations {
		t.Errorf("ran %v, %+v; want %+v", o.Ran, o.Result, want)
	}
	if o.Report.Algo != "admm" || o.Report.Workers != 0 || o.Report.AssignmentFile != "x.mpe" || *o.Report.Dual != want.Dual {
		t.Errorf("report %+v", o.Report)
	}
}

// The service's parameters are the settings written as parameters, then
// workers; what a client gets wrong is a 400 that names the parameter.
func TestServiceParams(t *testing.T) {
	p := Params()
	if p[len(p)-1] != "workers" || !slices.Contains(p, "max_iter") || !slices.Contains(p, "eps_descent") || slices.Contains(p, "max-iter") {
		t.Errorf("params %v", p)
	}
	var r ServiceRunner
	for _, c := range []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"max_iter": "abc"}, `invalid value "abc" for flag max_iter: parse error`},
		{map[string]string{"iters": "3"}, `parameter "iters": unknown`},
		{map[string]string{"max-iter": "3"}, `parameter "max-iter": unknown`},
		{map[string]string{"workers": "-1"}, `workers="-1": want a number >= 0`},
	} {
		_, _, err := r.settings(c.params)
		var ie service.InvalidError
		if !errors.As(err, &ie) || err.Error() != c.want {
			t.Errorf("%v: %v, want the 400 %q", c.params, err, c.want)
		}
	}
	s, workers, err := r.settings(map[string]string{"max_iter": "7", "time_limit": "2", "workers": "3"})
	if err != nil || workers != 3 || s.MaxIter != 7 || !s.Distributed || !s.Given["time-limit"] {
		t.Errorf("settings %+v, workers %d, %v", s, workers, err)
	}
}

// The service names the model by its file name and the settings as
// parameters, and a model its settings cannot run is the client's.
func TestServiceCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.uai")
	if err := os.WriteFile(path, []byte("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 2 3 4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var r ServiceRunner
	plan, err := r.Check(context.Background(), path, map[string]string{"max_iter": "9"})
	if err != nil || plan.Workers != 0 || plan.MaxIter != 9 {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	for params, want := range map[string]string{"algo=magic": "algo: unknown algorithm", "algo=cmp workers=2": "workers > 0: algo cmp runs only in solve"} {
		m := map[string]string{}
		for _, kv := range strings.Fields(params) {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		_, err := r.Check(context.Background(), path, m)
		var ie service.InvalidError
		if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "--") {
			t.Errorf("%s: %v, want a 400 starting %q", params, err, want)
		}
	}
	os.WriteFile(path, []byte("garbage"), 0o600)
	_, err = r.Check(context.Background(), path, nil)
	var ie service.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "model.uai") || strings.Contains(err.Error(), dir) {
		t.Errorf("garbage: %v, want a 400 naming model.uai only", err)
	}
	// On workers the model is converted (sharded), not read: the same
	// error, naming the client's file, not the job's state directory.
	_, err = r.Check(context.Background(), path, map[string]string{"workers": "2"})
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "model.uai") || strings.Contains(err.Error(), dir) {
		t.Errorf("garbage on workers: %v, want a 400 naming model.uai only", err)
	}
	os.WriteFile(path, []byte("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 2 3 4\n"), 0o600)
	plan, err = r.Check(context.Background(), path, map[string]string{"workers": "2"})
	if err != nil || plan.Workers != 2 {
		t.Fatalf("on workers: plan %+v, %v", plan, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "model.uai.ddx")); err != nil {
		t.Errorf("the check left no converted model for the run: %v", err)
	}
}

// A sharded run takes DD-ADMM over one slave per factor on an indexed
// file, and nothing it cannot apply to parts.
func TestShardedCheck(t *testing.T) {
	job := func(set ...string) *engine.Job { return distributedJob(t, set...) }
	for _, c := range []struct {
		j    *engine.Job
		path string
		ev   bool
		want string
	}{
		{job(), "m.ddx", false, ""},
		{job("algo", "trws"), "m.ddx", false, ""}, // distributed TRW-S (launch/dtrws.go)
		{job("algo", "cmp"), "m.ddx", false, "run: --algo cmp runs only in solve"},
		{job("slaves", "chains"), "m.ddx", false, "run --sharded: --slaves chains: a sharded run has one slave per factor"},
		{job(), "m.ddx", true, "run --sharded: --evidence with an indexed model"},
		{job(), "m.uai", true, ""}, // folded in as the model is converted
		{job("tighten", "cycles"), "m.ddx", false, "run --sharded: --tighten cycles needs the whole model"},
		{job(), "m.uai", false, ""}, // converted into the state directory
		{job(), "m.msgpack", false, ""},
		{job(), "m.txt", false, "run: m.txt: unknown model format"},
	} {
		err := (&Sharded{Path: c.path}).Check(c.j, c.ev)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.path, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want) || !IsInput(err)):
			t.Errorf("%v, want an input error %q", err, c.want)
		}
	}
}

// TestWholeReason: what keeps a distributed run on the whole model, and
// that a plain run of dual decomposition is sharded.
func TestWholeReason(t *testing.T) {
	job := func(set ...string) *engine.Job { return distributedJob(t, set...) }
	for _, c := range []struct {
		j    *engine.Job
		ev   bool
		want string
	}{
		{job(), false, ""},
		{job("algo", "subgradient"), false, ""},
		{job(), true, ""},                 // m.uai: folded in as it is converted
		{job("exact", "true"), false, ""}, // the workers read the converted file
		{job("exact", "true", "algo", "cmp"), false, ""},
		{job("exact", "true", "tighten", "cycles"), false, "--tighten cycles"},
		{job("slaves", "chains"), false, "--slaves chains"},
		{job("tighten", "cycles"), false, "--tighten cycles"},
		{job("algo", "trws"), false, ""}, // sharded: distributed TRW-S
		{job("algo", "cmp"), false, "--algo cmp"},
		{job("anytime", "true"), false, ""},  // the search: workers read the whole file
		{job("time-limit", "10"), false, ""}, // the phases lose their search instead
	} {
		if got := WholeReason(c.j, "m.uai", c.ev); !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("WholeReason = %q, want %q...", got, c.want)
		}
	}
	// Evidence with an indexed model (which is not converted) keeps the
	// whole model.
	for _, j := range []*engine.Job{job(), job("exact", "true")} {
		if got := WholeReason(j, "m.ddx", true); !strings.HasPrefix(got, "--evidence with an indexed model") {
			t.Errorf("WholeReason with evidence and a .ddx = %q", got)
		}
	}
}

// distributedJob is a distributed run's job with the given settings (name,
// value, ...), each marked given as a flag would be.
func distributedJob(t *testing.T, set ...string) *engine.Job {
	t.Helper()
	s := engine.Defaults()
	s.Given, s.Distributed = map[string]bool{}, true
	for i := 0; i+1 < len(set); i += 2 {
		if err := s.Set(set[i], set[i+1]); err != nil {
			t.Fatal(err)
		}
		s.Given[set[i]] = true
	}
	j, err := engine.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	return j
}
