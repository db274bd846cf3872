package slaves

import (
	"fmt"
	"math"
	"slices"

	"github.com/ddrun/ddrun/model"
)

// Logic factors (AD3, Martins et al. ICML 2011, Sect. 4.2) are hard
// constraints over binary variables: phi(y) = 0 when y is accepted, -Inf
// otherwise. Each input may be negated; the factor then constrains the
// literal l_k = y_k XOR negated[k].
//
// Layout: every variable is binary, so variable k occupies entries 2k (state
// 0) and 2k+1 (state 1) of the flattened vectors.
//
// QUAD reduces to a Euclidean projection in literal space: with z_k the
// marginal of literal k being true and u_k the variable's marginal vector,
// 1/2||u_k - c_k||^2 = (z_k - t_k)^2 + const where
//
//	t_k = (c_k[lit] - c_k[not lit] + 1) / 2,
//
// lit being the state that makes the literal true (1, or 0 when negated).
// So QUAD is the projection of t onto conv(S), the convex hull of the
// accepted literal vectors (Sect. 4.2), computed by the sort-based
// procedures of shared/notes/quad-slaves.md. Since phi is 0 on feasible
// configurations, QUAD returns phi . q = 0.
//
// MAP maximises sum_k w_k(y_k) over the accepted configurations: with the
// gains g_k = w_k[lit] - w_k[not lit] it picks literals exactly, in O(n) or
// O(n log n). Every logic factor here has a feasible configuration, so MAP
// never returns -Inf.
//
// All constructors copy negated (nil means no input negated; otherwise its
// length must equal the arity) and panic on invalid arguments; NewLogic
// validates a model.Factor and returns an error instead. The hot methods
// (MAP, QUAD, Score) do not allocate.

// logic is the state shared by the logic slaves: scope, negations, and
// scratch space preallocated by the constructor.
type logic struct {
	cards []int
	neg   []bool
	// t holds the literal targets (QUAD) or gains (MAP); z the projection;
	// v a second input vector; buf sort scratch. All have length n.
	t, z, v, buf []float64
}

func newLogic(kind string, n, min int, negated []bool) logic {
	if n < min {
		panic(fmt.Sprintf("slaves: %s needs at least %d variables, got %d", kind, min, n))
	}
	if negated != nil && len(negated) != n {
		panic(fmt.Sprintf("slaves: %s: %d negation flags for %d variables", kind, len(negated), n))
	}
	l := logic{
		cards: make([]int, n),
		neg:   make([]bool, n),
		t:     make([]float64, n),
		z:     make([]float64, n),
		v:     make([]float64, n),
		buf:   make([]float64, n),
	}
	for k := range l.cards {
		l.cards[k] = 2
	}
	copy(l.neg, negated)
	return l
}

// Cards returns the scope's cardinalities (all 2).
func (l *logic) Cards() []int { return l.cards }

// Negated returns the negation flags (a view, not a copy).
func (l *logic) Negated() []bool { return l.neg }

// lit reports whether literal k is true under configuration y.
func (l *logic) lit(y []int, k int) bool { return (y[k] == 1) != l.neg[k] }

// countLits returns the number of true literals among the first m.
func (l *logic) countLits(y []int, m int) int {
	n := 0
	for k := 0; k < m; k++ {
		if l.lit(y, k) {
			n++
		}
	}
	return n
}

// targets fills l.t with the literal targets of c (see the comment above).
func (l *logic) targets(c []float64) {
	for k := range l.t {
		a, b := c[2*k+1], c[2*k]
		if l.neg[k] {
			a, b = b, a
		}
		l.t[k] = (a - b + 1) / 2
	}
}

// gains fills l.t with the literal gains of w and returns the score of the
// all-false literal configuration.
func (l *logic) gains(w []float64) float64 {
	base := 0.0
	for k := range l.t {
		a, b := w[2*k+1], w[2*k]
		if l.neg[k] {
			a, b = b, a
		}
		l.t[k] = a - b
		base += b
	}
	return base
}

// writeU writes the variable marginals of literal marginals z into u.
func (l *logic) writeU(z, u []float64) {
	for k, p := range z {
		p = math.Min(math.Max(p, 0), 1)
		if l.neg[k] {
			u[2*k], u[2*k+1] = p, 1-p
		} else {
			u[2*k], u[2*k+1] = 1-p, p
		}
	}
}

// writeY writes the configuration whose literals are given by on(k).
func (l *logic) writeY(y []int, k int, on bool) {
	if on != l.neg[k] {
		y[k] = 1
	} else {
		y[k] = 0
	}
}

