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
//	sum of the c_st of the pass + sum_s endF[s] max_x hat_s(x)
//
// (endF[s] weighs the chains that end at s), which the pass returns; the
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

// gather writes theta_s plus the messages into s from later nodes into p,
// and hat_s (p plus the messages from earlier nodes) into hat.
func (g *graph) gather(s int, p, hat []float64) {
	copy(p, g.theta[g.uoff[s]:g.uoff[s+1]])
	for _, e := range g.outE[g.outOff[s]:g.outOff[s+1]] {
		addTo(p, g.msg[g.mVU[e]:])
	}
	copy(hat, p)
	for _, e := range g.inE[g.inOff[s]:g.inOff[s+1]] {
		addTo(hat, g.msg[g.mUV[e]:])
	}
}

func addTo(dst, src []float64) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += v
	}
}

// forward runs the forward pass, labels every node with Kolmogorov's rule
// (x_s maximises theta_s(x_s) + sum over earlier neighbours t of
// theta_ts(x_t, x_s) + sum over later neighbours t of M_{t->s}(x_s)) and
// returns the bound at the messages it leaves.
func (g *graph) forward(x []int) float64 {
	bound := g.constant + g.shift
	for s := 0; s < g.n; s++ {
		k := g.card[s]
		lab, hat := g.lab[:k], g.hat[:k]
		g.gather(s, lab, hat)
		// Labelling: lab holds theta_s plus the later neighbours'
		// messages; add the pairwise terms at the earlier labels.
		for _, e := range g.inE[g.inOff[s]:g.inOff[s+1]] {
			xu := x[g.eu[e]]
			if g.toff[e] < 0 {
				lab[xu] += g.pw[e]
			} else {
				addTo(lab, g.tables[g.toff[e]+xu*k:])
			}
		}
		best, bestV := argmax(lab)
		if bestV == negInf { // no state fits the earlier labels
			best, _ = argmax(hat)
		}
		x[s] = best
		if w := g.endF[s]; w > 0 {
			_, mx := argmax(hat)
			bound += w * mx
		}
		gm := g.gamma[s]
		for _, e := range g.outE[g.outOff[s]:g.outOff[s+1]] {
			a := g.a[:k]
			prepare(a, hat, g.msg[g.mVU[e]:], gm)
			bound += g.sendFromU(int(e), a)
		}
	}
	return bound
}

// backward runs the backward pass and returns the bound at the messages it
// leaves.
func (g *graph) backward() float64 {
	bound := g.constant + g.shift
	for s := g.n - 1; s >= 0; s-- {
		k := g.card[s]
		hat := g.hat[:k]
		g.gather(s, g.lab[:k], hat)
		if w := g.endB[s]; w > 0 {
			_, mx := argmax(hat)
			bound += w * mx
		}
		gm := g.gamma[s]
		for _, e := range g.inE[g.inOff[s]:g.inOff[s+1]] {
			a := g.a[:k]
			prepare(a, hat, g.msg[g.mUV[e]:], gm)
			bound += g.sendFromV(int(e), a)
		}
	}
	return bound
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

// argmax returns the first index of the largest entry and the entry
// (0, -Inf when all are -Inf).
func argmax(v []float64) (int, float64) {
	best, bv := 0, negInf
	for i, x := range v {
		if x > bv {
			best, bv = i, x
		}
	}
	return best, bv
}

// sendFromU computes M_{u->v} for edge e from a (over u's states),
// normalises it and returns its maximum.
func (g *graph) sendFromU(e int, a []float64) float64 {
	kv := g.card[g.ev[e]]
	out := g.msg[g.mUV[e] : g.mUV[e]+kv]
	if g.toff[e] < 0 {
		return potts(out, a, g.pw[e])
	}
	for j := range out {
		out[j] = negInf
	}
	t := g.tables[g.toff[e] : g.toff[e]+len(a)*kv]
	for i, ai := range a {
		if ai == negInf {
			continue
		}
		row := t[i*kv : i*kv+kv]
		for j, tv := range row {
			out[j] = max(out[j], ai+tv)
		}
	}
	return normalise(out)
}

// sendFromV computes M_{v->u} for edge e from a (over v's states),
// normalises it and returns its maximum.
func (g *graph) sendFromV(e int, a []float64) float64 {
	ku := g.card[g.eu[e]]
	out := g.msg[g.mVU[e] : g.mVU[e]+ku]
	if g.toff[e] < 0 {
		return potts(out, a, g.pw[e])
	}
	kv := len(a)
	t := g.tables[g.toff[e] : g.toff[e]+ku*kv]
	for i := range out {
		row := t[i*kv : i*kv+kv]
		best := negInf
		for j, tv := range row {
			best = max(best, a[j]+tv)
		}
		out[i] = best
	}
	return normalise(out)
}

// potts sets out to the normalised message max_i a[i] + w[i == j] over j
// in O(len(a)) and returns its maximum (-Inf, out all -Inf, when a is). With
// b1 = a[i1] the top entry of a: for w >= 0 the message is
// max(b1, a[j] + w), of maximum b1 + w; for w < 0 it is b1 except at i1,
// where it is max(b2, b1 + w) with b2 the best entry besides i1.
func potts(out, a []float64, w float64) float64 {
	b1, i1 := negInf, -1
	for i, v := range a {
		if v > b1 {
			b1, i1 = v, i
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
		if v > b2 && j != i1 {
			b2 = v
		}
		out[j] = 0
	}
	o := b1 + w
	if b2 > o {
		o = b2
	}
	out[i1] = o - b1
	return b1
}

// normalise subtracts the maximum of m from it and returns the maximum;
// m is left as is when it is -Inf everywhere (the model is infeasible).
func normalise(m []float64) float64 {
	c := negInf
	for _, v := range m {
		if v > c {
			c = v
		}
	}
	if c == negInf {
		return c
	}
	for i := range m {
		m[i] -= c
	}
	return c
}
