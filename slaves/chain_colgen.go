package slaves

import "math"

// Exact chain MAP by column generation: Belanger, Passos, Riedel, McCallum,
// "Speeding up MAP with Column Generation and Block Regularization", ICML
// 2012 Inferning workshop (/work/shared/papers/column-generation-chain-map.txt).
//
// Notation (theta_k = emissions + w, tau_k the transition tables, D_k the
// restricted domain of position k). The restricted problem maximises over
// the y with y_k in D_k. Its max-product messages (eqs. 8-9) are computed for
// EVERY state, as the paper prescribes ("we set alpha_i(x_i) as defined in
// equation 8, even for x_i not in D_i"), each maximising over the restricted
// domain of the neighbour only:
//
//	a_0(x) = 0,      a_{k+1}(x') = max_{x in D_k}     a_k(x) + theta_k(x) + tau_k(x, x'),
//	b_{n-1}(x) = 0,  b_k(x)      = max_{x' in D_{k+1}} tau_k(x, x') + theta_{k+1}(x') + b_{k+1}(x').
//
// The restricted optimum is V = max_{x in D_k} a_k(x) + theta_k(x) + b_k(x)
// (any k). The bidirectional reduced cost of a pair of states on edge k
// (eq. 11) splits as in Alg. 2:
//
//	2R_k(x, x') = N_k(x) + N'_k(x') + 2 tau_k(x, x'),
//	N_k(x)   = theta_k(x) + a_k(x) - b_k(x),
//	N'_k(x') = theta_{k+1}(x') + b_{k+1}(x') - a_{k+1}(x').
//
// Optimality certificate. For ANY finite arrays a, b with a_0 = 0 and
// b_{n-1} = 0 and any y, the sum telescopes (the average of the two
// Lagrangians rooted at either end, Sect. 4.1):
//
//	2 phi_w(y) = sum_k 2R_k(y_k, y_{k+1}) + [theta_0 + b_0](y_0) + [a_{n-1} + theta_{n-1}](y_{n-1}).
//
// So if no pair has 2R_k > 0 and no state x has theta_0(x) + b_0(x) > V or
// a_{n-1}(x) + theta_{n-1}(x) > V (the normalisation terms of eq. 5 at both
// ends; with the restricted messages these are implied by the pair checks
// when n >= 2, but not with the repaired ones below), every y scores at most
// V: the restricted solution is the exact MAP.
// With the messages above a pair in D_k x D_{k+1} never has 2R_k > 0 (both
// halves of eq. 11 are <= 0 by the max in the recursions) and a state of D_0
// or D_{n-1} never beats V, so only pairs with a state outside the domains
// need checking, and each violation found adds a new state: the loop (Alg. 1)
// terminates. The search for violating pairs (Alg. 2) prunes with the row and
// column maxima of each table (per table, the tighter variant the paper
// mentions for position-dependent transitions): a pair with 2R_k > 0 has
// N'_k(x') + max_x N_k(x) + 2 max_x tau_k(x, x') > 0, which gives the column
// candidates C'; with U' = max_{C'} N'_k, the row candidates C satisfy
// N_k(x) + U' + 2 max_x' tau_k(x, x') > 0; only C x C' is searched.
//
// Hard constraints. The telescoping needs finite a and b, and plain -Inf
// arithmetic breaks it (a state unreachable in the restricted lattice has
// a = -Inf, and -Inf - (-Inf) hides violations; TestChainColGenInfTrap is
// such a case). Instead every -Inf entry is read as -M for a symbolic M
// larger than any finite quantity: a score is a pair (o, v) meaning v - o M,
// added componentwise and compared lexicographically (larger o is smaller).
// For every large enough real M this is an ordinary finite chain problem, so
// the certificate holds verbatim. Applied to feasible configurations only
// (order 0: every tau and theta on them finite), the identity involves only
// pairs with a finite tau_k(x, x') and finite theta at both ends, so only
// those are priced (and only such end states); when the restricted optimum
// still has order > 0 after certification, no feasible configuration exists
// and MAP returns -Inf. Chains without -Inf (and finite w) run the same
// algorithm on plain floats. The paper does not treat hard constraints; the
// symbolic calls add three things of ours, none of which touches the
// certificate:
//
//   - Repaired messages. The certificate holds for any a, b, so the messages
//     of states OUTSIDE the domains are free (those of states inside must be
//     the restricted ones, which makes the D_k x D_{k+1} pairs safe and V the
//     restricted optimum). A state that D_k cannot reach (a of order > 0)
//     would give every pair into it a reduced cost of order -1, i.e. +M:
//     with BIO-like constraints (I-t only after B-t or I-t) that floods the
//     domains. Such a state instead takes the max over D_k, the cgRepairK
//     best other states of position k, and its column's finite support when
//     that is short (likewise for b with rows). When a state joins D_p, a_p
//     and b_p are recomputed so that it carries restricted messages again.
//   - Sparse lines priced exactly. A column (row) with -Inf entries and at
//     most chainSupportMax finite ones is priced over its finite support
//     instead of through Alg. 2's bound, whose max over all rows would be
//     meaningless for it.
//   - A greedy initial path (cgGreedy), so the first restricted lattice is
//     usually feasible.
//
// Cost. A round costs O(sum_k |D_k| L) for the messages plus O(sum_k L) for
// the bounds of Alg. 2 plus the pairs searched; Viterbi costs O(sum_k L^2).
// Rounds recompute forward messages only downstream of the first changed
// domain and backward messages upstream of the last. Work is counted in
// steps of Viterbi's inner loop (weights below; symbolic steps count
// cgWSym times more); when it reaches the budget (SetColGenBudget, a
// multiple of one Viterbi pass; checked before each round, after each
// symbolic message step and before each pair search) the call finishes with
// plain Viterbi, and with a finite budget it also does so as soon as one
// edge's candidate pairs would cost more than Viterbi's step over that edge.
// So adversarial inputs (strong transitions, flat emissions) cost at most
// about (1 + budget) Viterbi passes, and usually little more than one.

