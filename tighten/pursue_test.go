package tighten

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// ring is a cycle of n binary variables whose edges reward disagreement
// (weight 1 when the ends differ), with small random unaries and a chord
// structure-free layout, shuffled variable numbers so the cycle is not in
// index order.
func ring(rng *rand.Rand, n int) (*model.Model, []int) {
	m := model.New(slicesRepeat(2, n))
	perm := rng.Perm(n)
	for i := range n {
		u, v := perm[i], perm[(i+1)%n]
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{u, v}, Table: []float64{0, 1, 1, 0}})
	}
	for k := range m.Unary {
		m.Unary[k] = 0.01 * rng.Float64()
	}
	return m, perm
}

func slicesRepeat(x, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = x
	}
	return s
}

// lpOf is the local-polytope LP of m and its optimal node marginals.
func lpOf(t *testing.T, m *model.Model) (float64, []float64) {
	t.Helper()
	v, mu, err := oracle.LocalPolytopeLPSolution(m)
	if err != nil {
		t.Fatal(err)
	}
	return v, mu
}

func sameScores(t *testing.T, name string, m, out *model.Model) {
	t.Helper()
	for x := range oracle.Assignments(m.Cards) {
		a, b := m.Score(x), out.Score(x)
		if !(a == b || math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) || (math.IsInf(a, -1) && math.IsInf(b, -1))) {
			t.Fatalf("%s: score of %v: %v becomes %v", name, x, a, b)
		}
	}
}

// An odd ring of repulsive edges is frustrated: its LP is one edge above
// the MAP. Pursuit under the LP's own marginals finds the whole ring (5, 7
// and 9 variables: longer than Cycles' 3- and 4-cycles), and the
// regrouped model has the same scores and the MAP as its LP.
func TestPursueClosesOddRings(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{3, 5, 7, 9} {
		m, _ := ring(rng, n)
		best, _ := oracle.BruteMAP(t, m)
		lp, mu := lpOf(t, m)
		if lp < best+0.5 {
			t.Fatalf("ring %d: LP %v, MAP %v: not frustrated", n, lp, best)
		}
		// Cycles (3- and 4-cycles) finds nothing beyond the triangle.
		if c, _, _ := FindCycles(m, Options{}); n > 4 && len(c) != 0 {
			t.Fatalf("ring %d: FindCycles found %v", n, c)
		}
		p, err := NewPursuit(m, PursueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, added, err := p.Round(Signal{Mu: mu})
		if err != nil {
			t.Fatal(err)
		}
		if added != 1 || len(p.Cycles()[0]) != n {
			t.Fatalf("ring %d: added %d cycles %v", n, added, p.Cycles())
		}
		sameScores(t, "ring", m, out)
		lp2, mu2 := lpOf(t, out)
		if math.Abs(lp2-best) > 1e-7 {
			t.Errorf("ring %d: LP %v after pursuit, MAP %v", n, lp2, best)
		}
		// A second round has nothing new and changes nothing.
		out2, added2, err := p.Round(Signal{Mu: mu2})
		if err != nil || added2 != 0 || len(out2.Factors) != len(out.Factors) {
			t.Errorf("ring %d: second round added %d (%v)", n, added2, err)
		}
	}
}

// An even ring of repulsive edges is not frustrated: nothing is added.
func TestPursueLeavesEvenRings(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{4, 6, 8} {
		m, _ := ring(rng, n)
		_, added, err := Pursue(m, Signal{}, PursueOptions{})
		if err != nil || added != 0 {
			t.Errorf("ring %d: added %d (%v)", n, added, err)
		}
	}
}

// On frustrated grids and random tiny models, rounds of pursuit fed with
// the LP's marginals keep every assignment's score, never loosen the LP,
// keep it above the MAP, and tighten it strictly on some grid with cycles
// longer than 4.
func TestPursueRoundsTighten(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var ms []*model.Model
	for seed := int64(1); seed <= 5; seed++ {
		ms = append(ms, generate.Ising(generate.GridOptions{Height: 3, Width: 4, Rho: 3, Seed: seed}))
	}
	ms = append(ms, generate.Potts(generate.GridOptions{Height: 3, Width: 3, Labels: 3, Rho: 2, Seed: 9}))
	for k := 0; k < 20; k++ {
		ms = append(ms, oracle.RandomTinyModel(rng, oracle.TinyOptions{MaxVars: 7, MaxFactors: 14}))
	}
	tighter, long := 0, 0
	for g, m := range ms {
		best, _ := oracle.BruteMAP(t, m)
		lp, mu := lpOf(t, m)
		p, err := NewPursuit(m, PursueOptions{MaxAdd: 3})
		if err != nil {
			t.Fatal(err)
		}
		first := lp
		for round := 0; round < 4 && mu != nil; round++ {
			out, added, err := p.Round(Signal{Mu: mu})
			if err != nil {
				t.Fatal(err)
			}
			if added == 0 {
				break
			}
			sameScores(t, "model", m, out)
			next, nmu := lpOf(t, out)
			tol := 1e-7 * math.Max(1, math.Abs(lp))
			if next > lp+tol || next < best-tol {
				t.Fatalf("model %d round %d: LP %v becomes %v, MAP %v", g, round, lp, next, best)
			}
			lp, mu = next, nmu
		}
		if lp < first-1e-6 {
			tighter++
		}
		for _, c := range p.Cycles() {
			if len(c) > 4 {
				long++
			}
		}
		t.Logf("model %d: MAP %.4f LP %.4f after pursuit %.4f, %d cycles", g, best, first, lp, len(p.Cycles()))
	}
	if tighter == 0 || long == 0 {
		t.Errorf("pursuit tightened %d models, found %d cycles longer than 4", tighter, long)
	}
}

func TestPursueRejects(t *testing.T) {
	m := generate.Ising(generate.GridOptions{Height: 2, Width: 3, Rho: 1, Seed: 1})
	if _, _, err := Pursue(m, Signal{Mu: []float64{1}}, PursueOptions{}); err == nil {
		t.Error("short marginals: no error")
	}
	mu := make([]float64, len(m.Unary))
	mu[3] = math.NaN()
	if _, _, err := Pursue(m, Signal{Mu: mu}, PursueOptions{}); err == nil {
		t.Error("NaN marginal: no error")
	}
	for _, o := range []PursueOptions{{MaxAdd: -1}, {MaxTable: -1}, {MaxLen: -1}, {Integral: 1}} {
		if _, _, err := Pursue(m, Signal{}, o); err == nil {
			t.Errorf("options %+v: no error", o)
		}
	}
}

// BenchmarkPursueRound times one round of pursuit on frustrated grids of
// 40x40 binary and 30x30 4-label variables, every variable active (no
// marginals: the worst case of the search, one widest-path search per
// variable), and reports the cycles added.
func BenchmarkPursueRound(b *testing.B) {
	for _, c := range []struct {
		name string
		m    *model.Model
	}{
		{"ising40", generate.Ising(generate.GridOptions{Height: 40, Width: 40, Rho: 2, Seed: 1})},
		{"potts30L4", generate.Potts(generate.GridOptions{Height: 30, Width: 30, Labels: 4, Rho: 2, Seed: 1})},
	} {
		b.Run(c.name, func(b *testing.B) {
			added := 0
			for b.Loop() {
				_, n, err := Pursue(c.m, Signal{}, PursueOptions{MaxAdd: 50})
				if err != nil {
					b.Fatal(err)
				}
				added = n
			}
			b.ReportMetric(float64(added), "cycles")
		})
	}
}
