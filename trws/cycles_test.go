package trws

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/tighten"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// lpcOpts are testOpts with the cycle constraints on.
func lpcOpts(maxIter int) Options {
	o := testOpts(maxIter)
	o.Cycles = true
	return o
}

// explicitBound evaluates the dual at the current messages and tables by
// dynamic programming along the explicit chains of c (the sum of the
// chains' maxima, plus the isolated nodes, the constant and the cycle
// constant), independently of the passes and of the sweep's bookkeeping.
func explicitBound(c *lpc) float64 {
	g := c.g
	c.gatherAll()
	b := g.constant + g.shift
	for k := int32(0); k+1 < int32(len(c.cpos)); k++ {
		last := c.cpos[k+1] - 1
		c.forwardTo(k, last)
		_, mx := argmax(c.fw[c.foff[last]:c.foff[last+1]])
		b += mx
	}
	for s := 0; s < g.n; s++ {
		if g.inOff[s+1] == g.inOff[s] && g.outOff[s+1] == g.outOff[s] {
			_, mx := argmax(c.hatAll[g.uoff[s]:g.uoff[s+1]])
			b += mx
		}
	}
	return b
}

// lpcRunner prepares a TRW-S(LP-C) run on m as Solve does.
func lpcRunner(t *testing.T, m *model.Model, opts Options) *runner {
	t.Helper()
	red := reduced(t, m)
	g := testGraph(t, red, opts.Threads)
	g.enableLPC()
	r := newRun(g, opts)
	t.Cleanup(r.close)
	var err error
	if r.cyc, err = newLPC(g, red, 0); err != nil {
		t.Fatal(err)
	}
	return r
}

// frustrated returns the paper's kind of synthetic problem: grids with
// strong mixed-sign (non-submodular) couplings, binary and multi-label.
func frustrated(seed int64) []*model.Model {
	return []*model.Model{
		generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: seed}),
		generate.Potts(generate.GridOptions{Height: 3, Width: 4, Labels: 3, Rho: 4, Seed: seed}),
		denseGrid(rand.New(rand.NewPCG(uint64(seed), 7)), 3, 4, 3),
	}
}

// TestLPCSweepIsExact (Kumar and Torr, Sect. 3, problem (12)): every
// cycle step lowers the dual by exactly what it reports, so the bound after
// a sweep, the last pass's bound minus the sweep's decrease, equals the dual
// recomputed by dynamic programming over the chains; it is never above the
// pass's bound, and stays above the MAP score.
func TestLPCSweepIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var models []*model.Model
	for seed := int64(1); seed <= 3; seed++ {
		models = append(models, frustrated(seed)...)
	}
	for range 30 {
		models = append(models, tinyPairwise(rng, oracle.TinyOptions{MaxFactors: 20, MaxCard: 3}))
	}
	decreased := 0
	for k, m := range models {
		mapv, _ := oracle.BruteMAP(t, m)
		r := lpcRunner(t, m, lpcOpts(30))
		for it := 0; it < 15; it++ {
			r.forward()
			bb := r.backward()
			if math.IsInf(bb, -1) {
				break
			}
			dec := r.cyc.sweep()
			after := bb - dec
			if want := explicitBound(r.cyc); !near(after, want, 1e-9) {
				t.Fatalf("model %d, iteration %d: pass bound %v - decrease %v = %v, chains give %v", k, it, bb, dec, after, want)
			}
			if dec < 0 {
				t.Fatalf("model %d, iteration %d: the sweep raised the bound by %v", k, it, -dec)
			}
			if after < mapv-1e-9*(1+math.Abs(mapv)) {
				t.Fatalf("model %d, iteration %d: bound %v below the MAP score %v", k, it, after, mapv)
			}
			if dec > 1e-9 {
				decreased++
			}
		}
	}
	if decreased == 0 {
		t.Error("no sweep ever lowered the bound")
	}
}

