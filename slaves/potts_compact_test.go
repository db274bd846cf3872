package slaves_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/slaves"
	"github.com/ddrun/ddrun/slaves/slavetest"
)

// Tests of the Potts slave's compact QUAD solver against the generic
// ActiveSet with the Potts MAP as oracle (the implementation Potts used
// before): same algorithm, so the same results up to rounding.

// pottsCmpTol is how far the compact and the generic solver may drift apart:
// they differ only in the rounding of the Cholesky factor (rebuilt from the
// working set at each call instead of updated in place).
const pottsCmpTol = 1e-12

// pottsCmp drives a compact Potts slave and the generic reference on the same
// inputs and compares their outputs and working sets.
type pottsCmp struct {
	p   *slaves.Potts
	ref *slaves.ActiveSet
	L   int
	u   []float64
	ur  []float64

	maxU, maxPhi float64
	calls        int
	compared     int // calls whose outputs were compared
	diverged     int // calls after which the working sets differed
}

func newPottsCmp(L int, w float64, maxIter int) *pottsCmp {
	p := slaves.NewPotts(L, w)
	ref := slaves.NewActiveSet(slaves.NewPotts(L, w), 0)
	p.SetMaxIter(maxIter)
	ref.SetMaxIter(maxIter)
	return &pottsCmp{p: p, ref: ref, L: L, u: make([]float64, 2*L), ur: make([]float64, 2*L)}
}

// sameW reports whether both working sets hold the same configurations in
// the same order, with weights within pottsCmpTol.
func (pc *pottsCmp) sameW() bool {
	if pc.p.NumActive() != pc.ref.NumActive() {
		return false
	}
	for j := 0; j < pc.p.NumActive(); j++ {
		y, q := pc.p.Active(j)
		yr, qr := pc.ref.Active(j)
		if y[0] != yr[0] || y[1] != yr[1] || !(math.Abs(q-qr) <= pottsCmpTol) {
			return false
		}
	}
	return true
}

// step solves one QUAD with both solvers. When both end with the same
// working set, the outputs must agree (the same computation up to rounding).
// Otherwise the two took different branches at a tie: at a degenerate optimum
// many configurations tie exactly for the oracle's argmax (with additive
// scores, recombining the labels of optimal configurations gives optimal
// ones), and rounding picks which enters, so the two end with different
// working sets that represent the same marginals. The outputs must still
// agree when both calls are exact (the QUAD solution u, and phi . q, are
// unique); both solvers then restart cold so that later calls compare again.
func (pc *pottsCmp) step(t *testing.T, c []float64, eta float64) {
	t.Helper()
	pc.calls++
	got := pc.p.QUAD(c, eta, pc.u)
	want := pc.ref.QUAD(c, eta, pc.ur)
	same := pc.sameW()
	conv := pc.p.Converged()
	if same && conv != pc.ref.Converged() {
		t.Fatalf("L %d call %d: converged %v, generic %v", pc.L, pc.calls, conv, pc.ref.Converged())
	}
	if !same {
		pc.diverged++
		pc.p.Reset()
		pc.ref.Reset()
		if !conv || !pc.ref.Converged() {
			return
		}
	}
	pc.compared++
	pc.maxPhi = math.Max(pc.maxPhi, math.Abs(got-want))
	if !(math.Abs(got-want) <= pottsCmpTol*(1+math.Abs(want))) {
		t.Fatalf("L %d call %d: phi.q %v, generic %v", pc.L, pc.calls, got, want)
	}
	for i := range pc.u {
		d := math.Abs(pc.u[i] - pc.ur[i])
		pc.maxU = math.Max(pc.maxU, d)
		if !(d <= pottsCmpTol) {
			t.Fatalf("L %d call %d: u[%d] = %v, generic %v", pc.L, pc.calls, i, pc.u[i], pc.ur[i])
		}
	}
}

