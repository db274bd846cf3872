package trws

// This file holds the two passes of TRW-S (Kolmogorov 2006, Fig. 3) in the
// max-sum convention. With hat_s = theta_s + sum of the messages into s and
// gamma_s = 1/n_s, node s sends along each edge (s, t)
//
//	M_{s->t}(x_t) = max_{x_s} [ gamma_s hat_s(x_s) - M_{t->s}(x_s) + theta_st(x_s, x_t) ]
//
// and subtracts its maximum c_st. The messages define the decomposition of
// the model into monotonic chains (each edge in one chain, n_s chains
// through s): chain T has unaries hat_s/n_s and pairwise terms
// theta_st - M_{s->t} - M_{t->s}, and the chains add up to the model, so
// the sum over chains of their maximum is an upper bound on the MAP score.
// Right after a forward pass, dynamic programming along every chain
// collapses onto the messages just sent: the chain maxima add up to
//
//	sum of the c_st of the pass + sum_s endF_s max_x hat_s(x)
//
// (endF_s = (n_s - #out)/n_s weighs the chains that end at s), which the pass returns; the
// backward pass likewise with endB. The bound is thus the exact value of the
// dual at the current messages, not an estimate.
//
// Hard constraints: a state x_s with hat_s(x_s) = -Inf is dead (no feasible
// assignment uses it: the -Inf came from a forbidden unary state or a
// message, and a message entry is -Inf only when every live state of the
// sender is incompatible with it, an arc-consistency argument). A dead state
// sends -Inf instead of gamma hat - M, which would be -Inf - (-Inf) = NaN
// (and the builtin max of the message loops propagates NaN); live states
// have finite hat and finite incoming messages, so no NaN arises.
// The chains are then taken over the live states, where they still add up
// to the model; a message that is -Inf everywhere proves the model
// infeasible, and the bound becomes -Inf.

// With one message per edge (graph.go), every message a node reads when it
// is processed is one into it: from its earlier neighbours those the
// current pass just sent, from its later ones those of the previous pass.

// forwardPart runs the forward pass over the nodes lo..hi-1 with scratch
// sc: it labels every node with Kolmogorov's rule (x_s maximises
// theta_s(x_s) + sum over earlier neighbours t of theta_ts(x_t, x_s) + sum
// over later neighbours t of M_{t->s}(x_s)), sends the messages to later
// nodes, and returns its share of the bound (sum of the c_st and of the end
// terms) and of the labelling's score (each node's unary and its edges to
// earlier nodes; 0 when TRW-S(LP-C) changed the tables, see runner).
func (g *graph) forwardPart(lo, hi int, x []int, sc *scratch) (bound, score float64) {
	data, theta := g.data, g.theta
	fuse, pf, kern := g.orig == nil, g.prefetch, g.kern
	for t := lo; pf && t < min(lo+prefetchAhead, hi); t++ {
		g.prefetchOut(t) // the nodes the loop starts with
	}
	for s := lo; s < hi; s++ {
		if t := s + prefetchAhead; pf && t < hi {
			g.prefetchOut(t)
		}
		if kern[s] != 0 {
			bound, score = g.forwardStep(s, x, fuse, bound, score)
			continue
		}
		k := g.card[s]
		hat, lab, a := sc.hat[:k], sc.lab[:k], sc.a[:k]
		u0 := g.uoff[s]
		copy(hat, theta[u0:u0+k])
		o0, o1 := g.outOff[s], g.outOff[s+1]
		for e := o0; e < o1; e++ {
			addTo(hat, data[g.moff[e]:])
		}
		copy(lab, hat)
		in := g.inE[g.inOff[s]:g.inOff[s+1]]
		for _, e := range in {
			addTo(hat, data[g.moff[e]:])
			xu := x[g.eu[e]]
			switch t := g.toff[e]; {
			case t >= 0:
				addTo(lab, g.table(int(e))[xu*k:])
			case t == -1:
				lab[xu] += g.pw[e]
			default:
				term := g.terms[-2-t]
				for j := range lab {
					lab[j] += term.Theta(xu, j)
				}
			}
		}
		best, bestV := argmax(lab)
		if bestV == negInf { // no state fits the earlier labels
			best, _ = argmax(hat)
		}
		x[s] = best
		if fuse {
			v := theta[u0+best]
			for _, e := range in {
				xu := x[g.eu[e]]
				v += g.pairScore(int(e), xu, best)
			}
			score += v
		}
		_, gm, w, _ := g.weights(s)
		if w > 0 {
			bound += w * maxOf(hat)
		}
		for e := o0; e < o1; e++ {
			prepare(a, hat, data[g.moff[e]:], gm)
			bound += g.sendFromU(e, a, sc)
		}
	}
	return bound, score
}

