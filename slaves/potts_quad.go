package slaves

import "math"

// pottsWork is the working space of Potts.QUAD, kept in a Scratch: the
// active-set method of ActiveSet (AD3 JMLR 2015 Alg. 3; see ActiveSet for
// the derivation) specialised to a factor over two variables of L labels
// with the Potts oracle. Per working-set configuration j = (ya_j, yb_j):
//
//	phi_j = W [ya_j = yb_j],  s_j = phi_j/eta + c[ya_j] + c[L+yb_j],
//	H_ij  = 1 + [ya_i = ya_j] + [yb_i = yb_j]   (G + 1 1^T, diagonal 3).
//
// Between calls a Potts slave keeps only its working set (configurations and
// weights); begin loads it here and refactors H from scratch (from a table
// for up to pottsSmallMax configurations, the common case; O(|W|^3/6)
// beyond), and end stores it back. Within a call the factor is updated by
// the same code as ActiveSet's (packedCholesky): by bordering when a
// configuration enters and by Givens rotations when one leaves. The
// arithmetic of targets, KKT solves, ratio tests, oracle scores and
// marginals is ActiveSet's, in the same order, so both return the same
// results up to the rounding of the Cholesky factor (the tests compare
// them).
type pottsWork struct {
	L, k int // the sizes the arrays were made for: labels, capacity

	W float64 // the factor's coupling
	// |W| = m, the rows of the factor of H (packedCholesky).
	packedCholesky
	ya, yb    []int32 // configurations, in insertion order
	q         []float64
	s         []float64 // targets
	qh, l     []float64 // equality-constrained weights; bordered row of L
	sup       []float64 // superdiagonal entries during a removal
	converged bool
	moved     bool      // the configurations changed since begin (end stores them)
	u         []float64 // marginals (2L)
	fbuf      []float64 // backing of the float arrays above
	ibuf      []int32   // backing of ya, yb

	stats ActiveSetStats
}

// pottsTolDep is ActiveSet's tolDep for two variables: the squared affine
// distance below which a configuration is dependent on the working set.
const pottsTolDep = 1e-9 * 3

// begin sizes the arrays for p and loads and factors p's working set.
func (wk *pottsWork) begin(p *Potts) {
	L := int(p.l)
	k := pottsCap(L)
	if wk.L != L || wk.k != k {
		wk.resize(L, k)
	}
	wk.stats.Calls++
	wk.converged = false
	wk.moved = false
	wk.W = p.w
	m := int(p.m)
	wk.m = m
	wk.rOK = false
	if m == 0 {
		return
	}
	shift := pottsShift(L)
	bits := 2 * shift
	mask := uint64(1)<<shift - 1
	ws := p.words()
	for j := 0; j < m; j++ {
		wk.q[j] = math.Float64frombits(ws[j])
		v := ws[k+j*int(bits)/64] >> (uint(j) * bits % 64)
		wk.ya[j], wk.yb[j] = int32(v>>shift&mask), int32(v&mask)
	}
	wk.factor()
}

// end stores the working set back into p: the weights, and the
// configurations if they changed.
func (wk *pottsWork) end(p *Potts) {
	m := wk.m
	p.m = uint8(m)
	ws := p.words()
	for j, v := range wk.q[:m] {
		ws[j] = math.Float64bits(v)
	}
	if !wk.moved {
		return
	}
	shift := pottsShift(wk.L)
	bits := 2 * shift
	cw := ws[wk.k:]
	for i := range cw {
		cw[i] = 0
	}
	for j := 0; j < m; j++ {
		v := uint64(wk.ya[j])<<shift | uint64(wk.yb[j])
		cw[j*int(bits)/64] |= v << (uint(j) * bits % 64)
	}
}

// resize makes the arrays for L labels and capacity k (exact lengths, so
// that ranging over them is right), in one allocation of floats and one of
// labels. It allocates only when they grow.
func (wk *pottsWork) resize(L, k int) {
	wk.L, wk.k = L, k
	nf := 7*k + tri(k) + 2*L
	if len(wk.fbuf) < nf {
		wk.fbuf = make([]float64, nf)
	}
	f := wk.fbuf
	for _, v := range []*[]float64{&wk.q, &wk.s, &wk.qh, &wk.l, &wk.sup, &wk.r, &wk.invd} {
		*v, f = f[:k:k], f[k:]
	}
	wk.chol, f = f[:tri(k):tri(k)], f[tri(k):]
	wk.u = f[: 2*L : 2*L]
	if len(wk.ibuf) < 2*k {
		wk.ibuf = make([]int32, 2*k)
	}
	wk.ya, wk.yb = wk.ibuf[:k:k], wk.ibuf[k:2*k:2*k]
}

