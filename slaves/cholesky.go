package slaves

import "math"

// packedCholesky is the linear algebra of an active-set QUAD solver
// (ActiveSet, and the Potts slave's compact pottsWork): the lower Cholesky
// factor of H = G + 1 1^T over the first m configurations of the working
// set, packed by rows in flat slices, and r = H^{-1} 1. The solvers keep
// their configurations, weights and targets themselves, and say what H's
// entries are (how many variables two configurations agree on); this type
// only updates and solves with the factor: bordering when a configuration
// enters (border, appendRow), Givens rotations when one leaves (deleteRow),
// a rebuild (factorRows) and the KKT solve (solveKKT).
//
// Its methods do not allocate; the slices are sized by the owner, with
// room for the largest working set (tri(k) entries of chol, k of invd and r
// for capacity k).
type packedCholesky struct {
	m    int       // the working set's size: rows of the factor in use
	chol []float64 // packed lower Cholesky factor of H: row i at tri(i)
	invd []float64 // reciprocals of chol's diagonal
	r    []float64 // H^{-1} 1, valid when rOK
	rsum float64   // 1^T H^{-1} 1
	rOK  bool
}

// tri returns the offset of row i of the packed lower triangle.
func tri(i int) int { return i * (i + 1) / 2 }

// forward solves L x = b in place (x aliases b is allowed) for the first m
// rows of the factor.
func (f *packedCholesky) forward(b, x []float64) {
	chol, invd := f.chol, f.invd
	for i := 0; i < f.m; i++ {
		row := chol[tri(i) : tri(i)+i]
		v := b[i]
		for k, lik := range row {
			v -= lik * x[k]
		}
		x[i] = v * invd[i]
	}
}

// backward solves L^T x = b in place (x aliases b is allowed).
func (f *packedCholesky) backward(b, x []float64) {
	chol, invd, m := f.chol, f.invd, f.m
	for i := m - 1; i >= 0; i-- {
		v := b[i]
		for k := i + 1; k < m; k++ {
			v -= chol[tri(k)+i] * x[k]
		}
		x[i] = v * invd[i]
	}
}

// forward2 solves L x' = x and L y' = y in place, in one pass: the same
// arithmetic as two forward calls.
func (f *packedCholesky) forward2(x, y []float64) {
	m := f.m
	x, y = x[:m], y[:m]
	for i := 0; i < m; i++ {
		row := f.chol[tri(i) : tri(i)+i]
		v, w := x[i], y[i]
		for k, lik := range row {
			v -= lik * x[k]
			w -= lik * y[k]
		}
		x[i], y[i] = v*f.invd[i], w*f.invd[i]
	}
}

// backward2 solves L^T x' = x and L^T y' = y in place, in one pass: the
// same arithmetic as two backward calls.
func (f *packedCholesky) backward2(x, y []float64) {
	m := f.m
	x, y = x[:m], y[:m]
	for i := m - 1; i >= 0; i-- {
		v, w := x[i], y[i]
		for k := i + 1; k < m; k++ {
			lki := f.chol[tri(k)+i]
			v -= lki * x[k]
			w -= lki * y[k]
		}
		x[i], y[i] = v*f.invd[i], w*f.invd[i]
	}
}

// border turns l, holding h_i = H_{iy} for a candidate configuration y
// and the working set's m configurations, into L^{-1} h, the row that
// borders the factor when y enters, and returns the squared pivot: the
// squared affine distance of y's marginals from the working set's affine
// hull, diag - ||l||^2 with diag = H_yy = n + 1 (the Schur complement of
// the bordered H).
func (f *packedCholesky) border(l []float64, diag float64) float64 {
	f.forward(l, l)
	d2 := diag
	for _, v := range l[:f.m] {
		d2 -= v * v
	}
	return d2
}

// appendRow adds row m to the factor: the bordered row l (from border) and
// the pivot sqrt(d2). The owner stores the entering configuration at
// index m first.
func (f *packedCholesky) appendRow(l []float64, d2 float64) {
	m := f.m
	copy(f.chol[tri(m):tri(m)+m], l[:m])
	d := math.Sqrt(d2)
	f.chol[tri(m)+m] = d
	f.invd[m] = 1 / d
	f.m++
	f.rOK = false
}

// deleteRow drops row and column j of H, restoring the Cholesky factor of
// the reduced H by Givens rotations on the columns j..m-2; sup is scratch
// for m-1 entries. The owner drops configuration j from its own arrays.
func (f *packedCholesky) deleteRow(j int, sup []float64) {
	m := f.m
	L := f.chol
	// Delete row j: shift the later rows up (row i keeps columns 0..i-1 in
	// the packed row i-1; its diagonal entry becomes sup[i-1], the entry
	// right of the new row's diagonal).
	for i := j + 1; i < m; i++ {
		sup[i-1] = L[tri(i)+i]
		copy(L[tri(i-1):tri(i-1)+i], L[tri(i):tri(i)+i])
	}
	// Rows j..m-2 now have one entry right of the diagonal: rotate it away.
	for k := j; k < m-1; k++ {
		a, b := L[tri(k)+k], sup[k]
		r := math.Sqrt(a*a + b*b)
		cs, sn := a/r, b/r
		L[tri(k)+k] = r
		for i := k + 1; i < m-1; i++ {
			x, y := L[tri(i)+k], L[tri(i)+k+1]
			L[tri(i)+k] = cs*x + sn*y
			L[tri(i)+k+1] = cs*y - sn*x
		}
		f.invd[k] = 1 / r
	}
	f.m--
	f.rOK = false
}

