package consensus

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
)

// sharded is a sharded run in this process: the workers built from a Split
// into consecutive ranges of slaves, and what a sharded coordinator knows
// (the boundary model, the parts' summaries, the boundary map).
type sharded struct {
	bm      *model.Model
	sums    []PartSummary
	b       *Boundary
	links   []WorkerLink
	workers []*Worker
	vars    []int // boundary number -> model variable
}

func newSharded(t *testing.T, m *model.Model, plan partition.Plan, opts Options, w int) *sharded {
	t.Helper()
	place := make([]int32, len(plan.Slaves))
	for s := range place {
		place[s] = int32(s * w / len(plan.Slaves))
	}
	parts, full, err := Split(m, plan, place, w)
	if err != nil {
		t.Fatal(err)
	}
	sh := &sharded{vars: full.Vars()}
	index := map[int]int{}
	cards := make([]int, len(sh.vars))
	for j, v := range sh.vars {
		index[v] = j
		cards[j] = m.Cards[v]
	}
	sh.bm = model.New(cards)
	sh.bm.Constant = m.Constant
	for j, v := range sh.vars {
		copy(sh.bm.Unaries(j), m.Unaries(v))
	}
	of, deg := make([][]int, w), make([][]int, w)
	for k, p := range parts {
		local := make([]int, len(p.Vars))
		for _, sl := range p.Plan.Slaves {
			for _, v := range sl.Vars {
				local[v]++
			}
		}
		for _, lv := range p.Boundary {
			of[k] = append(of[k], index[p.Vars[lv]])
			deg[k] = append(deg[k], local[lv])
		}
		wopts := opts
		wopts.Threads = 1
		wk, err := NewWorker(p, wopts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(wk.Close)
		sh.workers = append(sh.workers, wk)
		sh.links = append(sh.links, LocalLink{W: wk})
		sh.sums = append(sh.sums, wk.Summary())
	}
	if sh.b, err = NewShardBoundary(cards, of, deg); err != nil {
		t.Fatal(err)
	}
	return sh
}

// assignment puts together the best assignment of a sharded run.
func (sh *sharded) assignment(t *testing.T, n int, res ShardResult) []int {
	t.Helper()
	x := make([]int, n)
	seen := make([]bool, n)
	for j, v := range sh.vars {
		x[v], seen[v] = res.Boundary[j], true
	}
	for _, wk := range sh.workers {
		for k := 0; ; k++ {
			vars, states, last, err := wk.BestPiece(k, 7)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vars {
				if seen[v] {
					t.Fatalf("variable %d twice", v)
				}
				x[v], seen[v] = int(states[i]), true
			}
			if last {
				break
			}
		}
	}
	for v, ok := range seen {
		if !ok {
			t.Fatalf("variable %d has no state", v)
		}
	}
	return x
}

// A sharded run takes the iterations of a run in one process (the same
// slaves, the same per-variable code); its primal is the exact score of the
// assignment its parts put together, and with one worker (no boundary) it
// is the very same search.
func TestShardedRunMatchesSingleProcess(t *testing.T) {
	cases := smallMixed()
	for _, c := range cases {
		for _, algo := range []Algo{ADMM, Subgradient} {
			t.Run(fmt.Sprintf("%s/%s", c.name, algo), func(t *testing.T) {
				opts := DefaultOptions()
				opts.Algo, opts.MaxIter = algo, 150
				if algo == Subgradient {
					opts.Eta, opts.Step = 1, Diminishing // a step that does not follow the primal
				}
				red, err := model.Reduce(c.m, nil)
				if err != nil {
					t.Fatal(err)
				}
				m := red.Model
				plan := partition.PerFactor(m)
				want, err := runLocal(context.Background(), m, plan, opts, 1, nil)
				if err != nil {
					t.Fatal(err)
				}
				for w := 1; w <= 4; w++ {
					sh := newSharded(t, m, plan, opts, w)
					if w > 1 && len(sh.vars) == 0 {
						t.Fatalf("%d workers: no boundary", w)
					}
					got, err := CoordinateShards(context.Background(), sh.bm, sh.sums, sh.b, sh.links, opts, nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					if math.IsInf(got.Primal, -1) {
						t.Errorf("%d workers: no feasible assignment (%s after %d; one process: primal %v)", w, got.Status, got.Iterations, want.Primal)
						continue
					}
					x := sh.assignment(t, m.NumVars(), got)
					if sc := m.Score(x); !relClose(sc, got.Primal, 1e-9) {
						t.Errorf("%d workers: primal %.12g, the assignment scores %.12g", w, got.Primal, sc)
					}
					if got.Primal > got.Dual+1e-6*math.Max(1, math.Abs(got.Dual)) {
						t.Errorf("%d workers: primal %v above the dual %v", w, got.Primal, got.Dual)
					}
					sameIterates := want.Status != "optimal" && got.Status != "optimal"
					if sameIterates && (got.Iterations != want.Iterations || !relClose(got.Dual, want.Dual, 1e-9) || !relClose(got.Relaxed, want.Relaxed, 1e-9)) {
						t.Errorf("%d workers: %s after %d, dual %.12g relaxed %.12g; one process: %s after %d, dual %.12g relaxed %.12g",
							w, got.Status, got.Iterations, got.Dual, got.Relaxed, want.Status, want.Iterations, want.Dual, want.Relaxed)
					}
					if w == 1 && (got.Status != want.Status || got.Iterations != want.Iterations || !relClose(got.Primal, want.Primal, 1e-12)) {
						t.Errorf("one worker: %s after %d, primal %.12g; one process: %s after %d, primal %.12g",
							got.Status, got.Iterations, got.Primal, want.Status, want.Iterations, want.Primal)
					}
				}
			})
		}
	}
}

// EvalPropagate is sound: a state of a boundary variable that a feasible
// assignment of the whole model uses stays allowed by every part when the
// boundary variables fixed take that assignment's states; and it prunes
// (some state is removed somewhere), so the coordinator's construction
// has something to go on.
func TestPropagateKeepsFeasibleStates(t *testing.T) {
	removed := 0
	for seed := range int64(12) {
		red, err := model.Reduce(generate.Logic(generate.LogicOptions{Vars: 12, Factors: 10, Couplings: 8, MaxArity: 4, Rho: 1, Seed: seed}), nil)
		if err != nil {
			t.Fatal(err)
		}
		m := red.Model
		var feasible [][]int
		x := make([]int, m.NumVars())
		for {
			if !math.IsInf(m.Score(x), -1) {
				feasible = append(feasible, append([]int(nil), x...))
			}
			k := len(x) - 1
			for ; k >= 0; k-- {
				if x[k]++; x[k] < m.Cards[k] {
					break
				}
				x[k] = 0
			}
			if k < 0 {
				break
			}
		}
		sh := newSharded(t, m, partition.PerFactor(m), DefaultOptions(), 3)
		for f, y := range feasible[:min(len(feasible), 20)] {
			for w, wk := range sh.workers {
				in := &EvalIn{Seq: 1, Op: EvalPropagate}
				var offs []int
				for k, v := range wk.boundary {
					in.X = append(in.X, int32(y[wk.vars[v]]))
					in.Fixed = append(in.Fixed, (k+f)%3 == 0)
					offs = append(offs, len(in.Allowed))
					for range m.Cards[wk.vars[v]] {
						in.Allowed = append(in.Allowed, true)
					}
				}
				var out EvalOut
				if err := wk.Evaluate(in, &out); err != nil {
					t.Fatal(err)
				}
				if !out.Settled {
					t.Fatalf("seed %d, worker %d: a wipe-out around a feasible assignment's states", seed, w)
				}
				for k := range wk.boundary {
					if !out.Allowed[offs[k]+int(in.X[k])] {
						t.Fatalf("seed %d, worker %d: boundary variable %d's feasible state %d removed", seed, w, k, in.X[k])
					}
				}
				for _, a := range out.Allowed {
					if !a {
						removed++
					}
				}
			}
		}
	}
	if removed == 0 {
		t.Error("propagation never removed a boundary state")
	}
}

// On models without hard constraints the coordinator's boundary moves,
// priced by the parts' local scores, with the parts' ICM after each, end
// at an assignment no single variable's move improves, boundary variables
// included (the parts' own searches keep those fixed).
func TestShardedPrimalMovesTheBoundary(t *testing.T) {
	var cases []namedModel
	for seed := int64(1); seed <= 3; seed++ {
		cases = append(cases, namedModel{fmt.Sprintf("potts%d", seed), generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 4, Rho: 3, Seed: seed, Pair: generate.PairDense})},
			namedModel{fmt.Sprintf("ising%d", seed), generate.Ising(generate.GridOptions{Height: 12, Width: 12, Rho: 3, Seed: seed})})
	}
	for _, c := range cases {
		opts := DefaultOptions()
		opts.MaxIter = 10
		plan := partition.PerFactor(c.m)
		for w := 2; w <= 3; w++ {
			sh := newSharded(t, c.m, plan, opts, w)
			got, err := CoordinateShards(context.Background(), sh.bm, sh.sums, sh.b, sh.links, opts, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			x := sh.assignment(t, c.m.NumVars(), got)
			sc := c.m.Score(x)
			if !relClose(sc, got.Primal, 1e-9) {
				t.Fatalf("%s, %d workers: primal %.12g, the assignment scores %.12g", c.name, w, got.Primal, sc)
			}
			for i, card := range c.m.Cards {
				cur := x[i]
				for st := range card {
					x[i] = st
					if d := c.m.Score(x) - sc; d > 1e-9*math.Max(1, math.Abs(sc)) {
						t.Errorf("%s, %d workers: variable %d (boundary: %v) to state %d gains %g", c.name, w, i, slices.Contains(sh.vars, i), st, d)
					}
				}
				x[i] = cur
			}
		}
	}
}

// EvalStash sets a part's kept best aside and EvalRestore takes it back,
// whatever was kept in between; restoring with nothing set aside, or
// stashing with nothing kept, is an error.
func TestStashRestoresTheBest(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 6, Width: 6, Labels: 3, Rho: 2, Seed: 9})
	sh := newSharded(t, m, partition.PerFactor(m), DefaultOptions(), 2)
	wk := sh.workers[0]
	var out EvalOut
	if err := wk.Evaluate(&EvalIn{Seq: 1, Op: EvalStash}, &out); err == nil {
		t.Fatal("stashed with nothing kept")
	}
	if err := wk.Evaluate(&EvalIn{Seq: 2, Op: EvalRestore}, &out); err == nil {
		t.Fatal("restored with nothing set aside")
	}
	nb := len(sh.b.varsOf[0])
	best := func() []int32 {
		var x []int32
		for k := 0; ; k++ {
			_, states, last, err := wk.BestPiece(k, 5)
			if err != nil {
				t.Fatal(err)
			}
			x = append(x, states...)
			if last {
				return x
			}
		}
	}
	eval := func(seq int, op EvalOp, x []int32) {
		t.Helper()
		if err := wk.Evaluate(&EvalIn{Seq: seq, Op: op, X: x}, &out); err != nil {
			t.Fatal(err)
		}
	}
	eval(3, EvalDecoded, make([]int32, nb))
	eval(4, EvalKeepBefore, nil)
	first := best()
	eval(5, EvalStash, nil)
	ones := make([]int32, nb)
	for k := range ones {
		ones[k] = 1
	}
	eval(6, EvalDecoded, ones)
	eval(7, EvalKeepAfter, nil)
	if slices.Equal(best(), first) {
		t.Fatal("the second assignment kept is the first")
	}
	eval(8, EvalRestore, nil)
	if got := best(); !slices.Equal(got, first) {
		t.Fatalf("restored %v, set aside %v", got, first)
	}
}
