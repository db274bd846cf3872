package slaves_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/slaves"
	"github.com/ddrun/ddrun/slaves/slavetest"
)

// Tests of the tree slave (max-product dynamic programming) and of the QUAD
// of chains and trees (active set with the MAP as oracle) against the
// references of package slavetest. Helpers are prefixed "tree".

// treeDirectScore evaluates phi(y) straight from the inputs of NewTree.
func treeDirectScore(cards, parent []int, emissions, tables [][]float64) func([]int) float64 {
	return func(y []int) float64 {
		s := 0.0
		for v := range cards {
			if emissions != nil && emissions[v] != nil {
				s += emissions[v][y[v]]
			}
		}
		for k, p := range parent {
			if p >= 0 && tables != nil && tables[k] != nil {
				s += tables[k][y[p]*cards[k+1]+y[k+1]]
			}
		}
		return s
	}
}

// treeRandom draws a random tree (a forest when forest is set) over n
// variables with cardinalities 1..maxCard, entries -Inf with probability
// pInf, in the value style of chainDraw.
func treeRandom(rng *rand.Rand, n, maxCard int, pInf float64, style int, forest bool) (cards, parent []int, em, tb [][]float64, w []float64) {
	cards = make([]int, n)
	dim := 0
	for v := range cards {
		cards[v] = 1 + rng.IntN(maxCard)
		dim += cards[v]
	}
	parent = make([]int, max(n-1, 0))
	for k := range parent {
		parent[k] = rng.IntN(k + 1)
		if forest && rng.IntN(4) == 0 {
			parent[k] = -1
		}
	}
	em = chainEmissions(rng, cards, pInf, style)
	tb = make([][]float64, len(parent))
	for k, p := range parent {
		if p < 0 || rng.IntN(8) == 0 {
			continue
		}
		tb[k] = chainFill(rng, make([]float64, cards[p]*cards[k+1]), pInf, style)
	}
	w = chainFill(rng, make([]float64, dim), -1, style)
	return
}

// Tree MAP against brute force on thousands of small trees and forests.
func TestTreeMAPBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases, infeasible := 4000, 0
	for it := 0; it < cases; it++ {
		n := 1 + rng.IntN(6)
		pInf := []float64{0, 0.2, 0.5, 0.8}[it%4]
		cards, parent, em, tb, w := treeRandom(rng, n, 4, pInf, (it/4)%4, it%3 == 0)
		tr := slaves.NewTree(cards, parent, em, tb)
		score := treeDirectScore(cards, parent, em, tb)
		want, wy := slavetest.BruteMAP(cards, score, w)
		if wy == nil {
			infeasible++
		}
		y := make([]int, n)
		got := tr.MAP(w, y)
		chainCheckMAP(t, fmt.Sprintf("case %d cards %v parent %v em %v tb %v w %v", it, cards, parent, em, tb, w), score, cards, w, y, got, want, 1e-12)
		for _, cfg := range slavetest.EnumerateConfigs(cards) {
			if a, b := tr.Score(cfg), score(cfg); a != b {
				t.Fatalf("case %d: Score(%v) = %v, want %v", it, cfg, a, b)
			}
		}
	}
	t.Logf("%d cases, %d infeasible", cases, infeasible)
}

// A tree with parent[k] = k is a chain: Tree and Chain (both algorithms)
// agree on MAP values and scores, on chains of up to 40 positions and 30
// labels, -Inf entries included.
func TestTreeChainAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for it := 0; it < 300; it++ {
		regime := chainRegimes[it%len(chainRegimes)]
		cards, em, tr, w := chainLarge(rng, regime, 40, 30)
		parent := make([]int, len(cards)-1)
		for k := range parent {
			parent[k] = k
		}
		tree := slaves.NewTree(cards, parent, em, tr)
		y := make([]int, len(cards))
		want := tree.MAP(w, y)
		score := chainDirectScore(cards, em, tr)
		name := fmt.Sprintf("case %d (%s) cards %v", it, regime, cards)
		chainCheckMAP(t, name+" tree", score, cards, w, y, want, want, 1e-12)
		for _, c := range chainVariants(cards, em, tr) {
			got := c.MAP(w, y)
			chainCheckMAP(t, name+" "+c.Algorithm().String(), score, cards, w, y, got, want, 1e-12)
			if a, b := tree.Score(y), c.Score(y); a != b {
				t.Fatalf("%s: tree Score %v, chain Score %v at %v", name, a, b, y)
			}
		}
		for r := 0; r < 5; r++ {
			for k := range y {
				y[k] = rng.IntN(cards[k])
			}
			if a, b := tree.Score(y), slaves.NewChain(cards, em, tr).Score(y); a != b {
				t.Fatalf("%s: tree Score %v, chain Score %v at %v", name, a, b, y)
			}
		}
	}
}