// Random warm sequences, as in DD-ADMM: inputs that settle with jitter, jumps
// (as after an eta change), exact and capped calls, every label count class
// of the configuration packing (and the capacity cap of 64 configurations),
// and several slaves of different L sharing one Scratch, interleaved.
func TestPottsCompactVsGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(321, 322))
	labels := []int{1, 2, 3, 4, 5, 8, 8, 12, 16, 17, 40, 300}
	trials := slavetest.Trials(60, 15)
	var maxU, maxPhi float64
	calls, compared, diverged := 0, 0, 0
	for trial := 0; trial < trials && !t.Failed(); trial++ {
		maxIter := []int{0, 1000, 2, 5}[trial%4]
		shared := trial%3 == 0
		var sc *slaves.Scratch
		if shared {
			sc = new(slaves.Scratch)
		}
		pcs := make([]*pottsCmp, 1+rng.IntN(3))
		bases := make([][]float64, len(pcs))
		for k := range pcs {
			L := labels[rng.IntN(len(labels))]
			pcs[k] = newPottsCmp(L, 6*rng.Float64()-3, maxIter)
			if shared {
				pcs[k].p.UseScratch(sc)
			}
			bases[k] = make([]float64, 2*L)
		}
		eta := []float64{0.1, 1, 10}[trial%3]
		for step := 0; step < 50 && !t.Failed(); step++ {
			for k, pc := range pcs {
				base := bases[k]
				if step%17 == 0 {
					// A jump: a new base point, near the marginals or far.
					lo, hi := -0.2, 1.2
					if rng.IntN(2) == 0 {
						lo, hi = -3, 3
					}
					for i := range base {
						base[i] = lo + (hi-lo)*rng.Float64()
					}
					if step > 0 && rng.IntN(2) == 0 {
						eta *= []float64{0.5, 2}[rng.IntN(2)]
					}
				}
				amp := 0.5 * math.Pow(0.8, float64(step%17))
				c := make([]float64, len(base))
				for i := range c {
					c[i] = base[i] + amp*(2*rng.Float64()-1)
				}
				pc.step(t, c, eta)
			}
		}
		for _, pc := range pcs {
			maxU, maxPhi = math.Max(maxU, pc.maxU), math.Max(maxPhi, pc.maxPhi)
			calls += pc.calls
			compared += pc.compared
			diverged += pc.diverged
		}
	}
	t.Logf("%d calls, %d compared, %d with diverging working sets: max |u - generic| %.3g, max |phi.q - generic| %.3g",
		calls, compared, diverged, maxU, maxPhi)
	if compared < calls*9/10 {
		t.Errorf("only %d of %d calls compared", compared, calls)
	}
}

// Many labels: the 32-bit packing of configurations (L > 65536).
func TestPottsCompactManyLabels(t *testing.T) {
	if testing.Short() {
		t.Skip("large L")
	}
	rng := rand.New(rand.NewPCG(323, 324))
	const L = 70000
	pc := newPottsCmp(L, 0.5, 1000)
	base := make([]float64, 2*L)
	for i := range base {
		base[i] = 0.1 * rng.Float64()
	}
	// A few labels near the top, so that the working set holds several.
	for _, i := range []int{3, 70, 65537, 69999, L + 3, L + 65537, L + 69998} {
		base[i] = 1 + 0.2*rng.Float64()
	}
	c := make([]float64, 2*L)
	for step := 0; step < 8 && !t.Failed(); step++ {
		for i := range c {
			c[i] = base[i] + 0.05*(2*rng.Float64()-1)
		}
		pc.step(t, c, 1)
	}
	if pc.p.NumActive() < 2 {
		t.Errorf("working set of %d: the test does not exercise the packing", pc.p.NumActive())
	}
}

