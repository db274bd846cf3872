package slaves_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/slaves"
	"github.com/ddrun/ddrun/slaves/slavetest"
)

// pottsTable returns the dense table of a Potts factor.
func pottsTable(L int, w float64) []float64 {
	t := make([]float64, L*L)
	for k := 0; k < L; k++ {
		t[k*L+k] = w
	}
	return t
}

// The O(L) MAP against Dense enumeration of the same table (and brute force),
// with attractive, repulsive and zero couplings, L = 1, and many ties.
func TestPottsMAPvsDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(301, 302))
	for it := 0; it < 5000 && !t.Failed(); it++ {
		L := 1 + rng.IntN(7)
		var W float64
		switch it % 4 {
		case 0:
			W = float64(rng.IntN(5) - 2) // ties with the integer scores below
		case 1:
			W = 0
		default:
			W = 6*rng.Float64() - 3
		}
		w := randWeights(rng, 2*L, it%3 == 0, 2)
		p := slaves.NewPotts(L, W)
		d := slaves.NewDense([]int{L, L}, pottsTable(L, W))
		y, yd := make([]int, 2), make([]int, 2)
		got, want := p.MAP(w, y), d.MAP(w, yd)
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("L %d W %v w %v: Potts MAP %v %v, Dense %v %v", L, W, w, got, y, want, yd)
		}
		if v := p.Score(y) + w[y[0]] + w[L+y[1]]; math.Abs(v-got) > 1e-12 {
			t.Fatalf("Potts MAP returned %v but %v scores %v", got, y, v)
		}
		if bv, _ := slavetest.BruteMAP(p.Cards(), p.Score, w); math.Abs(bv-got) > 1e-12 {
			t.Fatalf("Potts MAP %v, brute force %v", got, bv)
		}
	}
}

// QUAD against the reference, and against Dense on the same table.
func TestPottsQUADRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(311, 312))
	cases := slavetest.Trials(3000, 500)
	var errs asErrs
	maxDiff := 0.0
	var total slaves.ActiveSetStats
	for it := 0; it < cases && !t.Failed(); it++ {
		L := 1 + rng.IntN(6)
		W := 8*rng.Float64() - 4
		eta := []float64{0.1, 1, 10}[it%3]
		c := make([]float64, 2*L)
		for i := range c {
			if it%2 == 0 {
				c[i] = 6*rng.Float64() - 3
			} else {
				c[i] = 1.4*rng.Float64() - 0.2
			}
		}
		p := slaves.NewPotts(L, W)
		u := make([]float64, 2*L)
		var phiq float64
		if it%4 < 2 {
			p.SetMaxIter(1000)
			phiq = p.QUAD(c, eta, u)
		} else {
			phiq, _ = asUntilStable(p, c, eta, u, 100)
		}
		asCheckState(t, p, p, c, u, phiq)
		errs.add(t, p.Cards(), p.Score, c, eta, u, phiq)
		d := slaves.NewDense([]int{L, L}, pottsTable(L, W))
		ud := make([]float64, 2*L)
		asUntilStable(d, c, eta, ud, 100)
		for i := range u {
			maxDiff = math.Max(maxDiff, math.Abs(u[i]-ud[i]))
		}
		st := p.Stats()
		total.Drops += st.Drops
		total.Exchanges += st.Exchanges
	}
	t.Logf("%d cases: max |u - ref| %.3g, max |obj - ref| %.3g, max |u - dense| %.3g; drops %d exchanges %d",
		cases, errs.u, errs.obj, maxDiff, total.Drops, total.Exchanges)
	if maxDiff > 1e-9 {
		t.Errorf("Potts and Dense QUAD differ by %.3g", maxDiff)
	}
}

func TestPottsNewPanics(t *testing.T) {
	for _, tc := range []struct {
		L int
		w float64
	}{{0, 1}, {3, math.NaN()}, {3, math.Inf(1)}} {
		mustPanic(t, func() { slaves.NewPotts(tc.L, tc.w) }, "NewPotts(%d, %v)", tc.L, tc.w)
	}
}

var pottsBenchL = []struct {
	name string
	L    int
}{{"L4", 4}, {"L8", 8}}

func BenchmarkPottsMAP(b *testing.B) {
	for _, bl := range pottsBenchL {
		b.Run(bl.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(5, 6))
			p := slaves.NewPotts(bl.L, 0.5)
			benchMAP(b, p.MAP, rng, 2*bl.L, 2)
		})
	}
}

