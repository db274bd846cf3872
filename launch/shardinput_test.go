package launch

import (
	"context"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/transport"
)

// workers serves n workers (ServeWorker) on an in-process transport until
// the test ends.
func workers(t *testing.T, n int) transport.Transport {
	tr := transport.NewInProc()
	ctx, cancel := context.WithCancel(context.Background())
	states := t.TempDir() // the workers' shared state directory
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range n {
		wg.Go(func() {
			if err := ServeWorker(ctx, tr, Worker{Name: string(rune('a' + i)), Threads: 1, StateDir: states, ModelRoots: []string{os.TempDir()}}); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		})
	}
	return tr
}

func admmJob(t *testing.T) *engine.Job {
	s := engine.Defaults()
	s.Given, s.Distributed = map[string]bool{"algo": true}, true
	s.Algo, s.Threads, s.MaxIter, s.Tol = "admm", 1, 100, 0
	j, err := engine.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestDefaultShardedRun: a run sharded by default converts a msgpack
// model into its state directory and reaches solve's iterations and dual
// with a primal within 0.1%, the exact score of --out; a model the plan
// refuses (a forbidden state) runs whole instead, solve's result to the
// bit.
func TestDefaultShardedRun(t *testing.T) {
	dir := t.TempDir()
	tr := workers(t, 2)
	grid := generate.Potts(generate.GridOptions{Height: 8, Width: 9, Labels: 3, Rho: 3, Seed: 3})
	hard := generate.Potts(generate.GridOptions{Height: 4, Width: 5, Labels: 3, Rho: 3, Seed: 4})
	hard.Unaries(7)[1] = math.Inf(-1)
	for i, c := range []struct {
		m       *model.Model
		name    string
		sharded bool
	}{{grid, "grid.msgpack", true}, {hard, "hard.uai", false}} {
		path := filepath.Join(dir, c.name)
		if err := modelfile.Save(path, c.m); err != nil {
			t.Fatal(err)
		}
		want, _, err := engine.Solve(context.Background(), c.m, nil, admmJob(t).Settings, engine.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, c.name+".mpe")
		target := Target{Workers: 2, Transport: tr, Job: "job" + string(rune('a'+i)), Name: path, Out: out,
			Sharded: &Sharded{Path: path, Fallback: &Input{Path: path}}}
		j := admmJob(t)
		o, err := Run(context.Background(), j, target, Hooks{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := o.Result
		if (o.Report.Sharded != nil) != c.sharded {
			t.Fatalf("%s: sharded %v, want %v", c.name, o.Report.Sharded != nil, c.sharded)
		}
		if got.Iterations != want.Iterations || math.Abs(got.Dual-want.Dual) > 1e-9*math.Abs(want.Dual) {
			t.Errorf("%s: %d iterations, dual %v; solve: %d, %v", c.name, got.Iterations, got.Dual, want.Iterations, want.Dual)
		}
		if got.Primal < want.Primal-1e-3*math.Abs(want.Primal) || !c.sharded && math.Abs(got.Primal-want.Primal) > 1e-9*math.Abs(want.Primal) {
			t.Errorf("%s: primal %v; solve's %v", c.name, got.Primal, want.Primal)
		}
		if !c.sharded {
			continue
		}
		if _, err := os.Stat(filepath.Join(path+".state", "grid.msgpack.ddx")); err != nil {
			t.Errorf("the converted model: %v", err)
		}
		x := oracle.ReadMPE(t, out)
		if len(x) != len(c.m.Cards) {
			t.Fatalf("--out: %d states, want %d", len(x), len(c.m.Cards))
		}
		if s := c.m.Score(x); math.Abs(s-got.Primal) > 1e-9*math.Abs(s) {
			t.Errorf("--out scores %v, the primal is %v", s, got.Primal)
		}
	}
}

// defaultRunJob is run's job with its defaults (the algorithm chosen by the
// model), maxIter iterations and no gap tolerance.
func defaultRunJob(t *testing.T, maxIter int) *engine.Job {
	t.Helper()
	s := engine.Defaults()
	s.Distributed, s.MaxIter, s.Tol = true, maxIter, 0
	s.Given = map[string]bool{"max-iter": true, "tol": true}
	j, err := engine.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestShardedTRWS: a sharded run with no algorithm given runs distributed
// TRW-S on a pairwise grid, as solve would choose, says why, and reports
// a dual above its primal, the exact score of the assignment it returns.
func TestShardedTRWS(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 8, Width: 9, Labels: 3, Rho: 0.5, Seed: 7})
	path := writeDDX(t, t.TempDir(), m)
	tr := workers(t, 2)
	j := defaultRunJob(t, 150)
	var lines []string
	h := Hooks{Hooks: engine.Hooks{Print: func(_, text string, _ ...any) { lines = append(lines, text) }}}
	o, err := Run(context.Background(), j, Target{Workers: 2, Transport: tr, Job: "grid", Sharded: &Sharded{Path: path}, Assignment: true}, h)
	if err != nil {
		t.Fatal(err)
	}
	r := o.Report
	if r.Algo != "trws" || !strings.Contains(r.Why, "pairwise") || len(lines) == 0 || !strings.HasPrefix(lines[0], "algorithm: trws") {
		t.Fatalf("algorithm %s (%q), lines %q", r.Algo, r.Why, lines)
	}
	if r.Primal == nil || r.Dual == nil || *r.Dual < *r.Primal-1e-9 || len(r.Assignment) != m.NumVars() {
		t.Fatalf("report %+v", r)
	}
	if sc := m.Score(r.Assignment); math.Abs(sc-*r.Primal) > 1e-9*math.Max(1, math.Abs(sc)) {
		t.Errorf("primal %v, the assignment scores %v", *r.Primal, sc)
	}
	if r.Iterations < 1 || r.Iterations > 150 || r.Workers != 2 || r.Sharded == nil || r.Sharded.CoordinatorRSSMB <= 0 {
		t.Errorf("report %+v (sharded %+v)", r, r.Sharded)
	}
}

// TestShardedBudgetEachPart: --max-entries bounds each process of a run,
// whatever its input: a 12x12 4-label grid (576 states) given as
// msgpack and as UAI converts under a budget of 450 (the conversion
// checks each piece it holds, not the totals) and runs sharded on 2
// workers, each part within the budget, to solve's dual; under a budget
// of 200, which every piece still fits, a part does not, and the run
// stops with a one-line error that names the part and the budget. A
// sharded search (--exact), whose workers each read the whole model,
// keeps the totals' check under 450.
func TestShardedBudgetEachPart(t *testing.T) {
	dir := t.TempDir()
	tr := workers(t, 2)
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 4, Rho: 3, Seed: 5})
	want, _, err := engine.Solve(context.Background(), m, nil, admmJob(t).Settings, engine.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"g.msgpack", "g.uai"} {
		path := filepath.Join(dir, name)
		if err := modelfile.Save(path, m); err != nil {
			t.Fatal(err)
		}
		for k, budget := range []int{450, 200} {
			job := strings.Replace(name, ".", "-", 1) + string(rune('a'+k))
			target := Target{Workers: 2, Transport: tr, Job: job, Name: path,
				Sharded:   &Sharded{Path: path, StateDir: filepath.Join(dir, job), MaxEntries: budget},
				LostAfter: time.Second} // a refused part is heard when the worker goes silent (unsealed transport)
			o, err := Run(context.Background(), admmJob(t), target, Hooks{})
			if budget == 200 {
				if err == nil || !strings.Contains(err.Error(), "part") || !strings.Contains(err.Error(), "limit of 200") || strings.Contains(err.Error(), "\n") {
					t.Fatalf("%s, a part over the budget of 200: %v, want one line naming the part and the budget", name, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s, each part within the budget of 450: %v", name, err)
			}
			got := o.Result
			if o.Report.Sharded == nil || got.Iterations != want.Iterations || math.Abs(got.Dual-want.Dual) > 1e-9*math.Abs(want.Dual) {
				t.Errorf("%s: sharded %v, %d iterations, dual %v; solve: %d, %v", name, o.Report.Sharded != nil, got.Iterations, got.Dual, want.Iterations, want.Dual)
			}
		}
		target := Target{Workers: 2, Transport: tr, Job: strings.Replace(name, ".", "-", 1) + "-exact", Name: path,
			Sharded: &Sharded{Path: path, StateDir: filepath.Join(dir, name+"-exact"), MaxEntries: 450}}
		_, err := Run(context.Background(), exactJob(t), target, Hooks{})
		if err == nil || !strings.Contains(err.Error(), "total number of states over the limit of 450") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s, --exact over the budget of 450 in all: %v", name, err)
		}
	}
}

// TestPlanTakesTheConversion: a run that converts its model plans from
// what the conversion saw (shard.Summary: no walk of the file it has just
// written), a plan the same as the walk's of the converted file, the same
// class; an indexed input is walked. The grid's 179,400 factors are well
// over the 64 x 1,024 per worker (131,072 for 2) from which the Summary's
// chunks are the plan's.
func TestPlanTakesTheConversion(t *testing.T) {
	dir := t.TempDir()
	m := generate.Potts(generate.GridOptions{Height: 300, Width: 300, Labels: 4, Rho: 0.5, Seed: 1})
	for _, name := range []string{"g.msgpack", "g.uai", "g.ddx"} {
		path := filepath.Join(dir, name)
		if err := modelfile.Save(path, m); err != nil {
			t.Fatal(err)
		}
		var logged strings.Builder
		log := slog.New(slog.NewTextHandler(&logged, nil))
		target := Target{Workers: 2, Job: "plan", Logger: log, Start: time.Now(), Sharded: &Sharded{Path: path, StateDir: filepath.Join(dir, name+".state"), Local: true}}
		p, err := planShards(context.Background(), defaultRunJob(t, 1), target, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(p.release)
		from := "from=summary"
		if name == "g.ddx" {
			from = "from=walk"
		}
		if !strings.Contains(logged.String(), "ranges cut") || !strings.Contains(logged.String(), from) {
			t.Fatalf("%s: the plan's first pass, want %s:\n%s", name, from, logged.String())
		}
		class := engine.Class{Higher: -1}
		want, err := shard.PlanLayout(p.input, 2, shard.PlanOptions{Visit: func(a int, f *model.Factor) { class.Add(a, f) }})
		if err != nil {
			t.Fatal(err)
		}
		class.Vars = want.NumVars
		if !reflect.DeepEqual(p.layout, want) || p.class != class {
			t.Fatalf("%s: the plan (class %+v) is not the walk's (class %+v)", name, p.class, class)
		}
	}
}
