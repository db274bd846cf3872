package consensus

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// hardLogic is a generate.Logic model, reduced, with its factors
// interleaved (the generator writes the logic factors first) so that
// every part of a split into consecutive slaves gets hard constraints.
func hardLogic(t *testing.T, vars int, seed int64) *model.Model {
	t.Helper()
	g := generate.Logic(generate.LogicOptions{Vars: vars, Factors: 24, Couplings: 60, MaxArity: 3, Rho: 1, Seed: seed})
	fs := g.Factors
	var mixed []model.Factor
	for i, j := 0, len(fs)-1; i <= j; i, j = i+1, j-1 {
		mixed = append(mixed, fs[i])
		if i != j {
			mixed = append(mixed, fs[j])
		}
	}
	g.Factors = mixed
	red, err := model.Reduce(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	return red.Model
}

// hardSharded is hardLogic's model of 14 variables (seed), split in two
// parts in this process.
func hardSharded(t *testing.T, seed int64) *sharded {
	t.Helper()
	m := hardLogic(t, 14, seed)
	plan, err := PartitionPlan(m, PerFactor)
	if err != nil {
		t.Fatal(err)
	}
	return newSharded(t, m, plan, DefaultOptions(), 2)
}

// bestInterior is the brute-force oracle of a block price: the best share
// of the part's score (localSearch.partial) over all states of its
// interior, the boundary in the states x gives; -Inf when none is
// feasible.
func bestInterior(wk *Worker, x []int) float64 {
	ls := wk.evalState().search
	m := wk.p.Model
	y := slices.Clone(x)
	best := math.Inf(-1)
	var rec func(k int)
	rec = func(k int) {
		if k == len(wk.interior) {
			best = math.Max(best, ls.partial(y))
			return
		}
		v := wk.interior[k]
		for s := range m.Cards[v] {
			y[v] = s
			rec(k + 1)
		}
	}
	rec(0)
	return best
}

// On parts of hard constraints small enough for brute force: EvalBlock's
// price of every joint state of a block is exactly the share of the
// assignment EvalBlockApply makes for it (so the coordinator's totals are
// exact scores), never above the best completion of the part, and -Inf
// where no completion exists; EvalBlockFeasible never rules out a joint
// state that has a completion.
func TestBlockPricesMatchBruteForce(t *testing.T) {
	checked := 0
	bruteParts(t, func(t *testing.T, wk *Worker, opt []int, X []int32, out *EvalOut) {
		base := out.Before
		block := []int32{0, int32(len(wk.boundary) - 1)}
		allowed, gains := feasibleAndPrices(t, wk, &EvalIn{Seq: 2, X: X, Block: block}, out)
		v0, v1 := wk.boundary[block[0]], wk.boundary[block[1]]
		c1 := wk.p.Model.Cards[v1]
		if len(gains) != wk.p.Model.Cards[v0]*c1 || len(allowed) != len(gains) {
			t.Fatalf("%d prices and %d feasible flags for %d joint states", len(gains), len(allowed), wk.p.Model.Cards[v0]*c1)
		}
		x := make([]int, len(wk.vars))
		for i, v := range wk.vars {
			x[i] = opt[v]
		}
		for st, g := range gains {
			x[v0], x[v1] = st/c1, st%c1
			checkBrute(t, wk, x, st, allowed[st], base, g)
			if math.IsInf(g, -1) {
				continue
			}
			ax := slices.Clone(X)
			ax[block[0]], ax[block[1]] = int32(st/c1), int32(st%c1)
			app := &EvalIn{Seq: 3, Op: EvalBlockApply, X: ax, Block: block}
			if err := wk.Evaluate(app, out); err != nil {
				t.Fatal(err)
			}
			if math.Abs(out.Before-(base+g)) > 1e-9*math.Max(1, math.Abs(base)) || out.After < out.Before {
				t.Errorf("joint state %d: priced %v, applied %v then %v", st, base+g, out.Before, out.After)
			}
			checked++
		}
	})
	if checked == 0 {
		t.Fatal("no joint state was checked")
	}
}

// checkBrute checks joint state st's feasible flag and price g (base:
// the kept share) against the part's best completion around x, by brute
// force: a completion is never ruled out, none is priced -Inf, and the
// price is never above it.
func checkBrute(t *testing.T, wk *Worker, x []int, st int, allowed bool, base, g float64) {
	t.Helper()
	brute := bestInterior(wk, x)
	if !math.IsInf(brute, -1) && !allowed {
		t.Errorf("joint state %d: a completion scores %v, ruled out by propagation", st, brute)
	}
	if math.IsInf(brute, -1) && !math.IsInf(g, -1) {
		t.Errorf("joint state %d: priced %v with no completion", st, g)
	}
	if base+g > brute+1e-9 {
		t.Errorf("joint state %d: priced %v above the best completion %v", st, base+g, brute)
	}
}

// feasibleAndPrices asks wk for in's block's feasible flags
// (EvalBlockFeasible), then its prices (EvalBlock).
func feasibleAndPrices(t *testing.T, wk *Worker, in *EvalIn, out *EvalOut) ([]bool, []float64) {
	t.Helper()
	in.Op = EvalBlockFeasible
	if err := wk.Evaluate(in, out); err != nil {
		t.Fatal(err)
	}
	allowed := slices.Clone(out.Allowed)
	in.Op = EvalBlock
	if err := wk.Evaluate(in, out); err != nil {
		t.Fatal(err)
	}
	return allowed, slices.Clone(out.Gains)
}

// bruteParts calls fn on each part of hard constraints small enough for
// brute force of the 2-part splits of six hardLogic models, with the
// optimum opt kept as its best (its boundary states X; out, the answer
// to that keep's evaluation).
func bruteParts(t *testing.T, fn func(t *testing.T, wk *Worker, opt []int, X []int32, out *EvalOut)) {
	for seed := int64(1); seed <= 6; seed++ {
		m := hardLogic(t, 14, seed)
		_, opt := oracle.BruteMAP(t, m)
		plan, err := PartitionPlan(m, PerFactor)
		if err != nil {
			t.Fatal(err)
		}
		opts := DefaultOptions()
		opts.Threads = 1
		sh := newSharded(t, m, plan, opts, 2)
		for w, wk := range sh.workers {
			if len(wk.boundary) < 2 || len(wk.interior) > 14 {
				continue
			}
			t.Run(fmt.Sprintf("seed%d/part%d", seed, w), func(t *testing.T) {
				e := wk.evalState()
				e.search.newPrim()
				if !e.search.prim.Hard() {
					t.Skip("no hard constraint in the part")
				}
				// The kept best: the optimum's states on the part.
				X := make([]int32, len(wk.boundary))
				for k, v := range wk.boundary {
					X[k] = int32(opt[wk.vars[v]])
				}
				for i, v := range wk.vars {
					wk.x[i] = opt[v]
				}
				fn(t, wk, opt, X, keepDecoded(t, wk, X))
			})
		}
	}
}

// A worker refuses hostile block requests: indices out of range, out of
// order or repeated, too many joint states, feasibility flags of the
// wrong length.
func TestBlockRequestsChecked(t *testing.T) {
	sh := hardSharded(t, 1)
	wk := sh.workers[0]
	nb := len(wk.boundary)
	if nb < 2 {
		t.Fatalf("part of %d boundary variables", nb)
	}
	wk.evalState().search.newPrim()
	X := make([]int32, nb)
	out := keepDecoded(t, wk, X)
	for _, c := range []struct {
		name    string
		op      EvalOp
		block   []int32
		allowed []bool
	}{
		{"negative", EvalBlock, []int32{-1}, nil},
		{"out of range", EvalBlockFeasible, []int32{int32(nb)}, nil},
		{"repeated", EvalBlockApply, []int32{0, 0}, nil},
		{"decreasing", EvalBlock, []int32{1, 0}, nil},
		{"flags", EvalBlock, []int32{0, 1}, []bool{true}},
	} {
		in := &EvalIn{Seq: 2, Op: c.op, X: X, Block: c.block, Allowed: c.allowed}
		if err := wk.Evaluate(in, out); err == nil {
			t.Errorf("%s: block %v accepted", c.name, c.block)
		}
	}
	// More than maxBlockStates joint states.
	big := make([]int32, 0, nb)
	states := 1
	for k := range nb {
		big = append(big, int32(k))
		states *= wk.p.Model.Cards[wk.boundary[k]]
	}
	if states > maxBlockStates {
		if err := wk.Evaluate(&EvalIn{Seq: 3, Op: EvalBlock, X: X, Block: big}, out); err == nil {
			t.Errorf("a block of %d joint states accepted", states)
		}
	}
}

// Sharded runs on small models of hard constraints (2 and 3 workers):
// the block moves keep the primal the exact score of the assignment the
// parts put together, never above the optimum (brute force); each block
// move tried afterwards never lowers it.
func TestShardedBlockMovesExact(t *testing.T) {
	ran := 0
	for seed := int64(1); seed <= 20; seed++ {
		m := hardLogic(t, 14, seed)
		inFactor := make([]bool, m.NumVars())
		for a := range m.Factors {
			for _, v := range m.Factors[a].Vars {
				inFactor[v] = true
			}
		}
		if slices.Contains(inFactor, false) {
			continue // a variable on no part
		}
		best, _ := oracle.BruteMAP(t, m)
		plan, err := PartitionPlan(m, PerFactor)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{2, 3} {
			t.Run(fmt.Sprintf("seed%d/%d", seed, w), func(t *testing.T) {
				opts := DefaultOptions()
				opts.MaxIter, opts.Threads = 40, 1
				sh := newSharded(t, m, plan, opts, w)
				res, err := CoordinateShards(context.Background(), sh.bm, sh.sums, sh.b, sh.links, opts, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if math.IsInf(res.Primal, -1) {
					t.Skip("no feasible assignment found")
				}
				x := sh.assignment(t, m.NumVars(), res)
				if sc := m.Score(x); math.Abs(sc-res.Primal) > 1e-9*math.Max(1, math.Abs(sc)) || sc > best+1e-9 {
					t.Fatalf("primal %v, the assignment scores %v, optimum %v", res.Primal, sc, best)
				}
				// Every block again, one at a time, from the result.
				sp, err := newShardPrimal(sh.links, len(sh.vars))
				if err != nil {
					t.Fatal(err)
				}
				copy(sp.best, res.Boundary)
				infos := make([]partInfo, len(sh.sums))
				pl := newPool(1)
				defer pl.close()
				s := newMasterOf(sh.bm, opts, infos, sh.b, sh.links, pl)
				s.shards = sp
				r := res.Result
				adj, err := sp.nearGraph(context.Background(), s)
				if err != nil {
					t.Fatal(err)
				}
				if adj == nil {
					t.Skip("no part prices block moves")
				}
				for j := range adj {
					before := r.Primal
					if _, err := sp.tryBlock(context.Background(), s, &r, growBlock(adj, sh.bm.Cards, j)); err != nil {
						t.Fatal(err)
					}
					res.Boundary = sp.best
					x := sh.assignment(t, m.NumVars(), res)
					if sc := m.Score(x); r.Primal < before || math.Abs(sc-r.Primal) > 1e-9*math.Max(1, math.Abs(sc)) || sc > best+1e-9 {
						t.Fatalf("block from %d: primal %v to %v, the assignment scores %v, optimum %v", j, before, r.Primal, sc, best)
					}
				}
				ran++
			})
		}
	}
	if ran == 0 {
		t.Fatal("no run checked")
	}
}

// forgedBlock answers as its worker does, then lets forge rewrite the
// answers to op.
type forgedBlock struct {
	LocalLink
	op    EvalOp
	forge func(*EvalOut)
}

func (f forgedBlock) Evaluate(ctx context.Context, in *EvalIn, out *EvalOut) error {
	if err := f.LocalLink.Evaluate(ctx, in, out); err != nil {
		return err
	}
	if in.Op == f.op {
		f.forge(out)
	}
	return nil
}

// The coordinator refuses hostile answers to the block moves: near pairs
// out of range, out of order or odd, feasibility flags or prices of the
// wrong length, NaN or +Inf prices.
func TestBlockAnswersChecked(t *testing.T) {
	m := hardLogic(t, 14, 5)
	plan, err := PartitionPlan(m, PerFactor)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.MaxIter, opts.Threads = 40, 1
	sh := newSharded(t, m, plan, opts, 2)
	res, err := CoordinateShards(context.Background(), sh.bm, sh.sums, sh.b, sh.links, opts, nil, nil)
	if err != nil || math.IsInf(res.Primal, -1) {
		t.Fatalf("primal %v, err %v", res.Primal, err)
	}
	for _, c := range []struct {
		name  string
		op    EvalOp
		forge func(*EvalOut)
	}{
		{"odd near pairs", EvalNear, func(o *EvalOut) { o.Pairs = append(o.Pairs, 0) }},
		{"near pair out of range", EvalNear, func(o *EvalOut) { o.Pairs = append(o.Pairs, 0, 1<<20) }},
		{"near pair reversed", EvalNear, func(o *EvalOut) { o.Pairs = append(o.Pairs, 1, 0) }},
		{"near pair twice", EvalNear, func(o *EvalOut) { o.Pairs = append(o.Pairs, o.Pairs[len(o.Pairs)-2:]...) }},
		{"feasible flags", EvalBlockFeasible, func(o *EvalOut) { o.Allowed = append(o.Allowed, true) }},
		{"prices", EvalBlock, func(o *EvalOut) { o.Gains = append(o.Gains, 0) }},
		{"NaN price", EvalBlock, func(o *EvalOut) { o.Gains = append(o.Gains[:len(o.Gains)-1], math.NaN()) }},
		{"+Inf price", EvalBlock, func(o *EvalOut) { o.Gains = append(o.Gains[:len(o.Gains)-1], math.Inf(1)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Every worker forges: a part without hard constraints
			// answers no prices to forge.
			links := slices.Clone(sh.links)
			for w := range links {
				links[w] = forgedBlock{LocalLink: sh.links[w].(LocalLink), op: c.op, forge: func(o *EvalOut) {
					if len(o.Gains) > 0 || len(o.Allowed) > 0 || len(o.Pairs) > 0 {
						c.forge(o)
					}
				}}
			}
			sp, err := newShardPrimal(links, len(sh.vars))
			if err != nil {
				t.Fatal(err)
			}
			copy(sp.best, res.Boundary)
			pl := newPool(1)
			defer pl.close()
			s := newMasterOf(sh.bm, opts, make([]partInfo, 2), sh.b, links, pl)
			s.shards = sp
			r := res.Result
			if err := sp.blockMoves(context.Background(), s, &r); err == nil {
				t.Errorf("forged answer accepted (primal %v)", r.Primal)
			}
		})
	}
}

// keepDecoded has worker wk evaluate the decoded assignment with boundary
// states X and keep it before its improvement (the best block moves
// start from), and returns the evaluation's answer.
func keepDecoded(t *testing.T, wk *Worker, X []int32) *EvalOut {
	t.Helper()
	in, out := &EvalIn{Seq: 1, Op: EvalDecoded, X: X}, &EvalOut{}
	if err := wk.Evaluate(in, out); err != nil {
		t.Fatal(err)
	}
	in.Op = EvalKeepBefore
	if err := wk.Evaluate(in, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Blocks grow from the ties: the boundary variables whose relaxed
// marginals split (the largest entry below 1-tieMargin), in boundary
// order; from every boundary variable when none splits.
func TestTieSeeds(t *testing.T) {
	sh := hardSharded(t, 1)
	nb := len(sh.vars)
	if nb < 3 {
		t.Fatalf("%d boundary variables", nb)
	}
	pl := newPool(1)
	defer pl.close()
	s := newMasterOf(sh.bm, DefaultOptions(), make([]partInfo, len(sh.sums)), sh.b, sh.links, pl)
	// Decided: every marginal one-hot but the last variable's, which
	// is within tieMargin of one-hot.
	for j := range nb {
		mu := s.bmu[s.bmuOff[j]:s.bmuOff[j+1]]
		clear(mu)
		mu[j%len(mu)] = 1
	}
	last := s.bmu[s.bmuOff[nb-1]:s.bmuOff[nb]]
	clear(last)
	last[0], last[1] = 1-tieMargin/2, tieMargin/2
	all := make([]int, nb)
	for j := range all {
		all[j] = j
	}
	if got := tieSeeds(s); !slices.Equal(got, all) {
		t.Errorf("no tie: seeds %v, want every boundary variable", got)
	}
	// Ties at 0 and 2: a half-half split, and a 0.98/0.02 split (under 0.99).
	mu0 := s.bmu[s.bmuOff[0]:s.bmuOff[1]]
	mu0[0], mu0[1] = 0.5, 0.5
	mu2 := s.bmu[s.bmuOff[2]:s.bmuOff[3]]
	clear(mu2)
	mu2[0], mu2[1] = 0.98, 0.02
	if got := tieSeeds(s); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("seeds %v, want the ties [0 2]", got)
	}
}

// On parts of hard constraints small enough for brute force, a block
// restricted to two states per variable (EvalIn.Dom, the tie kick):
// one price and one feasible flag per joint state of the restricted
// domains; each price is the score EvalBlockApply keeps for that state
// (after its ICM), never above the part's best completion, and -Inf
// where none exists; propagation never rules out a state that has one.
func TestRestrictedBlockPricesMatchBruteForce(t *testing.T) {
	checked := 0
	bruteParts(t, func(t *testing.T, wk *Worker, opt []int, X []int32, out *EvalOut) {
		base := out.Before
		block := []int32{0, int32(len(wk.boundary) - 1)}
		// Each variable: its kept state second, another first (the
		// layout puts no state before another).
		var dom []int32
		for _, k := range block {
			c := int32(wk.p.Model.Cards[wk.boundary[k]])
			dom = append(dom, (X[k]+1)%c, X[k])
		}
		allowed, gains := feasibleAndPrices(t, wk, &EvalIn{Seq: 2, X: X, Block: block, Dom: dom}, out)
		if len(gains) != 4 || len(allowed) != 4 {
			t.Fatalf("%d prices and %d feasible flags for 4 joint states", len(gains), len(allowed))
		}
		x := make([]int, len(wk.vars))
		for i, v := range wk.vars {
			x[i] = opt[v]
		}
		v0, v1 := wk.boundary[block[0]], wk.boundary[block[1]]
		for st, g := range gains {
			s0, s1 := dom[st/2], dom[2+st%2]
			x[v0], x[v1] = int(s0), int(s1)
			checkBrute(t, wk, x, st, allowed[st], base, g)
			if st == 3 && g < -1e-9 { // the kept states: nothing to lose
				t.Errorf("the kept states priced %v", g)
			}
			if math.IsInf(g, -1) {
				continue
			}
			ax := slices.Clone(X)
			ax[block[0]], ax[block[1]] = s0, s1
			app := &EvalIn{Seq: 3, Op: EvalBlockApply, X: ax, Block: block, Dom: dom}
			if err := wk.Evaluate(app, out); err != nil {
				t.Fatal(err)
			}
			if math.Abs(out.After-(base+g)) > 1e-9*math.Max(1, math.Abs(base)) {
				t.Errorf("joint state %d: priced %v, applied %v", st, base+g, out.After)
			}
			checked++
		}
	})
	if checked == 0 {
		t.Fatal("no joint state was checked")
	}
}

// A worker refuses hostile restricted domains: of the wrong length, a
// state out of range or negative, the two states equal, and an apply to
// a state outside them.
func TestRestrictedBlockRequestsChecked(t *testing.T) {
	sh := hardSharded(t, 1)
	wk := sh.workers[0]
	if len(wk.boundary) < 2 {
		t.Fatalf("part of %d boundary variables", len(wk.boundary))
	}
	wk.evalState().search.newPrim()
	X := make([]int32, len(wk.boundary))
	out := keepDecoded(t, wk, X)
	c := int32(wk.p.Model.Cards[wk.boundary[0]])
	block := []int32{0}
	for _, bad := range []struct {
		name string
		op   EvalOp
		dom  []int32
	}{
		{"length", EvalBlock, []int32{0}},
		{"too long", EvalBlockFeasible, []int32{0, 1, 0, 1}},
		{"out of range", EvalBlock, []int32{0, c}},
		{"negative", EvalBlockApply, []int32{-1, 0}},
		{"equal", EvalBlock, []int32{1, 1}},
	} {
		if err := wk.Evaluate(&EvalIn{Seq: 2, Op: bad.op, X: X, Block: block, Dom: bad.dom}, out); err == nil {
			t.Errorf("%s: domain %v accepted", bad.name, bad.dom)
		}
	}
	// An apply whose variable's state lies outside its two: on a part of
	// three-state variables (the logic models above have two, where two
	// distinct states leave none outside).
	m3 := generate.Potts(generate.GridOptions{Height: 3, Width: 4, Labels: 3, Rho: 0.5, Seed: 5})
	for a, f := range m3.Factors { // hard: the parts price block moves
		t := make([]float64, 9)
		t[8] = math.Inf(-1) // both in state 2
		m3.Factors[a] = model.Factor{Kind: model.Dense, Vars: f.Vars, Table: t}
	}
	plan, err := PartitionPlan(m3, PerFactor)
	if err != nil {
		t.Fatal(err)
	}
	w3 := newSharded(t, m3, plan, DefaultOptions(), 2).workers[0]
	w3.evalState().search.newPrim()
	X3 := make([]int32, len(w3.boundary)) // every boundary variable in state 0
	out3 := keepDecoded(t, w3, X3)
	if err := w3.Evaluate(&EvalIn{Seq: 2, Op: EvalBlockApply, X: X3, Block: block, Dom: []int32{1, 2}}, out3); err == nil {
		t.Error("outside: an apply from state 0 over the domain {1, 2} accepted")
	}
	if err := w3.Evaluate(&EvalIn{Seq: 3, Op: EvalBlockApply, X: X3, Block: block, Dom: []int32{0, 2}}, out3); err != nil {
		t.Errorf("inside: an apply from state 0 over the domain {0, 2}: %v", err)
	}
	if err := wk.Evaluate(&EvalIn{Seq: 3, Op: EvalBlockFeasible, X: X, Block: block, Dom: []int32{1, 0}}, out); err != nil || len(out.Allowed) != 2 {
		t.Errorf("a good domain: %v, %d flags", err, len(out.Allowed))
	}
}

// The tie kick's variables: the two-way ties with their runner-up, the
// phase swaps (a decided variable of more than two states near a tie,
// with the state of a decided near variable of its states), the most
// even first within maxBlockStates; no three-way split, no variable near
// none, no swap near no tie.
func TestKickVars(t *testing.T) {
	cards := []int{2, 3, 5, 5, 3, 5, 5}
	var bmu []float64
	bmuOff := []int{0}
	for _, c := range cards {
		bmu = append(bmu, make([]float64, c)...)
		bmuOff = append(bmuOff, len(bmu))
	}
	s := &master{bmu: bmu, bmuOff: bmuOff}
	set := func(j int, p ...float64) { copy(s.bmu[s.bmuOff[j]:s.bmuOff[j+1]], p) }
	set(0, 0.5, 0.5)         // a tie
	set(1, 0.4, 0.3, 0.3)    // a three-way split
	set(2, 0, 1, 0, 0, 0)    // decided, near tie 0: swaps with 3
	set(3, 0, 0, 0, 1, 0)    // decided, near tie 0: swaps with 2
	set(4, 0.45, 0, 0.55)    // a tie, runner-up 0
	set(5, 0, 1, 0, 0, 0)    // decided, near no tie
	set(6, 0, 0, 0, 0.6, .4) // a tie, near nothing
	adj := [][]int{{2, 3}, {0}, {0, 3}, {0, 2}, {0}, {3}, nil}
	best := []int{1, 0, 1, 3, 2, 1, 3}
	b, dom := kickVars(s, best, adj)
	if !slices.Equal(b, []int{0, 2, 3, 4}) || !slices.Equal(dom, []int{1, 0, 1, 3, 3, 1, 2, 0}) {
		t.Errorf("kick %v %v, want [0 2 3 4] [1 0 1 3 3 1 2 0]", b, dom)
	}
	// Over maxBlockStates: the least even go first, down to the 13 most
	// even (2^13 joint states), however many ties there are (64 and more
	// once slipped through: 1<<64 is 0 in Go).
	for _, n := range []int{20, 63, 64, 70} {
		s.bmu, s.bmuOff = nil, []int{0}
		ring := make([][]int, n)
		for j := range n {
			p := 0.5 + float64(j)/1000
			s.bmu = append(s.bmu, p, 1-p)
			s.bmuOff = append(s.bmuOff, len(s.bmu))
			ring[j] = []int{(j + 1) % n}
		}
		b, _ = kickVars(s, make([]int, n), ring)
		want := make([]int, 13)
		for j := range want {
			want[j] = j
		}
		if !slices.Equal(b, want) {
			t.Errorf("%d ties: kick %v, want the 13 most even %v", n, b, want)
		}
	}
}

// FuzzBlockRequest feeds a worker decoded but hostile block requests
// (any operation of the three, block indices, restricted domains and
// boundary states from the fuzzer's bytes): it never panics, and a
// request it takes is answered with one flag or price per joint state
// of the block's (restricted) domains.
func FuzzBlockRequest(f *testing.F) {
	f.Add(uint8(0), []byte{0, 1}, []byte{}, []byte{0, 0, 0})
	f.Add(uint8(1), []byte{0, 2}, []byte{0, 1, 1, 0}, []byte{0, 1, 0})
	f.Add(uint8(2), []byte{1}, []byte{1, 0}, []byte{0, 0, 0})
	f.Add(uint8(0), []byte{0}, []byte{0, 9}, []byte{})
	f.Add(uint8(1), []byte{2, 1}, []byte{0, 1, 255, 1}, []byte{1, 1, 1})
	f.Add(uint8(0), []byte{0, 1}, []byte{1, 0}, []byte{})
	f.Fuzz(func(t *testing.T, op uint8, block, dom, x []byte) {
		sh := hardSharded(t, 1)
		wk := sh.workers[0]
		nb := len(wk.boundary)
		wk.evalState().search.newPrim()
		X := make([]int32, nb)
		out := keepDecoded(t, wk, X)
		for k := range min(nb, len(x)) {
			X[k] = int32(int8(x[k]))
		}
		in := &EvalIn{Seq: 2, Op: []EvalOp{EvalBlock, EvalBlockFeasible, EvalBlockApply}[int(op)%3], X: X}
		for _, b := range block {
			in.Block = append(in.Block, int32(int8(b)))
		}
		for _, d := range dom {
			in.Dom = append(in.Dom, int32(int8(d)))
		}
		if err := wk.Evaluate(in, out); err != nil {
			return
		}
		states := 1
		for _, k := range in.Block {
			if len(in.Dom) != 0 {
				states *= 2
			} else {
				states *= wk.p.Model.Cards[wk.boundary[k]]
			}
		}
		switch in.Op {
		case EvalBlock:
			if len(out.Gains) != 0 && len(out.Gains) != states {
				t.Fatalf("%d prices for %d joint states", len(out.Gains), states)
			}
		case EvalBlockFeasible:
			if len(out.Allowed) != 0 && len(out.Allowed) != states {
				t.Fatalf("%d flags for %d joint states", len(out.Allowed), states)
			}
		}
	})
}