// Bad inputs panic at construction.
func TestTreeNewPanics(t *testing.T) {
	for i, f := range []func(){
		func() { slaves.NewTree([]int{2, 0}, []int{0}, nil, nil) },
		func() { slaves.NewTree([]int{2, 2}, nil, nil, nil) },
		func() { slaves.NewTree([]int{2, 2}, []int{1}, nil, nil) },
		func() { slaves.NewTree([]int{2, 2}, []int{-2}, nil, nil) },
		func() { slaves.NewTree([]int{2, 2}, []int{-1}, nil, [][]float64{{1, 2, 3, 4}}) },
		func() { slaves.NewTree([]int{2, 3}, []int{0}, nil, [][]float64{{1, 2, 3, 4}}) },
		func() { slaves.NewTree([]int{2, 2}, []int{0}, nil, [][]float64{{1, math.NaN(), 3, 4}}) },
		func() { slaves.NewTree([]int{2, 2}, []int{0}, [][]float64{{0, 1}, {math.Inf(1), 0}}, nil) },
		func() { slaves.NewTree([]int{2, 2}, []int{0}, [][]float64{{0, 1}}, nil) },
	} {
		mustPanic(t, f, "case %d", i)
	}
}

// treeQUADer is a slave whose QUAD may be inexact.
type treeQUADer interface {
	slaves.Slave
	slaves.Inexact
	ActiveSet() *slaves.ActiveSet
}

// treeSolveQUAD solves QUAD either in one call with a high iteration cap or
// by repeated calls with a cap of 2 iterations until Converged (as the
// engine re-solves Inexact slaves), returning phi.q and the number of calls.
func treeSolveQUAD(t *testing.T, s treeQUADer, c []float64, eta float64, u []float64, oneShot bool) (float64, int) {
	t.Helper()
	if oneShot {
		s.ActiveSet().SetMaxIter(10000)
		phiq := s.QUAD(c, eta, u)
		s.ActiveSet().SetMaxIter(0)
		if !s.Converged() {
			t.Fatalf("QUAD with 10000 iterations did not converge")
		}
		return phiq, 1
	}
	s.ActiveSet().SetMaxIter(2)
	defer s.ActiveSet().SetMaxIter(0)
	for calls := 1; calls <= 200; calls++ {
		phiq := s.QUAD(c, eta, u)
		if s.Converged() {
			return phiq, calls
		}
	}
	t.Fatalf("QUAD did not converge in 200 calls")
	return 0, 0
}