// A warm QUAD call does not allocate, also with slaves of different label
// counts sharing a Scratch (once it has grown to the largest) and with large
// working sets (factorised without the small-set table).
func TestPottsCompactAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(325, 326))
	sc := new(slaves.Scratch)
	ps := []*slaves.Potts{slaves.NewPotts(8, 0.3), slaves.NewPotts(3, -1), slaves.NewPotts(12, 0.05)}
	cs := make([][]float64, len(ps))
	us := make([][]float64, len(ps))
	for k, p := range ps {
		p.UseScratch(sc)
		L := p.Cards()[0]
		cs[k] = make([]float64, 2*L)
		us[k] = make([]float64, 2*L)
		for i := range cs[k] {
			cs[k][i] = 0.2 + 0.02*rng.Float64() // flat: large working sets
		}
		p.SetMaxIter(1000)
		p.QUAD(cs[k], 1, us[k])
	}
	big := 0
	for _, p := range ps {
		big = max(big, p.NumActive())
	}
	if big < 5 {
		t.Errorf("largest working set %d: the test does not reach the general factorisation", big)
	}
	n := 0
	if a := testing.AllocsPerRun(300, func() {
		k := n % len(ps)
		n++
		cs[k][n%len(cs[k])] += 0.001 * float64(n%5-2)
		ps[k].QUAD(cs[k], 1, us[k])
	}); a != 0 {
		t.Errorf("Potts QUAD: %v allocations per warm call", a)
	}
}

// Tables of the form off + W [x = y] become Potts slaves (ForFactor) with the
// constant in MAP, Score and QUAD: against Dense on the same table and the
// brute-force reference.
func TestPottsOffsetFactor(t *testing.T) {
	rng := rand.New(rand.NewPCG(327, 328))
	for it := 0; it < 200 && !t.Failed(); it++ {
		L := 3 + rng.IntN(5)
		diag, off := 4*rng.Float64()-2, 4*rng.Float64()-2
		table := make([]float64, L*L)
		for x := 0; x < L; x++ {
			for y := 0; y < L; y++ {
				table[x*L+y] = off
				if x == y {
					table[x*L+y] = diag
				}
			}
		}
		m := model.New([]int{L, L})
		m.Factors = []model.Factor{{Kind: model.Dense, Vars: []int{0, 1}, Table: table}}
		s, err := slaves.ForFactor(m, 0)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := s.(*slaves.Potts)
		if !ok {
			t.Fatalf("ForFactor on a Potts table: %T", s)
		}
		d := slaves.NewDense([]int{L, L}, table)
		w := make([]float64, 2*L)
		for i := range w {
			w[i] = 2*rng.Float64() - 1
		}
		y, yd := make([]int, 2), make([]int, 2)
		if got, want := p.MAP(w, y), d.MAP(w, yd); math.Abs(got-want) > 1e-12 {
			t.Fatalf("MAP %v, Dense %v", got, want)
		}
		if got, want := p.Score(y), d.Score(y); got != want {
			t.Fatalf("Score(%v) %v, Dense %v", y, got, want)
		}
		c := make([]float64, 2*L)
		for i := range c {
			c[i] = 1.4*rng.Float64() - 0.2
		}
		eta := []float64{0.1, 1, 10}[it%3]
		u := make([]float64, 2*L)
		phiq, _ := asUntilStable(p, c, eta, u, 100)
		ud := make([]float64, 2*L)
		phid, _ := asUntilStable(d, c, eta, ud, 100)
		if math.Abs(phiq-phid) > 1e-9*(1+math.Abs(phid)) {
			t.Fatalf("QUAD phi.q %v, Dense %v", phiq, phid)
		}
		for i := range u {
			if math.Abs(u[i]-ud[i]) > 1e-9 {
				t.Fatalf("QUAD u %v, Dense %v", u, ud)
			}
		}
		asCheckState(t, p, p, c, u, phiq)
		slavetest.CheckQUAD(t, p.Cards(), d.Score, c, eta, u, phiq, 1e-6, 1e-9)
	}
}