// Work weights of column generation, in units of one step of Viterbi's
// inner loop (measured on amd64): a forward message step is the same loop,
// a backward one gathers from the table rows, a reduced-cost bound of
// Alg. 2 and a pair evaluation cost several steps each.
const (
	cgWFwd  = 1.0
	cgWBwd  = 1.5
	cgWScan = 3.0 // per state of an edge's two positions
	cgWPair = 3.0
	// cgWSym multiplies all work in the symbolic arithmetic (hard
	// constraints), whose steps carry orders.
	cgWSym = 2.5
)

// cgNone is an order larger than any reachable one: "no candidate yet".
const cgNone = math.MaxInt32 / 4

// symGT reports whether v1 - o1 M > v2 - o2 M for a symbolic infinite M.
func symGT(o1 int32, v1 float64, o2 int32, v2 float64) bool {
	return o1 < o2 || (o1 == o2 && v1 > v2)
}

// symPos reports whether v - o M > 0.
func symPos(o int32, v float64) bool {
	return o < 0 || (o == 0 && v > 0)
}

// colgen is Chain.MAP by column generation (Alg. 1): restricted
// max-product over the domains D_k, then pricing, which grows the domains,
// until pricing adds nothing (the restricted optimum is certified) or the
// work passes the budget (Viterbi then, cgFallback).
func (c *Chain) colgen(w []float64, y []int) float64 {
	c.stats.Calls++
	n := c.n
	sym, ok := c.cgInit(w)
	if !ok {
		// Every state of some position is forbidden.
		clear(y)
		return math.Inf(-1)
	}
	c.cgStart(sym)
	lo, hi := 0, n-1 // forward steps lo..n-2, backward steps hi-1..0
	for {
		if !c.cgRestricted(lo, hi, sym) {
			return c.cgFallback(w, y)
		}
		vo, vv, vx := c.cgOptimum()
		newLo, newHi, ok := c.cgPrice(sym, vo, vv)
		if !ok {
			return c.cgFallback(w, y)
		}
		if newHi < 0 {
			// Certified (see the notes above): decode the restricted
			// solution.
			return c.cgDecode(y, vo, vv, vx)
		}
		lo, hi = newLo, newHi
		if sym {
			// A state that joined D_p may hold a repaired message:
			// recompute a_p and b_p, which restrict it again.
			lo, hi = max(lo-1, 0), min(hi+1, n-1)
		}
	}
}