// phi returns the unscaled score of configuration j (without the factor's
// constant).
func (wk *pottsWork) phi(j int) float64 {
	if wk.ya[j] == wk.yb[j] {
		return wk.W
	}
	return 0
}

// agree returns H_{j,(a,b)} = 1 + [ya_j = a] + [yb_j = b].
func (wk *pottsWork) agree(j int, a, b int32) float64 {
	h := 1.0
	if wk.ya[j] == a {
		h++
	}
	if wk.yb[j] == b {
		h++
	}
	return h
}

// factor rebuilds the Cholesky factor of H from the working set (ActiveSet's
// refactor): the rows of its first pottsSmallMax configurations come from
// pottsSmall (the first rows of a Cholesky factor depend only on the leading
// block of the matrix), the others by elimination. If the working set turns
// out to be numerically dependent (never expected: it was independent when
// stored), it is reset to its heaviest configuration.
func (wk *pottsWork) factor() {
	m := wk.m
	// H_ij - 1 is 0 or 1 off the diagonal (distinct configurations agree
	// on at most one variable): one bit per pair.
	lead := min(m, pottsSmallMax)
	pat := 0
	for j := 1; j < lead; j++ {
		for i := 0; i < j; i++ {
			if wk.ya[i] == wk.ya[j] || wk.yb[i] == wk.yb[j] {
				pat |= 1 << (tri(j-1) + i)
			}
		}
	}
	from := 0
	if f := &pottsSmall[pottsSmallBase[lead]+pat]; f.ok {
		copy(wk.chol, f.chol[:tri(lead)])
		copy(wk.invd, f.invd[:lead])
		if m == lead {
			copy(wk.r, f.r[:m])
			wk.rsum, wk.rOK = f.rsum, true
			return
		}
		from = lead
	}
	for i := max(from, 1); i < m; i++ {
		a, b := wk.ya[i], wk.yb[i]
		row := wk.chol[tri(i) : tri(i)+i]
		for k := range row {
			row[k] = wk.agree(k, a, b)
		}
	}
	if wk.factorRows(from, 3, pottsTolDep) {
		return
	}
	wk.stats.Refactors++
	best := heaviest(wk.q[:m])
	wk.ya[0], wk.yb[0], wk.q[0] = wk.ya[best], wk.yb[best], 1
	wk.moved = true
	wk.restart(3)
}

// pottsSmallMax is the largest working set whose factorisation factor takes
// from pottsSmall.
const pottsSmallMax = 4

// pottsSmallFactor is the factorisation of H for one agreement pattern.
type pottsSmallFactor struct {
	chol    [pottsSmallMax * (pottsSmallMax + 1) / 2]float64
	invd, r [pottsSmallMax]float64 // r = H^{-1} 1
	rsum    float64
	ok      bool // H is numerically positive definite
}

// pottsSmallBase[m] is the index in pottsSmall of the first of the
// 2^(m(m-1)/2) patterns of m configurations.
var pottsSmallBase = [pottsSmallMax + 1]int{0, 0, 1, 3, 11}

// pottsSmall memoises the factorisation of H for working sets of up to
// pottsSmallMax configurations, where H depends only on which pairs of
// configurations agree on a variable: for m configurations, the pattern's bit
// tri(j-1)+i says whether configurations i < j do. The entries come from the
// same arithmetic as a rebuild (factorRows, then forward and backward
// solves for r), so they are exactly what factor would compute.
var pottsSmall = func() (t [75]pottsSmallFactor) {
	var wk pottsWork
	wk.resize(1, pottsSmallMax)
	for m := 1; m <= pottsSmallMax; m++ {
		for pat := 0; pat < 1<<tri(m-1); pat++ {
			f := &t[pottsSmallBase[m]+pat]
			for i := 1; i < m; i++ {
				for k := 0; k < i; k++ {
					wk.chol[tri(i)+k] = 1 + float64(pat>>(tri(i-1)+k)&1)
				}
			}
			wk.m, wk.rOK = m, false
			if !wk.factorRows(0, 3, pottsTolDep) {
				continue
			}
			wk.setR()
			f.rsum = wk.rsum
			copy(f.chol[:], wk.chol[:tri(m)])
			copy(f.invd[:], wk.invd[:m])
			copy(f.r[:], wk.r[:m])
			f.ok = true
		}
	}
	return t
}()

