package dsearch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
	"github.com/ddrun/ddrun/trws"
)

func admmSettings(maxIter int) Settings {
	o := consensus.DefaultOptions()
	o.MaxIter = maxIter
	o.ProgressEvery = 0
	return Settings{Algo: string(consensus.ADMM), DD: o}
}

func trwsSettings() Settings {
	o := trws.DefaultOptions()
	o.MaxIter = 200
	return Settings{Algo: "trws", TRWS: o}
}

// pool is a set of in-process workers serving on tr, each stoppable.
type pool struct {
	t       *testing.T
	tr      transport.Transport
	mu      sync.Mutex
	cancels map[string]context.CancelFunc
	wg      sync.WaitGroup
	// noFiles: the workers read no model file (WorkerOptions.ModelPath
	// nil); else any absolute path (the tests' temporary files).
	noFiles bool
}

// modelPath is the pool's workers' WorkerOptions.ModelPath.
func (p *pool) modelPath(path string) (string, error) {
	if p.noFiles {
		return "", errors.New("the model file: this worker reads no model file (no directories given)")
	}
	return path, nil
}

// inProc is an in-process transport, closed when the test ends (after the
// pools started on it have stopped).
func inProc(t *testing.T) *transport.InProc {
	tr := transport.NewInProc()
	t.Cleanup(func() { tr.Close() })
	return tr
}

func newPool(t *testing.T, tr transport.Transport, names ...string) *pool {
	p := &pool{t: t, tr: tr, cancels: map[string]context.CancelFunc{}}
	for _, n := range names {
		p.start(n, nil)
	}
	t.Cleanup(p.stop)
	return p
}

func (p *pool) start(name string, onTask func(job string, id uint64)) {
	ctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.cancels[name] = cancel
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := Serve(ctx, p.tr, WorkerOptions{Name: name, Threads: 1, OnTask: onTask, ModelPath: p.modelPath}); err != nil {
			p.t.Errorf("worker %s: %v", name, err)
		}
	}()
}

// kill stops a worker as a crash would: it falls silent mid-task.
func (p *pool) kill(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cancels[name]()
}

