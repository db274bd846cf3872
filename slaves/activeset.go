package slaves

import "math"

// Oracle is what the active-set QUAD solver needs from a factor: its scope and
// exact MAP and score evaluations (the methods of the same names in Slave).
// Dense and Potts are oracles of themselves (Potts's own QUAD runs a compact
// copy of the method specialised to it, pottsWork); chain and tree slaves can
// use Viterbi or tree dynamic programming.
type Oracle interface {
	Cards() []int
	MAP(w []float64, y []int) float64
	Score(y []int) float64
}

// DefaultActiveSetIter is the default cap on active-set iterations (KKT
// solves) per QUAD call; AD3 caps its active-set loop similarly (about 10
// steps). With warm starts a DD-ADMM iteration typically needs 1-2.
const DefaultActiveSetIter = 20

// DefaultActiveSetConfigs caps the working set when NewActiveSet is given
// maxConfigs <= 0 and the scope's own bound (see NewActiveSet) is larger.
const DefaultActiveSetConfigs = 64

// ActiveSetStats counts the work done by an ActiveSet since construction (or
// the last ResetStats).
type ActiveSetStats struct {
	Calls       int64 // QUAD calls
	OracleCalls int64 // MAP oracle calls
	Iters       int64 // active-set iterations (KKT solves)
	Drops       int64 // configurations dropped on a blocking weight
	Exchanges   int64 // null-space exchanges of affinely dependent configurations
	Capped      int64 // calls that stopped on the iteration or size cap, unconverged
	Refactors   int64 // factorisations rebuilt from scratch
}

// ActiveSet solves the QUAD subproblem of a factor with only a MAP oracle, by
// the active-set method of Martins et al., "AD3: Alternating Directions Dual
// Decomposition for MAP Inference in Graphical Models", JMLR 2015, Alg. 3
// (see also /work/shared/notes/quad-slaves.md, "Dense factors"). The problem,
// AD3 ICML 2011 eq. (12) divided by eta, is
//
//	minimise 1/2 sum_k ||u_k - c_k||^2 - (1/eta) phi . q
//
// over distributions q on the factor's feasible configurations, u = M q the
// per-variable marginals. The solution is sparse in q: the solver keeps a
// working set W of configurations with their weights and warm-starts every
// call from the previous one, which in DD-ADMM (consecutive calls have nearby
// inputs) usually costs 1-2 oracle calls.
//
// One iteration solves the equality-constrained problem on W, the KKT system
//
//	[G 1; 1^T 0] [q; tau] = [s; 1],   G_{yy'} = #variables on which y, y' agree,
//	                                  s_y = phi(y)/eta + sum_k c_k(y_k);
//
// if some weight turns negative it steps from the current q towards the
// solution until the first weight hits 0 and drops that configuration;
// otherwise it asks the oracle for y* = argmax_y phi(y)/eta + sum_k (c_k -
// u_k)(y_k) (the oracle gets w = eta (c - u)). That score is tau on W, so q is
// optimal when it does not exceed tau (the Frank-Wolfe gap is 0); else y*
// enters W.
//
// W is kept affinely independent (in marginal space), so the KKT matrix is
// never singular: the solver maintains the Cholesky factor of H = G + 1 1^T
// (the Gram matrix of the vectors (M_y, 1), positive definite exactly when W
// is affinely independent), updated by bordering when a configuration enters
// and by Givens rotations when one leaves. A y* whose marginals lie in the
// affine hull of W (a singular G) is not refused: writing M_y* = sum_j a_j
// M_j with sum_j a_j = 1, the direction q_y* += t, q_j -= t a_j leaves u
// unchanged and increases phi . q at rate (score(y*) - tau) eta > 0, so the
// solver moves along it until the first weight hits 0 and exchanges that
// configuration for y* (a simplex-like pivot; no tiny pivot is ever divided
// by). Hence |W| <= sum_k (card_k - 1) + 1.
//
// The number of iterations per call is capped (SetMaxIter): the solution is
// then inexact but improves on the next call, which AD3 ICML 2011 Prop. 2
// allows. Configurations with phi = -Inf never enter W (the oracle never
// returns one while a feasible configuration exists). When no configuration
// is feasible QUAD returns -Inf and leaves u unchanged.
//
// After construction QUAD does not allocate. An ActiveSet is not safe for
// concurrent use.
type ActiveSet struct {
	o       Oracle
	cards   []int
	off     []int // offsets of the flattened per-variable layout
	n       int   // arity
	dim     int   // sum of cards
	cap     int   // room allocated for W
	limit   int   // maximum |W|
	maxIter int
	tolDep  float64 // squared affine distance below which y is dependent on W

	// Working set, in insertion order: |W| = m, the rows of the factor of
	// H (packedCholesky).
	packedCholesky
	cfg  []int     // cap*n: configuration j at cfg[j*n : j*n+n]
	phi  []float64 // unscaled scores phi(y_j)
	q    []float64 // weights (a distribution on W)
	mods int       // W modifications since the last full factorisation

	// Per-call scratch, possibly shared with other slaves run by the same
	// goroutine (UseScratch); allocated on the first call otherwise.
	sc *Scratch

	converged bool
	stats     ActiveSetStats
}