// cgInit forgets the previous call's domains, sets theta = emissions + w
// (th, with order 1 in thO where -Inf) and the initial domains of Sect.
// 4.1: D_k = {argmax theta_k}. sym reports a -Inf score (symbolic
// arithmetic needed); ok is false when every state of a position is
// forbidden.
func (c *Chain) cgInit(w []float64) (sym, ok bool) {
	n, off, cards := c.n, c.off, c.cards
	th, thO, inD := c.th, c.thO, c.inD
	for k := 0; k < n; k++ {
		o := off[k]
		for _, x := range c.dom[o : o+int(c.dsz[k])] {
			inD[o+int(x)] = false
		}
		c.dsz[k] = 0
	}
	sym = c.anyInf
	for k := 0; k < n; k++ {
		o := off[k]
		e, wk := c.emis[o:o+cards[k]], w[o:o+cards[k]]
		tk, tkO := th[o:o+cards[k]], thO[o:o+cards[k]]
		bx, best := -1, 0.0
		for x, ex := range e {
			v := ex + wk[x]
			if v < -math.MaxFloat64 {
				tk[x], tkO[x] = 0, 1
				sym = true
				continue
			}
			tk[x], tkO[x] = v, 0
			if bx < 0 || v > best {
				bx, best = x, v
			}
		}
		if bx < 0 {
			return sym, false
		}
		c.dom[o] = int32(bx)
		c.dsz[k] = 1
		inD[o+bx] = true
	}
	return sym, true
}

// cgStart prepares the recursions (their fixed ends a_0 = 0, b_{n-1} = 0,
// the orders cleared when this call is not symbolic) and the work budget
// (budget Viterbi costs, scaled down for symbolic work), then runs the
// greedy start when configured (or, by default, when symbolic).
func (c *Chain) cgStart(sym bool) {
	if sym {
		c.ordDirty = true
	} else if c.ordDirty {
		clear(c.ao)
		clear(c.bo)
		c.ordDirty = false
	}
	clear(c.av[:c.cards[0]])
	clear(c.bv[c.off[c.n-1]:])
	c.limit = c.budget * c.vitCost
	if c.vitCost == 0 {
		c.limit = math.Inf(1)
	}
	c.wscale = 1
	if sym {
		// Symbolic work counts at its cost: scale the budget down.
		c.wscale = cgWSym
		c.limit /= cgWSym
	}
	c.work = 0
	if c.greedy == 1 || (c.greedy == 0 && sym) {
		c.cgGreedy()
	}
}

// cgRestricted runs the restricted max-product (eqs. 8-9 over the
// domains, all states): forward steps lo..n-2, backward steps hi-1..0. It
// returns false, having done nothing or part of it, when the work would
// pass the budget.
func (c *Chain) cgRestricted(lo, hi int, sym bool) bool {
	n, cards := c.n, c.cards
	est := 0.0
	for k := lo; k+1 < n; k++ {
		est += cgWFwd * float64(int(c.dsz[k])*cards[k+1])
	}
	for k := hi - 1; k >= 0; k-- {
		est += cgWBwd * float64(int(c.dsz[k+1])*cards[k])
	}
	if c.work+est > c.limit {
		return false
	}
	c.work += est
	c.stats.Rounds++
	for k := lo; k+1 < n; k++ {
		if sym {
			c.cgForwardSym(k)
			if c.work > c.limit { // repairs of symbolic messages
				return false
			}
		} else {
			c.cgForward(k)
		}
	}
	for k := hi - 1; k >= 0; k-- {
		if sym {
			c.cgBackwardSym(k)
			if c.work > c.limit {
				return false
			}
		} else {
			c.cgBackward(k)
		}
	}
	return true
}

// cgOptimum returns the restricted optimum V = vv - vo M at the last
// position and its state vx.
func (c *Chain) cgOptimum() (vo int32, vv float64, vx int) {
	last := c.off[c.n-1]
	vo, vv, vx = int32(cgNone), 0.0, -1
	for _, x32 := range c.dom[last : last+int(c.dsz[c.n-1])] {
		x := last + int(x32)
		if o, v := c.ao[x]+c.thO[x], c.av[x]+c.th[x]; vx < 0 || symGT(o, v, vo, vv) {
			vo, vv, vx = o, v, int(x32)
		}
	}
	return vo, vv, vx
}