// QUAD of chains (both MAP algorithms) and trees against the reference, on
// small scopes, feasible or with -Inf entries, c far from (vertex
// solutions) and near (fractional solutions) the marginals, and warm
// sequences of nearby inputs.
func TestChainTreeQUAD(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	cases := slavetest.Trials(800, 200)
	var errs asErrs
	maxCalls := 0
	for it := 0; it < cases && !t.Failed(); it++ {
		n := 1 + rng.IntN(5)
		pInf := []float64{0, 0, 0.3}[it%3]
		cards, parent, em, tb, _ := treeRandom(rng, n, 3, pInf, 0, false)
		var s treeQUADer
		var score func([]int) float64
		switch it % 4 {
		case 0, 1: // a chain, with either oracle
			for k := range parent {
				parent[k] = k
			}
			tb = make([][]float64, n-1)
			for k := range tb {
				tb[k] = make([]float64, cards[k]*cards[k+1])
				for i := range tb[k] {
					if rng.Float64() < pInf {
						tb[k][i] = chainNegInf
					} else {
						tb[k][i] = 4*rng.Float64() - 2
					}
				}
			}
			ch := slaves.NewChain(cards, em, tb)
			if it%4 == 1 {
				ch.SetAlgorithm(slaves.ChainViterbi)
			} else {
				ch.SetColGenBudget(math.Inf(1))
			}
			s, score = ch, chainDirectScore(cards, em, tb)
		default:
			s, score = slaves.NewTree(cards, parent, em, tb), treeDirectScore(cards, parent, em, tb)
		}
		dim := slaves.Offsets(cards)[n]
		feasible := false
		for _, y := range slavetest.EnumerateConfigs(cards) {
			if !math.IsInf(score(y), -1) {
				feasible = true
				break
			}
		}
		c := make([]float64, dim)
		eta := []float64{0.1, 1, 10}[rng.IntN(3)]
		lo, hi := -3.0, 3.0
		if it%2 == 1 {
			lo, hi = -0.2, 1.2
		}
		for i := range c {
			c[i] = lo + (hi-lo)*rng.Float64()
		}
		u := make([]float64, dim)
		if !feasible {
			if v := s.QUAD(c, eta, u); !math.IsInf(v, -1) {
				t.Fatalf("case %d: infeasible scope, QUAD %v", it, v)
			}
			continue
		}
		// A warm sequence: the reference check applies to each solution.
		for step := 0; step < 3; step++ {
			phiq, calls := treeSolveQUAD(t, s, c, eta, u, (it/4+step)%2 == 0)
			maxCalls = max(maxCalls, calls)
			errs.add(t, cards, score, c, eta, u, phiq)
			if t.Failed() {
				t.Fatalf("case %d step %d: %T cards %v parent %v", it, step, s, cards, parent)
			}
			for i := range c {
				c[i] += 0.2 * (2*rng.Float64() - 1)
			}
		}
	}
	t.Logf("%d cases: max |u - ref| %.3g, max |obj - ref| %.3g, most QUAD calls to converge %d", cases, errs.u, errs.obj, maxCalls)
}

// MAP and warm QUAD calls allocate nothing.
func TestChainTreeAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	cards, em, tr, w := chainLarge(rng, "local", 30, 40)
	cards2, em2, tr2, _ := chainLarge(rng, "bio", 30, 40)
	parent := make([]int, 9)
	for k := range parent {
		parent[k] = rng.IntN(k + 1)
	}
	tcards := []int{3, 4, 2, 5, 3, 3, 2, 4, 3, 2}
	tb := make([][]float64, 9)
	for k, p := range parent {
		tb[k] = make([]float64, tcards[p]*tcards[k+1])
		for i := range tb[k] {
			tb[k][i] = rng.Float64()
		}
	}
	var ss []slaves.Slave
	for _, alg := range []slaves.ChainAlgorithm{slaves.ChainViterbi, slaves.ChainColumnGeneration} {
		for _, in := range [][3]any{{cards, em, tr}, {cards2, em2, tr2}} {
			c := slaves.NewChain(in[0].([]int), in[1].([][]float64), in[2].([][]float64))
			c.SetAlgorithm(alg)
			c.SetColGenBudget(math.Inf(1))
			ss = append(ss, c)
		}
	}
	// Column generation that falls back to Viterbi.
	strong := slaves.NewChain(cards, nil, tr)
	strong.SetColGenBudget(1e-3)
	ss = append(ss, strong)
	ss = append(ss, slaves.NewTree(tcards, parent, nil, tb))
	for i, s := range ss {
		dim := slaves.Offsets(s.Cards())[len(s.Cards())]
		c := make([]float64, dim)
		for i := range c {
			c[i] = 1.4*rng.Float64() - 0.2
		}
		if i == 0 {
			copy(c, w)
		}
		u := make([]float64, dim)
		y := make([]int, len(s.Cards()))
		s.MAP(c, y)
		for j := 0; j < 20; j++ {
			s.QUAD(c, 1, u)
		}
		checkNoAllocs(t, fmt.Sprint(i), s, c, 100, 0.001)
	}
}
