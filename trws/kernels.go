package trws

import "math"

//go:generate go run genkernels.go

// Unrolled node steps (kernels_gen.go, written by genkernels.go).
//
// Most of an iteration on a grid with general tables is spent in the node
// steps of the two passes: gather hat_s, label, send a message along each
// edge. In the general code every step is a loop over the node's states
// calling small functions on slices (bounds checks, loop control, vectors
// in scratch memory), and the max-plus product, the normalisation and the
// preparation of gamma hat - M are separate passes over the message. For a
// node of K states (K in kernelSizes) whose edges are all dense K x K
// tables, kernels_gen.go has the step unrolled: hat and the products in
// registers, one bounds check per message and table (a conversion to an
// array pointer), the message read once and written once (a = gamma hat - M,
// the product, its maximum c and M - c in one go), the table read where it
// lies (tab[e], in the model; graph.go).
//
// The products are taken on negated values, with min: Go's builtin max on
// floats compiles (amd64) to a negation of both operands, two MINSD, an OR
// and a negation back, min to the same without the three negations, and
// the products are nearly all maxima. With na = M - gamma hat = -a (+Inf
// for a dead state), na_i - theta(i, j) = -(a_i + theta(i, j)) exactly
// (IEEE rounding is symmetric under negation), so o' = min_i (na_i -
// theta) = -o, c' = min_j o'_j = -c, M_j = c' - o'_j = o_j - c, and the
// bound minus c' is the bound plus c, all bit for bit.
//
// The unrolled steps thus make exactly the floating-point operations of
// the general code, up to exact negations, in the same order (the sums
// hat_s = theta_s + messages, the labelling's sums and score, gamma hat -
// M, the sums a + theta and o - c, the running sums of the bound); only
// maxima are taken in another order, and a maximum is exact whatever the
// order. The iterates, the labelling and every pass's bound are therefore
// identical, bit for bit, to the general code's (TestKernelsBitIdentical),
// and everything pass.go proves about the bound holds unchanged.
//
// For K = 4 and 8 the send step itself (a, the product, the normalisation)
// is an SSE2 function on amd64 (kernels_amd64.s, generated too: two
// states per instruction, MINPD where Go's min takes three instructions
// per state; SSE2 is in every amd64 processor, so no feature test), sendRef
// in Go elsewhere (kernels_other.go). It makes sendRef's operations, which
// are the general code's negated, so the iterates stay bit for bit the
// same (TestSendSIMD, TestKernelsBitIdentical); the only difference is the
// sign of a zero maximum (MINPD returns its second operand on equal
// operands), which no sum or comparison sees. On a 30x30 grid of 8-label
// dense tables (in cache) this took an iteration from about 190 to 118 ns
// per node.
//
// Nodes of K states whose edges are Potts (toff == -1) or dense K x K, one
// at least Potts, have unrolled steps too (forwardMixK, backwardMixK,
// kern[s] = kernMix+K): the edge's kind is tested per edge (a predictable
// branch on a grid of one kind). A Potts edge sends with pottsSendK, the
// general code's prepare and potts (pass.go) unrolled and negated like the
// dense steps, with the top state's index and the best entry besides it
// taken by conditional moves (fsel), not branches or stores; the message
// is O(K): max(a_j - b1, -w) for w >= 0, else b1 everywhere but at the top
// state (Felzenszwalb and Huttenlocher, IJCV 70(1), 2006, Sect. 3.1;
// internal/pairterm). The messages and bounds are the general code's bit
// for bit. In the labelling a Potts edge adds pw to the label of the
// earlier neighbour's state through a small array (lab[x_u] += pw, +0 to
// the others: a branch on x_u mispredicts), which can change only the sign
// of a zero label, and labels are only compared: the labelling and its
// score are the general code's too (TestKernelsBitIdentical). On the
// 300x300 4-label Potts grid of BenchmarkIteration (couplings of both
// signs, U[-1, 1]) this took an iteration from about 14.9 to 9.3 ms (7.1 ms
// with all couplings >= 0, where the branch on the sign never
// mispredicts), on the 100x100 8-label one from 2.2 to 1.65 ms.
//
// Nodes with other state counts, mixed state counts, truncated edges, and
// every node of a TRW-S(LP-C) run (whose forward messages are also copied
// to fwd) take the general code.

var posInf = math.Inf(1)

// fsel returns x when c holds, else y, by a conditional move on their bits
// (a branch on c would mispredict: c depends on the data).
func fsel(c bool, x, y float64) float64 {
	xb, yb := math.Float64bits(x), math.Float64bits(y)
	if c {
		yb = xb
	}
	return math.Float64frombits(yb)
}

// kernelSizes are the state counts with an unrolled step.
var kernelSizes = [...]int{2, 3, 4, 8}

