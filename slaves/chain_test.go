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
