package slaves_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/slaves"
	"github.com/ddrun/ddrun/slaves/slavetest"
)

// Tests of the active-set QUAD solver (AD3 JMLR 2015 Alg. 3), mostly through
// Dense, against the brute-force reference of package slavetest. Helpers are
// prefixed "as" to keep the shared slaves_test namespace clean.

var asNegInf = math.Inf(-1)

// asTableScore returns the score function of a dense table (last variable
// fastest), for the reference solvers.
func asTableScore(cards []int, table []float64) func([]int) float64 {
	return func(y []int) float64 {
		i := 0
		for k, c := range cards {
			i = i*c + y[k]
		}
		return table[i]
	}
}

// asRandCase draws a random dense factor and QUAD input: arity 1..3,
// cardinalities 1..4, table entries in [-2,2] with probability pInf of -Inf,
// c in [-3,3], eta in {0.1, 1, 10}.
func asRandCase(rng *rand.Rand, pInf float64) (cards []int, table, c []float64, eta float64) {
	return asRandCaseC(rng, pInf, -3, 3)
}

// asRandCaseC is asRandCase with c uniform in [lo, hi].
func asRandCaseC(rng *rand.Rand, pInf, lo, hi float64) (cards []int, table, c []float64, eta float64) {
	n := 1 + rng.IntN(3)
	cards = make([]int, n)
	size, dim := 1, 0
	for k := range cards {
		cards[k] = 1 + rng.IntN(4)
		size *= cards[k]
		dim += cards[k]
	}
	table = make([]float64, size)
	for i := range table {
		if rng.Float64() < pInf {
			table[i] = asNegInf
		} else {
			table[i] = 4*rng.Float64() - 2
		}
	}
	c = make([]float64, dim)
	for i := range c {
		c[i] = lo + (hi-lo)*rng.Float64()
	}
	eta = []float64{0.1, 1, 10}[rng.IntN(3)]
	return
}

// asFeasible reports whether some table entry is finite.
func asFeasible(table []float64) bool {
	for _, v := range table {
		if !math.IsInf(v, -1) {
			return true
		}
	}
	return false
}

// asQUADer is anything with a QUAD method (a Slave or an ActiveSet).
type asQUADer interface {
	QUAD(c []float64, eta float64, u []float64) float64
}

// asUntilStable calls QUAD with the same input until u and phi.q stop
// changing (at most maxCalls calls) and returns the last result and the
// number of calls.
func asUntilStable(s asQUADer, c []float64, eta float64, u []float64, maxCalls int) (float64, int) {
	prev := make([]float64, len(u))
	phiq := s.QUAD(c, eta, u)
	for k := 1; k < maxCalls; k++ {
		copy(prev, u)
		p := s.QUAD(c, eta, u)
		same := p == phiq
		for i := range u {
			if u[i] != prev[i] {
				same = false
			}
		}
		phiq = p
		if same {
			return phiq, k + 1
		}
	}
	return phiq, maxCalls
}

// asSolver is what the tests inspect of an active-set QUAD solver: an
// ActiveSet, or a slave with a specialised one of its own (Potts).
type asSolver interface {
	SetMaxIter(k int)
	Stats() slaves.ActiveSetStats
	ResetStats()
	NumActive() int
	Active(j int) (y []int, q float64)
}

var _, _ asSolver = (*slaves.ActiveSet)(nil), (*slaves.Potts)(nil)

// asCheckState checks the working set's invariants: distinct feasible
// configurations, weights q >= 0 summing to 1, u = M q and phiq = phi . q.
func asCheckState(t testing.TB, as asSolver, o slaves.Oracle, c, u []float64, phiq float64) {
	t.Helper()
	cards := o.Cards()
	off := slaves.Offsets(cards)
	mu := make([]float64, len(u))
	sum, pq := 0.0, 0.0
	seen := map[string]bool{}
	for j := 0; j < as.NumActive(); j++ {
		y, q := as.Active(j)
		key := ""
		for k, v := range y {
			key += string(rune('a' + v))
			mu[off[k]+v] += q
		}
		if seen[key] {
			t.Errorf("configuration %v twice in the working set", y)
		}
		seen[key] = true
		if !(q >= 0) {
			t.Errorf("weight %v < 0 for %v", q, y)
		}
		phi := o.Score(y)
		if math.IsInf(phi, -1) {
			t.Errorf("infeasible configuration %v in the working set", y)
		}
		sum += q
		pq += q * phi
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("weights sum to %v", sum)
	}
	for i := range u {
		if math.Abs(mu[i]-u[i]) > 1e-12 {
			t.Errorf("u[%d] = %v, M q gives %v", i, u[i], mu[i])
		}
	}
	if math.Abs(pq-phiq) > 1e-12*(1+math.Abs(pq)) {
		t.Errorf("phiq %v, phi . q = %v", phiq, pq)
	}
	if as.NumActive() > len(u)-len(cards)+1 {
		t.Errorf("working set of %d configurations, affine bound %d", as.NumActive(), len(u)-len(cards)+1)
	}
}

