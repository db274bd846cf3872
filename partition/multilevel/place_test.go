package multilevel

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
)

// placeGrid returns an h x w grid of variables of cardinality card with
// Potts factors on its edges.
func placeGrid(h, w, card int) *model.Model {
	cards := make([]int, h*w)
	for i := range cards {
		cards[i] = card
	}
	m := model.New(cards)
	for r := range h {
		for c := range w {
			v := r*w + c
			if c+1 < w {
				m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{v, v + 1}, Weight: 1})
			}
			if r+1 < h {
				m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{v, v + w}, Weight: 1})
			}
		}
	}
	return m
}

// placeMixed returns a random model over binary and ternary variables with
// factors of every kind.
func placeMixed(r *rand.Rand, n, nf int) *model.Model {
	cards := make([]int, n)
	for i := range cards {
		cards[i] = 2
		if i%3 == 0 {
			cards[i] = 3
		}
	}
	m := model.New(cards)
	binary := func() int {
		for {
			if v := r.IntN(n); cards[v] == 2 {
				return v
			}
		}
	}
	distinct := func(k int, pick func() int) []int {
		vars := []int{}
		for len(vars) < k {
			if v := pick(); !slices.Contains(vars, v) {
				vars = append(vars, v)
			}
		}
		return vars
	}
	for range nf {
		switch r.IntN(6) {
		case 0:
			vars := distinct(1+r.IntN(3), func() int { return r.IntN(n) })
			size, _ := m.TableSize(vars)
			m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: vars, Table: make([]float64, size)})
		case 1:
			m.Factors = append(m.Factors, model.Factor{Kind: model.Pair, Vars: distinct(2, binary), Weight: 1})
		case 2:
			u := r.IntN(n)
			v := distinct(1, func() int {
				for {
					if x := r.IntN(n); x != u && cards[x] == cards[u] {
						return x
					}
				}
			})[0]
			m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{u, v}, Weight: -1})
		case 3:
			m.Factors = append(m.Factors, model.Factor{Kind: model.XOR, Vars: distinct(2+r.IntN(6), binary)})
		case 4:
			m.Factors = append(m.Factors, model.Factor{Kind: model.Budget, Vars: distinct(3, binary)}.WithBudget(1))
		default:
			vars := distinct(2+r.IntN(4), func() int { return r.IntN(n) })
			tab := 0
			for k := 0; k+1 < len(vars); k++ {
				tab += cards[vars[k]] * cards[vars[k+1]]
			}
			m.Factors = append(m.Factors, model.Factor{Kind: model.Sequence, Vars: vars, Table: make([]float64, tab)})
		}
	}
	// A variable shared by many factors (a star in the slave graph).
	hub := binary()
	for range 12 {
		m.Factors = append(m.Factors, model.Factor{Kind: model.OR, Vars: []int{hub, binary()}})
		if last := m.Factors[len(m.Factors)-1].Vars; last[0] == last[1] {
			m.Factors = m.Factors[:len(m.Factors)-1]
		}
	}
	return m
}

// bruteBoundary recomputes a placement's boundary and replica count with
// maps.
func bruteBoundary(m *model.Model, plan partition.Plan, worker []int32) ([]int, int) {
	workers := map[int]map[int32]bool{}
	for s, sl := range plan.Slaves {
		for _, v := range sl.Vars {
			if workers[v] == nil {
				workers[v] = map[int32]bool{}
			}
			workers[v][worker[s]] = true
		}
	}
	var boundary []int
	replicas := 0
	for v := range m.NumVars() {
		if len(workers[v]) > 1 {
			boundary = append(boundary, v)
			replicas += len(workers[v]) - 1
		}
	}
	return boundary, replicas
}

// checkPlacement checks a placement's shape, boundary and replica count.
func checkPlacement(t *testing.T, m *model.Model, plan partition.Plan, pl Placement, workers int) {
	t.Helper()
	if len(pl.Worker) != len(plan.Slaves) {
		t.Fatalf("%d workers for %d slaves", len(pl.Worker), len(plan.Slaves))
	}
	for s, w := range pl.Worker {
		if w < 0 || int(w) >= workers {
			t.Fatalf("slave %d on worker %d of %d", s, w, workers)
		}
	}
	boundary, replicas := bruteBoundary(m, plan, pl.Worker)
	if !slices.Equal(pl.Boundary, boundary) || pl.Replicas != replicas {
		t.Fatalf("boundary %v (%d replicas), brute force %v (%d)", pl.Boundary, pl.Replicas, boundary, replicas)
	}
	if !slices.IsSorted(pl.Boundary) {
		t.Fatal("boundary not sorted")
	}
}