// TestLPCRandomTiny: on random tiny pairwise models (triangles and
// squares, up to 4 states, hard constraints, ties) every reported dual of
// TRW-S(LP-C) is a valid, non-increasing upper bound and the primal is
// exact. The cycles start where TRW-S stalls, so the bound is never worse
// than TRW-S's.
func TestLPCRandomTiny(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tighter, worse := 0, 0
	for it := 0; it < 300; it++ {
		o := oracle.TinyOptions{IntegerWeights: it%3 == 0, Soft: it%4 == 1, MaxCard: 2 + it%3, MaxFactors: 24}
		m := tinyPairwise(rng, o)
		mapv, _ := oracle.BruteMAP(t, m)
		plain := solveChecked(t, "trws", m, testOpts(200), mapv)
		res := solveChecked(t, "lpc", m, lpcOpts(200), mapv)
		if res.Dual < plain.Dual-1e-6 {
			tighter++
		}
		if res.Dual > plain.Dual+1e-12*(1+math.Abs(plain.Dual)) { // dense tables: other rounding
			worse++
		}
	}
	t.Logf("TRW-S(LP-C) tighter than TRW-S on %d of 300 tiny models, looser on %d", tighter, worse)
	if tighter == 0 {
		t.Error("the cycle constraints never tightened the bound")
	}
	if worse > 0 {
		t.Errorf("TRW-S(LP-C) ended looser than TRW-S on %d models", worse)
	}
}

// TestLPCTightensFrustratedGrids (Kumar and Torr, Sect. 5: non-submodular
// synthetic grids, where TRW-S stalls at weak tree agreement): the cycle
// inequalities close most of TRW-S's gap to the MAP score.
func TestLPCTightensFrustratedGrids(t *testing.T) {
	var gapT, gapC float64
	optT, optC, n := 0, 0, 0
	for seed := int64(1); seed <= 8; seed++ {
		for _, m := range frustrated(seed) {
			mapv, _ := oracle.BruteMAP(t, m)
			o := testOpts(300)
			o.BoundTol, o.BoundWindow = 1e-9, 20
			plain := solveChecked(t, "trws", m, o, mapv)
			o.Cycles = true
			res := solveChecked(t, "lpc", m, o, mapv)
			gapT += plain.Dual - mapv
			gapC += res.Dual - mapv
			if plain.Status == solver.Optimal {
				optT++
			}
			if res.Status == solver.Optimal {
				optC++
			}
			n++
		}
	}
	t.Logf("%d grids: mean bound - MAP: TRW-S %.4f, TRW-S(LP-C) %.4f; optimal: %d vs %d", n, gapT/float64(n), gapC/float64(n), optT, optC)
	if gapC > 0.5*gapT {
		t.Errorf("cycle constraints closed only %.0f%% of TRW-S's gap (%v of %v)", 100*(1-gapC/gapT), gapC, gapT)
	}
	if optC <= optT {
		t.Errorf("TRW-S(LP-C) certified %d grids, TRW-S %d", optC, optT)
	}
}

// TestLPCToulbar2: on a 10x10 frustrated Ising grid (too big to enumerate)
// the TRW-S(LP-C) bound lies between toulbar2's optimum and TRW-S's bound.
func TestLPCToulbar2(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		m := generate.Ising(generate.GridOptions{Height: 10, Width: 10, Rho: 3, Seed: seed})
		opt := oracle.Toulbar2(t, m, 20*time.Second)
		o := testOpts(300)
		plain := solveChecked(t, "trws", m, o, opt)
		o.Cycles = true
		res := solveChecked(t, "lpc", m, o, opt)
		t.Logf("seed %d: optimum %.4f, TRW-S %.4f (%v), TRW-S(LP-C) %.4f (%v)", seed, opt, plain.Dual, plain.Status, res.Dual, res.Status)
		if res.Dual > plain.Dual+1e-6 {
			t.Errorf("seed %d: TRW-S(LP-C) bound %v looser than TRW-S's %v", seed, res.Dual, plain.Dual)
		}
	}
}

