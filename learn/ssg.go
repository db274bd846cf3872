package learn

import (
	"context"
	"math"
)

// SSG trains by stochastic subgradient descent, Pegasos-style
// (Shalev-Shwartz, Singer, Srebro, Cotter, Math. Prog. 2011, Fig. 1 with
// one example per step and no projection): this package's primal
// P(w) = 1/2 ||w||^2 + C sum_i hinge_i(w) is C n times
// lambda/2 ||w||^2 + 1/n sum_i hinge_i(w) with lambda = 1/(C n), so the
// step on example i at step t is
//
//	w <- (1 - 1/t) w - 1/(lambda t) g_i,  g_i = phi(x_i, y*) - phi(x_i, ybar_i),
//
// y* the loss-augmented maximiser at w (Viterbi for sequences, MLHinge's
// maximisation for multilabel). w is stored as s * v so that the shrink
// is O(1) and a step touches only g_i's entries; the oracle runs on v with
// the loss divided by s (the same maximiser). Examples are visited in a
// random permutation per pass (Seed).
//
// With Options.Average the weights evaluated and returned are the
// weighted average of the iterates, w_avg <- (1 - rho) w_avg + rho w with
// rho = 2/(t+1) (Lacoste-Julien, Schmidt, Bach 2012), kept as alpha u +
// beta v so that a step stays sparse.
//
// Dual: unrolling the recursion, after m full passes (t = m n, every
// example visited m times) w = C/m sum_i sum_{visits of i} (phi(ybar_i) -
// phi(y*)), which is w(beta) of BCFW's dual (see BCFW) at beta_i = the
// empirical distribution of the m labellings the oracle returned for i
// (Lacoste-Julien et al. 2013, Sect. 4: Pegasos is BCFW with step 1/t).
// So D = C/m sum of their Hamming losses - 1/2 ||w||^2 is a valid lower
// bound on the optimum, computed exactly at each evaluation after a full
// pass; Result.Dual is the best such bound (of the last iterate, whether
// or not Average is set), Gap = Primal - Dual is honest. A pass cut short
// by the context has no dual (-Inf).
func SSG(ctx context.Context, d *Data, o Options) (*Weights, Result, error) {
	return BlockRegularized(ssg)(ctx, d, o)
}

func ssg(ctx context.Context, d *Data, o Options) (*Weights, Result, error) {
	if err := o.Validate(); err != nil {
		return nil, Result{}, err
	}
	if err := CheckData(d); err != nil {
		return nil, Result{}, err
	}
	return runBlocks(ctx, "ssg", newSSG(d, o), d, o)
}

type ssgState struct {
	seq    *SeqData
	ml     *MLData
	n      int
	C      float64
	lambda float64
	v      *Weights // w = s v
	s      float64
	avg    bool
	u      *Weights // w_avg = alpha u + beta v
	alpha  float64
	beta   float64
	t      int
	hsum   float64 // Hamming losses of the oracle's labellings, summed
	out    *Weights
	seqsc  SeqScratch
	ys     []int32
	mlsc   MLScratch
	on     []int32
}

func newSSG(d *Data, o Options) *ssgState {
	L, D := d.Shape()
	g := &ssgState{seq: d.Seq, ml: d.ML, C: o.C, s: 1, avg: o.Average, alpha: 1}
	kind := d.Kind()
	if d.Seq != nil {
		g.n = d.Seq.Sentences()
	} else {
		g.n = d.ML.Examples()
	}
	g.lambda = 1 / (o.C * float64(g.n))
	g.v = NewWeights(kind, L, D)
	g.out = NewWeights(kind, L, D)
	if g.avg {
		g.u = NewWeights(kind, L, D)
	}
	return g
}

func (g *ssgState) blocks() int { return g.n }

// add adds c to entry e of block b (0: Emit, 1: Trans or Pair) of v,
// keeping the average unchanged.
func (g *ssgState) add(b, e int, c float64) {
	vb, ub := g.v.Emit, []float64(nil)
	if g.avg {
		ub = g.u.Emit
	}
	if b == 1 {
		vb = g.v.Trans
		if g.v.Pair != nil {
			vb = g.v.Pair
		}
		if g.avg {
			ub = g.u.Trans
			if g.u.Pair != nil {
				ub = g.u.Pair
			}
		}
	}
	vb[e] += c
	if g.avg {
		ub[e] -= g.beta / g.alpha * c
	}
}

func (g *ssgState) step(ctx context.Context, i int) error {
	if g.seq != nil {
		n := g.seq.Start[i+1] - g.seq.Start[i]
		if cap(g.ys) < n {
			g.ys = make([]int32, n)
		}
		g.oracleInto(i, g.ys[:n], &g.seqsc)
		g.moveTo(i, g.ys[:n])
		return nil
	}
	g.t++
	t := float64(g.t)
	inv := 1 / g.s
	d, L := g.ml, g.v.Labels
	mlUnary(g.v, d, i, false, &g.mlsc)
	s := g.mlsc.s
	for l := range s {
		s[l] += inv
	}
	pos := g.known(d.Positive(i))
	for _, y := range pos {
		s[y] -= 2 * inv
	}
	if _, _, err := mlDecode(ctx, g.v, &g.mlsc); err != nil {
		return err
	}
	g.shrink()
	c := -1 / (g.lambda * t * g.s)
	idx, val := d.X.Row(i)
	q := 0
	for l, on := range g.mlsc.y {
		truth := q < len(pos) && int(pos[q]) == l
		if truth {
			q++
		}
		if on == truth {
			continue
		}
		g.hsum++
		sign := c
		if truth {
			sign = -c
		}
		for j, f := range idx {
			g.add(0, int(f)*L+l, sign*val[j])
		}
	}
	for a := 0; a < L; a++ {
		if !g.mlsc.y[a] {
			continue
		}
		for b := a + 1; b < L; b++ {
			if g.mlsc.y[b] {
				g.add(1, a*L+b, c)
			}
		}
	}
	for k, a := range pos {
		for _, b := range pos[k+1:] {
			g.add(1, int(a)*L+int(b), -c)
		}
	}
	g.average(t)
	return nil
}

