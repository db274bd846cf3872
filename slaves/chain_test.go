package slaves_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/slaves"
	"github.com/ddrun/ddrun/slaves/slavetest"
)

// Tests of the chain slave: MAP (plain Viterbi and column generation,
// Belanger et al. 2012) against brute force and against each other, Score,
// QUAD against the reference of package slavetest, allocations. Helpers are
// prefixed "chain" to keep the shared slaves_test namespace clean.

var chainNegInf = math.Inf(-1)

// chainDirectScore evaluates phi(y) straight from the inputs of NewChain.
func chainDirectScore(cards []int, emissions, trans [][]float64) func([]int) float64 {
	return func(y []int) float64 {
		s := 0.0
		for k := range cards {
			if emissions != nil && emissions[k] != nil {
				s += emissions[k][y[k]]
			}
		}
		for k := 0; k+1 < len(cards); k++ {
			if trans != nil && trans[k] != nil {
				s += trans[k][y[k]*cards[k+1]+y[k+1]]
			}
		}
		return s
	}
}

// chainDraw returns a value of the given style: 0 uniform in [-2,2], 1 small
// integers (ties), 2 large magnitudes of both signs, 3 tiny magnitudes.
func chainDraw(rng *rand.Rand, style int) float64 {
	switch style {
	case 1:
		return float64(rng.IntN(3) - 1)
	case 2:
		return (2*rng.Float64() - 1) * 1e9
	case 3:
		return (2*rng.Float64() - 1) * 1e-9
	}
	return 4*rng.Float64() - 2
}

// chainSmall draws a small random chain: n in 1..6, cards in 1..4,
// transition entries -Inf with probability pInf, emissions sometimes nil or
// partly nil (and -Inf with probability pInf/3), and a random w.
func chainSmall(rng *rand.Rand, it int) (cards []int, em, tr [][]float64, w []float64) {
	n := 1 + rng.IntN(6)
	cards = make([]int, n)
	dim := 0
	for k := range cards {
		cards[k] = 1 + rng.IntN(4)
		dim += cards[k]
	}
	pInf := []float64{0, 0.2, 0.5, 0.8, 1}[it%5]
	style := (it / 5) % 4
	em = chainEmissions(rng, cards, pInf, style)
	tr = make([][]float64, n-1)
	for k := range tr {
		if rng.IntN(8) == 0 {
			continue // nil: zeros
		}
		tr[k] = chainFill(rng, make([]float64, cards[k]*cards[k+1]), pInf, style)
	}
	w = chainFill(rng, make([]float64, dim), -1, style)
	return
}

// chainEmissions draws the emissions of a random chain or tree over cards
// (three times out of four; else nil): each position's (four times out of
// five; else nil) by chainFill with -Inf entries at rate pInf/3.
func chainEmissions(rng *rand.Rand, cards []int, pInf float64, style int) [][]float64 {
	if rng.IntN(4) == 0 {
		return nil
	}
	em := make([][]float64, len(cards))
	for k := range em {
		if rng.IntN(5) == 0 {
			continue
		}
		em[k] = chainFill(rng, make([]float64, cards[k]), pInf/3, style)
	}
	return em
}

// chainFill sets each entry of v to -Inf with probability pInf, else to a
// chainDraw of the style, and returns v. With pInf < 0 it draws no
// probabilities: every entry is a chainDraw.
func chainFill(rng *rand.Rand, v []float64, pInf float64, style int) []float64 {
	for i := range v {
		if pInf >= 0 && rng.Float64() < pInf {
			v[i] = chainNegInf
		} else {
			v[i] = chainDraw(rng, style)
		}
	}
	return v
}

// chainVariants returns the chain under every MAP variant: plain Viterbi,
// column generation with the default budget (small chains usually fall
// back to Viterbi) and with an unlimited one (pure column generation).
func chainVariants(cards []int, em, tr [][]float64) []*slaves.Chain {
	v := slaves.NewChain(cards, em, tr)
	v.SetAlgorithm(slaves.ChainViterbi)
	cg := slaves.NewChain(cards, em, tr)
	pure := slaves.NewChain(cards, em, tr)
	pure.SetColGenBudget(math.Inf(1))
	return []*slaves.Chain{v, cg, pure}
}