// Warm-started QUAD on inputs jittering around a base point (see
// asBenchWarm), for a small and a larger jitter, and on the input sequences of
// a real DD-ADMM run on a Potts grid (pottsADMMTrace), each for the Potts
// slave's compact solver and, as the baseline, the generic ActiveSet with the
// Potts MAP as oracle (what Potts used before).
func BenchmarkPottsQUAD(b *testing.B) {
	for _, bl := range pottsBenchL {
		for _, jit := range []struct {
			name string
			v    float64
		}{{"jitter1e-3", 1e-3}, {"jitter1e-1", 1e-1}} {
			for _, generic := range []bool{false, true} {
				b.Run(bl.name+"/"+jit.name+pottsBenchKind(generic), func(b *testing.B) {
					rng := rand.New(rand.NewPCG(7, 8))
					p := slaves.NewPotts(bl.L, 0.3)
					if generic {
						as := slaves.NewActiveSet(p, 0)
						asBenchWarm(b, as, as, 2*bl.L, jit.v, rng)
						return
					}
					asBenchWarm(b, p, p, 2*bl.L, jit.v, rng)
				})
			}
		}
		for _, generic := range []bool{false, true} {
			b.Run(bl.name+"/admm"+pottsBenchKind(generic), func(b *testing.B) {
				tr := pottsADMMTrace(12, bl.L, 200, 1)
				pottsBenchTrace(b, tr, generic)
			})
		}
	}
}

func pottsBenchKind(generic bool) string {
	if generic {
		return "/generic"
	}
	return "/compact"
}

// Warm QUAD calls over many slaves, as the engine makes them on a large grid
// (about a 160x160 grid's edges): the slaves' state does not fit in the
// caches, so its size and layout count. The slaves are visited in order but
// about half of them, a fixed random choice, are skipped (the engine does not
// solve again a slave whose inputs did not change), each with a fixed base
// point plus a small perturbation (from a pool shared by all slaves), chunks
// of 128 slaves sharing a Scratch as in the engine; compact Potts slaves
// against generic ActiveSets. Base points are "settled" (one
// label per variable clearly ahead, small working sets, as in most of a
// DD-ADMM run) or "spread" (uniform in [-0.2, 1.2]: working sets of 4-7
// configurations, where the compact solver's per-call refactorisation
// costs the most).
func BenchmarkPottsQUADMany(b *testing.B) {
	const n, chunk, pool = 50000, 128, 64
	for _, bl := range pottsBenchL {
		for _, regime := range []string{"settled", "spread"} {
			for _, generic := range []bool{false, true} {
				b.Run(bl.name+"/"+regime+pottsBenchKind(generic), func(b *testing.B) {
					pottsBenchMany(b, bl.L, n, chunk, pool, regime == "spread", generic)
				})
			}
		}
	}
}