// depth computes l = L^{-1} h for the configuration (a, b) into wk.l and
// returns its squared affine distance from the working set's affine hull.
func (wk *pottsWork) depth(a, b int32) float64 {
	l := wk.l
	for i := 0; i < wk.m; i++ {
		l[i] = wk.agree(i, a, b)
	}
	return wk.border(l, 3)
}

// push appends (a, b) with weight q and target sj, using the bordered row in
// wk.l (from depth) and squared pivot d2.
func (wk *pottsWork) push(a, b int32, q, sj, d2 float64) {
	m := wk.m
	wk.ya[m], wk.yb[m] = a, b
	wk.q[m], wk.s[m] = q, sj
	wk.appendRow(wk.l, d2)
	wk.moved = true
}

// remove drops configuration j, restoring the Cholesky factor of the reduced
// H by Givens rotations (ActiveSet.remove).
func (wk *pottsWork) remove(j int) {
	m := wk.m
	copy(wk.ya[j:], wk.ya[j+1:m])
	copy(wk.yb[j:], wk.yb[j+1:m])
	copy(wk.q[j:], wk.q[j+1:m])
	copy(wk.s[j:], wk.s[j+1:m])
	wk.deleteRow(j, wk.sup)
	wk.moved = true
}

// indexOf returns the position of (a, b) in the working set, or -1.
func (wk *pottsWork) indexOf(a, b int32) int {
	for j := 0; j < wk.m; j++ {
		if wk.ya[j] == a && wk.yb[j] == b {
			return j
		}
	}
	return -1
}

// marginals writes u = M q into wk.u.
func (wk *pottsWork) marginals() {
	u := wk.u
	for i := range u {
		u[i] = 0
	}
	L := int32(wk.L)
	for j, qj := range wk.q[:wk.m] {
		if qj == 0 {
			continue
		}
		u[wk.ya[j]] += qj
		u[L+wk.yb[j]] += qj
	}
}

// evictZero removes a zero-weight configuration to make room, reporting
// whether there was one.
func (wk *pottsWork) evictZero() bool {
	j := firstZero(wk.q[:wk.m])
	if j >= 0 {
		wk.remove(j)
	}
	return j >= 0
}

// exchange handles an oracle configuration (a, b) (target sy) whose
// marginals lie in the affine hull of the working set (ActiveSet.exchange).
func (wk *pottsWork) exchange(a, b int32, sy float64) bool {
	m := wk.m
	al := wk.l[:m]
	wk.backward(al, al)
	t, jb, sum := ratioStep(wk.q[:m], al)
	if jb < 0 {
		return false
	}
	wk.remove(jb)
	d2 := wk.depth(a, b)
	if !(d2 > pottsTolDep) {
		wk.m = 0
		wk.push(a, b, 1, sy, 3)
		return true
	}
	wk.push(a, b, t, sy, d2)
	rescale(wk.q[:wk.m], sum)
	return true
}