// activeSetRefactorEvery is the number of working-set modifications after
// which the Cholesky factor is rebuilt from scratch, so that rounding errors
// from the incremental updates cannot accumulate without bound.
const activeSetRefactorEvery = 256

// activeSetQUAD is the QUAD of a slave solved with the active-set method
// (ActiveSet.QUAD), warm-started from the previous call, with the slave's
// MAP as oracle, and the solver itself (ActiveSet, for tuning and
// statistics). Dense embeds it; the slaves whose active set may stop on
// its iteration cap embed inexactQUAD.
type activeSetQUAD struct{ as *ActiveSet }

// ActiveSet returns the slave's QUAD solver, for tuning and statistics.
func (q activeSetQUAD) ActiveSet() *ActiveSet { return q.as }

// QUAD solves the slave's QUAD subproblem with the active-set method (see
// ActiveSet.QUAD), warm-started from the previous call.
func (q activeSetQUAD) QUAD(c []float64, eta float64, u []float64) float64 {
	return q.as.QUAD(c, eta, u)
}

// UseScratch implements ScratchUser.
func (q activeSetQUAD) UseScratch(sc *Scratch) { q.as.UseScratch(sc) }

// inexactQUAD is activeSetQUAD for a slave whose QUAD may stop on the
// active set's iteration cap (Chain, Tree, Trunc): it implements Inexact.
type inexactQUAD struct{ activeSetQUAD }

// Converged reports whether the last QUAD call reached the optimum (see
// Inexact).
func (q inexactQUAD) Converged() bool { return q.as.Converged() }

// NewActiveSet returns an active-set QUAD solver for the oracle's factor,
// with room for at most maxConfigs configurations in the working set
// (preallocated: QUAD never allocates). An affinely independent working set
// never holds more than B = sum_k (card_k - 1) + 1 configurations, so the
// capacity is min(maxConfigs, B), or min(B, DefaultActiveSetConfigs) when
// maxConfigs <= 0. When a call needs more room than that it first evicts a
// zero-weight configuration if there is one, and otherwise stops, unconverged
// (the next call continues).
func NewActiveSet(o Oracle, maxConfigs int) *ActiveSet {
	cards := append([]int(nil), o.Cards()...)
	off := Offsets(cards)
	n, dim := len(cards), off[len(cards)]
	for _, c := range cards {
		if c < 1 {
			panic("slaves: NewActiveSet: cardinality < 1")
		}
	}
	bound := dim - n + 1
	if maxConfigs <= 0 {
		maxConfigs = min(bound, DefaultActiveSetConfigs)
	}
	limit := max(1, min(maxConfigs, bound))
	s := &ActiveSet{
		o: o, cards: cards, off: off, n: n, dim: dim, limit: limit,
		maxIter: DefaultActiveSetIter,
		tolDep:  1e-9 * float64(n+1),
	}
	s.grow(min(limit, activeSetInitialConfigs))
	return s
}

// activeSetInitialConfigs is the working-set room allocated up front; it
// grows (doubling, up to the bound) the first time a call needs more, so
// memory follows the largest working set actually seen, not the worst case.
const activeSetInitialConfigs = 4