// cgPrice is Alg. 1's pricing loop: the normalisation terms at both ends,
// then the best pair of each edge by Alg. 2; states that price positive
// join the domains. It returns the range of positions whose domains grew
// (newHi < 0: none, the restricted optimum is certified), and ok false
// when the work passes the budget or a scan gives up.
func (c *Chain) cgPrice(sym bool, vo int32, vv float64) (newLo, newHi int, ok bool) {
	n, off, cards, inD := c.n, c.off, c.cards, c.inD
	newLo, newHi = n, -1
	add := func(k, x int) {
		if !inD[off[k]+x] {
			inD[off[k]+x] = true
			c.dom[off[k]+int(c.dsz[k])] = int32(x)
			c.dsz[k]++
			newLo, newHi = min(newLo, k), max(newHi, k)
		}
	}
	if x := c.cgEnd(0, c.bo, c.bv, vo, vv); x >= 0 {
		add(0, x)
	}
	if x := c.cgEnd(n-1, c.ao, c.av, vo, vv); x >= 0 {
		add(n-1, x)
	}
	c.work += cgWScan * float64(cards[0]+cards[n-1])
	for k := 0; k+1 < n; k++ {
		var x, xp int
		var ok bool
		if sym {
			x, xp, ok = c.cgScanSym(k)
		} else {
			x, xp, ok = c.cgScan(k)
		}
		if !ok || c.work > c.limit {
			return newLo, newHi, false
		}
		if x >= 0 {
			add(k, x)
			add(k+1, xp)
		}
	}
	return newLo, newHi, true
}

// cgDecode counts the call's statistics and decodes the certified
// restricted solution into y by the backpointers from vx; it returns its
// value vv, or -Inf when its order vo is not 0 (it uses a forbidden score).
func (c *Chain) cgDecode(y []int, vo int32, vv float64, vx int) float64 {
	n := c.n
	for k := 0; k < n; k++ {
		c.stats.States += int64(c.dsz[k])
	}
	c.stats.Work += c.work
	if vo != 0 {
		clear(y)
		return math.Inf(-1)
	}
	y[n-1] = vx
	for k := n - 1; k > 0; k-- {
		y[k-1] = int(c.arg[c.off[k]+y[k]])
	}
	return vv
}

// cgGreedy adds to the initial domains the greedy left-to-right path: y_0 =
// argmax theta_0, y_{k+1} = argmax theta_{k+1}(x') + tau_k(y_k, x') in the
// symbolic arithmetic, at the cost of one table row per position (Sect.
// 4.1: "any initialization strategy is equally valid"). It runs in symbolic
// calls only (see Chain.greedy): with hard constraints the argmaxes of theta
// alone often form an infeasible restricted lattice, whose messages carry
// orders of -M that loosen every bound of Alg. 2, while the greedy path is
// feasible unless it runs into a dead end. On finite chains it saves rounds
// but no time (measured on the benchmarks).
func (c *Chain) cgGreedy() {
	off, cards := c.off, c.cards
	prev := int(c.dom[0])
	for k := 0; k+1 < c.n; k++ {
		o1, L1 := off[k+1], cards[k+1]
		row := c.trans[k][prev*L1 : prev*L1+L1 : prev*L1+L1]
		bo, bv, bx := int32(cgNone), 0.0, 0
		for j, t := range row {
			o, v := c.thO[o1+j], c.th[o1+j]
			if t < -math.MaxFloat64 {
				o++
			} else {
				v += t
			}
			if o < bo || (o == bo && v > bv) {
				bo, bv, bx = o, v, j
			}
		}
		if !c.inD[o1+bx] {
			c.inD[o1+bx] = true
			c.dom[o1+int(c.dsz[k+1])] = int32(bx)
			c.dsz[k+1]++
		}
		prev = bx
	}
	c.work += cgWScan * c.vitCost / float64(max(c.maxL, 1))
}

// cgFirstRound returns the work of the cheapest possible round (singleton
// domains: messages, bounds of Alg. 2, normalisation terms), in budget
// units.
func (c *Chain) cgFirstRound() float64 {
	wk := 0.0
	for k := 0; k+1 < c.n; k++ {
		L0, L1 := float64(c.cards[k]), float64(c.cards[k+1])
		wk += cgWFwd*L1 + cgWBwd*L0 + cgWScan*(L0+L1)
	}
	if c.n > 0 {
		wk += cgWScan * float64(c.cards[0]+c.cards[c.n-1])
	}
	if c.anyInf {
		wk *= cgWSym
	}
	return wk
}

// cgFallback finishes a column-generation call with plain Viterbi.
func (c *Chain) cgFallback(w []float64, y []int) float64 {
	c.stats.Fallbacks++
	c.stats.Work += c.work
	return c.viterbi(w, y)
}