// kernMix is added to K in kern for the nodes whose edges are Potts or
// dense, at least one Potts (forwardMixK, backwardMixK).
const kernMix = 16

// setKernels sets prefetch (pass.go) and fills kern: kern[s] = K when
// node s has K states, K is in kernelSizes, and every edge at s is dense
// with K states at both ends; kernMix+K when every edge at s is dense or
// Potts with K states at both ends and one at least is Potts; 0 otherwise,
// and for every node when the forward messages are kept (TRW-S(LP-C)).
func (g *graph) setKernels() {
	if len(g.kern) != g.n {
		g.kern = make([]uint8, g.n)
	}
	clear(g.kern)
	g.prefetch = (len(g.data)+g.tabLen)*8 > prefetchMin
	if g.fwd != nil {
		return
	}
	// An edge at s has s at one end (eu for the edges out, ev for those
	// in): only the other end's state count is checked.
next:
	for s := range g.n {
		k := g.card[s]
		if k > 255 || !hasKernel(k) {
			continue
		}
		potts := false
		for e := g.outOff[s]; e < g.outOff[s+1]; e++ {
			t := g.toff[e]
			if t < -1 || g.card[g.ev[e]] != k {
				continue next
			}
			potts = potts || t == -1
		}
		for _, e := range g.inE[g.inOff[s]:g.inOff[s+1]] {
			t := g.toff[e]
			if t < -1 || g.card[g.eu[e]] != k {
				continue next
			}
			potts = potts || t == -1
		}
		if potts {
			k += kernMix
		}
		g.kern[s] = uint8(k)
	}
}

func hasKernel(k int) bool {
	for _, c := range kernelSizes {
		if c == k {
			return true
		}
	}
	return false
}

// forwardStep runs node s's step of a forward pass with its unrolled
// kernel (kern[s] != 0), adding to bound and score.
func (g *graph) forwardStep(s int, x []int, fuse bool, bound, score float64) (float64, float64) {
	switch g.kern[s] {
	case 2:
		return g.forward2(s, x, fuse, bound, score)
	case 3:
		return g.forward3(s, x, fuse, bound, score)
	case 4:
		return g.forward4(s, x, fuse, bound, score)
	case 8:
		return g.forward8(s, x, fuse, bound, score)
	case kernMix + 2:
		return g.forwardMix2(s, x, fuse, bound, score)
	case kernMix + 3:
		return g.forwardMix3(s, x, fuse, bound, score)
	case kernMix + 4:
		return g.forwardMix4(s, x, fuse, bound, score)
	default:
		return g.forwardMix8(s, x, fuse, bound, score)
	}
}

// backwardStep runs node s's step of a backward pass with its unrolled
// kernel (kern[s] != 0), adding to bound.
func (g *graph) backwardStep(s int, bound float64) float64 {
	switch g.kern[s] {
	case 2:
		return g.backward2(s, bound)
	case 3:
		return g.backward3(s, bound)
	case 4:
		return g.backward4(s, bound)
	case 8:
		return g.backward8(s, bound)
	case kernMix + 2:
		return g.backwardMix2(s, bound)
	case kernMix + 3:
		return g.backwardMix3(s, bound)
	case kernMix + 4:
		return g.backwardMix4(s, bound)
	default:
		return g.backwardMix8(s, bound)
	}
}

// sendRef is the send step of a node of K = len(h) states along a dense
// K x K edge with message m and table t: with na_i =
// M_i - gm h_i (+Inf for a dead state, h_i = -Inf), the new message is M_j
// = c' - o'_j with o'_j = min_i na_i - t[i][j] (cols, the message to the
// later end) or o'_j = min_i na_i - t[j][i] (rows, to the earlier end) and
// c' = min_j o'_j (M_j = -o'_j when c' = +Inf); it returns c'. These are
// the operations of the general code (prepare, maxPlusCols or maxPlusRows,
// shiftBy), negated; it is the reference for the SSE2 steps and their
// stand-in on other architectures (K <= 8).
func sendRef(m, t, h []float64, gm float64, cols bool) float64 {
	k := len(h)
	var na, o [8]float64
	for i := range k {
		na[i] = m[i] - gm*h[i]
		if h[i] == negInf {
			na[i] = posInf
		}
	}
	t = t[:k*k]
	for j := range k {
		o[j] = posInf
		for i := range k {
			if cols {
				o[j] = min(o[j], na[i]-t[i*k+j])
			} else {
				o[j] = min(o[j], na[i]-t[j*k+i])
			}
		}
	}
	c := posInf
	for j := range k {
		c = min(c, o[j])
	}
	for j := range k {
		if c != posInf {
			m[j] = c - o[j]
		} else {
			m[j] = -o[j]
		}
	}
	return c
}