// grow reallocates the working-set storage for capacity c, keeping its
// contents. It allocates, but only when a working set outgrows every
// previous one.
func (s *ActiveSet) grow(c int) {
	s.cap = c
	s.cfg = append(make([]int, 0, c*s.n), s.cfg...)[:c*s.n]
	s.chol = append(make([]float64, 0, tri(c)), s.chol...)[:tri(c)]
	for _, v := range []*[]float64{&s.phi, &s.q, &s.invd, &s.r} {
		*v = append(make([]float64, 0, c), *v...)[:c]
	}
}

// SetMaxIter sets the cap on active-set iterations (KKT solves) per QUAD call;
// k <= 0 restores DefaultActiveSetIter.
func (s *ActiveSet) SetMaxIter(k int) {
	if k <= 0 {
		k = DefaultActiveSetIter
	}
	s.maxIter = k
}

// MaxConfigs returns the capacity of the working set.
func (s *ActiveSet) MaxConfigs() int { return s.limit }

// Reset empties the working set: the next QUAD call starts cold, from the
// oracle's MAP at c.
func (s *ActiveSet) Reset() {
	s.m = 0
	s.rOK = false
	s.mods = 0
	s.converged = false
}

// Stats returns the work counters.
func (s *ActiveSet) Stats() ActiveSetStats { return s.stats }

// ResetStats zeroes the work counters.
func (s *ActiveSet) ResetStats() { s.stats = ActiveSetStats{} }

// Converged reports whether the last QUAD call ended with an optimality
// certificate (Frank-Wolfe gap 0 up to rounding) rather than on a cap.
func (s *ActiveSet) Converged() bool { return s.converged }

// NumActive returns |W|, the number of configurations in the working set.
func (s *ActiveSet) NumActive() int { return s.m }

// Active returns configuration j of the working set (a view, valid until the
// next QUAD call) and its weight q_j; 0 <= j < NumActive().
func (s *ActiveSet) Active(j int) (y []int, q float64) {
	return s.cfg[j*s.n : j*s.n+s.n : j*s.n+s.n], s.q[j]
}

// agree returns 1 + the number of variables on which configurations i and
// the configuration y agree: H_{iy} with H = G + 1 1^T.
func (s *ActiveSet) agree(i int, y []int) float64 {
	a := 1
	ci := s.cfg[i*s.n : i*s.n+s.n]
	for k, v := range y[:len(ci)] {
		if ci[k] == v {
			a++
		}
	}
	return float64(a)
}

// depth computes l = L^{-1} h for a candidate configuration y (h_i = H_{iy})
// into s.sc.l and returns the squared affine distance of y's marginals from W's
// affine hull, (n + 1) - ||l||^2 (the Schur complement of the bordered H).
func (s *ActiveSet) depth(y []int) float64 {
	l := s.sc.l
	for i := 0; i < s.m; i++ {
		l[i] = s.agree(i, y)
	}
	return s.border(l, float64(s.n+1))
}

// push appends y to W with score phi, weight q and target score sj, using
// the bordered Cholesky row in s.sc.l (from depth) and squared pivot d2.
func (s *ActiveSet) push(y []int, phi, q, sj, d2 float64) {
	m := s.m
	copy(s.cfg[m*s.n:m*s.n+s.n], y)
	s.phi[m], s.q[m], s.sc.s[m] = phi, q, sj
	s.appendRow(s.sc.l, d2)
	s.mods++
}

// remove drops configuration j from W, restoring the Cholesky factor of the
// reduced H by Givens rotations on the columns j..m-2.
func (s *ActiveSet) remove(j int) {
	m, n := s.m, s.n
	copy(s.cfg[j*n:], s.cfg[(j+1)*n:m*n])
	copy(s.phi[j:], s.phi[j+1:m])
	copy(s.q[j:], s.q[j+1:m])
	copy(s.sc.s[j:], s.sc.s[j+1:m])
	s.deleteRow(j, s.sc.sup)
	s.mods++
}