// chainCheckMAP checks a MAP result: the value is want (relative tolerance
// tol), and when finite the returned configuration attains it.
func chainCheckMAP(t *testing.T, name string, score func([]int) float64, cards []int, w []float64, y []int, got, want, tol float64) {
	t.Helper()
	if math.IsInf(want, -1) {
		if !math.IsInf(got, -1) {
			t.Fatalf("%s: infeasible chain, MAP = %v %v", name, got, y)
		}
		return
	}
	scale := 1 + math.Abs(want)
	for _, v := range w {
		scale += math.Abs(v)
	}
	if !(math.Abs(got-want) <= tol*scale) {
		t.Fatalf("%s: MAP = %.17g (y %v), want %.17g", name, got, y, want)
	}
	if v := score(y) + slavetest.Linear(cards, w, y); !(math.Abs(v-got) <= tol*scale) {
		t.Fatalf("%s: MAP returned %.17g but its configuration %v scores %.17g", name, got, y, v)
	}
}

// MAP of every variant against brute-force enumeration on thousands of small
// chains with -Inf entries, ties, and large and tiny magnitudes.
func TestChainMAPBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := 4000
	infeasible := 0
	var st slaves.ChainStats
	for it := 0; it < cases; it++ {
		cards, em, tr, w := chainSmall(rng, it)
		score := chainDirectScore(cards, em, tr)
		want, wy := slavetest.BruteMAP(cards, score, w)
		if wy == nil {
			infeasible++
		}
		for vi, c := range chainVariants(cards, em, tr) {
			y := make([]int, len(cards))
			got := c.MAP(w, y)
			name := fmt.Sprintf("case %d variant %d (%v) cards %v em %v tr %v w %v", it, vi, c.Algorithm(), cards, em, tr, w)
			chainCheckMAP(t, name, score, cards, w, y, got, want, 1e-12)
			// A second call on the same slave (reused scratch) agrees.
			if again := c.MAP(w, y); again != got && !(math.IsInf(got, -1) && math.IsInf(again, -1)) {
				t.Fatalf("%s: second MAP call %v, first %v", name, again, got)
			}
			if vi == 2 {
				s := c.ColGenStats()
				st.Calls += s.Calls
				st.Rounds += s.Rounds
				st.Fallbacks += s.Fallbacks
				st.Pairs += s.Pairs
			}
		}
	}
	t.Logf("%d cases, %d infeasible; pure column generation: %+v", cases, infeasible, st)
	if st.Fallbacks != 0 || st.Rounds < st.Calls*5/4 {
		t.Errorf("pure column generation: %+v", st)
	}
}

// Score against direct evaluation, forbidden configurations included.
func TestChainScore(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for it := 0; it < 500; it++ {
		cards, em, tr, _ := chainSmall(rng, it)
		c := slaves.NewChain(cards, em, tr)
		score := chainDirectScore(cards, em, tr)
		for _, y := range slavetest.EnumerateConfigs(cards) {
			if got, want := c.Score(y), score(y); got != want {
				t.Fatalf("cards %v: Score(%v) = %v, want %v", cards, y, got, want)
			}
		}
	}
}

// Column generation (Belanger et al. 2012, Alg. 1-2) against plain Viterbi on
// larger chains, in regimes where its pruning works and where it fails.

// chainRegimes names the instance families of chainLarge.
var chainRegimes = []string{
	"local",       // emissions dominate: one or two states stand out per position
	"strong",      // flat emissions, strong transitions (pruning fails)
	"ties",        // integer scores in {-1,0,1} or all zero: many ties
	"sparse-inf",  // random -Inf transitions (density 0.5 to 0.95)
	"bio",         // BIO-style constraints: I-t only after B-t or I-t
	"band",        // only |x - x'| <= 1 allowed, strong emissions elsewhere
	"permutation", // a single allowed successor per state, emissions misleading
	"blocks",      // block-diagonal transitions, emissions favour one block
	"huge",        // magnitudes 1e12, mixed signs, w of another scale
	"shared",      // one table for every position, negative scores only
	"inf-emis",    // -Inf emissions (and w), so some positions are tiny
	"infeasible",  // no feasible configuration
}