// cgEnd prices the normalisation term at an end of the chain (position k = 0
// with the backward messages, or n-1 with the forward ones): it returns the
// state outside D_k maximising theta_k(x) + m_k(x) if that exceeds the
// restricted optimum (vo, vv), else -1.
func (c *Chain) cgEnd(k int, mo []int32, mv []float64, vo int32, vv float64) int {
	o := c.off[k]
	bx := -1
	for x := 0; x < c.cards[k]; x++ {
		i := o + x
		if c.inD[i] || c.thO[i] != 0 {
			continue
		}
		if to, tv := mo[i], mv[i]+c.th[i]; symGT(to, tv, vo, vv) {
			vo, vv, bx = to, tv, x
		}
	}
	return bx
}

// cgPairsOK charges the search of np candidate pairs on an L0 x L1 edge to
// the work budget, reporting false when the call should fall back to
// Viterbi: when the budget is spent, or (with a finite budget) when the
// search alone would cost more than Viterbi's step over the edge, which means
// the bounds of Alg. 2 prune too little for column generation to pay.
func (c *Chain) cgPairsOK(L0, L1, np int) bool {
	cost := cgWPair * float64(np)
	c.work += cost
	return c.work <= c.limit && !(cost*c.wscale > float64(L0*L1) && c.limit < math.MaxFloat64)
}

// cgForward computes a_{k+1}(x') for every state x' from a_k on D_k (eq. 8
// restricted), with the argmaxes for decoding. Finite scores only.
func (c *Chain) cgForward(k int) {
	o0, o1 := c.off[k], c.off[k+1]
	L1 := c.cards[k+1]
	dst := c.av[o1 : o1+L1 : o1+L1]
	dArg := c.arg[o1 : o1+L1 : o1+L1]
	tab := c.trans[k]
	for i, x32 := range c.dom[o0 : o0+int(c.dsz[k])] {
		x := int(x32)
		base := c.av[o0+x] + c.th[o0+x]
		row := tab[x*L1 : x*L1+L1 : x*L1+L1]
		if i == 0 {
			for j, t := range row {
				dst[j] = base + t
				dArg[j] = x32
			}
			continue
		}
		for j, t := range row {
			if v := base + t; v > dst[j] {
				dst[j] = v
				dArg[j] = x32
			}
		}
	}
}

// cgForwardSym is cgForward in the symbolic arithmetic (-Inf = -M).
func (c *Chain) cgForwardSym(k int) {
	o0, o1 := c.off[k], c.off[k+1]
	L1 := c.cards[k+1]
	dst := c.av[o1 : o1+L1 : o1+L1]
	dstO := c.ao[o1 : o1+L1 : o1+L1]
	dArg := c.arg[o1 : o1+L1 : o1+L1]
	for j := range dstO {
		dstO[j] = cgNone
	}
	tab := c.trans[k]
	for _, x32 := range c.dom[o0 : o0+int(c.dsz[k])] {
		x := int(x32)
		bo, bv := c.ao[o0+x]+c.thO[o0+x], c.av[o0+x]+c.th[o0+x]
		row := tab[x*L1 : x*L1+L1 : x*L1+L1]
		for j, t := range row {
			o, v := bo, bv+t
			if t < -math.MaxFloat64 {
				o, v = bo+1, bv
			}
			if o < dstO[j] || (o == dstO[j] && v > dst[j]) {
				dst[j], dstO[j], dArg[j] = v, o, x32
			}
		}
	}
	c.cgRepairForward(k)
}

// cgRepairK is the number of best states outside a domain that repaired
// messages maximise over (see "Hard constraints").
const cgRepairK = 4

// cgTop collects the (at most cgRepairK) states x of position k outside D_k
// with the largest m_k(x) + theta_k(x), best first, into c.topX, c.topO,
// c.topV, and returns how many.
func (c *Chain) cgTop(k int, mo []int32, mv []float64) int {
	o := c.off[k]
	m := 0
	for x := 0; x < c.cards[k]; x++ {
		i := o + x
		if c.inD[i] {
			continue
		}
		ko, kv := mo[i]+c.thO[i], mv[i]+c.th[i]
		if m == cgRepairK && !symGT(ko, kv, c.topO[m-1], c.topV[m-1]) {
			continue
		}
		if m < cgRepairK {
			m++
		}
		j := m - 1
		for ; j > 0 && symGT(ko, kv, c.topO[j-1], c.topV[j-1]); j-- {
			c.topX[j], c.topO[j], c.topV[j] = c.topX[j-1], c.topO[j-1], c.topV[j-1]
		}
		c.topX[j], c.topO[j], c.topV[j] = int32(x), ko, kv
	}
	c.work += cgWScan * float64(c.cards[k])
	return m
}

