package anytime

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/instances"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
	"github.com/ddrun/ddrun/trws"
)

// pairGraph is a model over n variables of card labels with a random
// Dense factor on every pair (u, v) that keep accepts.
func pairGraph(n, card int, seed uint64, keep func(u, v int) bool) *model.Model {
	rng := rand.New(rand.NewPCG(seed, 1))
	cards := make([]int, n)
	for i := range cards {
		cards[i] = card
	}
	m := generate.GaussianUnaries(rng, cards)
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			if !keep(u, v) {
				continue
			}
			t := make([]float64, card*card)
			for k := range t {
				t[k] = rng.NormFloat64()
			}
			m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{u, v}, Table: t})
		}
	}
	return m
}

// Choose takes TRW-S on a pairwise grid and DD-ADMM with a ternary factor,
// on which TRW-S is an error; an unknown relaxation is an option error.
func TestChoose(t *testing.T) {
	grid := generate.Potts(generate.GridOptions{Height: 3, Width: 3, Labels: 3, Rho: 1, Seed: 1})
	if r, why := Choose(grid); r != TRWS || why == "" {
		t.Errorf("Potts grid: %s (%s), want trws", r, why)
	}
	m := model.New([]int{2, 2, 2})
	m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{0, 1, 2}, Table: make([]float64, 8)})
	if r, _ := Choose(m); r != ADMM {
		t.Errorf("a ternary factor: %s, want admm", r)
	}
	o := DefaultOptions()
	if _, err := Solve(context.Background(), m, nil, o, nil); err == nil {
		t.Error("TRW-S on a ternary factor: no error")
	}
	o.Relax = "simplex"
	if err := o.Validate(); err == nil {
		t.Error("unknown relaxation: no error")
	}
}

// Choose takes DD-ADMM on near-complete pairwise graphs of high degree,
// TRW-S on sparse ones, on half-dense bipartite ones (DBN-like) and on
// small complete ones, and says which rule decided.
func TestChooseByDensity(t *testing.T) {
	all := func(u, v int) bool { return true }
	for _, c := range []struct {
		name string
		m    *model.Model
		want Relaxation
		says string
	}{
		{"complete 20", pairGraph(20, 3, 1, all), ADMM, "dense"},
		{"complete 9", pairGraph(9, 3, 2, all), TRWS, "not near-complete"},
		{"complete bipartite 20+20", pairGraph(40, 2, 3, func(u, v int) bool { return u < 20 && v >= 20 }), TRWS, "not near-complete"},
		{"chain", pairGraph(30, 3, 4, func(u, v int) bool { return v == u+1 }), TRWS, "average degree 1.9"},
	} {
		r, why := Choose(c.m)
		if r != c.want || !strings.Contains(why, c.says) {
			t.Errorf("%s: %s (%s), want %s saying %q", c.name, r, why, c.want, c.says)
		}
	}
	// Repeated pairs and a Sequence's links count once per pair.
	m := model.New([]int{2, 2, 2})
	for range 3 {
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{1, 0}, Table: make([]float64, 4)})
	}
	m.Factors = append(m.Factors, model.Factor{Kind: model.Sequence, Vars: []int{0, 1, 2}, Table: make([]float64, 4)})
	if e, avg := Degree(m); e != 2 || math.Abs(avg-4.0/3) > 1e-12 {
		t.Errorf("Degree: %d edges, average %v; want 2, 4/3", e, avg)
	}
}

// On ObjectDetection_11 (60 variables, 11 labels, the complete graph)
// the anytime default's phases before the search end with a primal at
// least DD-ADMM's and a bound at most DD-ADMM's and TRW-S's: before the density rule it chose TRW-S,
// which stalls there (bound 24188, labelling 4839; 8654 after the primal
// search), against DD-ADMM's 22670 and 10110.
func TestDefaultOnDensePairwise(t *testing.T) {
	path := instances.Path(t, "objdetect/ObjectDetection_11.uai")
	m, err := uai.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	do := consensus.DefaultOptions()
	ad, err := consensus.Solve(ctx, m, nil, do, nil)
	if err != nil {
		t.Fatal(err)
	}
	to := trws.DefaultOptions()
	tr, err := trws.Solve(ctx, m, nil, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Relax, _ = Choose(m)
	// No search, so the run ends when the relaxation converges (about a
	// second): a time limit would make it depend on the machine's load.
	o.NoSearch = true
	o.TimeLimit = time.Minute
	o.Primal = PrimalSearch(150 * time.Millisecond)
	res, err := Solve(ctx, m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Primal < ad.Primal {
		t.Errorf("default primal %v below DD-ADMM's %v", res.Primal, ad.Primal)
	}
	if sc := m.Score(res.Assignment); sc != res.Primal {
		t.Errorf("primal %v is not its assignment's score %v", res.Primal, sc)
	}
	if res.Dual > min(ad.Dual, tr.Dual)+1e-6*math.Abs(res.Dual) {
		t.Errorf("default bound %v above DD-ADMM's %v or TRW-S's %v", res.Dual, ad.Dual, tr.Dual)
	}
	if best := 10063.018030513; res.Dual < best {
		t.Errorf("bound %v below the best known score %v", res.Dual, best)
	}
}