// clip01 writes clip(t, 0, 1) into z and returns its sum.
func clip01(t, z []float64) float64 {
	s := 0.0
	for i, x := range t {
		x = math.Min(math.Max(x, 0), 1)
		z[i] = x
		s += x
	}
	return s
}

// ---------------------------------------------------------------------------

// XOR is the one-hot factor: exactly one literal is true. conv(S) is the
// probability simplex (Sect. 4.2); QUAD is the sort-based simplex projection
// of Duchi et al. (2008), O(n log n).
type XOR struct{ logic }

// NewXOR returns an XOR factor over n >= 1 binary variables; negated may be
// nil (no input negated) or have n entries.
func NewXOR(n int, negated []bool) *XOR { return &XOR{newLogic("XOR", n, 1, negated)} }

// MAP sets the literal with the largest gain and returns the best score.
func (f *XOR) MAP(w []float64, y []int) float64 {
	base := f.gains(w)
	best := 0
	for k, g := range f.t {
		if g > f.t[best] {
			best = k
		}
	}
	for k := range f.t {
		f.writeY(y, k, k == best)
	}
	return base + f.t[best]
}

// QUAD projects the literal targets onto the simplex.
func (f *XOR) QUAD(c []float64, eta float64, u []float64) float64 {
	f.targets(c)
	projectSimplex(f.t, f.z, f.buf)
	f.writeU(f.z, u)
	return 0
}

// Score returns 0 if exactly one literal is true, else -Inf.
func (f *XOR) Score(y []int) float64 {
	return hard(f.countLits(y, len(f.neg)) == 1)
}

// ---------------------------------------------------------------------------

// AtMostOne accepts at most one true literal. conv(S) = {z >= 0, sum z <= 1}:
// QUAD is max(t, 0) when that sums to at most 1, else the simplex projection
// of t (the dropped constraint is then active; notes, "Logic factors").
type AtMostOne struct{ logic }

// NewAtMostOne returns an AtMostOne factor over n >= 1 binary variables;
// negated may be nil or have n entries.
func NewAtMostOne(n int, negated []bool) *AtMostOne {
	return &AtMostOne{newLogic("AtMostOne", n, 1, negated)}
}

// MAP sets the literal with the largest gain if that gain is positive.
func (f *AtMostOne) MAP(w []float64, y []int) float64 {
	base := f.gains(w)
	best := 0
	for k, g := range f.t {
		if g > f.t[best] {
			best = k
		}
	}
	on := f.t[best] > 0
	for k := range f.t {
		f.writeY(y, k, on && k == best)
	}
	if on {
		return base + f.t[best]
	}
	return base
}

// QUAD projects the literal targets onto {z >= 0, sum z <= 1}.
func (f *AtMostOne) QUAD(c []float64, eta float64, u []float64) float64 {
	f.targets(c)
	s := 0.0
	for k, x := range f.t {
		x = math.Max(x, 0)
		f.z[k] = x
		s += x
	}
	if s > 1 {
		projectSimplex(f.t, f.z, f.buf)
	}
	f.writeU(f.z, u)
	return 0
}

// Score returns 0 if at most one literal is true, else -Inf.
func (f *AtMostOne) Score(y []int) float64 {
	return hard(f.countLits(y, len(f.neg)) <= 1)
}

// ---------------------------------------------------------------------------

// OR accepts at least one true literal. conv(S) = {z in [0,1]^n, sum z >= 1},
// the cube with a vertex removed (Sect. 4.2): QUAD is clip(t, 0, 1) when that
// sums to at least 1, else the simplex projection of t (on the face
// sum z = 1 the box is implied).
type OR struct{ logic }

// NewOR returns an OR factor over n >= 1 binary variables; negated may be nil
// or have n entries.
func NewOR(n int, negated []bool) *OR { return &OR{newLogic("OR", n, 1, negated)} }

// MAP sets every literal with a positive gain, or the single best literal
// when none is positive.
func (f *OR) MAP(w []float64, y []int) float64 {
	base := f.gains(w)
	return base + orMAP(&f.logic, f.t, y)
}

// orMAP chooses the literals among the gains g (the first len(g) variables)
// maximising their sum under "at least one is true", writes them into y and
// returns the chosen gain.
func orMAP(l *logic, g []float64, y []int) float64 {
	sum, best, any := 0.0, 0, false
	for k, x := range g {
		if x > g[best] {
			best = k
		}
		if x > 0 {
			sum += x
			any = true
		}
	}
	for k, x := range g {
		l.writeY(y, k, x > 0 || (!any && k == best))
	}
	if !any {
		return g[best]
	}
	return sum
}