// cgRepairForward repairs the forward messages a_{k+1}(x') of the states
// outside D_{k+1} that D_k cannot reach (order > 0; see "Hard constraints"):
// they take the best value over D_k, the cgRepairK best other states of
// position k and, if the column is sparse, its finite support.
func (c *Chain) cgRepairForward(k int) {
	c.cgRepair(k+1, k, c.av, c.ao, c.trans[k], 1, c.cards[k+1], c.colSup[k])
}

// cgRepairBackward is cgRepairForward for the backward messages b_k(x),
// over D_{k+1}, the best other states of position k+1 and sparse rows.
func (c *Chain) cgRepairBackward(k int) {
	c.cgRepair(k, k+1, c.bv, c.bo, c.trans[k], c.cards[k+1], 1, c.rowSup[k])
}

// cgRepair is the repair of cgRepairForward and cgRepairBackward: it
// repairs the messages (values mv, orders mo) of position k's states from
// those of the adjacent position src, where the transition between state j
// of position k and state x of position src scores tab[j*sj + x*sx], and
// sp (nil if dense) holds the finite support of each of k's states' line
// of tab.
func (c *Chain) cgRepair(k, src int, mv []float64, mo []int32, tab []float64, sj, sx int, sp *chainSparse) {
	d, L := c.off[k], c.cards[k]
	dst := mv[d : d+L : d+L]
	dstO := mo[d : d+L : d+L]
	inD := c.inD[d : d+L : d+L]
	need := false
	for j, o := range dstO {
		if o > 0 && !inD[j] {
			need = true
			break
		}
	}
	if !need {
		return
	}
	m := c.cgTop(src, mo, mv)
	os := c.off[src]
	for j := range dst {
		if dstO[j] == 0 || inD[j] {
			continue
		}
		tj := j * sj
		bo, bv := dstO[j], dst[j]
		for i := 0; i < m; i++ {
			o, v := c.topO[i], c.topV[i]
			if t := tab[tj+int(c.topX[i])*sx]; t < -math.MaxFloat64 {
				o++
			} else {
				v += t
			}
			if o < bo || (o == bo && v > bv) {
				bo, bv = o, v
			}
		}
		c.work += cgWBwd * float64(m)
		if sp != nil && sp.ok[j] {
			sup := sp.idx[sp.start[j]:sp.start[j+1]]
			c.work += cgWBwd * float64(len(sup))
			for _, x32 := range sup {
				x := os + int(x32)
				o, v := mo[x]+c.thO[x], mv[x]+c.th[x]+tab[tj+int(x32)*sx]
				if o < bo || (o == bo && v > bv) {
					bo, bv = o, v
				}
			}
		}
		dst[j], dstO[j] = bv, bo
	}
}

// cgBackward computes b_k(x) for every state x from b_{k+1} on D_{k+1} (eq. 9
// restricted). Finite scores only.
func (c *Chain) cgBackward(k int) {
	o0, o1 := c.off[k], c.off[k+1]
	L0, L1 := c.cards[k], c.cards[k+1]
	d := c.dom[o1 : o1+int(c.dsz[k+1])]
	g := c.gv[:len(d)]
	for j, xp := range d {
		g[j] = c.th[o1+int(xp)] + c.bv[o1+int(xp)]
	}
	dst := c.bv[o0 : o0+L0 : o0+L0]
	tab := c.trans[k]
	if len(d) == 1 {
		xp, g0 := int(d[0]), g[0]
		for x := range dst {
			dst[x] = tab[x*L1+xp] + g0
		}
		return
	}
	for x := range dst {
		row := tab[x*L1 : x*L1+L1 : x*L1+L1]
		best := row[d[0]] + g[0]
		for j := 1; j < len(d); j++ {
			if v := row[d[j]] + g[j]; v > best {
				best = v
			}
		}
		dst[x] = best
	}
}

// cgBackwardSym is cgBackward in the symbolic arithmetic (-Inf = -M).
func (c *Chain) cgBackwardSym(k int) {
	o0, o1 := c.off[k], c.off[k+1]
	L0, L1 := c.cards[k], c.cards[k+1]
	d := c.dom[o1 : o1+int(c.dsz[k+1])]
	g, gO := c.gv[:len(d)], c.gO[:len(d)]
	for j, xp := range d {
		i := o1 + int(xp)
		g[j], gO[j] = c.th[i]+c.bv[i], c.thO[i]+c.bo[i]
	}
	dst := c.bv[o0 : o0+L0 : o0+L0]
	dstO := c.bo[o0 : o0+L0 : o0+L0]
	tab := c.trans[k]
	for x := range dst {
		row := tab[x*L1 : x*L1+L1 : x*L1+L1]
		bo, bv := int32(cgNone), 0.0
		for j, xp := range d {
			t := row[xp]
			o, v := gO[j], g[j]+t
			if t < -math.MaxFloat64 {
				o, v = gO[j]+1, g[j]
			}
			if o < bo || (o == bo && v > bv) {
				bo, bv = o, v
			}
		}
		dst[x], dstO[x] = bv, bo
	}
	c.cgRepairBackward(k)
}

