package partition

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

func mustChains(t *testing.T, m *model.Model) []Slave {
	t.Helper()
	return mustPlan(t, m, "Chains", Chains, Chain)
}

// mustPlan returns the slaves of plan (named name) on m, checked by
// checkPlan to be of the given shape, after checking that a second call
// gives the same plan.
func mustPlan(t *testing.T, m *model.Model, name string, plan func(*model.Model) (Plan, error), shape Shape) []Slave {
	t.Helper()
	p, err := plan(m)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	q, _ := plan(m)
	if !samePlan(p, q) {
		t.Fatalf("%s is not deterministic", name)
	}
	return checkPlan(t, m, p, shape)
}

func TestChainsGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, hw := range [][2]int{{2, 2}, {2, 5}, {5, 2}, {6, 9}, {13, 4}} {
		h, w := hw[0], hw[1]
		o := generate.GridOptions{Height: h, Width: w, Labels: 3, Rho: 1, Seed: int64(h * w)}
		withExtra := gridModel(h, w, 4, nil)
		withExtra.Factors = append(withExtra.Factors,
			model.Factor{Kind: model.XOR, Vars: []int{h * w, h*w + 1}},
			model.Factor{Kind: model.OR, Vars: []int{0, h * w, h*w + 3}},
			model.Factor{Kind: model.XOR, Vars: []int{0, 1}}) // logic: not a link
		for _, m := range []*model.Model{generate.Potts(o), generate.Ising(o), shuffled(r, generate.Potts(o)), withExtra} {
			chains := mustChains(t, m)
			if len(chains) != h+w {
				t.Fatalf("%dx%d grid: %d chains, want %d", h, w, len(chains), h+w)
			}
			for k, c := range chains {
				want := make([]int, 0, max(h, w))
				if k < h { // row k
					for j := range w {
						want = append(want, k*w+j)
					}
				} else { // column k-h
					for i := range h {
						want = append(want, i*w+k-h)
					}
				}
				if !slices.Equal(c.Vars, want) {
					t.Fatalf("%dx%d grid: chain %d is %v, want %v", h, w, k, c.Vars, want)
				}
			}
		}
	}
}

func TestChainsPath(t *testing.T) {
	for _, hw := range [][2]int{{1, 1}, {1, 2}, {1, 9}, {9, 1}} {
		m := generate.Potts(generate.GridOptions{Height: hw[0], Width: hw[1], Labels: 2, Rho: 1})
		chains := mustChains(t, m)
		if n := hw[0] * hw[1]; n == 1 && len(chains) != 0 || n > 1 && (len(chains) != 1 || len(chains[0].Vars) != n) {
			t.Fatalf("%dx%d path: chains %v", hw[0], hw[1], chains)
		}
	}
}

// On a forest no walk meets its own path, so the chains are exactly the
// #odd/2 walks, the minimum for any path cover.
func TestChainsForest(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for it := range 200 {
		m := randomForest(r, 1+r.IntN(60), []float64{1, 0.9, 0.5}[it%3])
		chains := mustChains(t, m)
		if s := stats(m); len(chains) != s.odd/2 {
			t.Fatalf("forest of %d edges with %d odd variables: %d chains, want %d", s.edges, s.odd, len(chains), s.odd/2)
		}
	}
}

// A cycle is not a path, and two paths suffice.
func TestChainsCycles(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for it := range 50 {
		n := 2 + r.IntN(30)
		k := 1 + it%4 // disjoint cycles
		m := binaryModel(n * k)
		perm := r.Perm(n * k)
		for c := range k {
			for i := range n {
				addPairwise(m, perm[c*n+i], perm[c*n+(i+1)%n], i)
			}
		}
		if chains := mustChains(t, m); len(chains) != 2*k {
			t.Fatalf("%d cycles of length %d: %d chains, want %d", k, n, len(chains), 2*k)
		}
	}
}

// Any path cover needs max(1, odd/2) paths per component and at least as
// many as parallel factors on one pair; Chains makes at most
// #odd/2 + 2*(E - V + C) (see pathCover).
func checkChainBounds(t *testing.T, m *model.Model, chains []Slave) {
	t.Helper()
	s := stats(m)
	lo := max(s.oddComp, s.maxMult)
	hi := min(s.odd/2+2*s.cycleRank(), s.edges)
	if len(chains) < lo || len(chains) > hi {
		t.Fatalf("%d edges, %d odd, %d active, %d components: %d chains, want %d to %d",
			s.edges, s.odd, s.active, s.comps, len(chains), lo, hi)
	}
}

func TestChainsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for it := range 300 {
		n := 2 + r.IntN(80)
		ne := r.IntN(3 * n)
		m := randomGraph(r, n, ne, it%2 == 0, it%3 != 0)
		checkChainBounds(t, m, mustChains(t, m))
	}
}

// Lattices not numbered row-major go through the general cover.
func TestChainsPermutedGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, hw := range [][2]int{{3, 3}, {10, 10}, {30, 20}} {
		m := permutedGrid(r, hw[0], hw[1])
		chains := mustChains(t, m)
		checkChainBounds(t, m, chains)
		t.Logf("%dx%d permuted grid: %d chains, %.1f links each on average (rows and columns: %d)",
			hw[0], hw[1], len(chains), float64(stats(m).edges)/float64(len(chains)), hw[0]+hw[1])
	}
}

// benchPlan times plan on m.
func benchPlan(b *testing.B, m *model.Model, plan func(*model.Model) (Plan, error)) {
	b.ResetTimer()
	for b.Loop() {
		if _, err := plan(m); err != nil {
			b.Fatal(err)
		}
	}
}

// The 1000 x 1000 lattice (2M pairwise factors) as generate numbers it,
// so its rows and columns are found.
func BenchmarkChainsGrid1000(b *testing.B) {
	benchPlan(b, gridModel(1000, 1000, 0, nil), Chains)
}

// The same lattice with its variables numbered and its factors ordered at
// random: the general path cover.
func BenchmarkChainsPermutedGrid1000(b *testing.B) {
	benchPlan(b, scrambledGrid1000(), Chains)
}