func pottsBenchMany(b *testing.B, L, n, chunk, pool int, spread, generic bool) {
	rng := rand.New(rand.NewPCG(9, 10))
	type solver interface {
		asQUADer
		UseScratch(*slaves.Scratch)
	}
	sl := make([]solver, n)
	base := make([]float64, n*2*L)
	var sc *slaves.Scratch
	for j := range sl {
		p := slaves.NewPotts(L, 2*rng.Float64()-1)
		sl[j] = p
		if generic {
			sl[j] = slaves.NewActiveSet(p, 0)
		}
		if j%chunk == 0 {
			sc = new(slaves.Scratch)
		}
		sl[j].UseScratch(sc)
	}
	for i := range base {
		if spread {
			base[i] = 1.4*rng.Float64() - 0.2
		} else {
			base[i] = 0.3 * rng.Float64()
		}
	}
	if !spread {
		for v := 0; v < 2*n; v++ {
			base[v*L+rng.IntN(L)] += 1
		}
	}
	jit := make([]float64, pool*2*L)
	for i := range jit {
		jit[i] = 1e-3 * (2*rng.Float64() - 1)
	}
	var order []int
	for j := 0; j < n; j++ {
		if rng.IntN(2) == 0 {
			order = append(order, j)
		}
	}
	c := make([]float64, 2*L)
	u := make([]float64, 2*L)
	call := func(i int) {
		j := order[i%len(order)]
		bj := base[j*2*L : (j+1)*2*L]
		jj := jit[(i%pool)*2*L : (i%pool+1)*2*L]
		for k := range c {
			c[k] = bj[k] + jj[k]
		}
		sl[j].QUAD(c, 1, u)
	}
	for i := 0; i < 3*n; i++ {
		call(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		call(i)
	}
}

// pottsTrace is the recorded sequence of QUAD inputs of every edge factor of a
// DD-ADMM run, iteration-major.
type pottsTrace struct {
	L     int
	eta   float64
	w     []float64   // coupling per edge
	iters int         // ADMM iterations recorded
	c     [][]float64 // c[it*len(w)+a], 2L entries each
}

// pottsADMMTrace runs DD-ADMM (AD3 ICML 2011 Alg. 2, tau = 1) on an n x n
// grid of L-label variables with unaries in [-1,1] and Potts couplings in
// [-1,1] (frustrated), one slave per edge, and records every QUAD input.
func pottsADMMTrace(n, L, iters int, seed uint64) *pottsTrace {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	nv := n * n
	theta := make([]float64, nv*L)
	for i := range theta {
		theta[i] = 2*rng.Float64() - 1
	}
	var ends [][2]int
	for r := 0; r < n; r++ {
		for q := 0; q < n; q++ {
			v := r*n + q
			if q+1 < n {
				ends = append(ends, [2]int{v, v + 1})
			}
			if r+1 < n {
				ends = append(ends, [2]int{v, v + n})
			}
		}
	}
	ne := len(ends)
	tr := &pottsTrace{L: L, eta: 1, w: make([]float64, ne), iters: iters}
	deg := make([]float64, nv)
	sl := make([]*slaves.Potts, ne)
	for a, e := range ends {
		tr.w[a] = 2*rng.Float64() - 1
		sl[a] = slaves.NewPotts(L, tr.w[a])
		deg[e[0]]++
		deg[e[1]]++
	}
	mu := make([]float64, nv*L)
	for i := range mu {
		mu[i] = 1 / float64(L)
	}
	lam := make([]float64, ne*2*L)
	nu := make([]float64, ne*2*L)
	sum := make([]float64, nv*L)
	eta := tr.eta
	for it := 0; it < iters; it++ {
		for a, e := range ends {
			c := make([]float64, 2*L)
			for s := 0; s < 2; s++ {
				v := e[s]
				for k := 0; k < L; k++ {
					c[s*L+k] = (theta[v*L+k]/deg[v]+lam[(a*2+s)*L+k])/eta + mu[v*L+k]
				}
			}
			tr.c = append(tr.c, c)
			sl[a].QUAD(c, eta, nu[a*2*L:(a+1)*2*L])
		}
		for i := range sum {
			sum[i] = 0
		}
		for a, e := range ends {
			for s := 0; s < 2; s++ {
				for k := 0; k < L; k++ {
					sum[e[s]*L+k] += nu[(a*2+s)*L+k]
				}
			}
		}
		for v := 0; v < nv; v++ {
			for k := 0; k < L; k++ {
				mu[v*L+k] = sum[v*L+k] / deg[v]
			}
		}
		for a, e := range ends {
			for s := 0; s < 2; s++ {
				for k := 0; k < L; k++ {
					j := (a*2+s)*L + k
					lam[j] -= eta * (nu[j] - mu[e[s]*L+k])
				}
			}
		}
	}
	return tr
}

// pottsBenchTrace replays a recorded DD-ADMM run on fresh solvers sharing
// one Scratch, as the engine's slaves of a chunk do, one QUAD per benchmark
// op (starting over, cold, after the last iteration): Potts slaves, or with
// generic the ActiveSet of the Potts oracle.
func pottsBenchTrace(b *testing.B, tr *pottsTrace, generic bool) {
	ne := len(tr.w)
	type solver interface {
		asQUADer
		Reset()
		UseScratch(*slaves.Scratch)
		Stats() slaves.ActiveSetStats
	}
	sl := make([]solver, ne)
	sc := new(slaves.Scratch)
	for a := range sl {
		p := slaves.NewPotts(tr.L, tr.w[a])
		sl[a] = p
		if generic {
			sl[a] = slaves.NewActiveSet(p, 0)
		}
		sl[a].UseScratch(sc)
	}
	u := make([]float64, 2*tr.L)
	b.ReportAllocs()
	b.ResetTimer()
	j := 0
	for i := 0; i < b.N; i++ {
		if j == len(tr.c) {
			j = 0
			for _, p := range sl {
				p.Reset()
			}
		}
		sl[j%ne].QUAD(tr.c[j], tr.eta, u)
		j++
	}
	b.StopTimer()
	var st slaves.ActiveSetStats
	if generic {
		for _, s := range sl {
			t := s.Stats()
			st.Calls += t.Calls
			st.OracleCalls += t.OracleCalls
			st.Iters += t.Iters
		}
	} else {
		st = sl[0].Stats() // the shared scratch's: all slaves' work
	}
	b.ReportMetric(float64(st.OracleCalls)/float64(st.Calls), "oracle/op")
	b.ReportMetric(float64(st.Iters)/float64(st.Calls), "solves/op")
}

// The DD-ADMM run of the benchmark converges: replaying it, the late
// iterations are cheap (about one oracle call per QUAD) and every late QUAD
// solution passes the KKT check.
func TestPottsADMMTrace(t *testing.T) {
	tr := pottsADMMTrace(6, 4, 150, 3)
	ne := len(tr.w)
	sl := make([]*slaves.Potts, ne)
	for a := range sl {
		sl[a] = slaves.NewPotts(tr.L, tr.w[a])
	}
	u := make([]float64, 2*tr.L)
	var lateCalls, lateQUAD int64
	for it := 0; it < tr.iters; it++ {
		for a := 0; a < ne; a++ {
			as := sl[a]
			before := as.Stats().OracleCalls
			c := tr.c[it*ne+a]
			phiq := sl[a].QUAD(c, tr.eta, u)
			if it >= tr.iters-50 {
				lateCalls += as.Stats().OracleCalls - before
				lateQUAD++
				if as.Converged() {
					slavetest.CheckKKT(t, sl[a].Cards(), sl[a].Score, c, tr.eta, u, phiq, 1e-9)
				}
			}
		}
	}
	var capped int64
	for _, p := range sl {
		capped += p.Stats().Capped
	}
	avg := float64(lateCalls) / float64(lateQUAD)
	t.Logf("late iterations: %.3f oracle calls per QUAD; capped calls overall %d", avg, capped)
	if avg > 2 {
		t.Errorf("%.2f oracle calls per late QUAD, want <= 2", avg)
	}
}
