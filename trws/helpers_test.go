package trws

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// testGraph is newGraph for a test or benchmark: it fails tb on an error.
func testGraph(tb testing.TB, m *model.Model, threads int) *graph {
	tb.Helper()
	g, err := newGraph(m, threads)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// reduced is m reduced without evidence (model.Reduce); it fails tb on an
// error.
func reduced(tb testing.TB, m *model.Model) *model.Model {
	tb.Helper()
	red, err := model.Reduce(m, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return red.Model
}

// near reports whether a and b agree within tol, relative to their size.
func near(a, b, tol float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= tol*(1+math.Max(math.Abs(a), math.Abs(b)))
}

// tinyPairwise draws a random tiny model (oracle.RandomTinyModel restricted
// to Dense, Pair, Potts and the truncated kinds) and drops its Dense factors over three
// variables, which keeps it feasible when it was.
func tinyPairwise(rng *rand.Rand, o oracle.TinyOptions) *model.Model {
	o.Kinds = []model.Kind{model.Dense, model.Pair, model.Potts, model.TruncLinear, model.TruncQuad}
	return oracle.PairwiseOnly(oracle.RandomTinyModel(rng, o))
}

// randomTree draws a tree of n variables (cards 2..maxCard, some 1) whose
// variable numbering is a random permutation of a random tree's, so that
// nodes have several earlier and later neighbours. Edges are dense (with
// -Inf entries when hard) or Potts; a few unary states are -Inf when hard.
// star makes every edge touch the variable drawn first.
func randomTree(rng *rand.Rand, n, maxCard int, hard, star bool) *model.Model {
	perm := rng.Perm(n)
	cards := make([]int, n)
	for i := range cards {
		cards[i] = 2 + rng.IntN(maxCard-1)
		if rng.IntN(15) == 0 {
			cards[i] = 1
		}
	}
	m := model.New(cards)
	for j := range m.Unary {
		m.Unary[j] = rng.NormFloat64()
		if hard && rng.IntN(20) == 0 {
			m.Unary[j] = negInf
		}
	}
	for k := 1; k < n; k++ {
		p := 0
		if !star {
			p = rng.IntN(k)
		}
		u, v := perm[p], perm[k]
		if cards[u] == cards[v] && rng.IntN(3) == 0 {
			m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{u, v}, Weight: 2 * rng.NormFloat64()})
			continue
		}
		tab := make([]float64, cards[u]*cards[v])
		for j := range tab {
			tab[j] = 2 * rng.NormFloat64()
			if hard && rng.IntN(6) == 0 {
				tab[j] = negInf
			}
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{u, v}, Table: tab})
	}
	return m
}

// passMessages tracks both messages of every edge while a test runs
// passes: the graph stores one (graph.go), the other is the copy taken
// after the pass that sent it. uv[moff[e]:] holds M_{u->v}, vu[moff[e]:]
// M_{v->u}; both start at 0, as the graph's messages do.
type passMessages struct{ uv, vu []float64 }

func newPassMessages(g *graph) *passMessages {
	return &passMessages{uv: make([]float64, len(g.data)), vu: make([]float64, len(g.data))}
}

// after records the messages a pass just sent.
func (pm *passMessages) after(g *graph, forward bool) {
	if forward {
		copy(pm.uv, g.data)
	} else {
		copy(pm.vu, g.data)
	}
}

// chainBound is an independent evaluation of the dual at the messages pm:
// it splits the graph into monotonic chains (pairing each node's edges to
// earlier and to later nodes at random), gives chain T the unaries
// hat_s/n_s and the pairwise terms theta_st - M_st - M_ts over the live
// states (hat_s > -Inf), and adds up the chains' maxima found by Viterbi.
func chainBound(g *graph, pm *passMessages, rng *rand.Rand) float64 {
	hats := make([][]float64, g.n)
	ins := make([][]int32, g.n)
	outs := make([][]int32, g.n)
	slotIn := make([]int, len(g.eu)) // position of edge e in its head's in-list
	for s := 0; s < g.n; s++ {
		ins[s] = append([]int32(nil), g.inE[g.inOff[s]:g.inOff[s+1]]...)
		for e := g.outOff[s]; e < g.outOff[s+1]; e++ {
			outs[s] = append(outs[s], int32(e))
		}
		hats[s] = append([]float64(nil), g.theta[g.uoff[s]:g.uoff[s+1]]...)
		for x := range hats[s] {
			for _, e := range ins[s] {
				hats[s][x] += pm.uv[g.moff[e]+x]
			}
			for _, e := range outs[s] {
				hats[s][x] += pm.vu[g.moff[e]+x]
			}
		}
		rng.Shuffle(len(ins[s]), func(i, j int) { ins[s][i], ins[s][j] = ins[s][j], ins[s][i] })
		rng.Shuffle(len(outs[s]), func(i, j int) { outs[s][i], outs[s][j] = outs[s][j], outs[s][i] })
		for k, e := range ins[s] {
			slotIn[e] = k
		}
	}
	pair := func(e int32, xu, xv int) float64 {
		return g.pairScore(int(e), xu, xv) - pm.uv[g.moff[e]+xv] - pm.vu[g.moff[e]+xu]
	}
	total := g.constant
	for s := 0; s < g.n; s++ {
		ns := len(ins[s])
		if len(outs[s]) > ns {
			ns = len(outs[s])
		}
		if ns == 0 {
			ns = 1
		}
		// Chains starting at s occupy the slots k >= len(ins[s]).
		for k := len(ins[s]); k < ns; k++ {
			v := make([]float64, g.card[s])
			for x := range v {
				v[x] = hats[s][x] / float64(ns)
			}
			node, slot := s, k
			for slot < len(outs[node]) {
				e := outs[node][slot]
				next := int(g.ev[e])
				nn := max(len(ins[next]), len(outs[next]), 1)
				w := make([]float64, g.card[next])
				for xv := range w {
					w[xv] = negInf
					if hats[next][xv] == negInf {
						continue
					}
					for xu, vu := range v {
						if vu == negInf {
							continue
						}
						if c := vu + pair(e, xu, xv); c > w[xv] {
							w[xv] = c
						}
					}
					w[xv] += hats[next][xv] / float64(nn)
				}
				v, node, slot = w, next, slotIn[e]
			}
			best := negInf
			for _, x := range v {
				best = math.Max(best, x)
			}
			total += best
		}
	}
	return total
}

// mustSolve runs Solve and fails on an error.
func mustSolve(t *testing.T, m *model.Model, opts Options, progress func(p progressT)) resultT {
	t.Helper()
	res, err := Solve(bg, m, nil, opts, progress)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
