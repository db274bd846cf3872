package slaves

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The symbolic (-Inf = -M) column generation on finite chains must agree
// exactly with the plain-float one: every order is 0, and the value
// arithmetic is the same, operation by operation.
func TestChainColGenSymbolicMatchesFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for it := 0; it < 400; it++ {
		n := 1 + rng.IntN(30)
		L := 1 + rng.IntN(40)
		cards := make([]int, n)
		for k := range cards {
			cards[k] = 1 + rng.IntN(L)
		}
		off := Offsets(cards)
		em := make([][]float64, n)
		spread := []float64{0.2, 1, 5}[it%3]
		for k := range em {
			em[k] = make([]float64, cards[k])
			for x := range em[k] {
				em[k][x] = spread * rng.NormFloat64()
			}
			em[k][rng.IntN(cards[k])] += 3
		}
		tr := make([][]float64, n-1)
		for k := range tr {
			tr[k] = make([]float64, cards[k]*cards[k+1])
			for i := range tr[k] {
				tr[k][i] = 2*rng.Float64() - 1
				if it%4 == 3 {
					tr[k][i] = float64(rng.IntN(3)) // ties
				}
			}
		}
		w := make([]float64, off[n])
		for i := range w {
			w[i] = 0.3 * rng.NormFloat64()
		}
		fast := NewChain(cards, em, tr)
		sym := NewChain(cards, em, tr)
		fast.SetColGenBudget(math.Inf(1))
		sym.SetColGenBudget(math.Inf(1))
		sym.anyInf = true // force the symbolic path
		sym.greedy = -1   // with the float path's initial domains
		yf, ys := make([]int, n), make([]int, n)
		vf, vs := fast.MAP(w, yf), sym.MAP(w, ys)
		if vf != vs {
			t.Fatalf("case %d: float %v, symbolic %v", it, vf, vs)
		}
		for k := range yf {
			if yf[k] != ys[k] {
				t.Fatalf("case %d: float %v, symbolic %v", it, yf, ys)
			}
		}
		fs, ss := fast.stats, sym.stats
		fs.Work, ss.Work = 0, 0 // the symbolic path recomputes wider ranges
		if fs != ss {
			t.Fatalf("case %d: float stats %+v, symbolic %+v", it, fast.stats, sym.stats)
		}
		// Alternating symbolic and float calls on one chain (the order
		// arrays are cleared when switching back).
		sym.anyInf = false
		if v := sym.MAP(w, ys); v != vf {
			t.Fatalf("case %d: float after symbolic %v, want %v", it, v, vf)
		}
	}
}

// The row and column maxima (Alg. 2's U_tau) of shared tables are computed
// once and equal those of separate copies.
func TestChainSharedMaxima(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	tab := make([]float64, 12)
	for i := range tab {
		tab[i] = rng.NormFloat64()
	}
	tab[5] = math.Inf(-1)
	tab[0], tab[4], tab[8] = math.Inf(-1), math.Inf(-1), math.Inf(-1) // column 0 all -Inf
	cards := []int{3, 4, 3, 4, 3}
	back := make([]float64, 12)
	for i := range back {
		back[i] = rng.NormFloat64()
	}
	copyOf := func(s []float64) []float64 { return append([]float64(nil), s...) }
	shared := NewChain(cards, nil, [][]float64{tab, back, tab, back})
	sep := NewChain(cards, nil, [][]float64{copyOf(tab), copyOf(back), copyOf(tab), copyOf(back)})
	for i := range shared.rowMax {
		if shared.rowMax[i] != sep.rowMax[i] || shared.rowMaxO[i] != sep.rowMaxO[i] ||
			shared.colMax[i] != sep.colMax[i] || shared.colMaxO[i] != sep.colMaxO[i] {
			t.Fatalf("maxima differ at %d", i)
		}
	}
	if sep.colMaxO[sep.off[1]] != 1 || sep.colMaxO[sep.off[3]] != 1 {
		t.Errorf("all -Inf column: order %d, want 1", sep.colMaxO[sep.off[1]])
	}
	for i, tf := range shared.tinf {
		if tf != (i%2 == 0) {
			t.Errorf("tinf[%d] = %v", i, tf)
		}
	}
}

// Pure column generation with every initialisation policy (greedy path or
// not) and with the symbolic arithmetic forced, against Viterbi, on chains
// with hard constraints of several shapes: random, sparse columns (one or
// two allowed predecessors), sparse rows, and rows or columns entirely -Inf.
func TestChainColGenPolicies(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	ninf := math.Inf(-1)
	for it := 0; it < 8000; it++ {
		// Mostly tiny chains (where rare interactions of the repairs show
		// up), some larger ones.
		n, L := 1+rng.IntN(8), 1+rng.IntN(6)
		if it%10 == 0 {
			n, L = 1+rng.IntN(25), 1+rng.IntN(30)
		}
		cards := make([]int, n)
		for k := range cards {
			cards[k] = L
			if it%3 == 0 {
				cards[k] = 1 + rng.IntN(L)
			}
		}
		off := Offsets(cards)
		em := make([][]float64, n)
		for k := range em {
			em[k] = make([]float64, cards[k])
			for x := range em[k] {
				em[k][x] = rng.NormFloat64()
				if it%7 == 0 && rng.IntN(6) == 0 {
					em[k][x] = ninf
				}
			}
			em[k][rng.IntN(cards[k])] += 4
		}
		tr := make([][]float64, n-1)
		shape := it % 5
		for k := range tr {
			L0, L1 := cards[k], cards[k+1]
			tr[k] = make([]float64, L0*L1)
			for x := 0; x < L0; x++ {
				for xp := 0; xp < L1; xp++ {
					v := 2*rng.Float64() - 1
					switch shape {
					case 0: // random, dense
						if rng.IntN(3) == 0 {
							v = ninf
						}
					case 1: // sparse columns: x' only after x' or x'-1
						if x != xp && x != xp-1 {
							v = ninf
						}
					case 2: // sparse rows: x only before x or x+1 (mod L1)
						if xp != x%L1 && xp != (x+1)%L1 {
							v = ninf
						}
					case 3: // some rows and columns entirely forbidden
						if x%5 == 4 || xp%4 == 3 {
							v = ninf
						}
					case 4: // very sparse random
						if rng.IntN(8) != 0 {
							v = ninf
						}
					}
					tr[k][x*L1+xp] = v
				}
			}
		}
		w := make([]float64, off[n])
		for i := range w {
			w[i] = 0.5 * rng.NormFloat64()
		}
		v := NewChain(cards, em, tr)
		v.SetAlgorithm(ChainViterbi)
		y := make([]int, n)
		want := v.MAP(w, y)
		for _, pol := range []struct {
			greedy int8
			sym    bool
		}{{0, false}, {1, false}, {-1, false}, {1, true}, {-1, true}} {
			c := NewChain(cards, em, tr)
			c.SetColGenBudget(math.Inf(1))
			c.greedy = pol.greedy
			if pol.sym {
				c.anyInf = true
			}
			got := c.MAP(w, y)
			if math.IsInf(want, -1) {
				if !math.IsInf(got, -1) {
					t.Fatalf("case %d %+v: infeasible, colgen %v", it, pol, got)
				}
				continue
			}
			sc := c.Score(y)
			for k := range y {
				sc += w[off[k]+y[k]]
			}
			if tol := 1e-12 * (1 + math.Abs(want)); math.Abs(got-want) > tol || math.Abs(sc-got) > tol {
				t.Fatalf("case %d (shape %d) %+v: colgen %v (y scores %v), viterbi %v", it, shape, pol, got, sc, want)
			}
		}
	}
}
