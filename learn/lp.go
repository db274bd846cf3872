package learn

import (
	"context"
	"math"
	"runtime"
)

// The LP-relaxed multilabel oracle. For binary labels with pairwise
// interactions the loss-augmented maximisation
//
//	max_y sum_l y_l s_l + sum_{a<b} y_a y_b P_ab
//
// is NP-hard in general (P of any sign). Yen et al. (Sect. 3, eq. 5)
// train against its LP relaxation over the local polytope: node marginals
// mu_l in [0,1], pair marginals q_ab in [max(0, mu_a+mu_b-1), min(mu_a,
// mu_b)]. For binary pairwise models that LP equals the roof dual (Boros &
// Hammer 2002): doubling every label into y_l and z_l (z_l standing for
// 1 - y_l) and splitting each term in halves gives a submodular quadratic
// pseudo-boolean function E' with E'(y, 1-y) = -f(y) whose minimum equals
// the LP's minimum of -f; it is minimised exactly by one minimum cut on
// 2L+2 nodes. The LP optimum mu_l = (y_l + 1 - z_l)/2 is half-integral.

// lpGraph is a Dinic max-flow graph with arcs in flat slices (arc k and
// its reverse k^1), reused between examples.
type lpGraph struct {
	n          int
	head, next []int32 // adjacency lists: head[v], next[arc]
	to         []int32
	cap        []float64
	level      []int32
	iter       []int32
	queue      []int32
	lin        []float64 // linear coefficients of the nodes
	state      []int8    // per label: fixed 0, fixed 1, undecided (2)
	eff        []float64 // per label: unary given the labels fixed to 1
	und, one   []int32
	kept       []int32
}

func (g *lpGraph) reset(n int) {
	g.n = n
	if cap(g.head) < n {
		g.head, g.level, g.iter, g.queue = make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	}
	g.head, g.level, g.iter, g.queue = g.head[:n], g.level[:n], g.iter[:n], g.queue[:n]
	for i := range g.head {
		g.head[i] = -1
	}
	g.next, g.to, g.cap = g.next[:0], g.to[:0], g.cap[:0]
}

// edge adds u -> v with capacity c (and its zero reverse arc).
func (g *lpGraph) edge(u, v int, c float64) {
	if c <= 0 {
		return
	}
	k := int32(len(g.to))
	g.to = append(g.to, int32(v), int32(u))
	g.cap = append(g.cap, c, 0)
	g.next = append(g.next, g.head[u], g.head[v])
	g.head[u], g.head[v] = k, k+1
}

const flowEps = 1e-12

func (g *lpGraph) bfs(s, t int) bool {
	for i := range g.level {
		g.level[i] = -1
	}
	g.level[s] = 0
	q := g.queue[:0]
	q = append(q, int32(s))
	for h := 0; h < len(q); h++ {
		u := q[h]
		for k := g.head[u]; k >= 0; k = g.next[k] {
			if v := g.to[k]; g.cap[k] > flowEps && g.level[v] < 0 {
				g.level[v] = g.level[u] + 1
				q = append(q, v)
			}
		}
	}
	return g.level[t] >= 0
}

func (g *lpGraph) dfs(u, t int32, f float64) float64 {
	if u == t {
		return f
	}
	for ; g.iter[u] >= 0; g.iter[u] = g.next[g.iter[u]] {
		k := g.iter[u]
		v := g.to[k]
		if g.cap[k] > flowEps && g.level[v] == g.level[u]+1 {
			if d := g.dfs(v, t, min(f, g.cap[k])); d > 0 {
				g.cap[k] -= d
				g.cap[k^1] += d
				return d
			}
		}
	}
	return 0
}

// maxflow returns the maximum flow from s to t; afterwards level[v] >= 0
// marks the source side of a minimum cut.
func (g *lpGraph) maxflow(s, t int) float64 {
	flow := 0.0
	for g.bfs(s, t) {
		copy(g.iter, g.head)
		for {
			f := g.dfs(int32(s), int32(t), math.Inf(1))
			if f <= 0 {
				break
			}
			flow += f
		}
	}
	return flow
}

// lpBounds are per-label sums of the positive and negative interactions
// of one weight vector (shared by every example of an evaluation).
type lpBounds struct {
	pos, neg []float64
}

