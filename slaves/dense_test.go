package slaves_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/slaves"
	"github.com/ddrun/ddrun/slaves/slavetest"
)

// Score follows the table layout (last variable fastest), i.e. the order of
// slavetest.EnumerateConfigs.
func TestDenseScore(t *testing.T) {
	cards := []int{3, 1, 2, 4}
	table := make([]float64, 24)
	for i := range table {
		table[i] = float64(i)
	}
	d := slaves.NewDense(cards, table)
	for i, y := range slavetest.EnumerateConfigs(cards) {
		if v := d.Score(y); v != float64(i) {
			t.Fatalf("Score(%v) = %v, want %d", y, v, i)
		}
	}
}

// MAP against brute-force enumeration, tables with -Inf entries included.
func TestDenseMAPRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(201, 202))
	for it := 0; it < 3000 && !t.Failed(); it++ {
		n := 1 + rng.IntN(4)
		cards := make([]int, n)
		size, dim := 1, 0
		for k := range cards {
			cards[k] = 1 + rng.IntN(4)
			size *= cards[k]
			dim += cards[k]
		}
		pInf := []float64{0, 0.3, 0.9, 1}[it%4]
		table := make([]float64, size)
		for i := range table {
			if rng.Float64() < pInf {
				table[i] = asNegInf
			} else if it%5 == 0 {
				table[i] = float64(rng.IntN(3)) // ties
			} else {
				table[i] = 4*rng.Float64() - 2
			}
		}
		w := randWeights(rng, dim, it%5 == 0, 3)
		d := slaves.NewDense(cards, table)
		score := asTableScore(cards, table)
		want, wy := slavetest.BruteMAP(cards, score, w)
		y := make([]int, n)
		got := d.MAP(w, y)
		if wy == nil {
			if !math.IsInf(got, -1) {
				t.Fatalf("cards %v infeasible: MAP = %v", cards, got)
			}
			continue
		}
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("cards %v table %v w %v: MAP = %v %v, brute force %v %v", cards, table, w, got, y, want, wy)
		}
		if v := score(y) + slavetest.Linear(cards, w, y); math.Abs(v-got) > 1e-12 {
			t.Fatalf("MAP returned %v but its configuration %v scores %v", got, y, v)
		}
	}
}

// Bad tables panic at construction.
func TestDenseNewPanics(t *testing.T) {
	for _, tc := range []struct {
		cards []int
		table []float64
	}{
		{[]int{2, 2}, []float64{1, 2, 3}},
		{[]int{2, 0}, []float64{}},
		{[]int{2}, []float64{1, math.NaN()}},
		{[]int{2}, []float64{math.Inf(1), 0}},
	} {
		mustPanic(t, func() { slaves.NewDense(tc.cards, tc.table) }, "NewDense(%v, %v)", tc.cards, tc.table)
	}
}

// denseBenchTable returns a random table over cards.
func denseBenchTable(rng *rand.Rand, cards []int) (table []float64, dim int) {
	size := 1
	for _, k := range cards {
		size *= k
		dim += k
	}
	table = make([]float64, size)
	for i := range table {
		table[i] = 2*rng.Float64() - 1
	}
	return table, dim
}

var denseBenchScopes = []struct {
	name  string
	cards []int
}{{"3x3x3", []int{3, 3, 3}}, {"8x8", []int{8, 8}}}

func BenchmarkDenseMAP(b *testing.B) {
	benchDense(b, 1, func(b *testing.B, d *slaves.Dense, dim int, rng *rand.Rand) {
		benchMAP(b, d.MAP, rng, dim, len(d.Cards()))
	})
}

// Warm-started QUAD on slightly perturbed inputs (see BenchmarkPottsQUAD).
func BenchmarkDenseQUAD(b *testing.B) {
	benchDense(b, 3, func(b *testing.B, d *slaves.Dense, dim int, rng *rand.Rand) {
		asBenchWarm(b, d, d.ActiveSet(), dim, 1e-2, rng)
	})
}

// benchDense runs bench on a random Dense slave over each scope of
// denseBenchScopes, with the random stream (seed, seed+1) it was drawn from.
func benchDense(b *testing.B, seed uint64, bench func(b *testing.B, d *slaves.Dense, dim int, rng *rand.Rand)) {
	for _, sc := range denseBenchScopes {
		b.Run(sc.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(seed, seed+1))
			table, dim := denseBenchTable(rng, sc.cards)
			bench(b, slaves.NewDense(sc.cards, table), dim, rng)
		})
	}
}