// factorRows factors in place rows from..m-1 of H, whose diagonal is diag
// and whose strictly lower entries the owner has written into those rows
// of chol (rows before from are already factored). It reports false,
// leaving the factor partial, if a squared pivot is not above tolDep (a
// numerically dependent working set).
func (f *packedCholesky) factorRows(from int, diag, tolDep float64) bool {
	L, invd := f.chol, f.invd
	for i := from; i < f.m; i++ {
		ti := tri(i)
		row := L[ti : ti+i]
		for k, v := range row {
			tk := tri(k)
			for t, lkt := range L[tk : tk+k] {
				v -= row[t] * lkt
			}
			row[k] = v * invd[k]
		}
		d2 := diag
		for _, v := range row {
			d2 -= v * v
		}
		if !(d2 > tolDep) {
			return false
		}
		d := math.Sqrt(d2)
		L[ti+i], invd[i] = d, 1/d
	}
	return true
}

// restart makes the factor that of a working set of one configuration,
// H = [diag].
func (f *packedCholesky) restart(diag float64) {
	d := math.Sqrt(diag)
	f.chol[0], f.invd[0] = d, 1/d
	f.m = 1
	f.rOK = false
}

// setR computes r = H^{-1} 1 and its sum, when they are not up to date.
func (f *packedCholesky) setR() {
	if f.rOK {
		return
	}
	r := f.r[:f.m]
	for i := range r {
		r[i] = 1
	}
	f.forward(r, r)
	f.backward(r, r)
	f.sumR()
}

// sumR sets rsum = 1^T r and marks r up to date.
func (f *packedCholesky) sumR() {
	f.rsum = 0
	for _, v := range f.r[:f.m] {
		f.rsum += v
	}
	f.rOK = true
}

// solveKKT solves the KKT system of the working set for the targets s,
// writing the weights into p and returning tau. With H = G + 1 1^T and
// 1^T q = 1 the system reads H q = s + (1 - tau) 1, so q = H^{-1} s +
// (1 - tau) H^{-1} 1 with tau fixed by 1^T q = 1. The targets are centred
// first (q does not depend on a common shift of s, tau shifts with it).
// r = H^{-1} 1, when it is not up to date, is solved for in the same
// passes.
func (f *packedCholesky) solveKKT(s, p []float64) float64 {
	m := f.m
	mean := 0.0
	for _, v := range s[:m] {
		mean += v
	}
	mean /= float64(m)
	p = p[:m]
	for i, v := range s[:m] {
		p[i] = v - mean
	}
	if !f.rOK {
		r := f.r[:m]
		for i := range r {
			r[i] = 1
		}
		f.forward2(r, p)
		f.backward2(r, p)
		f.sumR()
	} else {
		f.forward(p, p)
		f.backward(p, p)
	}
	sp := 0.0
	for _, v := range p {
		sp += v
	}
	k := (1 - sp) / f.rsum // = 1 - tau (centred)
	for i, ri := range f.r[:m] {
		p[i] += k * ri
	}
	return 1 - k + mean
}

// stepTowards moves the weights q towards the equality-constrained
// solution qh (step 2 of the active-set method): all the way, q = qh, when
// qh >= 0, returning -1; otherwise as far as the weights stay >= 0,
// returning the index of the first weight to reach 0 (the configuration
// to drop).
func stepTowards(q, qh []float64) int {
	qh = qh[:len(q)]
	t, jb := 1.0, -1
	for j, v := range qh {
		if v < 0 {
			if tj := q[j] / (q[j] - v); jb < 0 || tj < t {
				t, jb = tj, j
			}
		}
	}
	if jb < 0 {
		copy(q, qh)
		return -1
	}
	for j, v := range qh {
		q[j] = max(0, q[j]+t*(v-q[j]))
	}
	return jb
}

// ratioStep is the ratio test and weight update of the exchange step: with
// a the affine coordinates of the entering configuration, it moves the
// weights q to q - t a for the largest t that keeps them >= 0, sets the
// blocking weight q[jb] to 0, and returns t (the entering weight), jb (-1
// when no a_j is positive: nothing blocks, q unchanged) and the new total
// weight.
func ratioStep(q, a []float64) (t float64, jb int, sum float64) {
	jb = -1
	for j, aj := range a {
		if aj > 1e-9 {
			if tj := q[j] / aj; jb < 0 || tj < t {
				t, jb = tj, j
			}
		}
	}
	if jb < 0 {
		return 0, -1, 0
	}
	sum = t
	for j, aj := range a {
		q[j] = max(0, q[j]-t*aj)
	}
	q[jb] = 0
	for _, v := range q {
		sum += v
	}
	return t, jb, sum
}

// rescale divides the weights q by their total sum (a no-op at 1).
func rescale(q []float64, sum float64) {
	if sum != 1 {
		for j := range q {
			q[j] /= sum
		}
	}
}

// heaviest returns the index of the first largest weight in q (len(q) >
// 0): the configuration an active set keeps when its factorisation breaks
// down.
func heaviest(q []float64) int {
	best := 0
	for j := 1; j < len(q); j++ {
		if q[j] > q[best] {
			best = j
		}
	}
	return best
}

// firstZero returns the index of the first zero weight in q, or -1: the
// configuration an active set evicts to make room.
func firstZero(q []float64) int {
	for j, v := range q {
		if v == 0 {
			return j
		}
	}
	return -1
}