func TestLPCOptions(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 5, Width: 5, Rho: 1, Seed: 1})
	o := lpcOpts(10)
	o.MaxCycles = 3
	if _, err := Solve(bg, m, nil, o, nil); err == nil || !strings.Contains(err.Error(), "more than 3 short cycles") {
		t.Errorf("16 cycles with MaxCycles 3: got %v", err)
	}
	o.MaxCycles = -1
	if _, err := Solve(bg, m, nil, o, nil); err == nil {
		t.Error("negative MaxCycles accepted")
	}
	o.MaxCycles, o.SweepEvery = 0, -1
	if _, err := Solve(bg, m, nil, o, nil); err == nil || !strings.Contains(err.Error(), "SweepEvery") {
		t.Errorf("SweepEvery -1: got %v", err)
	}
	o.SweepEvery = 5
	for _, v := range []float64{-0.1, 1.5, math.NaN(), math.Inf(1)} {
		o.CycleStart = v
		if _, err := Solve(bg, m, nil, o, nil); err == nil || !strings.Contains(err.Error(), "CycleStart") {
			t.Errorf("CycleStart %v: got %v", v, err)
		}
	}
	_, st, err := SolveStats(bg, m, nil, lpcOpts(20), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 16 squares; the two at the corners where a chain turns (top right,
	// bottom left) have two edges in one chain.
	if st.Cycles.Cycles != 16 || st.Cycles.Shared != 2 {
		t.Errorf("stats %+v, want 16 cycles of which 2 shared", st.Cycles)
	}
}

// TestLPCPassesAfterSweep measures what cycles.go documents: the TRW-S
// pass right after a sweep can raise the bound (stale messages on the
// changed edges), while the reported bound, the lowest exact one, never
// rises and stays valid.
func TestLPCPassesAfterSweep(t *testing.T) {
	passes, rises := 0, 0
	maxRel := 0.0
	for seed := int64(1); seed <= 4; seed++ {
		models := append(frustrated(seed),
			generate.Ising(generate.GridOptions{Height: 20, Width: 20, Rho: 3, Seed: seed}),
			generate.Potts(generate.GridOptions{Height: 20, Width: 20, Labels: 3, Rho: 4, Seed: seed}))
		for k, m := range models {
			mapv := math.Inf(-1)
			if m.NumVars() <= 16 {
				mapv, _ = oracle.BruteMAP(t, m)
			}
			r := lpcRunner(t, m, lpcOpts(100))
			r.cycOn = true
			prev := math.Inf(1)
			r.onBounds = func(f, b float64) {
				for _, v := range []float64{f, b} {
					passes++
					if v > prev+1e-9*(1+math.Abs(prev)) {
						rises++
						maxRel = math.Max(maxRel, (v-prev)/math.Abs(prev))
					}
					prev = v
				}
			}
			reported := math.Inf(1)
			for range 100 {
				r.iterate()
				prev = r.last // the bound after the sweep
				if r.dual > reported {
					t.Fatalf("seed %d model %d: reported bound rose from %v to %v", seed, k, reported, r.dual)
				}
				if r.dual < mapv-1e-9*(1+math.Abs(mapv)) {
					t.Fatalf("seed %d model %d: bound %v below the MAP score %v", seed, k, r.dual, mapv)
				}
				reported = r.dual
			}
		}
	}
	t.Logf("%d of %d passes rose above the bound before them, by at most %.3g relative", rises, passes, maxRel)
}

// mixedPotts is the coordinator's `gen potts` grid: couplings of both signs
// drawn from U[-rho, rho], so frustrated squares abound.
func mixedPotts(h, w, labels int, rho float64, seed int64) *model.Model {
	return generate.Potts(generate.GridOptions{Height: h, Width: w, Labels: labels, Rho: rho, Seed: seed})
}

// TestLPCBelowTRWSOnGrids: on mixed-sign Potts grids large enough that
// TRW-S keeps creeping down for hundreds of iterations (so its bound never
// stalls by BoundTol, and never at all under BoundTol 0, the coordinator's
// --tol 0) the cycle sweeps still start, once TRW-S slows down
// (Options.CycleStart), and take the bound clearly below TRW-S's. Before
// CycleStart the sweeps waited for the BoundTol stall, which never came:
// LP-C returned TRW-S's bound exactly ("0 steps lowered the bound").
func TestLPCBelowTRWSOnGrids(t *testing.T) {
	for _, tc := range []struct {
		labels   int
		boundTol float64
		tol      float64
		minDrop  float64 // relative to TRW-S's bound
	}{
		{2, 0, 0, 3e-3},
		{2, 1e-7, 1e-6, 3e-3},
		{4, 0, 0, 3e-4},
	} {
		m := mixedPotts(24, 24, tc.labels, 1, 1)
		o := testOpts(300)
		o.BoundTol, o.Tol = tc.boundTol, tc.tol
		plain := solveChecked(t, "trws", m, o, math.Inf(-1))
		o.Cycles = true
		res, st, err := SolveStats(bg, m, nil, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, "lpc", m, res, math.Inf(-1))
		drop := (plain.Dual - res.Dual) / math.Abs(plain.Dual)
		t.Logf("%d labels, BoundTol %g: TRW-S %.4f, TRW-S(LP-C) %.4f (%.3g%% lower), primal %.4f; %+v", tc.labels, tc.boundTol, plain.Dual, res.Dual, 100*drop, res.Primal, st.Cycles)
		if drop < tc.minDrop {
			t.Errorf("%d labels, BoundTol %g: TRW-S(LP-C) bound %v only %.3g%% below TRW-S's %v (want >= %.3g%%)", tc.labels, tc.boundTol, res.Dual, 100*drop, plain.Dual, 100*tc.minDrop)
		}
		if st.Cycles.Steps == 0 {
			t.Errorf("%d labels: no cycle step lowered the bound", tc.labels)
		}
	}
}

// cycleLP returns the optimum of the LP that TRW-S(LP-C) is the dual of on
// the binary pairwise model m (one factor per edge): the local polytope
// cut by every cycle inequality of every triangle and chordless square
// (for binary cycles, 2^(c-1) inequalities with all labels l_k = 1, see
// cycles.go), solved by gonum's simplex.
func cycleLP(t *testing.T, m *model.Model) float64 {
	t.Helper()
	cyc, _, err := tighten.FindCycles(m, tighten.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nv := len(m.Unary)
	col := func(a, s, u int) int { return nv + 4*a + 2*s + u } // nu_a(s, u)
	edge := map[[2]int]int{}
	for a, f := range m.Factors {
		if len(f.Vars) != 2 || m.Cards[f.Vars[0]] != 2 || m.Cards[f.Vars[1]] != 2 {
			t.Fatalf("cycleLP: factor %d is not binary pairwise", a)
		}
		edge[[2]int{f.Vars[0], f.Vars[1]}] = a
		edge[[2]int{f.Vars[1], f.Vars[0]}] = a
	}
	nineq := 0
	for _, c := range cyc {
		nineq += 1 << (len(c) - 1)
	}
	ncol := nv + 4*len(m.Factors) + nineq
	var rows [][]float64
	var b []float64
	row := func(rhs float64) []float64 {
		r := make([]float64, ncol)
		rows, b = append(rows, r), append(b, rhs)
		return r
	}
	cost := make([]float64, ncol)
	for i := range m.Cards {
		r := row(1)
		for s := 0; s < 2; s++ {
			cost[m.UnaryOff[i]+s] = -m.Unary[m.UnaryOff[i]+s]
			r[m.UnaryOff[i]+s] = 1
		}
	}
	x := make([]int, len(m.Cards))
	for a, f := range m.Factors {
		u, v := f.Vars[0], f.Vars[1]
		for s := 0; s < 2; s++ {
			for w := 0; w < 2; w++ {
				x[u], x[v] = s, w
				cost[col(a, s, w)] = -m.FactorScore(a, x)
			}
		}
		x[u], x[v] = 0, 0
		for s := 0; s < 2; s++ { // sum_w nu(s, w) = mu_u(s)
			r := row(0)
			r[col(a, s, 0)], r[col(a, s, 1)], r[m.UnaryOff[u]+s] = 1, 1, -1
		}
		r := row(0) // sum_s nu(s, 0) = mu_v(0); the row of state 1 is implied
		r[col(a, 0, 0)], r[col(a, 1, 0)], r[m.UnaryOff[v]] = 1, 1, -1
	}
	slack := nv + 4*len(m.Factors)
	for _, c := range cyc {
		n := len(c)
		for mask := 1; mask < 1<<n; mask++ {
			if bits.OnesCount(uint(mask))%2 == 0 {
				continue
			}
			r := row(float64(bits.OnesCount(uint(mask)) - 1))
			for k := 0; k < n; k++ {
				a := edge[[2]int{c[k], c[(k+1)%n]}]
				sign := -1.0
				if mask>>k&1 == 1 {
					sign = 1
				}
				r[col(a, 0, 1)] += sign // cut_k = nu(0,1) + nu(1,0) either way round
				r[col(a, 1, 0)] += sign
			}
			r[slack] = 1
			slack++
		}
	}
	A := mat.NewDense(len(rows), ncol, nil)
	for i, r := range rows {
		A.SetRow(i, r)
	}
	opt, _, err := lp.Simplex(cost, A, b, 1e-10, nil)
	if err != nil {
		t.Fatalf("cycleLP: %v", err)
	}
	return m.Constant - opt
}

// TestLPCCycleLPOracle: on small frustrated binary grids (4x4 and 3x5,
// with and without unary fields) the TRW-S(LP-C) bound is a valid upper
// bound not only on the MAP score (brute force) but on the optimum of the
// LP it is the dual of (cycleLP: local polytope + the cycle inequalities of
// every square; LP-C skips the few squares with two edges in one chain,
// which only loosens its LP), and it closes most of the gap between TRW-S's
// bound and that optimum.
func TestLPCCycleLPOracle(t *testing.T) {
	var gapT, gapC float64
	n := 0
	for seed := int64(1); seed <= 4; seed++ {
		for _, m := range []*model.Model{
			generate.Ising(generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: seed}),
			mixedPotts(4, 4, 2, 2, seed),
			mixedPotts(3, 5, 2, 1, seed),
		} {
			mapv, _ := oracle.BruteMAP(t, m)
			lpv := cycleLP(t, m)
			if lpv < mapv-1e-6*(1+math.Abs(mapv)) {
				t.Fatalf("seed %d: cycle LP %v below the MAP score %v", seed, lpv, mapv)
			}
			o := testOpts(400)
			o.Tol, o.BoundTol = 0, 0
			plain := solveChecked(t, "trws", m, o, mapv)
			o.Cycles = true
			res := solveChecked(t, "lpc", m, o, mapv)
			if res.Dual < lpv-1e-6*(1+math.Abs(lpv)) {
				t.Fatalf("seed %d, %d vars: TRW-S(LP-C) bound %v below its LP's optimum %v", seed, m.NumVars(), res.Dual, lpv)
			}
			gapT += plain.Dual - lpv
			gapC += res.Dual - lpv
			n++
		}
	}
	t.Logf("%d grids: mean bound - cycle LP: TRW-S %.4f, TRW-S(LP-C) %.4f", n, gapT/float64(n), gapC/float64(n))
	if gapC > 0.5*gapT {
		t.Errorf("TRW-S(LP-C) closed only %.0f%% of TRW-S's gap to the cycle LP (%v of %v)", 100*(1-gapC/gapT), gapC, gapT)
	}
}