// quad runs the active-set method (ActiveSet.QUAD) on the loaded working set
// for targets c (2L entries) and eta, with at most maxIter KKT solves. It
// leaves the marginals in wk.u and returns phi . q (without the factor's
// constant), or -Inf when the oracle fails (a NaN input).
func (wk *pottsWork) quad(c []float64, eta float64, maxIter int) float64 {
	L := wk.L
	ca, cb := c[:L:L], c[L:2*L:2*L]
	if wk.m == 0 {
		// Cold start: the MAP at c (u = 0).
		wk.marginals()
		wk.stats.OracleCalls++
		x, y, v := pottsMAPDiff(ca, cb, wk.u[:L], wk.u[L:], eta, wk.W)
		if math.IsInf(v, -1) || math.IsNaN(v) {
			return math.Inf(-1)
		}
		wk.push(int32(x), int32(y), 1, 0, 3)
	}
	for j := 0; j < wk.m; j++ {
		wk.s[j] = wk.phi(j)/eta + ca[wk.ya[j]] + cb[wk.yb[j]]
	}

	solved := false // wk.q is the equality-constrained solution
	uOK := false    // wk.u = M wk.q
	tau := 0.0
	for solves := 0; ; {
		if !solved {
			if solves == maxIter {
				wk.stats.Capped++
				break
			}
			solves++
			wk.stats.Iters++
			tau = wk.solveKKT(wk.s, wk.qh)
			if jb := stepTowards(wk.q[:wk.m], wk.qh); jb >= 0 {
				wk.stats.Drops++
				wk.remove(jb)
				uOK = false
				continue
			}
			solved = true
		}
		wk.marginals()
		uOK = true
		u := wk.u
		wk.stats.OracleCalls++
		x, y, v := pottsMAPDiff(ca, cb, u[:L], u[L:], eta, wk.W)
		if math.IsInf(v, -1) || math.IsNaN(v) {
			break
		}
		a, b := int32(x), int32(y)
		phi := 0.0
		if a == b {
			phi = wk.W
		}
		val := phi / eta
		val += ca[a] - u[a]
		val += cb[b] - u[L+y]
		if val <= tau+1e-12*(1+math.Abs(tau)+math.Abs(val)) || wk.indexOf(a, b) >= 0 {
			wk.converged = true
			break
		}
		sy := phi/eta + ca[a] + cb[b]
		if d2 := wk.depth(a, b); d2 > pottsTolDep {
			if wk.m == wk.k {
				if !wk.evictZero() {
					wk.stats.Capped++
					break
				}
				d2 = wk.depth(a, b)
			}
			wk.push(a, b, 0, sy, d2)
		} else {
			if !wk.exchange(a, b, sy) {
				wk.stats.Capped++
				break
			}
			wk.stats.Exchanges++
			uOK = false
		}
		solved = false
	}
	if !uOK {
		wk.marginals()
	}
	phiq := 0.0
	for j, qj := range wk.q[:wk.m] {
		phiq += qj * wk.phi(j)
	}
	return phiq
}

// pottsMAPDiff returns pottsMAP(eta (ca - ua), eta (cb - ub), W), the oracle
// call of the active-set method, without storing the scores: the same
// scores, compared in the same order, so the same result.
func pottsMAPDiff(ca, cb, ua, ub []float64, eta, W float64) (x, y int, v float64) {
	L := len(ca)
	cb, ua, ub = cb[:L], ua[:L], ub[:L]
	va, vb := eta*(ca[0]-ua[0]), eta*(cb[0]-ub[0])
	kd, bd := 0, va+vb
	i1, j1 := 0, 0
	for k := 1; k < L; k++ {
		ak, bk := eta*(ca[k]-ua[k]), eta*(cb[k]-ub[k])
		if d := ak + bk; d > bd {
			kd, bd = k, d
		}
		if ak > va {
			i1, va = k, ak
		}
		if bk > vb {
			j1, vb = k, bk
		}
	}
	bd += W
	if L == 1 {
		return 0, 0, bd
	}
	oi, oj, off := i1, j1, va+vb
	if i1 == j1 {
		i2, a2 := pottsArgmaxDiffExcept(ca, ua, eta, i1)
		j2, b2 := pottsArgmaxDiffExcept(cb, ub, eta, j1)
		if va+b2 >= a2+vb {
			oj, off = j2, va+b2
		} else {
			oi, off = i2, a2+vb
		}
	}
	if off > bd {
		return oi, oj, off
	}
	return kd, kd, bd
}

// pottsArgmaxDiffExcept is pottsArgmaxExcept on eta (c - u), returning the
// entry too.
func pottsArgmaxDiffExcept(c, u []float64, eta float64, ex int) (int, float64) {
	u = u[:len(c)]
	i := 0
	if ex == 0 {
		i = 1
	}
	vi := eta * (c[i] - u[i])
	for k := i + 1; k < len(c); k++ {
		if v := eta * (c[k] - u[k]); k != ex && v > vi {
			i, vi = k, v
		}
	}
	return i, vi
}