// Random dense factors against the reference, half solved in one call with a
// high iteration cap, half by repeated calls with the default cap. Half the
// cases draw c in [-3,3] (mostly vertex or low-dimensional solutions), half in
// [-0.2,1.2], near the marginals as in DD-ADMM (spread-out solutions).
func TestActiveSetRandomDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases := slavetest.Trials(6000, 1000)
	var errs asErrs
	var total slaves.ActiveSetStats
	infeasible, maxCalls := 0, 0
	support := make([]int, 17)
	for it := 0; it < cases && !t.Failed(); it++ {
		pInf := []float64{0, 0.2, 0.6}[it%3]
		lo, hi := -3.0, 3.0
		if it%4 >= 2 {
			lo, hi = -0.2, 1.2
		}
		cards, table, c, eta := asRandCaseC(rng, pInf, lo, hi)
		d := slaves.NewDense(cards, table)
		as := d.ActiveSet()
		u := make([]float64, len(c))
		var phiq float64
		if it%2 == 0 {
			as.SetMaxIter(1000)
			phiq = d.QUAD(c, eta, u)
			if asFeasible(table) && !as.Converged() {
				t.Errorf("case %d: not converged with 1000 iterations", it)
			}
		} else {
			var calls int
			phiq, calls = asUntilStable(d, c, eta, u, 200)
			maxCalls = max(maxCalls, calls)
		}
		if !asFeasible(table) {
			infeasible++
			if !math.IsInf(phiq, -1) {
				t.Errorf("case %d: infeasible table, QUAD returned %v", it, phiq)
			}
			continue
		}
		score := asTableScore(cards, table)
		asCheckState(t, as, d, c, u, phiq)
		errs.add(t, cards, score, c, eta, u, phiq)
		sup := 0
		for j := 0; j < as.NumActive(); j++ {
			if _, q := as.Active(j); q > 0 {
				sup++
			}
		}
		support[sup]++
		st := as.Stats()
		total.Drops += st.Drops
		total.Exchanges += st.Exchanges
		total.OracleCalls += st.OracleCalls
		total.Calls += st.Calls
	}
	t.Logf("%d cases (%d infeasible): max |u - ref| %.3g, max |obj - ref| %.3g; drops %d, exchanges %d, max calls to stabilise %d; solutions by support size %v",
		cases, infeasible, errs.u, errs.obj, total.Drops, total.Exchanges, maxCalls, support)
	// The random cases must exercise both the blocking-weight step and the
	// singular-G exchange, or this test proves less than it claims.
	if total.Drops == 0 || total.Exchanges == 0 {
		t.Errorf("drops %d, exchanges %d: a code path is not exercised", total.Drops, total.Exchanges)
	}
}

