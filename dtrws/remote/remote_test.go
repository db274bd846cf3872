package remote

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ddrun/ddrun/dtrws"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// pool is k workers serving on an in-process transport.
type pool struct {
	tr     *transport.InProc
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newPool(t *testing.T, k int) *pool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool{tr: transport.NewInProc(), cancel: cancel}
	files := testFiles(t)
	for i := range k {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := Serve(ctx, p.tr, WorkerOptions{Name: fmt.Sprintf("w%d", i), Files: files}); err != nil {
				t.Error(err)
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		p.wg.Wait()
		p.tr.Close()
	})
	return p
}

// testFiles are the workers' directories of a test: a state directory of
// their own, and the test's temporary files (writeDDX's) as model root.
func testFiles(t *testing.T) shard.Dirs {
	t.Helper()
	d, err := shard.NewDirs(t.TempDir(), []string{os.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// writeDDX reduces m (no unary factor, no forbidden state: what a sharded
// file holds) and writes it as an indexed file; it returns the reduced
// model.
func writeDDX(t *testing.T, m *model.Model) (*model.Model, string) {
	t.Helper()
	red, err := model.Reduce(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.ddx")
	if err := indexed.WriteFile(path, red.Model); err != nil {
		t.Fatal(err)
	}
	return red.Model, path
}

func testOpts(iters int) dtrws.Options {
	o := dtrws.DefaultOptions()
	o.MaxIter, o.Tol, o.ProgressEvery = iters, 0, 0
	return o
}

var jobs int

// run runs the job on k workers of p; it checks at every progress report
// that the dual is >= mapv >= the primal (mapv NaN: no check), and returns
// the result with its assignment.
func run(t *testing.T, p *pool, m *model.Model, path string, k int, o dtrws.Options, mapv float64) solver.Result {
	t.Helper()
	l, err := shard.PlanLayout(path, k, shard.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobs++
	x := make([]int, m.NumVars())
	seen := 0
	ro := Options{Job: fmt.Sprintf("j%d", jobs), Wait: 10 * time.Second, StepTimeout: 10 * time.Second,
		Deliver: func(ctx context.Context, n int, pieces func(put func([]int, []int32) error) error) error {
			return pieces(func(vars []int, st []int32) error {
				for i, v := range vars {
					x[v] = int(st[i])
					seen++
				}
				return nil
			})
		}}
	tol := 1e-9 * math.Max(1, math.Abs(mapv))
	res, err := Run(context.Background(), p.tr, l, o, ro, func(pr solver.Progress) {
		if pr.Dual < mapv-tol || pr.Primal > mapv+tol {
			t.Errorf("%d workers, iteration %d: dual %v, primal %v around the MAP %v", k, pr.Iteration, pr.Dual, pr.Primal, mapv)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(res.Primal, -1) {
		if seen != m.NumVars() {
			t.Fatalf("%d workers: %d variables delivered of %d", k, seen, m.NumVars())
		}
		if sc := m.Score(x); math.Abs(sc-res.Primal) > 1e-9*math.Max(1, math.Abs(sc)) {
			t.Errorf("%d workers: primal %v, its assignment scores %v", k, res.Primal, sc)
		}
		res.Assignment = x
	}
	if res.Dual < mapv-tol || res.Primal > mapv+tol {
		t.Errorf("%d workers: dual %v, primal %v around the MAP %v", k, res.Dual, res.Primal, mapv)
	}
	return res
}

// TestBruteForce: on tiny models, on 1..4 workers, the bound is valid and
// the primal the score of its assignment at every iteration.
func TestBruteForce(t *testing.T) {
	p := newPool(t, 4)
	rng := rand.New(rand.NewPCG(2, 26))
	runs, optimal := 0, 0
	for it := 0; runs < 60; it++ {
		m, path := writeDDX(t, oracle.RandomTinyModel(rng, oracle.TinyOptions{MaxVars: 8, MaxCard: 3, Soft: true,
			Kinds: []model.Kind{model.Dense, model.Pair, model.Potts}}))
		if len(m.Factors) < 4 || slices.ContainsFunc(m.Factors, func(f model.Factor) bool { return len(f.Vars) > 2 }) {
			continue
		}
		mapv, _ := oracle.BruteMAP(t, m)
		for k := 1; k <= 4; k++ {
			res := run(t, p, m, path, k, testOpts(100), mapv)
			runs++
			if math.Abs(res.Primal-mapv) <= 1e-9*math.Max(1, math.Abs(mapv)) {
				optimal++
			}
		}
	}
	if optimal < runs/2 {
		t.Errorf("only %d of %d runs found the MAP", optimal, runs)
	}
}

// TestLabelsInPieces: the assignment travels in pieces of labelPiece
// variables (here 7, so a part of a 6x7 grid takes several), each checked
// and handed on alone: every variable arrives once, the primal is the
// score of what arrived, and the result is the one-piece run's.
func TestLabelsInPieces(t *testing.T) {
	m, path := writeDDX(t, generate.Potts(generate.GridOptions{Height: 6, Width: 7, Labels: 3, Rho: 0.7, Seed: 3}))
	p := newPool(t, 2)
	want := run(t, p, m, path, 2, testOpts(30), math.NaN())
	labelPiece = 7
	defer func() { labelPiece = 1 << 16 }()
	got := run(t, p, m, path, 2, testOpts(30), math.NaN())
	if got.Dual != want.Dual || got.Primal != want.Primal || !slices.Equal(got.Assignment, want.Assignment) {
		t.Errorf("in pieces of 7: dual %v primal %v; in one: dual %v primal %v", got.Dual, got.Primal, want.Dual, want.Primal)
	}
}

// TestLocalPolytope: on binary grids where TRW-S reaches the LP optimum
// of the local polytope, so does the distributed run on 1..4 workers
// (within 1e-6), and the same worker count gives the same result.
func TestLocalPolytope(t *testing.T) {
	p := newPool(t, 4)
	reached := 0
	for seed := int64(1); seed <= 6; seed++ {
		m, path := writeDDX(t, generate.Ising(generate.GridOptions{Height: 3, Width: 4, Rho: 1.5, Seed: seed}))
		lp := oracle.LP(t, m)
		mapv, _ := oracle.BruteMAP(t, m)
		plain, err := dtrws.Solve(context.Background(), m, nil, func() dtrws.Options { o := testOpts(3000); o.Parts = 1; return o }(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(plain.Dual-lp) > 1e-6 {
			continue // TRW-S stops at weak tree agreement above the LP
		}
		reached++
		for k := 1; k <= 4; k++ {
			res := run(t, p, m, path, k, testOpts(3000), mapv)
			if math.Abs(res.Dual-lp) > 1e-6 {
				t.Errorf("grid %d, %d workers: dual %v, LP optimum %v", seed, k, res.Dual, lp)
			}
			again := run(t, p, m, path, k, testOpts(3000), mapv)
			if again.Dual != res.Dual || again.Primal != res.Primal || again.Iterations != res.Iterations || !slices.Equal(again.Assignment, res.Assignment) {
				t.Errorf("grid %d, %d workers: dual %v primal %v, then %v %v", seed, k, res.Dual, res.Primal, again.Dual, again.Primal)
			}
		}
	}
	if reached < 3 {
		t.Errorf("TRW-S reached the LP optimum on only %d grids", reached)
	}
}

// A worker that dies mid-run (its serve loop stopped: no more
// announcements, no answers) fails the run within LostAfter, with an error
// that names it, instead of waiting out the step timeout.
func TestLostWorkerFailsTheRun(t *testing.T) {
	tr := transport.NewInProc()
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wctx := []context.Context{ctx, nil}
	var stop1 context.CancelFunc
	wctx[1], stop1 = context.WithCancel(ctx)
	var wg sync.WaitGroup
	files := testFiles(t)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = Serve(wctx[i], tr, WorkerOptions{Name: fmt.Sprintf("w%d", i), Files: files})
		}()
	}
	defer wg.Wait()
	defer cancel()
	_, path := writeDDX(t, generate.Potts(generate.GridOptions{Height: 30, Width: 30, Labels: 3, Rho: 0.5, Seed: 1}))
	l, err := shard.PlanLayout(path, 2, shard.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := testOpts(1 << 30)
	o.Parts, o.Threads = 2, 2
	var once sync.Once
	start := time.Now()
	var killed time.Time
	_, err = Run(ctx, tr, l, o, Options{Job: "lost", LostAfter: 500 * time.Millisecond, StepTimeout: time.Minute},
		func(solver.Progress) { once.Do(func() { killed = time.Now(); stop1() }) })
	if err == nil || !strings.Contains(err.Error(), "worker w1 lost") {
		t.Fatalf("run with a dead worker: %v", err)
	}
	if d := time.Since(killed); d > 20*time.Second {
		t.Errorf("failed %v after the worker died (started %v ago)", d, time.Since(start))
	}
}

// An idle worker that gets the orders of a job it does not hold (a late
// close or step after a release, or a forgery) drops them and keeps
// serving: before, a step or close with no job held was a nil dereference
// that crashed the worker process.
func TestOrdersWithoutAJobDropped(t *testing.T) {
	p := newPool(t, 1)
	ctx := context.Background()
	for _, body := range []any{stepBody{CID: 7, Seq: 1}, closeBody{CID: 7}, labelsBody{CID: 7, Seq: 2}} {
		var kind transport.Kind
		switch body.(type) {
		case stepBody:
			kind = kindStep
		case closeBody:
			kind = kindClose
		default:
			kind = kindLabels
		}
		data, err := transport.Encode(transport.Header{Job: "gone", From: "coordinator", Kind: kind, Seq: 1}, body)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.tr.Publish(ctx, orderSubject("gone", "w0"), data); err != nil {
			t.Fatal(err)
		}
	}
	// The worker still runs a job to its end.
	m, path := writeDDX(t, generate.Ising(generate.GridOptions{Height: 3, Width: 3, Rho: 1, Seed: 2}))
	run(t, p, m, path, 1, testOpts(5), math.NaN())
}