// chainLarge draws a chain of the given regime with n <= maxN, L <= maxL.
func chainLarge(rng *rand.Rand, regime string, maxN, maxL int) (cards []int, em, tr [][]float64, w []float64) {
	n := 1 + rng.IntN(maxN)
	L := 1 + rng.IntN(maxL)
	cards = make([]int, n)
	dim := 0
	for k := range cards {
		cards[k] = L
		if regime == "sparse-inf" || regime == "huge" {
			cards[k] = 1 + rng.IntN(L) // varying cardinalities
		}
		dim += cards[k]
	}
	em = make([][]float64, n)
	tr = make([][]float64, n-1)
	w = make([]float64, dim)
	for k := range em {
		em[k] = make([]float64, cards[k])
	}
	for k := range tr {
		tr[k] = make([]float64, cards[k]*cards[k+1])
	}
	unif := func(a float64) float64 { return a * (2*rng.Float64() - 1) }
	switch regime {
	case "local":
		for k := range em {
			for x := range em[k] {
				em[k][x] = rng.NormFloat64()
			}
			em[k][rng.IntN(cards[k])] += 6
			if rng.IntN(3) == 0 {
				em[k][rng.IntN(cards[k])] += 5.5
			}
		}
		fillRows(tr, func() float64 { return unif(0.7) })
	case "strong":
		fillRows(em, func() float64 { return unif(0.1) })
		fillRows(tr, func() float64 { return unif(5) })
	case "ties":
		zero := rng.IntN(3) == 0
		for k := range em {
			for x := range em[k] {
				if !zero {
					em[k][x] = float64(rng.IntN(3) - 1)
				}
			}
		}
		for k := range tr {
			for i := range tr[k] {
				if !zero {
					tr[k][i] = float64(rng.IntN(3) - 1)
				}
			}
		}
	case "sparse-inf":
		p := 0.5 + 0.45*rng.Float64()
		fillRows(em, func() float64 { return unif(2) })
		fillRows(tr, func() float64 {
			if rng.Float64() < p {
				return chainNegInf
			}
			return unif(2)
		})
	case "bio":
		// State 0 = O, 2t+1 = B-t, 2t+2 = I-t.
		for k := range em {
			for x := range em[k] {
				em[k][x] = unif(1)
			}
			em[k][rng.IntN(cards[k])] += 3
		}
		for k := range tr {
			L0, L1 := cards[k], cards[k+1]
			for x := 0; x < L0; x++ {
				for xp := 0; xp < L1; xp++ {
					v := unif(1)
					if xp > 0 && xp%2 == 0 && x != xp && x != xp-1 {
						v = chainNegInf
					}
					tr[k][x*L1+xp] = v
				}
			}
		}
	case "band":
		fillRows(em, func() float64 { return unif(3) })
		for k := range tr {
			L0, L1 := cards[k], cards[k+1]
			for x := 0; x < L0; x++ {
				for xp := 0; xp < L1; xp++ {
					if d := x - xp; d < -1 || d > 1 {
						tr[k][x*L1+xp] = chainNegInf
					} else {
						tr[k][x*L1+xp] = unif(0.5)
					}
				}
			}
		}
	case "permutation":
		perm := rng.Perm(L)
		fillRows(em, func() float64 { return unif(1) })
		for k := range tr {
			for i := range tr[k] {
				tr[k][i] = chainNegInf
			}
			for x := 0; x < L; x++ {
				tr[k][x*L+perm[x]] = unif(2) + 3
			}
		}
	case "blocks":
		B := 1 + rng.IntN(4)
		for k := range em {
			for x := range em[k] {
				em[k][x] = unif(1)
				if x%B == 0 {
					em[k][x] += 2
				}
			}
		}
		for k := range tr {
			for x := 0; x < L; x++ {
				for xp := 0; xp < L; xp++ {
					if x%B != xp%B {
						tr[k][x*L+xp] = chainNegInf
					} else {
						tr[k][x*L+xp] = unif(1) + float64(x%B)
					}
				}
			}
		}
	case "huge":
		fillRows(em, func() float64 { return unif(1e12) })
		fillRows(tr, func() float64 { return unif(1e12) })
		for i := range w {
			w[i] = unif(1e6)
		}
		return
	case "shared":
		t := make([]float64, L*L)
		for i := range t {
			t[i] = -rng.Float64() * 3
		}
		for k := range tr {
			tr[k] = t
		}
		fillRows(em, func() float64 { return -rng.ExpFloat64() })
	case "inf-emis":
		fillRows(em, func() float64 {
			if rng.IntN(4) == 0 {
				return chainNegInf
			}
			return unif(2)
		})
		fillRows(tr, func() float64 {
			if rng.IntN(3) == 0 {
				return chainNegInf
			}
			return unif(2)
		})
		for i := range w {
			if rng.IntN(20) == 0 {
				w[i] = chainNegInf
			} else {
				w[i] = unif(1)
			}
		}
		return
	case "infeasible":
		fillRows(em, func() float64 { return unif(2) })
		fillRows(tr, func() float64 { return unif(2) })
		if n > 1 {
			k := rng.IntN(n - 1)
			for i := range tr[k] {
				tr[k][i] = chainNegInf
			}
		} else {
			for x := range em[0] {
				em[0][x] = chainNegInf
			}
		}
	default:
		panic(regime)
	}
	for i := range w {
		w[i] = unif(0.5)
	}
	return
}