func (p *pool) stop() {
	p.mu.Lock()
	for _, c := range p.cancels {
		c()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

var jobs atomic.Int64

func testOptions(workers int, s Settings) Options {
	return Options{Job: fmt.Sprintf("bb%d", jobs.Add(1)), Workers: workers, Wait: 10 * time.Second, Settings: s,
		Tol: 1e-6, SliceNodes: 3, SliceTime: time.Second, LostAfter: 2 * time.Second}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// checkCertified fails unless res certifies the brute-force MAP of m.
func checkCertified(t *testing.T, what string, m *model.Model, res solver.Result) {
	t.Helper()
	best, _ := oracle.BruteMAP(t, m)
	if math.IsInf(best, -1) {
		if res.Status != solver.Infeasible || res.Assignment != nil {
			t.Fatalf("%s: infeasible model reported %s", what, res.Status)
		}
		return
	}
	if res.Status != solver.Optimal || !near(res.Primal, best) || m.Score(res.Assignment) != res.Primal || res.Dual-res.Primal > 1e-6*math.Max(1, math.Abs(best)) {
		t.Fatalf("%s: %s primal %v dual %v, brute-force MAP %v", what, res.Status, res.Primal, res.Dual, best)
	}
}

// hardModels are models that need branching: frustrated grids.
func hardModels() []*model.Model {
	var ms []*model.Model
	for seed := int64(1); seed <= 6; seed++ {
		ms = append(ms, generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: seed}))
	}
	return append(ms, generate.Potts(generate.GridOptions{Height: 3, Width: 4, Labels: 3, Rho: 2, Seed: 3}))
}

// hardAndTinyModels is hardModels and tiny random ones (hard constraints
// and logic factors included) drawn from the stream (seed, seed+1).
func hardAndTinyModels(tiny int, seed uint64) []*model.Model {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	ms := hardModels()
	for range tiny {
		ms = append(ms, oracle.RandomTinyModel(rng, oracle.TinyOptions{}))
	}
	return ms
}

// Three workers, reused job after job, certify the brute-force MAP of
// random tiny models and frustrated grids, with subtrees of three nodes
// handed back and forth; every progress report holds a valid bound.
func TestRunMatchesBruteForce(t *testing.T) {
	tr := inProc(t)
	newPool(t, tr, "w1", "w2", "w3")
	ms := hardAndTinyModels(12, 5)
	several := 0
	for i, m := range ms {
		best, _, _ := oracle.BruteForceMAP(m)
		var bad string
		progress := func(p solver.Progress) {
			if bad == "" && !math.IsInf(best, -1) && (p.Dual < best-1e-6*math.Max(1, math.Abs(best)) || p.Primal > best+1e-9) {
				bad = fmt.Sprintf("report dual %v primal %v, MAP %v", p.Dual, p.Primal, best)
			}
		}
		res, st, err := Run(context.Background(), tr, m, nil, testOptions(3, admmSettings(20)), progress)
		if err != nil {
			t.Fatalf("model %d: %v", i, err)
		}
		checkCertified(t, fmt.Sprintf("model %d", i), m, res)
		if bad != "" {
			t.Fatalf("model %d: %s", i, bad)
		}
		if st.Subtrees > 1 {
			several++
		}
		if st.Rejected != 0 {
			t.Fatalf("model %d: %d answers rejected", i, st.Rejected)
		}
		t.Logf("model %d: %d nodes, %d subtrees, %d workers", i, st.Nodes, st.Subtrees, st.Workers)
	}
	if several < 4 {
		t.Errorf("only %d searches took more than one subtree: the test proves little", several)
	}
}

// Under evidence, with TRW-S bounds, the distributed search certifies
// what exact.Solve certifies in one process.
func TestRunEvidenceTRWSMatchesExact(t *testing.T) {
	tr := inProc(t)
	newPool(t, tr, "w1", "w2")
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 5, Rho: 3, Seed: 9})
	ev := model.Evidence{0: 1, 7: 0}
	solve, err := trwsSettings().NodeSolver(1)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := exact.SolveWarm(context.Background(), m, ev, solve, exact.Options{Tol: 1e-6}, nil)
	if err != nil || want.Status != solver.Optimal {
		t.Fatalf("one process: %v %s", err, want.Status)
	}
	res, st, err := Run(context.Background(), tr, m, ev, testOptions(2, trwsSettings()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != solver.Optimal || !near(res.Primal, want.Primal) || res.Assignment[0] != 1 || res.Assignment[7] != 0 || m.Score(res.Assignment) != res.Primal {
		t.Fatalf("distributed: %s primal %v, one process %v", res.Status, res.Primal, want.Primal)
	}
	t.Logf("%d nodes, %d subtrees", st.Nodes, st.Subtrees)
}

// mute is a worker's link that goes dead: once dead is set, nothing it
// publishes leaves (a crash or a partition, as the coordinator sees it).
type mute struct {
	transport.Transport
	dead atomic.Bool
}

func (m *mute) Publish(ctx context.Context, subject string, data []byte) error {
	if m.dead.Load() {
		return nil
	}
	return m.Transport.Publish(ctx, subject, data)
}

// A worker that falls silent while it searches a subtree is lost: its
// subtree goes back to the queue and the other workers still certify the
// MAP.
func TestLostWorkerSubtreeRequeued(t *testing.T) {
	tr := inProc(t)
	newPool(t, tr, "w2", "w3")
	// The victim sorts first, so it gets the first subtree (the root),
	// and dies as soon as it starts on it: its answer never leaves.
	link := &mute{Transport: tr}
	victim := &pool{t: t, tr: link, cancels: map[string]context.CancelFunc{}}
	t.Cleanup(victim.stop)
	victim.start("a-victim", func(string, uint64) { link.dead.Store(true) })
	deadline := time.Now().Add(5 * time.Second)
	for !victimUp(tr) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	requeued := 0
	for i, m := range hardModels()[:2] {
		o := testOptions(3, admmSettings(20))
		o.LostAfter = 300 * time.Millisecond
		res, st, err := Run(context.Background(), tr, m, nil, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkCertified(t, fmt.Sprintf("grid %d", i), m, res)
		requeued += st.Requeued
		t.Logf("grid %d: %d nodes, %d subtrees, %d requeued, %d workers", i, st.Nodes, st.Subtrees, st.Requeued, st.Workers)
	}
	if !link.dead.Load() || requeued < 1 {
		t.Fatalf("victim dead: %v, %d subtrees requeued", link.dead.Load(), requeued)
	}
}

// victimUp reports whether a-victim has announced itself.
func victimUp(tr transport.Transport) bool {
	got := make(chan struct{}, 1)
	sub, err := tr.Subscribe(helloSubject, func(_ string, data []byte) {
		if h, _, err := transport.Decode(data); err == nil && h.From == "a-victim" {
			select {
			case got <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		return false
	}
	defer sub.Unsubscribe()
	select {
	case <-got:
		return true
	case <-time.After(time.Second):
		return false
	}
}

// Without workers the search fails after Wait, with a one-line error.
func TestNoWorkers(t *testing.T) {
	tr := inProc(t)
	o := testOptions(1, admmSettings(100))
	o.Wait = 200 * time.Millisecond
	_, _, err := Run(context.Background(), tr, hardModels()[0], nil, o, nil)
	if err == nil {
		t.Fatal("no error without workers")
	}
	t.Log(err)
}

// A node limit stops the search with a valid bound and what it found.
func TestRunNodeLimit(t *testing.T) {
	tr := inProc(t)
	newPool(t, tr, "w1", "w2")
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: 1})
	best, _, _ := oracle.BruteForceMAP(m)
	o := testOptions(2, admmSettings(20))
	o.MaxNodes = 3
	res, st, err := Run(context.Background(), tr, m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Nodes > 3 || res.Dual < best-1e-6 || (res.Assignment != nil && m.Score(res.Assignment) != res.Primal) {
		t.Fatalf("%d nodes, dual %v primal %v, MAP %v", st.Nodes, res.Dual, res.Primal, best)
	}
	if res.Status == solver.Optimal && st.Open != 0 {
		t.Fatalf("optimal with %d open", st.Open)
	}
	t.Logf("%s after %d nodes, gap %v", res.Status, st.Nodes, res.Gap)
}

// On grids too large for brute force, with weak bounds (20 DD-ADMM
// iterations a node) that make the tree large, three workers certify the
// optimum branch and bound certifies in one process.
func TestRunMatchesOneProcess(t *testing.T) {
	tr := inProc(t)
	newPool(t, tr, "w1", "w2", "w3")
	ms := []*model.Model{
		generate.Ising(generate.GridOptions{Height: 6, Width: 6, Rho: 3, Seed: 4}),
		generate.Potts(generate.GridOptions{Height: 4, Width: 4, Labels: 3, Rho: 3, Seed: 5}),
	}
	for i, m := range ms {
		solve, err := admmSettings(20).NodeSolver(1)
		if err != nil {
			t.Fatal(err)
		}
		want, wst, err := exact.SolveWarm(context.Background(), m, nil, solve, exact.Options{Tol: 1e-6}, nil)
		if err != nil || want.Status != solver.Optimal {
			t.Fatalf("model %d, one process: %v %s", i, err, want.Status)
		}
		res, st, err := Run(context.Background(), tr, m, nil, testOptions(3, admmSettings(20)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != solver.Optimal || !near(res.Primal, want.Primal) || m.Score(res.Assignment) != res.Primal {
			t.Fatalf("model %d: distributed %s primal %v, one process %v", i, res.Status, res.Primal, want.Primal)
		}
		t.Logf("model %d: one process %d nodes; distributed %d nodes, %d subtrees, %d workers", i, wst.Nodes, st.Nodes, st.Subtrees, st.Workers)
	}
}

// A time limit stops the search at once, subtrees in flight or not, with
// a bound that is still valid (in-flight subtrees keep their bounds).
func TestRunTimeLimit(t *testing.T) {
	tr := inProc(t)
	newPool(t, tr, "w1", "w2")
	m := generate.Ising(generate.GridOptions{Height: 6, Width: 6, Rho: 3, Seed: 4})
	solve, _ := admmSettings(20).NodeSolver(1)
	want, _, err := exact.SolveWarm(context.Background(), m, nil, solve, exact.Options{Tol: 1e-6}, nil)
	if err != nil || want.Status != solver.Optimal {
		t.Fatalf("one process: %v %s", err, want.Status)
	}
	o := testOptions(2, admmSettings(20))
	o.TimeLimit = 150 * time.Millisecond
	start := time.Now()
	res, st, err := Run(context.Background(), tr, m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("the search took %v past a time limit of %v", time.Since(start), o.TimeLimit)
	}
	tol := 1e-6 * math.Max(1, math.Abs(want.Primal))
	if res.Dual < want.Primal-tol || res.Primal > want.Primal+tol || (res.Assignment != nil && m.Score(res.Assignment) != res.Primal) {
		t.Fatalf("%s: dual %v primal %v, optimum %v", res.Status, res.Dual, res.Primal, want.Primal)
	}
	if res.Status != solver.TimeLimit && res.Status != solver.Optimal {
		t.Fatalf("status %s", res.Status)
	}
	t.Logf("%s after %d nodes: dual %v primal %v, optimum %v", res.Status, st.Nodes, res.Dual, res.Primal, want.Primal)
}

// A seed's assignment is the first incumbent and its bound the root's: a
// seed that closes the gap certifies it without a worker; a seed with a
// poor assignment and the LP bound still ends on the brute-force MAP, its
// bound never above the seed's; a seed that does not fit is an error.
func TestRunSeed(t *testing.T) {
	tr := inProc(t)
	m := generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: 2})
	best, xbest := oracle.BruteMAP(t, m)

	o := testOptions(2, admmSettings(20))
	o.Wait = 200 * time.Millisecond // no worker serves: only a closed seed ends well
	o.Seed = &Seed{Assignment: xbest, Bound: best}
	res, st, err := Run(context.Background(), tr, m, nil, o, nil)
	if err != nil {
		t.Fatalf("closed seed: %v", err)
	}
	checkCertified(t, "closed seed", m, res)
	if st.Nodes != 0 {
		t.Fatalf("closed seed: %d nodes solved", st.Nodes)
	}

	newPool(t, tr, "w1", "w2")
	lp := oracle.LP(t, m)
	if lp < best+1e-3 {
		t.Fatalf("LP bound %v, MAP %v: no gap, the test proves little", lp, best)
	}
	zeros := make([]int, m.NumVars())
	o = testOptions(2, admmSettings(20))
	o.Seed = &Seed{Assignment: zeros, Bound: lp}
	var above string
	res, _, err = Run(context.Background(), tr, m, nil, o, func(p solver.Progress) {
		if above == "" && (p.Dual > lp+1e-9 || p.Primal < m.Score(zeros)) {
			above = fmt.Sprintf("report dual %v primal %v; seed bound %v primal %v", p.Dual, p.Primal, lp, m.Score(zeros))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	checkCertified(t, "seeded search", m, res)
	if above != "" {
		t.Fatal(above)
	}

	ev := model.Evidence{0: 1}
	for _, bad := range []*Seed{
		{Assignment: zeros[:3], Bound: math.Inf(1)},
		{Assignment: zeros, Bound: math.NaN()},
		{Assignment: append([]int{2}, zeros[1:]...), Bound: math.Inf(1)},
		{Assignment: zeros, Bound: math.Inf(1)}, // against the evidence
	} {
		o := testOptions(2, admmSettings(20))
		o.Seed = bad
		if _, _, err := Run(context.Background(), tr, m, ev, o, nil); err == nil || !strings.HasPrefix(err.Error(), "seed: ") {
			t.Errorf("seed %v: err %v", bad, err)
		}
	}
}

// Bad bounds are refused before anything is sent, each naming the option.
func TestRunRefusesBadOptions(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 2, Width: 2, Rho: 1, Seed: 1})
	for name, bad := range map[string]func(o *Options){
		"Tol":        func(o *Options) { o.Tol = math.NaN() },
		"TimeLimit":  func(o *Options) { o.TimeLimit = -time.Second },
		"MaxNodes":   func(o *Options) { o.MaxNodes = -1 },
		"SliceNodes": func(o *Options) { o.SliceNodes = maxTaskNodes + 1 },
		"workers":    func(o *Options) { o.Workers = 0 },
	} {
		o := testOptions(1, admmSettings(10))
		bad(&o)
		_, _, err := Run(context.Background(), inProc(t), m, nil, o, nil)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v, want one naming it", name, err)
		}
	}
}