// QUAD projects the literal targets onto {z in [0,1]^n, sum z >= 1}.
func (f *OR) QUAD(c []float64, eta float64, u []float64) float64 {
	f.targets(c)
	if clip01(f.t, f.z) < 1 {
		projectSimplex(f.t, f.z, f.buf)
	}
	f.writeU(f.z, u)
	return 0
}

// Score returns 0 if some literal is true, else -Inf.
func (f *OR) Score(y []int) float64 {
	return hard(f.countLits(y, len(f.neg)) >= 1)
}

// ---------------------------------------------------------------------------

// OROut accepts configurations whose last literal (the output) equals the OR
// of the others (the inputs). With m = n-1 inputs,
// conv(S) = {z in [0,1]^n, z_i <= z_out (i < m), z_out <= sum_{i<m} z_i},
// a pyramid over the cube with a vertex removed (Sect. 4.2). QUAD (notes,
// "OR with output"): project onto {z_i <= z_out} (pool the output with the
// inputs above the running mean, sort-based) and clip to [0,1], which is the
// projection onto the box-constrained cone; if z_out <= sum z_i holds, done;
// otherwise the face z_out = sum z_i is active, where with z'_out = 1 - z_out
// the set is the simplex over (z_1..z_m, z'_out): project
// (t_1..t_m, 1 - t_out) onto it and map back.
type OROut struct{ logic }

// NewOROut returns an OR-with-output factor over n >= 2 binary variables,
// the last one being the output; negated may be nil or have n entries (the
// output may be negated too).
func NewOROut(n int, negated []bool) *OROut { return &OROut{newLogic("OROut", n, 2, negated)} }

// MAP compares the best configuration with the output false (all inputs
// false) with the best one with the output true (OR MAP on the inputs).
func (f *OROut) MAP(w []float64, y []int) float64 {
	return orOutMAP(&f.logic, w, y)
}

func orOutMAP(l *logic, w []float64, y []int) float64 {
	base := l.gains(w)
	m := len(l.t) - 1
	gOut := l.t[m]
	// Output true: gOut plus the OR MAP over the inputs (computed without
	// writing y, so recompute below if chosen).
	sum, best, any := 0.0, 0, false
	for k := 0; k < m; k++ {
		x := l.t[k]
		if x > l.t[best] {
			best = k
		}
		if x > 0 {
			sum += x
			any = true
		}
	}
	if !any {
		sum = l.t[best]
	}
	if gOut+sum > 0 {
		orMAP(l, l.t[:m], y)
		l.writeY(y, m, true)
		return base + gOut + sum
	}
	for k := 0; k <= m; k++ {
		l.writeY(y, k, false)
	}
	return base
}

// QUAD projects the literal targets onto conv(S) of OR-with-output.
func (f *OROut) QUAD(c []float64, eta float64, u []float64) float64 {
	f.targets(c)
	projectOROut(f.t, f.z, f.v, f.buf)
	f.writeU(f.z, u)
	return 0
}

// projectOROut writes into z the projection of t (inputs then output) onto
// the OR-with-output polytope; v and buf are scratch of len(t).
func projectOROut(t, z, v, buf []float64) {
	m := len(t) - 1
	// Projection onto the cone {z_i <= z_out}: z_out is the mean of t_out
	// and the inputs pooled with it, taken in decreasing order while they
	// exceed the running mean; z_i = min(t_i, z_out). Then clip to [0,1]
	// (for this star order, clipping the unconstrained isotonic solution
	// gives the box-constrained one).
	s := buf[:m]
	copy(s, t[:m])
	sortDesc(s)
	sum, k := t[m], 0
	for k < m && s[k] > sum/float64(k+1) {
		sum += s[k]
		k++
	}
	out := math.Min(math.Max(sum/float64(k+1), 0), 1)
	in := 0.0
	for i := 0; i < m; i++ {
		x := math.Min(math.Max(math.Min(t[i], out), 0), 1)
		z[i] = x
		in += x
	}
	z[m] = out
	if out <= in {
		return
	}
	// Face z_out = sum z_i: the simplex over (z_1..z_m, 1 - z_out).
	copy(v, t)
	v[m] = 1 - t[m]
	projectSimplex(v, z, buf)
	z[m] = 1 - z[m]
}

// Score returns 0 if the output literal equals the OR of the input literals.
func (f *OROut) Score(y []int) float64 {
	m := len(f.neg) - 1
	return hard((f.countLits(y, m) >= 1) == f.lit(y, m))
}

// ---------------------------------------------------------------------------