// backwardPart runs the backward pass over the nodes hi-1 down to lo with
// scratch sc and returns its share of the bound.
func (g *graph) backwardPart(lo, hi int, sc *scratch) float64 {
	data, theta := g.data, g.theta
	bound, pf, kern := 0.0, g.prefetch, g.kern
	for t := hi - 1; pf && t >= max(hi-prefetchAhead, lo); t-- {
		g.prefetchIn(t)
	}
	for s := hi - 1; s >= lo; s-- {
		if t := s - prefetchAhead; pf && t >= lo {
			g.prefetchIn(t)
		}
		if kern[s] != 0 {
			bound = g.backwardStep(s, bound)
			continue
		}
		k := g.card[s]
		hat, a := sc.hat[:k], sc.a[:k]
		u0 := g.uoff[s]
		copy(hat, theta[u0:u0+k])
		for e := g.outOff[s]; e < g.outOff[s+1]; e++ {
			addTo(hat, data[g.moff[e]:])
		}
		in := g.inE[g.inOff[s]:g.inOff[s+1]]
		for _, e := range in {
			addTo(hat, data[g.moff[e]:])
		}
		_, gm, _, w := g.weights(s)
		if w > 0 {
			bound += w * maxOf(hat)
		}
		for _, e := range in {
			prepare(a, hat, data[g.moff[e]:], gm)
			bound += g.sendFromV(int(e), a, sc)
		}
	}
	return bound
}

// forward runs a whole forward pass on the calling goroutine (the same
// iterates as the parts on threads: see order.go) and returns the bound.
func (g *graph) forward(x []int, sc *scratch) float64 {
	b, _ := g.forwardPart(0, g.n, x, sc)
	return g.constant + g.shift + b
}

// backward runs a whole backward pass on the calling goroutine and returns
// the bound.
func (g *graph) backward(sc *scratch) float64 {
	return g.constant + g.shift + g.backwardPart(0, g.n, sc)
}

// gatherAfterBackward writes hat_s into hat right after a backward pass of
// TRW-S(LP-C): the messages from later nodes are stored, those from
// earlier nodes are the forward pass's copies in fwd.
func (g *graph) gatherAfterBackward(s int, hat []float64) {
	copy(hat, g.theta[g.uoff[s]:g.uoff[s+1]])
	for e := g.outOff[s]; e < g.outOff[s+1]; e++ {
		addTo(hat, g.data[g.moff[e]:])
	}
	for _, e := range g.inE[g.inOff[s]:g.inOff[s+1]] {
		addTo(hat, g.fwd[g.moff[e]:])
	}
}

func addTo(dst, src []float64) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += v
	}
}

// prepare sets a = gamma*hat - in, with -Inf for dead states.
func prepare(a, hat, in []float64, gamma float64) {
	in = in[:len(a)]
	hat = hat[:len(a)]
	for i, h := range hat {
		if h == negInf {
			a[i] = negInf
		} else {
			a[i] = gamma*h - in[i]
		}
	}
}