// A converging sequence of inputs, as in DD-ADMM: with enough iterations each
// step is exact; with the default cap the error vanishes as the inputs
// settle, at a cost of a couple of oracle calls per step.
func TestActiveSetWarmSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := 0; trial < 12 && !t.Failed(); trial++ {
		var s slaves.Slave
		var as asSolver
		var cards []int
		var score func([]int) float64
		if trial%2 == 0 {
			cards = []int{3, 3, 3}
			table := make([]float64, 27)
			for i := range table {
				table[i] = 4*rng.Float64() - 2
				if rng.Float64() < 0.1 {
					table[i] = asNegInf
				}
			}
			table[13] = 0 // keep it feasible
			d := slaves.NewDense(cards, table)
			s, as, score = d, d.ActiveSet(), asTableScore(cards, table)
		} else {
			L := 3 + rng.IntN(4)
			p := slaves.NewPotts(L, 4*rng.Float64()-2)
			s, as, cards, score = p, p, p.Cards(), p.Score
		}
		exact := trial%4 < 2
		if exact {
			as.SetMaxIter(1000)
		}
		dim := 0
		for _, k := range cards {
			dim += k
		}
		eta := []float64{0.1, 1, 10}[trial%3]
		target := make([]float64, dim)
		for i := range target {
			target[i] = 4*rng.Float64() - 2
		}
		c := make([]float64, dim)
		u := make([]float64, dim)
		var errs asErrs
		const steps = 60
		tailCalls, tailQUAD := int64(0), int64(0)
		for step := 0; step < steps && !t.Failed(); step++ {
			amp := 2 * math.Pow(0.7, float64(step))
			for i := range c {
				c[i] = target[i] + amp*(2*rng.Float64()-1)
			}
			before := as.Stats()
			phiq := s.QUAD(c, eta, u)
			after := as.Stats()
			if step >= steps-20 {
				tailCalls += after.OracleCalls - before.OracleCalls
				tailQUAD++
			}
			if exact || step == steps-1 {
				asCheckState(t, as, s, c, u, phiq)
				errs.add(t, cards, score, c, eta, u, phiq)
			}
		}
		avg := float64(tailCalls) / float64(tailQUAD)
		t.Logf("trial %d cards %v exact %v: max |u - ref| %.3g, |obj - ref| %.3g, oracle calls per QUAD over the last 20 steps %.2f",
			trial, cards, exact, errs.u, errs.obj, avg)
		if avg > 2.5 {
			t.Errorf("trial %d: %.2f oracle calls per warm QUAD, want <= 2.5", trial, avg)
		}
	}
}

// Warm starts from unrelated inputs (large jumps in c and eta, as in the
// first DD-ADMM iterations or after an eta change): each call, with enough
// iterations, is exact; with the default cap, repeated calls get there.
func TestActiveSetWarmJumps(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	var errs asErrs
	var drops int64
	for trial := 0; trial < 40 && !t.Failed(); trial++ {
		cards, table, _, _ := asRandCaseC(rng, 0.2, 0, 1)
		if !asFeasible(table) {
			continue
		}
		d := slaves.NewDense(cards, table)
		if trial%2 == 0 {
			d.ActiveSet().SetMaxIter(1000)
		}
		score := asTableScore(cards, table)
		for step := 0; step < 30 && !t.Failed(); step++ {
			eta := []float64{0.1, 1, 10}[rng.IntN(3)]
			var c []float64
			for _, k := range cards {
				for i := 0; i < k; i++ {
					c = append(c, 2*rng.Float64()-0.5)
				}
			}
			u := make([]float64, len(c))
			var phiq float64
			if trial%2 == 0 {
				phiq = d.QUAD(c, eta, u)
			} else {
				phiq, _ = asUntilStable(d, c, eta, u, 100)
			}
			asCheckState(t, d.ActiveSet(), d, c, u, phiq)
			errs.add(t, cards, score, c, eta, u, phiq)
		}
		drops += d.ActiveSet().Stats().Drops
	}
	t.Logf("max |u - ref| %.3g, max |obj - ref| %.3g, drops %d", errs.u, errs.obj, drops)
}

// u may alias c.
func TestActiveSetAliasing(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for it := 0; it < 100; it++ {
		cards, table, c, eta := asRandCaseC(rng, 0.2, -0.2, 1.2)
		if !asFeasible(table) {
			continue
		}
		u := make([]float64, len(c))
		p1 := slaves.NewDense(cards, table).QUAD(c, eta, u)
		p2 := slaves.NewDense(cards, table).QUAD(c, eta, c)
		if p1 != p2 {
			t.Fatalf("aliased phiq %v, want %v", p2, p1)
		}
		for i := range u {
			if u[i] != c[i] {
				t.Fatalf("aliased u %v, want %v", c, u)
			}
		}
	}
}

// No feasible configuration: QUAD returns -Inf and leaves u alone.
func TestActiveSetInfeasible(t *testing.T) {
	table := []float64{asNegInf, asNegInf, asNegInf, asNegInf, asNegInf, asNegInf}
	d := slaves.NewDense([]int{2, 3}, table)
	u := []float64{7, 7, 7, 7, 7}
	c := []float64{0.1, 0.2, 0.3, 0.4, 0.5}
	for k := 0; k < 2; k++ {
		if v := d.QUAD(c, 1, u); !math.IsInf(v, -1) {
			t.Fatalf("QUAD = %v, want -Inf", v)
		}
	}
	for _, v := range u {
		if v != 7 {
			t.Fatalf("u changed to %v", u)
		}
	}
	y := []int{5, 5}
	if v := d.MAP(c, y); !math.IsInf(v, -1) {
		t.Fatalf("MAP = %v, want -Inf", v)
	}
}