// cgScan searches edge k for the pair outside D_k x D_{k+1} with the largest
// positive reduced cost 2R_k (eq. 11), pruned as in Alg. 2, returning
// (-1, -1) when there is none, or ok = false when searching the candidate
// pairs would exceed the work budget. Finite scores only.
func (c *Chain) cgScan(k int) (bx, bxp int, ok bool) {
	bx, bxp, ok = -1, -1, true
	o0, o1 := c.off[k], c.off[k+1]
	L0, L1 := c.cards[k], c.cards[k+1]
	// N_k and U = max N_k.
	nl := c.nl[:L0:L0]
	th0, a0, b0 := c.th[o0:o0+len(nl)], c.av[o0:o0+len(nl)], c.bv[o0:o0+len(nl)]
	U := math.Inf(-1)
	for x := range nl {
		v := th0[x] + a0[x] - b0[x]
		nl[x] = v
		if v > U {
			U = v
		}
	}
	// C' = {x' : N'_k(x') + U + 2 max_x tau_k(x, x') > 0} and U' = max
	// over C' of N'_k.
	nr := c.nr[:L1:L1]
	th1, a1, b1 := c.th[o1:o1+len(nr)], c.av[o1:o1+len(nr)], c.bv[o1:o1+len(nr)]
	cm := c.colMax[o1 : o1+len(nr)]
	cr := c.cr[:0]
	Up := math.Inf(-1)
	for xp := range nr {
		v := th1[xp] + b1[xp] - a1[xp]
		nr[xp] = v
		if v+U+2*cm[xp] > 0 {
			cr = append(cr, int32(xp))
			if v > Up {
				Up = v
			}
		}
	}
	c.work += cgWScan * float64(L0+L1)
	if len(cr) == 0 {
		return
	}
	// C, then the pairs C x C' (skipping D_k x D_{k+1}), best first.
	rm := c.rowMax[o0 : o0+len(nl)]
	cl := c.cl[:0]
	for x, v := range nl {
		if v+Up+2*rm[x] > 0 {
			cl = append(cl, int32(x))
		}
	}
	if !c.cgPairsOK(L0, L1, len(cl)*len(cr)) {
		return -1, -1, false
	}
	best := 0.0
	tab := c.trans[k]
	inD := c.inD
	pairs := 0
	for _, x32 := range cl {
		x := int(x32)
		nx := nl[x]
		if nx+Up+2*rm[x] <= best {
			continue
		}
		row := tab[x*L1 : x*L1+L1 : x*L1+L1]
		xin := inD[o0+x]
		pairs += len(cr)
		for _, xp32 := range cr {
			xp := int(xp32)
			if xin && inD[o1+xp] {
				continue
			}
			if r := nx + nr[xp] + 2*row[xp]; r > best {
				best, bx, bxp = r, x, xp
			}
		}
	}
	c.stats.Pairs += int64(pairs)
	return
}