// maxOf returns the largest entry of v (-Inf when v is empty).
func maxOf(v []float64) float64 {
	m := negInf
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// argmax returns the first index of the largest entry and the entry
// (0, -Inf when all are -Inf).
// It selects without a data-dependent branch (max, and a conditional move
// for the index): twice as fast as an if on 4 random entries.
func argmax(v []float64) (int, float64) {
	best, bv := 0, negInf
	for i, x := range v {
		gt := x > bv
		bv = max(bv, x)
		if gt {
			best = i
		}
	}
	return best, bv
}

// sendFromU computes M_{u->v} for edge e from a (over u's states) into the
// edge's message, normalises it and returns its maximum. Dead states
// (a[i] = -Inf) give -Inf sums, never NaN: no entry is +Inf.
func (g *graph) sendFromU(e int, a []float64, sc *scratch) float64 {
	kv := g.card[g.ev[e]]
	mo := g.moff[e]
	out := g.data[mo : mo+kv]
	var c float64
	switch t0 := g.toff[e]; {
	case t0 >= 0:
		c = shiftBy(out, maxPlusCols(out, a, g.table(e)))
	case t0 == -1:
		c = potts(out, a, g.pw[e])
	default: // truncated terms are symmetric: one message rule both ways
		c = g.terms[-2-t0].Message(out, a, sc.dt)
	}
	if g.fwd != nil {
		copy(g.fwd[mo:mo+kv], out)
	}
	return c
}

// sendFromV computes M_{v->u} for edge e from a (over v's states) into the
// edge's message, normalises it and returns its maximum.
func (g *graph) sendFromV(e int, a []float64, sc *scratch) float64 {
	ku := g.card[g.eu[e]]
	mo := g.moff[e]
	out := g.data[mo : mo+ku]
	t0 := g.toff[e]
	switch {
	case t0 == -1:
		return potts(out, a, g.pw[e])
	case t0 < -1:
		return g.terms[-2-t0].Message(out, a, sc.dt)
	}
	return shiftBy(out, maxPlusRows(out, a, g.table(e)))
}

// The two max-plus products below are the O(K^2) part of an iteration.
// They use the builtin max, which compiles to branch-free code (a compare
// and a select): the maximum's position is data-dependent, and a branch
// on it mispredicts about half the time, which cost 3 to 4 times as much
// on 4x4 tables. Four accumulators in registers keep four independent
// chains of dependent instructions going. No NaN can arise (see above), so
// max's NaN rule does not matter.

// maxPlusCols sets out[j] = max_i a[i] + t[i*len(out)+j] and returns the
// largest out[j].
func maxPlusCols(out, a, t []float64) float64 {
	kv := len(out)
	t = t[:len(a)*kv]
	a0 := a[0]
	c := negInf
	j := 0
	for ; j+8 <= kv; j += 8 {
		r := (*[8]float64)(t[j : j+8])
		o0, o1, o2, o3 := a0+r[0], a0+r[1], a0+r[2], a0+r[3]
		o4, o5, o6, o7 := a0+r[4], a0+r[5], a0+r[6], a0+r[7]
		for i := 1; i < len(a); i++ {
			ai := a[i]
			r := (*[8]float64)(t[i*kv+j : i*kv+j+8])
			o0 = max(o0, ai+r[0])
			o1 = max(o1, ai+r[1])
			o2 = max(o2, ai+r[2])
			o3 = max(o3, ai+r[3])
			o4 = max(o4, ai+r[4])
			o5 = max(o5, ai+r[5])
			o6 = max(o6, ai+r[6])
			o7 = max(o7, ai+r[7])
		}
		o := (*[8]float64)(out[j : j+8])
		o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7] = o0, o1, o2, o3, o4, o5, o6, o7
		c = max(c, max(max(o0, o1), max(o2, o3)), max(max(o4, o5), max(o6, o7)))
	}
	for ; j+4 <= kv; j += 4 {
		r := (*[4]float64)(t[j : j+4])
		o0, o1, o2, o3 := a0+r[0], a0+r[1], a0+r[2], a0+r[3]
		for i := 1; i < len(a); i++ {
			ai := a[i]
			r := (*[4]float64)(t[i*kv+j : i*kv+j+4])
			o0 = max(o0, ai+r[0])
			o1 = max(o1, ai+r[1])
			o2 = max(o2, ai+r[2])
			o3 = max(o3, ai+r[3])
		}
		o := (*[4]float64)(out[j : j+4])
		o[0], o[1], o[2], o[3] = o0, o1, o2, o3
		c = max(c, max(max(o0, o1), max(o2, o3)))
	}
	for ; j < kv; j++ {
		o := a0 + t[j]
		for i := 1; i < len(a); i++ {
			o = max(o, a[i]+t[i*kv+j])
		}
		out[j] = o
		c = max(c, o)
	}
	return c
}

// maxPlusRows sets out[i] = max_j a[j] + t[i*len(a)+j] and returns the
// largest out[i].
func maxPlusRows(out, a, t []float64) float64 {
	kv := len(a)
	t = t[:len(out)*kv]
	c := negInf
	if kv < 4 {
		for i := range out {
			row := t[i*kv : i*kv+kv]
			row = row[:len(a)]
			o := a[0] + row[0]
			for j := 1; j < len(row); j++ {
				o = max(o, a[j]+row[j])
			}
			out[i] = o
			c = max(c, o)
		}
		return c
	}
	a4 := (*[4]float64)(a[:4])
	for i := range out {
		row := t[i*kv : i*kv+kv]
		r := (*[4]float64)(row[:4])
		o0, o1, o2, o3 := a4[0]+r[0], a4[1]+r[1], a4[2]+r[2], a4[3]+r[3]
		j := 4
		for ; j+4 <= kv; j += 4 {
			r := (*[4]float64)(row[j : j+4])
			x := (*[4]float64)(a[j : j+4])
			o0 = max(o0, x[0]+r[0])
			o1 = max(o1, x[1]+r[1])
			o2 = max(o2, x[2]+r[2])
			o3 = max(o3, x[3]+r[3])
		}
		for ; j < kv; j++ {
			o0 = max(o0, a[j]+row[j])
		}
		o := max(max(o0, o1), max(o2, o3))
		out[i] = o
		c = max(c, o)
	}
	return c
}