// A single feasible configuration is the only solution, whatever c is; with
// two, the solution lies on their segment.
func TestActiveSetNearlyInfeasible(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	cards := []int{3, 2, 4}
	for it := 0; it < 200 && !t.Failed(); it++ {
		table := make([]float64, 24)
		for i := range table {
			table[i] = asNegInf
		}
		i1 := rng.IntN(24)
		table[i1] = 4*rng.Float64() - 2
		if it%2 == 1 {
			table[rng.IntN(24)] = 4*rng.Float64() - 2
		}
		c := make([]float64, 9)
		for i := range c {
			c[i] = 6*rng.Float64() - 3
		}
		eta := []float64{0.1, 1, 10}[it%3]
		d := slaves.NewDense(cards, table)
		u := make([]float64, 9)
		phiq, _ := asUntilStable(d, c, eta, u, 50)
		score := asTableScore(cards, table)
		asCheckState(t, d.ActiveSet(), d, c, u, phiq)
		var e asErrs
		e.add(t, cards, score, c, eta, u, phiq)
		if it%2 == 0 {
			y := []int{i1 / 8, i1 / 4 % 2, i1 % 4}
			want := make([]float64, 9)
			want[y[0]], want[3+y[1]], want[5+y[2]] = 1, 1, 1
			for i := range u {
				if u[i] != want[i] {
					t.Fatalf("single feasible %v: u = %v", y, u)
				}
			}
			if phiq != table[i1] {
				t.Fatalf("single feasible: phiq %v want %v", phiq, table[i1])
			}
		}
	}
}

// A constant table: the marginal polytope is the product of simplices, so
// each u_k is the simplex projection of c_k. (A configuration affinely
// dependent on W scores exactly tau here, phi being affine, so the oracle
// never forces an exchange; many ties instead.)
func TestActiveSetAllEqual(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	cards := []int{3, 3, 2}
	table := make([]float64, 18)
	for i := range table {
		table[i] = 0.5
	}
	d := slaves.NewDense(cards, table)
	for it := 0; it < 200 && !t.Failed(); it++ {
		c := make([]float64, 8)
		for i := range c {
			c[i] = 2*rng.Float64() - 0.5
		}
		u := make([]float64, 8)
		phiq, _ := asUntilStable(d, c, 1, u, 100)
		if math.Abs(phiq-0.5) > 1e-12 {
			t.Fatalf("phiq %v, want 0.5", phiq)
		}
		off := slaves.Offsets(cards)
		for k := range cards {
			want := slavetest.ProjectSimplex(c[off[k]:off[k+1]])
			for i, w := range want {
				if math.Abs(u[off[k]+i]-w) > 1e-9 {
					t.Fatalf("c %v: u_%d = %v, want %v", c, k, u[off[k]:off[k+1]], want)
				}
			}
		}
		asCheckState(t, d.ActiveSet(), d, c, u, phiq)
	}
	t.Logf("stats %+v", d.ActiveSet().Stats())
}

// Variables with one state, and the empty scope.
func TestActiveSetCardOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, cards := range [][]int{{1}, {1, 1}, {1, 3, 1}, {4, 1}, {1, 1, 2}} {
		size, dim := 1, 0
		for _, k := range cards {
			size *= k
			dim += k
		}
		for it := 0; it < 30 && !t.Failed(); it++ {
			table := make([]float64, size)
			for i := range table {
				table[i] = 4*rng.Float64() - 2
			}
			c := make([]float64, dim)
			for i := range c {
				c[i] = 6*rng.Float64() - 3
			}
			d := slaves.NewDense(cards, table)
			u := make([]float64, dim)
			phiq, _ := asUntilStable(d, c, 1, u, 50)
			asCheckState(t, d.ActiveSet(), d, c, u, phiq)
			var e asErrs
			e.add(t, cards, asTableScore(cards, table), c, 1, u, phiq)
		}
	}
	d := slaves.NewDense(nil, []float64{2.5})
	if v := d.QUAD(nil, 1, nil); v != 2.5 {
		t.Fatalf("empty scope: QUAD = %v", v)
	}
	if v := d.MAP(nil, nil); v != 2.5 {
		t.Fatalf("empty scope: MAP = %v", v)
	}
}

