package partition

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

func mustTrees(t *testing.T, m *model.Model) []Slave {
	t.Helper()
	return mustPlan(t, m, "Trees", Trees, Tree)
}

// checkFirstForest checks that the first trees span the components of the
// pairwise graph, one tree each, in order of their lowest variable.
func checkFirstForest(t *testing.T, m *model.Model, trees []Slave) {
	t.Helper()
	s := stats(m)
	if len(trees) < s.comps {
		t.Fatalf("%d trees for %d components", len(trees), s.comps)
	}
	covered := make([]bool, m.NumVars())
	prevRoot := -1
	for k, tr := range trees[:s.comps] {
		root := slices.Min(tr.Vars)
		if root <= prevRoot {
			t.Fatalf("tree %d: lowest variable %d after %d", k, root, prevRoot)
		}
		prevRoot = root
		for _, v := range tr.Vars {
			if s.comp[v] != s.comp[root] || covered[v] {
				t.Fatalf("tree %d: variable %d from another component or tree", k, v)
			}
			covered[v] = true
		}
	}
	for v, c := range s.comp {
		if c >= 0 && !covered[v] {
			t.Fatalf("variable %d with pairwise factors is in none of the first %d trees", v, s.comps)
		}
	}
}

func TestTreesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for it := range 300 {
		n := 2 + r.IntN(80)
		m := randomGraph(r, n, r.IntN(3*n), it%2 == 0, it%3 != 0)
		trees := mustTrees(t, m)
		checkFirstForest(t, m, trees)
		// Each tree has an edge; parallel factors need separate trees.
		if s := stats(m); len(trees) < s.maxMult || len(trees) > s.edges {
			t.Fatalf("%d edges, multiplicity %d: %d trees", s.edges, s.maxMult, len(trees))
		}
	}
}

// A connected graph's first tree spans it; a forest is one tree per
// component.
func TestTreesSpanning(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for it := range 100 {
		n := 2 + r.IntN(60)
		m := randomForest(r, n, 1) // a spanning tree, shuffled
		trees := mustTrees(t, m)
		if len(trees) != 1 || len(trees[0].Vars) != n {
			t.Fatalf("tree on %d variables: %d trees", n, len(trees))
		}
		for range 1 + r.IntN(2*n) { // more edges: still connected
			if u, v := r.IntN(n), r.IntN(n); u != v {
				addPairwise(m, u, v, it)
			}
		}
		trees = mustTrees(t, m)
		if len(trees[0].Factors) != n-1 {
			t.Fatalf("connected graph on %d variables: first tree has %d edges", n, len(trees[0].Factors))
		}
		f := randomForest(r, n, 0.7)
		if trees, s := mustTrees(t, f), stats(f); len(trees) != s.comps {
			t.Fatalf("forest of %d components: %d trees", s.comps, len(trees))
		}
	}
}

func TestTreesGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, hw := range [][2]int{{2, 2}, {2, 5}, {5, 2}, {7, 6}} {
		h, w := hw[0], hw[1]
		o := generate.GridOptions{Height: h, Width: w, Labels: 2, Rho: 1, Seed: 1}
		for _, m := range []*model.Model{generate.Potts(o), shuffled(r, generate.Ising(o)), gridModel(h, w, 3, nil)} {
			trees := mustTrees(t, m)
			if len(trees) != w || len(trees[0].Vars) != h*w {
				t.Fatalf("%dx%d grid: %d trees, the first over %d variables", h, w, len(trees), len(trees[0].Vars))
			}
			for c := 1; c < w; c++ {
				if tr := trees[c]; len(tr.Vars) != h || tr.Vars[0] != c {
					t.Fatalf("%dx%d grid: tree %d is %v, want column %d", h, w, c, tr.Vars, c)
				}
			}
		}
	}
}

// Lattices not numbered row-major go through the general forests.
func TestTreesPermutedGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, hw := range [][2]int{{3, 3}, {10, 10}, {30, 20}} {
		m := permutedGrid(r, hw[0], hw[1])
		trees := mustTrees(t, m)
		checkFirstForest(t, m, trees)
		t.Logf("%dx%d permuted grid: %d trees", hw[0], hw[1], len(trees))
	}
}

// The 1000 x 1000 lattice (2M pairwise factors) as generate numbers it:
// the comb and the columns.
func BenchmarkTreesGrid1000(b *testing.B) {
	benchPlan(b, gridModel(1000, 1000, 0, nil), Trees)
}

// The same lattice with its variables numbered and its factors ordered at
// random: the general forest cover.
func BenchmarkTreesPermutedGrid1000(b *testing.B) {
	benchPlan(b, scrambledGrid1000(), Trees)
}