// refactor rebuilds the Cholesky factor of H from W. If W turns out to be
// numerically dependent (never expected), W is reset to its heaviest
// configuration.
func (s *ActiveSet) refactor() {
	s.stats.Refactors++
	s.mods = 0
	s.rOK = false
	m := s.m
	for i := 1; i < m; i++ {
		yi := s.cfg[i*s.n : i*s.n+s.n]
		row := s.chol[tri(i) : tri(i)+i]
		for k := range row {
			row[k] = s.agree(k, yi)
		}
	}
	if s.factorRows(0, float64(s.n+1), s.tolDep) {
		return
	}
	best := heaviest(s.q[:m])
	copy(s.cfg[:s.n], s.cfg[best*s.n:best*s.n+s.n])
	s.phi[0], s.sc.s[0], s.q[0] = s.phi[best], s.sc.s[best], 1
	s.restart(float64(s.n + 1))
}

// indexOf returns the position of y in W, or -1.
func (s *ActiveSet) indexOf(y []int) int {
	n := s.n
	for j := 0; j < s.m; j++ {
		cj := s.cfg[j*n : j*n+n]
		same := true
		for k, v := range cj {
			if y[k] != v {
				same = false
				break
			}
		}
		if same {
			return j
		}
	}
	return -1
}

// target returns s_y = phi/eta + sum_k c_k(y_k).
func (s *ActiveSet) target(y []int, phi float64, c []float64, eta float64) float64 {
	v := phi / eta
	for k, yk := range y {
		v += c[s.off[k]+yk]
	}
	return v
}

// marginals writes u = M q into s.sc.u.
func (s *ActiveSet) marginals() {
	u := s.sc.u
	for i := range u {
		u[i] = 0
	}
	n := s.n
	for j := 0; j < s.m; j++ {
		qj := s.q[j]
		if qj == 0 {
			continue
		}
		for k, yk := range s.cfg[j*n : j*n+n] {
			u[s.off[k]+yk] += qj
		}
	}
}

// QUAD solves the QUAD subproblem (see the type's documentation and
// Slave.QUAD) for targets c (flattened like Cards) and eta > 0, warm-started
// from the previous call. It writes the marginals into u (which may alias c)
// and returns phi . q, or -Inf, leaving u unchanged, when no configuration is
// feasible.
func (s *ActiveSet) QUAD(c []float64, eta float64, u []float64) float64 {
	s.stats.Calls++
	s.converged = false
	if s.sc == nil {
		s.sc = new(Scratch)
	}
	s.sc.ensure(s.dim, s.n, s.limit)
	c = c[:s.dim]
	u = u[:s.dim]
	if s.mods >= activeSetRefactorEvery {
		s.refactor()
	}
	if s.m == 0 {
		// Cold start: the MAP at c (the solution as eta -> 0).
		for i, v := range c {
			s.sc.w[i] = eta * v
		}
		s.stats.OracleCalls++
		if v := s.o.MAP(s.sc.w, s.sc.y); math.IsInf(v, -1) || math.IsNaN(v) {
			return math.Inf(-1)
		}
		phi := s.o.Score(s.sc.y)
		if math.IsInf(phi, -1) {
			return math.Inf(-1)
		}
		s.push(s.sc.y, phi, 1, 0, float64(s.n+1))
	}
	for j := 0; j < s.m; j++ {
		s.sc.s[j] = s.target(s.cfg[j*s.n:j*s.n+s.n], s.phi[j], c, eta)
	}

	solved := false // s.q equals the equality-constrained solution on W
	uOK := false    // s.sc.u = M s.q
	tau := 0.0
	for solves := 0; ; {
		if !solved {
			if solves == s.maxIter {
				s.stats.Capped++
				break
			}
			solves++
			s.stats.Iters++
			// Step 1 (notes, "Dense factors"): the KKT solve on W.
			tau = s.solveKKT(s.sc.s, s.sc.qh)
			// Step 2: ratio test from q towards the equality solution qh.
			if jb := stepTowards(s.q[:s.m], s.sc.qh); jb >= 0 {
				s.stats.Drops++
				s.remove(jb)
				uOK = false
				continue
			}
			solved = true
		}
		// Step 3: optimality check with the MAP oracle, in eta-scaled units:
		// the oracle maximises phi(y) + eta (c - u)(y).
		s.marginals()
		uOK = true
		for i, v := range c {
			s.sc.w[i] = eta * (v - s.sc.u[i])
		}
		s.stats.OracleCalls++
		if v := s.o.MAP(s.sc.w, s.sc.y); math.IsInf(v, -1) || math.IsNaN(v) {
			break
		}
		phi := s.o.Score(s.sc.y)
		val := phi / eta
		for k, yk := range s.sc.y {
			val += c[s.off[k]+yk] - s.sc.u[s.off[k]+yk]
		}
		if val <= tau+1e-12*(1+math.Abs(tau)+math.Abs(val)) || s.indexOf(s.sc.y) >= 0 {
			s.converged = true
			break
		}
		sy := s.target(s.sc.y, phi, c, eta)
		if d2 := s.depth(s.sc.y); d2 > s.tolDep {
			// Affinely independent: y* enters with weight 0.
			if s.m == s.cap && s.cap < s.limit {
				s.grow(min(2*s.cap, s.limit))
			}
			if s.m == s.cap {
				if !s.evictZero() {
					s.stats.Capped++
					break
				}
				d2 = s.depth(s.sc.y)
			}
			s.push(s.sc.y, phi, 0, sy, d2)
		} else {
			// Dependent (singular G): exchange along the null-space
			// direction, u unchanged.
			if !s.exchange(phi, sy) {
				s.stats.Capped++
				break
			}
			s.stats.Exchanges++
			uOK = false
		}
		solved = false
	}
	if !uOK {
		s.marginals()
	}
	copy(u, s.sc.u)
	phiq := 0.0
	for j, qj := range s.q[:s.m] {
		phiq += qj * s.phi[j]
	}
	return phiq
}