// Singular G on a 2x2 pair: any fourth configuration is affinely dependent
// on three (m00 + m11 = m01 + m10), so repulsive tables that want both
// off-diagonal states after starting on the diagonal force exchanges.
func TestActiveSetSingularPair(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	cards := []int{2, 2}
	var total int64
	for it := 0; it < 400 && !t.Failed(); it++ {
		table := []float64{2*rng.Float64() - 1, 2*rng.Float64() - 1, 2*rng.Float64() - 1, 2*rng.Float64() - 1}
		d := slaves.NewDense(cards, table)
		for rep := 0; rep < 3; rep++ {
			c := make([]float64, 4)
			for i := range c {
				c[i] = 2*rng.Float64() - 0.5
			}
			u := make([]float64, 4)
			phiq, _ := asUntilStable(d, c, 1, u, 50)
			asCheckState(t, d.ActiveSet(), d, c, u, phiq)
			var e asErrs
			e.add(t, cards, asTableScore(cards, table), c, 1, u, phiq)
		}
		total += d.ActiveSet().Stats().Exchanges
	}
	t.Logf("exchanges: %d", total)
	if total == 0 {
		t.Errorf("no exchange on 2x2 pairs")
	}
}

// A working set smaller than the face of the solution: the result stays a
// feasible point (never better than the optimum) and the solver does not
// break down.
func TestActiveSetSmallCapacity(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for it := 0; it < 200 && !t.Failed(); it++ {
		cards, table, c, eta := asRandCase(rng, 0.1)
		if !asFeasible(table) {
			continue
		}
		d := slaves.NewDense(cards, table)
		as := slaves.NewActiveSet(d, 2)
		if as.MaxConfigs() > 2 {
			t.Fatalf("MaxConfigs %d", as.MaxConfigs())
		}
		u := make([]float64, len(c))
		phiq, _ := asUntilStable(as, c, eta, u, 30)
		asCheckState(t, as, d, c, u, phiq)
		ref := slavetest.RefQUADFull(cards, asTableScore(cards, table), c, eta)
		if obj := slavetest.QUADObjective(c, eta, u, phiq); obj < ref.Obj-1e-9 {
			t.Fatalf("objective %v below the optimum %v", obj, ref.Obj)
		}
	}
}

// asCounting is an oracle that counts its MAP calls.
type asCounting struct {
	slaves.Oracle
	calls int64
}

func (o *asCounting) MAP(w []float64, y []int) float64 {
	o.calls++
	return o.Oracle.MAP(w, y)
}

// A user-supplied oracle: the solver calls only the oracle's methods, and its
// statistics count those calls.
func TestActiveSetCustomOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	cards, table, c, eta := asRandCase(rng, 0)
	o := &asCounting{Oracle: slaves.NewDense(cards, table)}
	as := slaves.NewActiveSet(o, 0)
	u := make([]float64, len(c))
	for k := 0; k < 5; k++ {
		for i := range c {
			c[i] += 0.1 * (2*rng.Float64() - 1)
		}
		as.QUAD(c, eta, u)
	}
	if st := as.Stats(); st.OracleCalls != o.calls || st.Calls != 5 {
		t.Fatalf("stats %+v, oracle saw %d calls", st, o.calls)
	}
	as.ResetStats()
	as.Reset()
	if as.NumActive() != 0 || as.Stats().Calls != 0 {
		t.Fatalf("Reset/ResetStats did not clear")
	}
}

// Many working-set changes trigger periodic refactorisations; results stay
// optimal (KKT check) across them.
func TestActiveSetRefactor(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	cards := []int{4, 4}
	table := make([]float64, 16)
	for i := range table {
		table[i] = 2*rng.Float64() - 1
	}
	d := slaves.NewDense(cards, table)
	d.ActiveSet().SetMaxIter(1000)
	score := asTableScore(cards, table)
	u := make([]float64, 8)
	for it := 0; it < 400 && !t.Failed(); it++ {
		c := make([]float64, 8)
		for i := range c {
			c[i] = 3*rng.Float64() - 1
		}
		phiq := d.QUAD(c, 1, u)
		asCheckState(t, d.ActiveSet(), d, c, u, phiq)
		slavetest.CheckKKT(t, cards, score, c, 1, u, phiq, 1e-9)
	}
	st := d.ActiveSet().Stats()
	t.Logf("stats %+v", st)
	if st.Refactors == 0 {
		t.Errorf("no refactorisation after %d calls", st.Calls)
	}
}

