package pairterm

import (
	"fmt"
	"math"
)

// Kind is the kind of a structured pairwise term.
type Kind uint8

// The term kinds.
const (
	// Potts: theta(x, y) = W [x = y].
	Potts Kind = iota
	// TruncLinear: theta(x, y) = -W min(|x-y|, T).
	TruncLinear
	// TruncQuad: theta(x, y) = -W min((x-y)^2, T).
	TruncQuad
)

func (k Kind) String() string {
	switch k {
	case Potts:
		return "potts"
	case TruncLinear:
		return "trunclinear"
	case TruncQuad:
		return "truncquad"
	}
	return fmt.Sprintf("pairterm.Kind(%d)", int(k))
}

// Term is a structured pairwise term over two variables with the same
// number of states. W is its weight (finite, either sign), T its truncation
// (finite, > 0; unused by Potts). The products W*T must be finite too.
type Term struct {
	Kind Kind
	W, T float64
}

var negInf = math.Inf(-1)

// Theta returns the term's score at states x and y.
func (t Term) Theta(x, y int) float64 {
	switch t.Kind {
	case Potts:
		if x == y {
			return t.W
		}
		return 0
	case TruncLinear:
		d := x - y
		if d < 0 {
			d = -d
		}
		return -t.W * min(float64(d), t.T)
	case TruncQuad:
		d := x - y
		return -t.W * min(float64(d*d), t.T)
	}
	panic(fmt.Sprintf("pairterm: Theta of %v", t.Kind))
}

// Check reports whether the term is well formed: a known kind, a finite
// weight, and for the truncated kinds a finite truncation > 0 whose product
// with the weight is finite.
func (t Term) Check() error {
	if t.Kind > TruncQuad {
		return fmt.Errorf("unknown pairwise term kind %d", t.Kind)
	}
	if math.IsNaN(t.W) || math.IsInf(t.W, 0) {
		return fmt.Errorf("weight %v is not finite", t.W)
	}
	if t.Kind == Potts {
		return nil
	}
	if !(t.T > 0) || math.IsInf(t.T, 0) {
		return fmt.Errorf("truncation %v is not finite and > 0", t.T)
	}
	if math.IsInf(t.W*t.T, 0) {
		return fmt.Errorf("weight %v times truncation %v overflows", t.W, t.T)
	}
	return nil
}

// Fill writes the term's l x l table into dst (row x, column y: dst[x*l+y]
// = Theta(x, y)); dst has at least l*l entries.
func (t Term) Fill(dst []float64, l int) {
	dst = dst[:l*l]
	for x := 0; x < l; x++ {
		row := dst[x*l : x*l+l]
		for y := range row {
			row[y] = t.Theta(x, y)
		}
	}
}

// ScratchLen returns the scratch length that Message needs for vectors of
// l states.
func ScratchLen(l int) int { return 2*l + 1 }

// Message sets out[j] = max_i (a[i] + Theta(i, j)) - M for every state j and
// returns M = max_j max_i (a[i] + Theta(i, j)). Entries of a may be -Inf
// (dead states); when all are, out is all -Inf and M is -Inf. out and a
// have the same length L >= 1 and must not overlap; scratch has at least
// ScratchLen(L) entries. It allocates nothing. The result equals the direct
// O(L^2) maximisation up to rounding (a few ulps of the magnitudes
// involved; Potts and the truncation floors exactly).
func (t Term) Message(out, a, scratch []float64) float64 {
	l := len(a)
	out = out[:l]
	amax := negInf
	for _, v := range a {
		amax = fmax(amax, v)
	}
	if amax == negInf {
		for j := range out {
			out[j] = negInf
		}
		return negInf
	}
	switch t.Kind {
	case Potts:
		return potts(out, a, amax, t.W)
	case TruncLinear:
		if t.W >= 0 {
			linearDT(out, a, amax, t.W, t.T)
		} else {
			linearFar(out, a, -t.W, t.T, scratch)
		}
	case TruncQuad:
		if t.W >= 0 {
			quadDT(out, a, amax, t.W, t.T, scratch)
		} else {
			quadFar(out, a, -t.W, t.T)
		}
	default:
		panic(fmt.Sprintf("pairterm: Message of %v", t.Kind))
	}
	return normalise(out)
}