// ANDOut accepts configurations whose last literal (the output) equals the
// AND of the others. Since AND(l_1..l_m) = out iff OR(not l_1..not l_m) =
// not out, it is OR-with-output with every negation flipped (notes, "AND
// with output"), which is how MAP and QUAD are computed.
type ANDOut struct {
	logic       // the factor as given
	or    logic // the same scope with every negation flipped
}

// NewANDOut returns an AND-with-output factor over n >= 2 binary variables,
// the last one being the output; negated may be nil or have n entries.
func NewANDOut(n int, negated []bool) *ANDOut {
	f := &ANDOut{logic: newLogic("ANDOut", n, 2, negated)}
	flipped := make([]bool, n)
	for k := range flipped {
		flipped[k] = !f.neg[k]
	}
	f.or = newLogic("ANDOut", n, 2, flipped)
	return f
}

// MAP is the OR-with-output MAP on the flipped literals.
func (f *ANDOut) MAP(w []float64, y []int) float64 { return orOutMAP(&f.or, w, y) }

// QUAD is the OR-with-output projection on the flipped literals.
func (f *ANDOut) QUAD(c []float64, eta float64, u []float64) float64 {
	o := &f.or
	o.targets(c)
	projectOROut(o.t, o.z, o.v, o.buf)
	o.writeU(o.z, u)
	return 0
}

// Score returns 0 if the output literal equals the AND of the input
// literals.
func (f *ANDOut) Score(y []int) float64 {
	m := len(f.neg) - 1
	return hard((f.countLits(y, m) == m) == f.lit(y, m))
}

// ---------------------------------------------------------------------------

// Budget accepts at most B true literals. conv(S) = {z in [0,1]^n,
// sum z <= B}: QUAD is clip(t, 0, 1) when that sums to at most B, else
// clip(t - theta, 0, 1) with theta > 0 solving sum_i clip(t_i - theta, 0, 1)
// = B, found by walking the sorted breakpoints t_i and t_i - 1 (notes,
// "Budget"), O(n log n).
type Budget struct {
	logic
	b int
}

// NewBudget returns a Budget factor over n >= 1 binary variables with bound
// 0 <= budget <= n; negated may be nil or have n entries.
func NewBudget(n int, negated []bool, budget int) *Budget {
	f := &Budget{logic: newLogic("Budget", n, 1, negated), b: budget}
	if budget < 0 || budget > n {
		panic(fmt.Sprintf("slaves: Budget %d outside [0,%d]", budget, n))
	}
	return f
}

// Bound returns the budget B.
func (f *Budget) Bound() int { return f.b }

// MAP sets the (at most B) literals with the largest positive gains.
func (f *Budget) MAP(w []float64, y []int) float64 {
	base := f.gains(w)
	n := len(f.t)
	pos := 0
	for _, g := range f.t {
		if g > 0 {
			pos++
		}
	}
	if pos <= f.b { // every positive gain fits
		for k, g := range f.t {
			f.writeY(y, k, g > 0)
			if g > 0 {
				base += g
			}
		}
		return base
	}
	if f.b == 0 {
		for k := range f.t {
			f.writeY(y, k, false)
		}
		return base
	}
	// More positive gains than the budget: the B-th largest gain is a
	// threshold; take the gains above it, then ties up to B.
	s := f.buf[:n]
	copy(s, f.t)
	sortDesc(s)
	th := s[f.b-1]
	ties := f.b
	for _, g := range f.t {
		if g > th {
			ties--
		}
	}
	for k, g := range f.t {
		on := g > th
		if g == th && ties > 0 {
			on = true
			ties--
		}
		f.writeY(y, k, on)
		if on {
			base += g
		}
	}
	return base
}

// QUAD projects the literal targets onto {z in [0,1]^n, sum z <= B}.
func (f *Budget) QUAD(c []float64, eta float64, u []float64) float64 {
	f.targets(c)
	projectBudget(f.t, f.z, f.buf, f.b)
	f.writeU(f.z, u)
	return 0
}