// oracleInto puts sentence i's loss-augmented Viterbi labelling at w = s v
// into ys on the scratch sc, reading the state only (the batched pass,
// runBlocks, runs it on several goroutines at once).
func (g *ssgState) oracleInto(i int, ys []int32, sc *SeqScratch) {
	d, L := g.seq, g.v.Labels
	t0, t1 := d.Start[i], d.Start[i+1]
	n := t1 - t0
	inv := 1 / g.s
	theta := SeqEmissions(g.v, d, i, false, sc)
	for k := 0; k < n; k++ {
		th := theta[k*L : k*L+L]
		for y := range th {
			if y != int(d.Y[t0+k]) {
				th[y] += inv
			}
		}
	}
	Viterbi(theta, g.v.Trans, n, L, ys[:n], sc)
}

// moveTo is the step of sentence i with the oracle's labelling ys: the
// shrink and the subgradient step of size 1/(lambda t) (Pegasos). In a
// mini-batch ys may be the labelling at the batch's first w, a delayed
// subgradient (Wang et al. 2016, as BCFW's batches).
func (g *ssgState) moveTo(i int, ys []int32) {
	g.t++
	t := float64(g.t)
	d, L := g.seq, g.v.Labels
	t0 := d.Start[i]
	n := d.Start[i+1] - t0
	ys = ys[:n]
	g.shrink()
	c := -1 / (g.lambda * t * g.s)
	for k, y := range ys {
		yb := d.Y[t0+k]
		if y != yb {
			g.hsum++
			idx, val := d.X.Row(t0 + k)
			for j, f := range idx {
				g.add(0, int(f)*L+int(y), c*val[j])
				g.add(0, int(f)*L+int(yb), -c*val[j])
			}
		}
		if k+1 < n {
			yn, ybn := ys[k+1], d.Y[t0+k+1]
			if y != yb || yn != ybn {
				g.add(1, int(y)*L+int(yn), c)
				g.add(1, int(yb)*L+int(ybn), -c)
			}
		}
	}
	g.average(t)
}

// average folds the iterate into the weighted average: w_avg <- (1-rho)
// w_avg + rho s v.
func (g *ssgState) average(t float64) {
	if g.avg {
		rho := 2 / (t + 1)
		if rho >= 1 {
			clearWeights(g.u)
			g.alpha, g.beta = 1, g.s
		} else {
			g.alpha *= 1 - rho
			g.beta = (1-rho)*g.beta + rho*g.s
		}
		if g.alpha < 1e-9 {
			scaleWeights(g.u, g.alpha)
			g.alpha = 1
		}
	}
}

// known returns the positives below the label count, in g.on's storage.
func (g *ssgState) known(pos []int32) []int32 {
	g.on = g.on[:0]
	for _, y := range pos {
		if int(y) < g.v.Labels {
			g.on = append(g.on, y)
		}
	}
	return g.on
}

// shrink applies w <- (1 - 1/t) w to the scale (at t = 1, w is 0: v is
// cleared and the scale reset), renormalising v when the scale is small.
func (g *ssgState) shrink() {
	if g.t == 1 {
		clearWeights(g.v)
		g.s = 1
		return
	}
	g.s *= 1 - 1/float64(g.t)
	if g.s < 1e-9 {
		scaleWeights(g.v, g.s)
		g.beta /= g.s
		g.s = 1
	}
}

func clearWeights(w *Weights) {
	clear(w.Emit)
	clear(w.Trans)
	clear(w.Pair)
}

func scaleWeights(w *Weights, k float64) {
	for _, b := range [][]float64{w.Emit, w.Trans, w.Pair} {
		for i := range b {
			b[i] *= k
		}
	}
}

// eval materialises the weights evaluated (the iterate or the average)
// and returns the dual bound of the iterate after full passes.
func (g *ssgState) eval() (*Weights, float64) {
	out := g.out
	bs := [][]float64{out.Emit, out.Trans, out.Pair}
	vs := [][]float64{g.v.Emit, g.v.Trans, g.v.Pair}
	var us [][]float64
	if g.avg {
		us = [][]float64{g.u.Emit, g.u.Trans, g.u.Pair}
	}
	for k, b := range bs {
		for i := range b {
			if g.avg {
				b[i] = g.alpha*us[k][i] + g.beta*vs[k][i]
			} else {
				b[i] = g.s * vs[k][i]
			}
		}
	}
	if g.t == 0 || g.t%g.n != 0 {
		return out, math.Inf(-1)
	}
	m := float64(g.t / g.n)
	return out, g.C/m*g.hsum - 0.5*g.s*g.s*g.v.SqNorm()
}