// fillRows sets every entry of the rows of v to a draw of f, row by row.
func fillRows(v [][]float64, f func() float64) {
	for _, r := range v {
		for i := range r {
			r[i] = f()
		}
	}
}

// Column generation (pure, and with the default budget) against Viterbi on
// chains of up to 50 positions and 60 labels, in every regime.
func TestChainColGenVsViterbi(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	perRegime := slavetest.Trials(60, 15)
	for _, regime := range chainRegimes {
		var st, stDef slaves.ChainStats
		for it := 0; it < perRegime; it++ {
			cards, em, tr, w := chainLarge(rng, regime, 50, 60)
			vs := chainVariants(cards, em, tr)
			y := make([]int, len(cards))
			want := vs[0].MAP(w, y)
			score := chainDirectScore(cards, em, tr)
			if regime == "infeasible" && !math.IsInf(want, -1) {
				t.Fatalf("infeasible instance: Viterbi %v", want)
			}
			chainCheckMAP(t, fmt.Sprintf("%s %d viterbi", regime, it), score, cards, w, y, want, want, 1e-12)
			for vi, c := range vs[1:] {
				got := c.MAP(w, y)
				chainCheckMAP(t, fmt.Sprintf("%s %d variant %d cards %v", regime, it, vi+1, cards), score, cards, w, y, got, want, 1e-12)
			}
			s := vs[2].ColGenStats()
			st.Calls += s.Calls
			st.Rounds += s.Rounds
			st.States += s.States
			st.Pairs += s.Pairs
			s = vs[1].ColGenStats()
			stDef.Calls += s.Calls
			stDef.Fallbacks += s.Fallbacks
		}
		t.Logf("%-12s pure: %5.1f rounds/call, %6.1f states/call, %8.0f pairs/call; default budget: %d/%d fell back",
			regime, float64(st.Rounds)/float64(st.Calls), float64(st.States)/float64(st.Calls),
			float64(st.Pairs)/float64(st.Calls), stDef.Fallbacks, stDef.Calls)
	}
}

// A hard-constraint trap for naive -Inf arithmetic: the restricted lattice
// starts on state 0 everywhere, state 1 can be neither reached from it nor
// leave it, and the all-1 path is far better. With -Inf - (-Inf) treated as
// no gain, the reduced costs of eq. 11 all look non-positive; the symbolic
// -M arithmetic must still find the optimum.
func TestChainColGenInfTrap(t *testing.T) {
	for _, n := range []int{2, 3, 4, 7} {
		tab := []float64{0, chainNegInf, chainNegInf, 10}
		tr := make([][]float64, n-1)
		for k := range tr {
			tr[k] = tab
		}
		em := make([][]float64, n)
		for k := range em {
			em[k] = []float64{1, 0} // state 0 is the initial domain
		}
		cards := make([]int, n)
		for k := range cards {
			cards[k] = 2
		}
		w := make([]float64, 2*n)
		for _, c := range chainVariants(cards, em, tr) {
			y := make([]int, n)
			got := c.MAP(w, y)
			want := 10 * float64(n-1)
			if got != want {
				t.Errorf("n=%d %v: MAP %v %v, want %v (all ones)", n, c.Algorithm(), got, y, want)
			}
		}
	}
}