// projectBudget writes into z the projection of t onto
// {z in [0,1]^n, sum z <= b}; buf is scratch of len(t).
func projectBudget(t, z, buf []float64, b int) {
	n := len(t)
	if b <= 0 {
		for i := range z {
			z[i] = 0
		}
		return
	}
	if clip01(t, z) <= float64(b) {
		return
	}
	// F(theta) = sum_i clip(t_i - theta, 0, 1) is continuous, nonincreasing
	// and piecewise linear with breakpoints t_i (coordinate i starts to rise
	// as theta decreases) and t_i - 1 (it saturates). Walk them downwards
	// from theta = max t (F = 0), merging the two sorted lists, until F
	// reaches b; F(0) > b guarantees theta > 0.
	s := buf[:n]
	copy(s, t)
	sortDesc(s)
	B := float64(b)
	F, active := 0.0, 0
	prev := s[0]
	theta := prev
	i, j := 0, 0
	for j < n {
		var next float64
		upper := i < n && s[i] >= s[j]-1
		if upper {
			next = s[i]
		} else {
			next = s[j] - 1
		}
		Fn := F + float64(active)*(prev-next)
		if Fn >= B && active > 0 {
			theta = prev - (B-F)/float64(active)
			break
		}
		F, prev, theta = Fn, next, next
		if upper {
			active++
			i++
		} else {
			active--
			j++
		}
	}
	for k, x := range t {
		z[k] = math.Min(math.Max(x-theta, 0), 1)
	}
}

// Score returns 0 if at most B literals are true, else -Inf.
func (f *Budget) Score(y []int) float64 {
	return hard(f.countLits(y, len(f.neg)) <= f.b)
}

// ---------------------------------------------------------------------------

// NewLogic returns the slave of a logic factor (kinds XOR .. Budget), its
// scope being f.Vars in order. It checks the arity, the negation flags and
// the budget; the variables' cardinalities (which must be 2) are the
// caller's to check (model.Validate does).
func NewLogic(f *model.Factor) (Slave, error) {
	n := len(f.Vars)
	if !f.Kind.IsLogic() {
		return nil, fmt.Errorf("slaves: NewLogic on %s factor", f.Kind)
	}
	min := 1
	if f.Kind == model.OROut || f.Kind == model.ANDOut {
		min = 2
	}
	if n < min {
		return nil, fmt.Errorf("slaves: %s factor needs at least %d variables, has %d", f.Kind, min, n)
	}
	neg := f.NegatedInputs()
	if neg != nil && len(neg) != n {
		return nil, fmt.Errorf("slaves: %s factor has %d negation flags for %d variables", f.Kind, len(neg), n)
	}
	switch f.Kind {
	case model.XOR:
		return NewXOR(n, neg), nil
	case model.AtMostOne:
		return NewAtMostOne(n, neg), nil
	case model.OR:
		return NewOR(n, neg), nil
	case model.OROut:
		return NewOROut(n, neg), nil
	case model.ANDOut:
		return NewANDOut(n, neg), nil
	case model.Budget:
		if b := f.BudgetBound(); b < 0 || b > n {
			return nil, fmt.Errorf("slaves: budget %d outside [0,%d]", b, n)
		}
		return NewBudget(n, neg, f.BudgetBound()), nil
	}
	return nil, fmt.Errorf("slaves: unknown logic kind %s", f.Kind)
}

// projectSimplex writes into z the Euclidean projection of v onto the
// probability simplex {z >= 0, sum z = 1} (Duchi et al. 2008, as in AD3
// Sect. 4.2): sort v descending, take the largest k with
// v_(k) > (sum_{j<=k} v_(j) - 1)/k, theta = (sum_{j<=k} v_(j) - 1)/k and
// z = max(v - theta, 0). buf is scratch of len(v); z may alias v.
func projectSimplex(v, z, buf []float64) {
	s := buf[:len(v)]
	copy(s, v)
	sortDesc(s)
	cum := 0.0
	theta := s[0] - 1
	for j, x := range s {
		cum += x
		t := (cum - 1) / float64(j+1)
		if x <= t {
			break
		}
		theta = t
	}
	for i, x := range v {
		z[i] = math.Max(x-theta, 0)
	}
}

// sortDesc sorts s in decreasing order without allocating: insertion sort
// for short slices, slices.Sort (pdqsort) then reversal otherwise.
func sortDesc(s []float64) {
	if len(s) <= 16 {
		for i := 1; i < len(s); i++ {
			x := s[i]
			j := i
			for j > 0 && s[j-1] < x {
				s[j] = s[j-1]
				j--
			}
			s[j] = x
		}
		return
	}
	slices.Sort(s)
	slices.Reverse(s)
}

// hard maps acceptance to a hard-constraint log-potential.
func hard(ok bool) float64 {
	if ok {
		return 0
	}
	return math.Inf(-1)
}

// Compile-time checks.
var (
	_ Slave = (*XOR)(nil)
	_ Slave = (*AtMostOne)(nil)
	_ Slave = (*OR)(nil)
	_ Slave = (*OROut)(nil)
	_ Slave = (*ANDOut)(nil)
	_ Slave = (*Budget)(nil)
)