func newLPBounds(w *Weights) *lpBounds {
	L := w.Labels
	b := &lpBounds{pos: make([]float64, L), neg: make([]float64, L)}
	for a := 0; a < L; a++ {
		for c := a + 1; c < L; c++ {
			p := w.Pair[a*L+c]
			if p > 0 {
				b.pos[a] += p
				b.pos[c] += p
			} else {
				b.neg[a] += p
				b.neg[c] += p
			}
		}
	}
	return b
}

// mlLP maximises the LP relaxation of sum_l y_l s_l + sum_{a<b} y_a y_b
// Pair[a*L+b] over the local polytope (see above), writes the
// half-integral node marginals into mu (len L) and returns the maximum.
//
// Labels are fixed first by persistency: the LP objective is concave and
// piecewise linear in mu_l given the others, with slope between s_l +
// sum_b min(0, P_lb) and s_l + sum_b max(0, P_lb); where the upper slope
// is <= 0 some optimum has mu_l = 0, where the lower is >= 0 some optimum
// has mu_l = 1 (moving one label at a time from any optimum). The bounds
// are recomputed over the undecided labels (a label fixed to 1 adds P_lb
// to b's unary) until nothing changes; the minimum cut runs on the
// undecided labels only. bd may be nil (then it is computed).
func mlLP(s []float64, w *Weights, bd *lpBounds, mu []float64, g *lpGraph) float64 {
	L := w.Labels
	P := w.Pair
	if bd == nil {
		bd = newLPBounds(w)
	}
	if cap(g.state) < L {
		g.state, g.eff = make([]int8, L), make([]float64, L)
	}
	state, eff := g.state[:L], g.eff[:L]
	und, one := g.und[:0], g.one[:0]
	for l := 0; l < L; l++ {
		switch {
		case s[l]+bd.pos[l] <= 0:
			state[l] = 0
		case s[l]+bd.neg[l] >= 0:
			state[l] = 1
			one = append(one, int32(l))
		default:
			state[l] = 2
			und = append(und, int32(l))
		}
	}
	pij := func(a, b int32) float64 { return P[int(min(a, b))*L+int(max(a, b))] }
	for changed := true; changed && len(und) > 0; {
		changed = false
		for _, l := range und {
			e := s[l]
			for _, a := range one {
				e += pij(a, l)
			}
			eff[l] = e
		}
		kept := g.kept[:0]
		for _, l := range und {
			up, lo := eff[l], eff[l]
			for _, b := range und {
				if b == l {
					continue
				}
				switch state[b] {
				case 2:
					p := pij(l, b)
					up += max(0, p)
					lo += min(0, p)
				case 1: // fixed to 1 in this round: not in eff yet
					p := pij(l, b)
					up += p
					lo += p
				}
			}
			switch {
			case up <= 0:
				state[l], changed = 0, true
			case lo >= 0:
				state[l], changed = 1, true
				one = append(one, l)
			default:
				kept = append(kept, l)
			}
		}
		und, g.kept = kept, und
	}
	g.und, g.one = und, one
	c := 0.0
	for k, a := range one {
		c += s[a]
		for _, b := range one[:k] {
			c += pij(a, b)
		}
	}
	for l := range mu[:L] {
		mu[l] = float64(state[l]) // 0 or 1; undecided set below
	}
	if len(und) == 0 {
		return c
	}
	for _, l := range und {
		e := s[l]
		for _, a := range one {
			e += pij(a, l)
		}
		eff[l] = e
	}
	return c + lpCut(eff, P, L, und, mu, g)
}