// costImbalance is the heaviest worker's estimated cost over the average.
func costImbalance(t *testing.T, m *model.Model, plan partition.Plan, pl Placement, workers int) float64 {
	t.Helper()
	g, err := SlaveGraph(m, plan)
	if err != nil {
		t.Fatal(err)
	}
	return Imbalance(g, pl.Worker, workers)
}

func TestPlaceGridPlans(t *testing.T) {
	m := placeGrid(40, 50, 3)
	chains, err := partition.Chains(m)
	if err != nil {
		t.Fatal(err)
	}
	trees, err := partition.Trees(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		plan partition.Plan
	}{{"per-factor", partition.PerFactor(m)}, {"chains", chains}, {"trees", trees}} {
		for _, w := range []int{2, 3, 4, 8} {
			pl, err := Place(m, c.plan, w, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkPlacement(t, m, c.plan, pl, w)
			// Chains and trees are few and large; per-factor slaves are
			// many and equal: the tolerance holds for those.
			if x := costImbalance(t, m, c.plan, pl, w); c.name == "per-factor" && x > DefaultImbalance {
				t.Errorf("%s, %d workers: cost imbalance %.4f", c.name, w, x)
			}
			if c.name == "per-factor" && len(pl.Boundary) > 3*50*w {
				t.Errorf("%s, %d workers: %d boundary variables", c.name, w, len(pl.Boundary))
			}
			t.Logf("%-10s W=%d: %d slaves, boundary %d variables, %d replicas", c.name, w, len(c.plan.Slaves), len(pl.Boundary), pl.Replicas)
		}
	}
}

func TestPlaceMixedModels(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for trial := range 10 {
		m := placeMixed(r, 50+r.IntN(200), 100+r.IntN(300))
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		plan := partition.PerFactor(m)
		w := 2 + r.IntN(6)
		pl, err := Place(m, plan, w, Options{Seed: uint64(trial)})
		if err != nil {
			t.Fatal(err)
		}
		checkPlacement(t, m, plan, pl, w)
		again, _ := Place(m, plan, w, Options{Seed: uint64(trial)})
		if !slices.Equal(pl.Worker, again.Worker) {
			t.Fatal("Place is not deterministic for a seed")
		}
	}
}

func TestPlaceOneWorker(t *testing.T) {
	m := placeGrid(10, 10, 2)
	plan := partition.PerFactor(m)
	pl, err := Place(m, plan, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkPlacement(t, m, plan, pl, 1)
	if len(pl.Boundary) != 0 || pl.Replicas != 0 {
		t.Fatalf("one worker: boundary %v, %d replicas", pl.Boundary, pl.Replicas)
	}
	for _, w := range pl.Worker {
		if w != 0 {
			t.Fatal("one worker: slave not on worker 0")
		}
	}
}

func TestPlaceSmallPlans(t *testing.T) {
	m := placeGrid(3, 3, 2)
	// No slaves.
	pl, err := Place(m, partition.Plan{}, 4, Options{})
	if err != nil || len(pl.Worker) != 0 || len(pl.Boundary) != 0 {
		t.Fatalf("empty plan: %+v %v", pl, err)
	}
	// More workers than slaves: one slave each.
	plan := partition.PerFactor(m)
	pl, err = Place(m, plan, 20, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkPlacement(t, m, plan, pl, 20)
	seen := map[int32]bool{}
	for _, w := range pl.Worker {
		if seen[w] {
			t.Fatalf("worker %d got two slaves with 20 workers for %d slaves", w, len(plan.Slaves))
		}
		seen[w] = true
	}
}

func TestPlaceErrors(t *testing.T) {
	m := placeGrid(3, 3, 2)
	plan := partition.PerFactor(m)
	if _, err := Place(m, plan, 0, Options{}); err == nil || !strings.Contains(err.Error(), "0 workers") {
		t.Fatalf("0 workers: %v", err)
	}
	if _, err := Place(m, plan, 2, Options{Imbalance: 0.5}); err == nil || !strings.Contains(err.Error(), "imbalance") {
		t.Fatalf("bad options: %v", err)
	}
	bad := partition.Plan{Slaves: []partition.Slave{{Shape: partition.Single, Vars: []int{0, 99}, Factors: []int{0}}}}
	for _, w := range []int{1, 2} {
		if _, err := Place(m, bad, w, Options{}); err == nil || !strings.Contains(err.Error(), "variable 99 out of range") {
			t.Fatalf("%d workers, bad variable: %v", w, err)
		}
	}
	bad = partition.Plan{Slaves: []partition.Slave{{Shape: partition.Single, Vars: []int{0, 1}, Factors: []int{-1}}}}
	if _, err := Place(m, bad, 2, Options{}); err == nil || !strings.Contains(err.Error(), "factor -1 out of range") {
		t.Fatalf("bad factor: %v", err)
	}
}

func TestSlaveCost(t *testing.T) {
	m := model.New([]int{2, 3, 4, 2, 2})
	m.Factors = []model.Factor{
		{Kind: model.Dense, Vars: []int{0, 1, 2}, Table: make([]float64, 24)},
		{Kind: model.Potts, Vars: []int{0, 3}, Weight: 1},
		{Kind: model.XOR, Vars: []int{0, 3, 4}},
		{Kind: model.Sequence, Vars: []int{0, 1, 2}, Table: make([]float64, 6+12)},
		{Kind: model.Pair, Vars: []int{3, 4}, Weight: 1},
	}
	cases := []struct {
		sl   partition.Slave
		want int64
	}{
		{partition.Slave{Shape: partition.Single, Vars: []int{0, 1, 2}, Factors: []int{0}}, 24 + 9},
		{partition.Slave{Shape: partition.Single, Vars: []int{0, 3}, Factors: []int{1}}, 4 + 4},
		{partition.Slave{Shape: partition.Single, Vars: []int{0, 3, 4}, Factors: []int{2}}, 3*costPerLogicInput + 6},
		{partition.Slave{Shape: partition.Single, Vars: []int{0, 1, 2}, Factors: []int{3}}, 6 + 12 + 9 + 9},
		{partition.Slave{Shape: partition.Chain, Vars: []int{0, 3, 4}, Factors: []int{1, 4}}, 4 + 4 + 6},
	}
	for i, c := range cases {
		if got := SlaveCost(m, &c.sl); got != c.want {
			t.Errorf("case %d: cost %d, want %d", i, got, c.want)
		}
	}
}

func TestSlaveGraphEdges(t *testing.T) {
	// Variable 0 (card 3) in slaves 0, 1; variable 1 (card 2) in slaves
	// 1, 2, 3; variable 2 (card 2) in slaves 0 and 4..9 (7 slaves: a star
	// through slave 0).
	m := model.New([]int{3, 2, 2, 2})
	var plan partition.Plan
	add := func(vars ...int) {
		plan.Slaves = append(plan.Slaves, partition.Slave{Shape: partition.Single, Vars: vars})
	}
	add(0, 2)
	add(0, 1)
	add(1)
	add(1, 1) // a variable listed twice counts once
	for range 6 {
		add(2, 3)
	}
	g, err := SlaveGraph(m, plan)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	weight := func(u, v int) int32 {
		return csrNeighbours(g, u)[int32(v)]
	}
	checks := []struct {
		u, v int
		want int32
	}{
		{0, 1, 36}, // variable 0: 12*3
		{1, 2, 12}, // variable 1: 12*2/2 per clique edge
		{1, 3, 12}, //
		{2, 3, 12}, //
		{0, 4, 24}, // variable 2: star, 12*2
		{0, 9, 24}, //
		{4, 5, 24}, // variable 3 in slaves 4..9 (6 > 5): star through 4
		{4, 9, 24}, //
		{5, 6, 0},  // no edge between leaves of variable 3's star
		{2, 4, 0},  //
	}
	for _, c := range checks {
		if got := weight(c.u, c.v); got != c.want {
			t.Errorf("edge (%d,%d): weight %d, want %d", c.u, c.v, got, c.want)
		}
	}
	if got := len(csrNeighbours(g, 5)); got != 2 {
		t.Errorf("slave 5 has %d neighbours, want 2 (the hubs of its stars)", got)
	}
}

// BenchmarkPlaceGrid1000x1000 places the per-factor slaves of a 1000x1000
// grid (about 2 million slaves) on 16 workers, slave graph included.
func BenchmarkPlaceGrid1000x1000(b *testing.B) {
	m := placeGrid(1000, 1000, 2)
	plan := partition.PerFactor(m)
	var pl Placement
	for b.Loop() {
		var err error
		if pl, err = Place(m, plan, 16, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(pl.Boundary)), "boundary")
	b.ReportMetric(float64(pl.Replicas), "replicas")
}