// normalise subtracts the maximum of out (finite: a has a finite entry and
// every term is finite) from every entry and returns it.
func normalise(out []float64) float64 {
	m := negInf
	for _, v := range out {
		m = fmax(m, v)
	}
	for j := range out {
		out[j] -= m
	}
	return m
}

// potts is Message for W [x = y]. With b1 = a[i1] the top entry of a: for
// w >= 0 the message is max(b1, a[j] + w), of maximum b1 + w; for w < 0 it
// is b1 except at i1, where it is max(b2, b1 + w) with b2 the best entry
// besides i1 (-Inf when L = 1).
func potts(out, a []float64, b1, w float64) float64 {
	if w >= 0 || len(a) == 1 {
		lo := -w
		for j, v := range a {
			out[j] = fmax(v-b1, lo) // no NaN: v - b1 is -Inf or finite
		}
		if len(a) == 1 {
			out[0] = 0
		}
		return b1 + w
	}
	i1 := 0
	for a[i1] != b1 {
		i1++
	}
	b2 := negInf
	for j, v := range a {
		if j != i1 {
			b2 = fmax(b2, v)
		}
		out[j] = 0
	}
	out[i1] = fmax(b2, b1+w) - b1
	return b1
}

// linearDT sets out[j] = max_i a[i] - w min(|i-j|, t) for w >= 0: the
// forward and backward passes of the distance transform give
// max_i a[i] - w|i-j|, and a term beyond the truncation is at most the
// floor amax - w t, which is reached by the maximum of a.
func linearDT(out, a []float64, amax, w, t float64) {
	prev := negInf
	for j, v := range a {
		prev = fmax(v, prev-w)
		out[j] = prev
	}
	prev = negInf
	floor := amax + -w*t
	for j := len(a) - 1; j >= 0; j-- {
		prev = fmax(out[j], prev-w)
		out[j] = fmax(prev, floor)
	}
}

// nearHalfWidth returns the largest distance d in [0, l-1] whose score is
// below the truncation (d < t linear, d^2 < t quadratic; d = 0 always
// counts), so that distances > d all score the truncation.
func nearHalfWidth(l int, t float64, quad bool) int {
	lim := float64(l - 1)
	if quad {
		lim *= lim
	}
	if t > lim {
		return l - 1
	}
	var d int
	if quad {
		d = int(math.Sqrt(t))
		for d > 0 && float64(d*d) >= t {
			d--
		}
		for float64((d+1)*(d+1)) < t {
			d++
		}
	} else {
		d = int(math.Ceil(t)) - 1
		for d > 0 && float64(d) >= t {
			d--
		}
		for float64(d+1) < t {
			d++
		}
	}
	return max(d, 0)
}

// farMax raises out[j] to max over |i - j| > d of a[i] + u t, by a running
// prefix maximum (i <= j-d-1) and a running suffix maximum (i >= j+d+1).
func farMax(out, a []float64, d int, ut float64) {
	l := len(a)
	if d >= l-1 {
		return
	}
	pm := negInf
	for j := d + 1; j < l; j++ {
		pm = fmax(pm, a[j-d-1])
		out[j] = fmax(out[j], pm+ut)
	}
	sm := negInf
	for j := l - d - 2; j >= 0; j-- {
		sm = fmax(sm, a[j+d+1])
		out[j] = fmax(out[j], sm+ut)
	}
}