// lpCut is the roof-dual minimum cut over the labels und (unaries
// eff[l], interactions P within und); it writes mu for und and returns the
// LP maximum of that subproblem.
func lpCut(eff, P []float64, L int, und []int32, mu []float64, g *lpGraph) float64 {
	// Nodes: y of und[k] = k, z = n+k, source 2n, sink 2n+1; x = 1 on
	// the sink side.
	n := len(und)
	src, snk := 2*n, 2*n+1
	g.reset(2*n + 2)
	c := 0.0
	linc := make2(g, 2*n)
	for k, l := range und {
		// -s/2 y + s/2 z - s/2.
		linc[k] -= eff[l] / 2
		linc[n+k] += eff[l] / 2
		c -= eff[l] / 2
	}
	// d x_i x_j (d <= 0) = d x_i + (-d) x_i (1 - x_j): edge j -> i.
	quad := func(i, j int, d float64) {
		linc[i] += d
		g.edge(j, i, -d)
	}
	for kb := 1; kb < n; kb++ {
		for ka := 0; ka < kb; ka++ {
			a, b := und[ka], und[kb]
			p := P[int(min(a, b))*L+int(max(a, b))]
			switch {
			case p > 0:
				// -p/2 y_a y_b - p/2 (1-z_a)(1-z_b).
				quad(ka, kb, -p/2)
				c -= p / 2
				linc[n+ka] += p / 2
				linc[n+kb] += p / 2
				quad(n+ka, n+kb, -p/2)
			case p < 0:
				// |p|/2 y_a (1 - z_b) + |p|/2 (1 - z_a) y_b.
				h := -p / 2
				linc[ka] += h
				quad(ka, n+kb, -h)
				linc[kb] += h
				quad(kb, n+ka, -h)
			}
		}
	}
	for i := 0; i < 2*n; i++ {
		if v := linc[i]; v >= 0 {
			g.edge(src, i, v)
		} else {
			c += v
			g.edge(i, snk, -v)
		}
	}
	minE := c + g.maxflow(src, snk)
	for k, l := range und {
		y, z := 0.0, 0.0
		if g.level[k] < 0 {
			y = 1
		}
		if g.level[n+k] < 0 {
			z = 1
		}
		mu[l] = (y + 1 - z) / 2
	}
	return -minE
}

// make2 returns a zeroed float scratch of n entries kept in g.
func make2(g *lpGraph, n int) []float64 {
	if cap(g.lin) < n {
		g.lin = make([]float64, n)
	}
	g.lin = g.lin[:n]
	for i := range g.lin {
		g.lin[i] = 0
	}
	return g.lin
}

// MLHingeLP returns example i's LP-relaxed structured hinge loss
// max_{mu in the local polytope} [<theta_i(w), mu> + Hamming(mu, ybar_i)]
// - score(ybar_i) (Yen et al. eq. 5), an upper bound on the exact hinge
// (MLHinge), equal to it when the LP is tight. bd are w's interaction
// sums (newLPBounds; nil: computed); the LP maximiser's node marginals are
// left in mu (len L).
func MLHingeLP(w *Weights, d *MLData, i int, bd *lpBounds, mu []float64, sc *MLScratch, g *lpGraph) float64 {
	c := mlUnary(w, d, i, true, sc)
	best := mlLP(sc.s, w, bd, mu, g)
	truth := mlScore(w, d.Positive(i), sc.s) + c
	return max(best+c-truth, 0)
}

// PrimalLP returns the LP-relaxed structural SVM primal of multilabel data
// 1/2 ||w||^2 + C sum_i MLHingeLP_i(w) (Yen et al. eqs. 1, 5): an upper
// bound on Primal's exact objective, and the objective GDMM's dual bounds.
// When supp is not nil, supp[i] receives the labels of example i in the
// support of its LP maximiser (mu_l > 0), at most maxSupp of them (the
// largest mu first, then the smallest label).
func PrimalLP(ctx context.Context, w *Weights, d *MLData, C float64, threads int, supp [][]int32, maxSupp int) (float64, error) {
	n := d.Examples()
	bd := newLPBounds(w)
	part := make([]float64, max(1, min(threadsOr(threads), n)))
	err := parallel(n, threads, func(k, lo, hi int) error {
		var sc MLScratch
		var g lpGraph
		mu := make([]float64, w.Labels)
		sum := 0.0
		for i := lo; i < hi; i++ {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			sum += MLHingeLP(w, d, i, bd, mu, &sc, &g)
			if supp != nil {
				supp[i] = supp[i][:0]
				for _, half := range []float64{1, 0.5} {
					for l := 0; l < w.Labels && len(supp[i]) < maxSupp; l++ {
						if mu[l] == half {
							supp[i] = append(supp[i], int32(l))
						}
					}
				}
			}
		}
		part[k] = sum
		return nil
	})
	if err != nil {
		return 0, err
	}
	loss := 0.0
	for _, v := range part {
		loss += v
	}
	return 0.5*w.SqNorm() + C*loss, nil
}

func threadsOr(t int) int {
	if t <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return t
}