// checkNoAllocs fails t when s's MAP at c, or its QUAD (warm-started) on
// inputs that move by about step from c call to call, allocates; what
// prefixes the messages. c is changed.
func checkNoAllocs(t *testing.T, what string, s slaves.Slave, c []float64, runs int, step float64) {
	t.Helper()
	u := make([]float64, len(c))
	y := make([]int, len(s.Cards()))
	if a := testing.AllocsPerRun(runs, func() { s.MAP(c, y) }); a != 0 {
		t.Errorf("%s %T MAP: %v allocations per call", what, s, a)
	}
	k := 0
	if a := testing.AllocsPerRun(runs, func() {
		k++
		c[k%len(c)] += step * float64(k%7-3)
		s.QUAD(c, 1, u)
	}); a != 0 {
		t.Errorf("%s %T QUAD: %v allocations per call", what, s, a)
	}
}

// QUAD and MAP must not allocate.
func TestActiveSetAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(101, 102))
	table := make([]float64, 27)
	for i := range table {
		table[i] = 2*rng.Float64() - 1
	}
	for _, s := range []slaves.Slave{slaves.NewPotts(8, 0.7), slaves.NewPotts(3, -1), slaves.NewDense([]int{3, 3, 3}, table)} {
		dim := 0
		for _, k := range s.Cards() {
			dim += k
		}
		c := make([]float64, dim)
		for i := range c {
			c[i] = 2*rng.Float64() - 1
		}
		checkNoAllocs(t, "", s, c, 200, 0.01)
	}
}

// asWarmInputs returns n inputs of QUAD that wander around a base point:
// the base drawn in [-0.2, 1.2], each input the base plus a fresh
// perturbation in [-jitter, jitter].
func asWarmInputs(rng *rand.Rand, dim, n int, jitter float64) [][]float64 {
	base := make([]float64, dim)
	for i := range base {
		base[i] = 1.4*rng.Float64() - 0.2
	}
	cs := make([][]float64, n)
	for j := range cs {
		cs[j] = make([]float64, dim)
		for i := range base {
			cs[j][i] = base[i] + jitter*(2*rng.Float64()-1)
		}
	}
	return cs
}

// asBenchWarm benchmarks warm-started QUAD calls on inputs that wander
// slightly around a base point, as consecutive DD-ADMM iterations do: the
// base c is drawn in [-0.2, 1.2] (near the marginals, where solutions are
// fractional) and each call's input is the base plus a fresh perturbation of
// size jitter. It reports oracle calls and KKT solves per QUAD.
func asBenchWarm(b *testing.B, s asQUADer, as asSolver, dim int, jitter float64, rng *rand.Rand) {
	const nIn = 256
	cs := asWarmInputs(rng, dim, nIn, jitter)
	u := make([]float64, dim)
	for j := 0; j < 2*nIn; j++ {
		s.QUAD(cs[j%nIn], 1, u)
	}
	as.ResetStats()
	sup := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.QUAD(cs[i&(nIn-1)], 1, u)
	}
	b.StopTimer()
	sup = as.NumActive()
	st := as.Stats()
	b.ReportMetric(float64(st.OracleCalls)/float64(st.Calls), "oracle/op")
	b.ReportMetric(float64(st.Iters)/float64(st.Calls), "solves/op")
	b.ReportMetric(float64(sup), "|W|")
}

// Larger scopes with flat tables and c near the centre of the polytope: the
// solutions use working sets of up to a dozen configurations.
func TestActiveSetLargeSupport(t *testing.T) {
	rng := rand.New(rand.NewPCG(111, 112))
	var errs asErrs
	maxW := 0
	for it := 0; it < 160 && !t.Failed(); it++ {
		cards := [][]int{{8, 8}, {4, 4, 4}, {2, 2, 2, 2, 2}, {3, 5, 2}}[it%4]
		table, dim := denseBenchTable(rng, cards)
		for i := range table {
			table[i] *= 0.3
		}
		c := make([]float64, dim)
		for i := range c {
			c[i] = 0.6 * rng.Float64()
		}
		d := slaves.NewDense(cards, table)
		u := make([]float64, dim)
		phiq, _ := asUntilStable(d, c, 1, u, 100)
		asCheckState(t, d.ActiveSet(), d, c, u, phiq)
		errs.add(t, cards, asTableScore(cards, table), c, 1, u, phiq)
		maxW = max(maxW, d.ActiveSet().NumActive())
	}
	t.Logf("max |u - ref| %.3g, max |obj - ref| %.3g, largest working set %d", errs.u, errs.obj, maxW)
	if maxW < 8 {
		t.Errorf("largest working set %d: the test does not reach large supports", maxW)
	}
}