// shiftBy subtracts c from m unless c is -Inf (m is then -Inf everywhere:
// the model is infeasible) and returns c.
func shiftBy(m []float64, c float64) float64 {
	if c == negInf {
		return c
	}
	for i := range m {
		m[i] -= c
	}
	return c
}

// potts sets out to the normalised message max_i a[i] + w[i == j] over j
// in O(len(a)) and returns its maximum (-Inf, out all -Inf, when a is). With
// b1 = a[i1] the top entry of a: for w >= 0 the message is
// max(b1, a[j] + w), of maximum b1 + w; for w < 0 it is b1 except at i1,
// where it is max(b2, b1 + w) with b2 the best entry besides i1.
func potts(out, a []float64, w float64) float64 {
	b1, i1 := negInf, -1
	for i, v := range a {
		gt := v > b1
		b1 = max(b1, v)
		if gt {
			i1 = i
		}
	}
	out = out[:len(a)]
	if i1 < 0 {
		for j := range out {
			out[j] = negInf
		}
		return negInf
	}
	if w >= 0 || len(a) == 1 {
		lo := -w
		for j, v := range a {
			out[j] = max(v-b1, lo) // no NaN: v - b1 is -Inf or finite
		}
		if len(a) == 1 {
			out[0] = 0
		}
		return b1 + w
	}
	b2 := negInf
	for j, v := range a {
		if j == i1 { // a conditional move, not a data-dependent branch
			v = negInf
		}
		b2 = max(b2, v)
		out[j] = 0
	}
	out[i1] = max(b1+w, b2) - b1
	return b1
}

// Prefetching. Between a node's turn in one pass and its turn in the next,
// the pass goes through all the other edges' data, so on a large model
// every message and table a node reads first comes from memory: in a
// forward pass the edges to later nodes (one ascending range), in a
// backward pass the edges from earlier nodes (a descending walk, which the
// hardware prefetchers follow badly). Each pass therefore asks for the data
// of the node prefetchAhead turns ahead (PREFETCHT0 on amd64, nothing
// elsewhere), when the data is over prefetchMin bytes: on a 300x300 grid
// of 4-label dense tables this took an iteration from about 137 to 88 ns
// per node (8 ahead; 4 and 16 do about as well), on a 30x30 one, which
// stays in cache, it costs about 10 ns per node.
const (
	prefetchAhead = 8
	prefetchMin   = 2 << 20
)

// prefetchOut asks for the messages and tables of the edges from node t to
// later nodes, the memory a forward pass reads first at t: the messages
// are one contiguous range, since edges are laid out in order (graph.go),
// the tables (when outside data) one range each. A node with an unrolled
// step on dense edges only (K states, K x K tables) does it all in one
// call (prefetchOutK):
// a call per range cost about 8% of an iteration.
func (g *graph) prefetchOut(t int) {
	e0, e1 := g.outOff[t], g.outOff[t+1]
	if e0 == e1 {
		return
	}
	if k := int(g.kern[t]); k != 0 && k < kernMix && g.tabLen > 0 {
		prefetchOutK(&g.data[g.moff[e0]], (e1-e0)*k, &g.tab[e0], e1-e0, k*k)
		return
	}
	end := len(g.data)
	if e1 < len(g.moff) {
		end = g.moff[e1]
	}
	prefetch(&g.data[g.moff[e0]], end-g.moff[e0])
	if g.tabLen > 0 {
		ku := g.card[t]
		for e := e0; e < e1; e++ {
			if p := g.tab[e]; p != nil {
				prefetch(p, ku*g.card[g.ev[e]])
			}
		}
	}
}

// prefetchIn asks for the messages and tables of the edges into node t
// from earlier nodes, the memory a backward pass reads first at t (written
// by the forward pass, long evicted): with an unrolled step in one call
// (prefetchInK).
func (g *graph) prefetchIn(t int) {
	in := g.inE[g.inOff[t]:g.inOff[t+1]]
	if len(in) == 0 {
		return
	}
	kv := g.card[t]
	if k := int(g.kern[t]); k != 0 && k < kernMix && g.tabLen > 0 {
		prefetchInK(&in[0], len(in), &g.moff[0], &g.tab[0], &g.data[0], k, k*k)
		return
	}
	for _, e := range in {
		end := len(g.data)
		if int(e)+1 < len(g.moff) {
			end = g.moff[e+1]
		}
		prefetch(&g.data[g.moff[e]], end-g.moff[e])
		if p := g.tab[e]; p != nil && g.tabLen > 0 {
			prefetch(p, g.card[g.eu[e]]*kv)
		}
	}
}