// cgScanSym is cgScan in the symbolic arithmetic (-Inf = -M).
func (c *Chain) cgScanSym(k int) (bx, bxp int, ok bool) {
	bx, bxp, ok = -1, -1, true
	o0, o1 := c.off[k], c.off[k+1]
	L0, L1 := c.cards[k], c.cards[k+1]
	th, a, b := c.th, c.av, c.bv
	thO, ao, bo := c.thO, c.ao, c.bo
	tab := c.trans[k]
	inD := c.inD
	bo2, bv2 := int32(0), 0.0 // best 2R so far; must be > 0
	pairs := 0
	// Only pairs that a feasible configuration can use need pricing (see
	// "Hard constraints"): states with theta = -Inf and -Inf entries are
	// skipped.
	nl, nlO := c.nl[:L0:L0], c.nlO[:L0:L0]
	Uo, Uv := int32(cgNone), 0.0
	for x := range nl {
		i := o0 + x
		if thO[i] != 0 {
			nlO[x] = cgNone
			continue
		}
		o, v := ao[i]-bo[i], th[i]+a[i]-b[i]
		nl[x], nlO[x] = v, o
		if symGT(o, v, Uo, Uv) {
			Uo, Uv = o, v
		}
	}
	if Uo == cgNone {
		c.work += cgWScan * float64(L0)
		return
	}
	// A sparse column is priced exactly over its finite support; other
	// columns take Alg. 2's bound with their finite maxima.
	nr, nrO := c.nr[:L1:L1], c.nrO[:L1:L1]
	cm, cmO := c.colMax[o1:o1+L1:o1+L1], c.colMaxO[o1:o1+L1:o1+L1]
	csp, rsp := c.colSup[k], c.rowSup[k]
	cr := c.cr[:0]
	Upo, Upv := int32(cgNone), 0.0
	for xp := range nr {
		i := o1 + xp
		if thO[i] != 0 || cmO[xp] != 0 {
			continue
		}
		o, v := bo[i]-ao[i], th[i]+b[i]-a[i]
		nr[xp], nrO[xp] = v, o
		if csp != nil && csp.ok[xp] {
			xpIn := inD[i]
			sup := csp.idx[csp.start[xp]:csp.start[xp+1]]
			pairs += len(sup)
			for _, x32 := range sup {
				x := int(x32)
				if nlO[x] == cgNone || (xpIn && inD[o0+x]) {
					continue
				}
				if ro, rv := nlO[x]+o, nl[x]+v+2*tab[x*L1+xp]; symGT(ro, rv, bo2, bv2) {
					bo2, bv2, bx, bxp = ro, rv, x, xp
				}
			}
			continue
		}
		if symPos(o+Uo, v+Uv+2*cm[xp]) {
			cr = append(cr, int32(xp))
			if symGT(o, v, Upo, Upv) {
				Upo, Upv = o, v
			}
		}
	}
	c.work += cgWScan * float64(L0+L1)
	if len(cr) == 0 {
		c.work += cgWPair * float64(pairs)
		c.stats.Pairs += int64(pairs)
		return
	}
	// C: rows that can still pair with C'. A sparse row is priced exactly
	// over its finite support within C' (marked in c.mark).
	rm, rmO := c.rowMax[o0:o0+L0:o0+L0], c.rowMaxO[o0:o0+L0:o0+L0]
	mark := c.mark[:L1:L1]
	if rsp != nil {
		for _, xp := range cr {
			mark[xp] = true
		}
	}
	cl := c.cl[:0]
	for x, v := range nl {
		if nlO[x] == cgNone || rmO[x] != 0 {
			continue
		}
		if rsp != nil && rsp.ok[x] {
			xIn := inD[o0+x]
			row := tab[x*L1 : x*L1+L1 : x*L1+L1]
			sup := rsp.idx[rsp.start[x]:rsp.start[x+1]]
			pairs += len(sup)
			for _, xp32 := range sup {
				xp := int(xp32)
				if !mark[xp] || (xIn && inD[o1+xp]) {
					continue
				}
				if ro, rv := nlO[x]+nrO[xp], v+nr[xp]+2*row[xp]; symGT(ro, rv, bo2, bv2) {
					bo2, bv2, bx, bxp = ro, rv, x, xp
				}
			}
			continue
		}
		if symPos(nlO[x]+Upo, v+Upv+2*rm[x]) {
			cl = append(cl, int32(x))
		}
	}
	if rsp != nil {
		for _, xp := range cr {
			mark[xp] = false
		}
	}
	c.work += cgWPair * float64(pairs)
	c.stats.Pairs += int64(pairs)
	if !c.cgPairsOK(L0, L1, len(cl)*len(cr)) {
		return -1, -1, false
	}
	pairs = 0
	for _, x32 := range cl {
		x := int(x32)
		nxo, nxv := nlO[x], nl[x]
		if !symGT(nxo+Upo, nxv+Upv+2*rm[x], bo2, bv2) {
			continue
		}
		row := tab[x*L1 : x*L1+L1 : x*L1+L1]
		xin := inD[o0+x]
		pairs += len(cr)
		for _, xp32 := range cr {
			xp := int(xp32)
			t := row[xp]
			if t < -math.MaxFloat64 || (xin && inD[o1+xp]) {
				continue
			}
			if o, v := nxo+nrO[xp], nxv+nr[xp]+2*t; symGT(o, v, bo2, bv2) {
				bo2, bv2, bx, bxp = o, v, x, xp
			}
		}
	}
	c.stats.Pairs += int64(pairs)
	return
}