// Degenerate shapes: empty chain, one position, cardinality one.
func TestChainDegenerate(t *testing.T) {
	c := slaves.NewChain(nil, nil, nil)
	if v := c.MAP(nil, nil); v != 0 {
		t.Errorf("empty chain: MAP %v", v)
	}
	if v := c.Score(nil); v != 0 {
		t.Errorf("empty chain: Score %v", v)
	}
	one := slaves.NewChain([]int{3}, [][]float64{{1, 5, 2}}, nil)
	y := []int{-1}
	if v := one.MAP([]float64{0, -4.5, 0}, y); v != 2 || y[0] != 2 {
		t.Errorf("one position: MAP %v %v, want 2 [2]", v, y)
	}
	ones := slaves.NewChain([]int{1, 1, 1}, nil, [][]float64{{2}, {-1}})
	y = make([]int, 3)
	if v := ones.MAP([]float64{1, 1, 1}, y); v != 4 {
		t.Errorf("cardinality one: MAP %v", v)
	}
	inf := slaves.NewChain([]int{1, 1}, nil, [][]float64{{chainNegInf}})
	y = []int{7, 7}
	if v := inf.MAP([]float64{0, 0}, y); !math.IsInf(v, -1) || y[0] != 0 || y[1] != 0 {
		t.Errorf("infeasible: MAP %v %v", v, y)
	}
	if v := inf.Score(y); !math.IsInf(v, -1) {
		t.Errorf("infeasible: Score %v", v)
	}
}

// Bad inputs panic at construction.
func TestChainNewPanics(t *testing.T) {
	for i, f := range []func(){
		func() { slaves.NewChain([]int{2, 0}, nil, nil) },
		func() { slaves.NewChain([]int{2, 2}, [][]float64{{1, 2}}, nil) },
		func() { slaves.NewChain([]int{2, 2}, [][]float64{{1, 2}, {1}}, nil) },
		func() { slaves.NewChain([]int{2, 2}, nil, [][]float64{{1, 2, 3}}) },
		func() { slaves.NewChain([]int{2, 2}, nil, [][]float64{{1, 2, 3, 4}, {1}}) },
		func() { slaves.NewChain([]int{2, 2}, nil, [][]float64{{1, math.NaN(), 3, 4}}) },
		func() { slaves.NewChain([]int{2, 2}, nil, [][]float64{{1, math.Inf(1), 3, 4}}) },
		func() { slaves.NewChain([]int{2}, [][]float64{{math.NaN(), 0}}, nil) },
		func() { slaves.NewChain([]int{2}, nil, nil).SetAlgorithm(7) },
	} {
		mustPanic(t, f, "case %d", i)
	}
}

// The Slave contract on a chain: MAP(w) agrees with brute force on the same
// scope when w mixes all scales, checked through slavetest's score-function
// interface (a regression guard for the flattened layout with varying
// cardinalities).
func TestChainLayout(t *testing.T) {
	cards := []int{3, 1, 4, 2}
	rng := rand.New(rand.NewPCG(7, 8))
	em := [][]float64{{1, 2, 3}, nil, {0.5, -1, 2, 0}, {3, -3}}
	tr := [][]float64{make([]float64, 3), make([]float64, 4), make([]float64, 8)}
	for _, t := range tr {
		for i := range t {
			t[i] = rng.Float64()
		}
	}
	w := make([]float64, 10)
	for i := range w {
		w[i] = 4*rng.Float64() - 2
	}
	score := chainDirectScore(cards, em, tr)
	want, _ := slavetest.BruteMAP(cards, score, w)
	for _, c := range chainVariants(cards, em, tr) {
		y := make([]int, 4)
		chainCheckMAP(t, c.Algorithm().String(), score, cards, w, y, c.MAP(w, y), want, 1e-14)
	}
}