// evictZero removes a zero-weight configuration from W to make room,
// reporting whether there was one.
func (s *ActiveSet) evictZero() bool {
	j := firstZero(s.q[:s.m])
	if j >= 0 {
		s.remove(j)
	}
	return j >= 0
}

// exchange handles an oracle configuration s.sc.y (score phi, target sy) whose
// marginals lie in the affine hull of W: with s.sc.l = L^{-1} h from depth,
// a = H^{-1} h are its affine coordinates (M_y = sum_j a_j M_j, sum_j a_j =
// 1). Moving q_y += t, q_j -= t a_j keeps u and improves the objective; t
// stops at the first weight to hit 0, whose configuration y replaces. It
// reports false when no weight blocks (a numerical breakdown; W unchanged).
func (s *ActiveSet) exchange(phi, sy float64) bool {
	m := s.m
	a := s.sc.l[:m]
	s.backward(a, a)
	t, jb, sum := ratioStep(s.q[:m], a)
	if jb < 0 {
		return false
	}
	s.remove(jb)
	d2 := s.depth(s.sc.y)
	if !(d2 > s.tolDep) {
		// Cannot happen in exact arithmetic (a_jb != 0); restart from y.
		s.m = 0
		s.push(s.sc.y, phi, 1, sy, float64(s.n+1))
		return true
	}
	s.push(s.sc.y, phi, t, sy, d2)
	rescale(s.q[:s.m], sum)
	return true
}

// Scratch is per-call working space of active-set solvers (ActiveSet, and
// the Potts slave's compact one). Slaves that are never solved concurrently
// (the engine runs each chunk of slaves on one goroutine at a time) can share
// one, so that memory for scratch does not grow with the number of slaves.
type Scratch struct {
	u, w          []float64 // marginals and oracle scores (sum of cards)
	s, qh, l, sup []float64 // per working-set entry
	y             []int     // one configuration

	potts pottsWork // Potts.QUAD's working space and work counters
}

// ensure sizes the scratch for a factor with dim flattened entries, n
// variables and working sets of up to limit configurations (exact
// lengths, so that ranging over them is right). It allocates only when the
// scratch grows.
func (sc *Scratch) ensure(dim, n, limit int) {
	grow := func(v *[]float64, k int) {
		if cap(*v) < k {
			*v = make([]float64, k)
		}
		*v = (*v)[:k]
	}
	grow(&sc.u, dim)
	grow(&sc.w, dim)
	grow(&sc.s, limit)
	grow(&sc.qh, limit)
	grow(&sc.l, limit)
	grow(&sc.sup, limit)
	if cap(sc.y) < n {
		sc.y = make([]int, n)
	}
	sc.y = sc.y[:n]
}

// UseScratch makes the solver use sc, shared with other solvers that are
// never called concurrently with it.
func (s *ActiveSet) UseScratch(sc *Scratch) { s.sc = sc }