// linearFar sets out[j] = max_i a[i] + u min(|i-j|, t) for u = -w > 0: the
// distances |i-j| <= d below the truncation score a[i] + u|i-j|, the
// maximum over a window of the shifted values a[i] - u i (left of j, plus
// u j) or a[i] + u i (right of j, minus u j), by van Herk / Gil-Werman
// sliding-window maxima in O(L); the farther ones score a[i] + u t (farMax).
func linearFar(out, a []float64, u, t float64, scratch []float64) {
	l := len(a)
	d := nearHalfWidth(l, t, false)
	k := d + 1 // window length
	g, h := scratch[:l], scratch[l:2*l]
	// Left windows [j-d, j] of b[i] = a[i] - u i: g is the prefix maximum
	// within blocks of k, h the suffix maximum.
	for s := 0; s < l; s += k {
		e := min(s+k, l)
		run := negInf
		for i := s; i < e; i++ {
			run = fmax(run, a[i]-u*float64(i))
			g[i] = run
		}
		run = negInf
		for i := e - 1; i >= s; i-- {
			run = fmax(run, a[i]-u*float64(i))
			h[i] = run
		}
	}
	for j := 0; j < l; j++ {
		m := g[j]
		if s := j - d; s > 0 {
			m = fmax(m, h[s])
		}
		out[j] = m + u*float64(j)
	}
	// Right windows [j, j+d] of c[i] = a[i] + u i, blocks from the right
	// end: g is the suffix maximum within blocks, h the prefix maximum.
	for e := l; e > 0; e -= k {
		s := max(e-k, 0)
		run := negInf
		for i := e - 1; i >= s; i-- {
			run = fmax(run, a[i]+u*float64(i))
			g[i] = run
		}
		run = negInf
		for i := s; i < e; i++ {
			run = fmax(run, a[i]+u*float64(i))
			h[i] = run
		}
	}
	for j := 0; j < l; j++ {
		m := g[j]
		if e := j + d; e < l-1 {
			m = fmax(m, h[e])
		}
		out[j] = fmax(out[j], m-u*float64(j))
	}
	farMax(out, a, d, u*t)
}

// quadDT sets out[j] = max_i a[i] - w min((i-j)^2, t) for w >= 0: the upper
// envelope of the parabolas a[i] - w (j-i)^2 (Felzenszwalb and Huttenlocher
// 2006, Sect. 3.3; their lower envelope of f(q) + (p-q)^2 with f = -a and
// the weight w), skipping the -Inf entries, then the truncation floor
// amax - w t. scratch holds the envelope's parabolas (v) and boundaries (z).
func quadDT(out, a []float64, amax, w, t float64, scratch []float64) {
	l := len(a)
	floor := amax + -w*t
	if w == 0 {
		for j := range out {
			out[j] = amax
		}
		return
	}
	v, z := scratch[:l], scratch[l:2*l+1]
	k := -1
	for q := 0; q < l; q++ {
		aq := a[q]
		if aq == negInf {
			continue
		}
		fq := w*float64(q*q) - aq
		if k < 0 {
			k = 0
			v[0], z[0], z[1] = float64(q), negInf, math.Inf(1)
			continue
		}
		var s float64
		for {
			r := int(v[k])
			s = (fq - (w*float64(r*r) - a[r])) / (2 * w * float64(q-r))
			if s > z[k] || k == 0 {
				break
			}
			k--
		}
		k++
		v[k], z[k], z[k+1] = float64(q), s, math.Inf(1)
	}
	k = 0
	for j := 0; j < l; j++ {
		for z[k+1] < float64(j) {
			k++
		}
		r := int(v[k])
		dd := j - r
		out[j] = fmax(a[r]+-w*float64(dd*dd), floor)
	}
}

// quadFar sets out[j] = max_i a[i] + u min((i-j)^2, t) for u = -w > 0. The
// scores below the truncation grow with the distance, so their maximum over
// a window is an upper envelope of lines restricted to the window, for
// which no O(L) method is used here: the window |i-j| <= d is scanned
// directly (O(L min(L, sqrt t))) and the rest scores a[i] + u t (farMax).
func quadFar(out, a []float64, u, t float64) {
	l := len(a)
	d := nearHalfWidth(l, t, true)
	for j := 0; j < l; j++ {
		m := negInf
		for i := max(j-d, 0); i <= min(j+d, l-1); i++ {
			dd := i - j
			m = fmax(m, a[i]+u*float64(dd*dd))
		}
		out[j] = m
	}
	farMax(out, a, d, u*t)
}

// fmax is max for operands that are never NaN: the builtin max orders
// NaN and signed zeros too, which costs several times more in the
// dependency chains of the passes above.
func fmax(x, y float64) float64 {
	if x > y {
		return x
	}
	return y
}
