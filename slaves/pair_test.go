package slaves_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/slaves"
	"github.com/ddrun/ddrun/slaves/slavetest"
)

var pairCards = []int{2, 2}

// pairRandTable returns a random finite table; kind 0 makes the coupling
// w = phi11 - phi10 - phi01 + phi00 zero, kind 1 negative, kind 2 positive,
// kind 3 leaves it random (with rounded entries, for ties).
func pairRandTable(rng *rand.Rand, kind int, spread float64) [4]float64 {
	var tb [4]float64
	for i := range tb {
		tb[i] = spread * (2*rng.Float64() - 1)
	}
	w := tb[3] - tb[2] - tb[1] + tb[0]
	switch kind {
	case 0:
		tb[3] -= w
	case 1:
		tb[3] -= math.Abs(w) + w
	case 2:
		tb[3] += math.Abs(w) - w
	case 3:
		for i := range tb {
			tb[i] = math.Round(tb[i])
		}
	}
	return tb
}

func pairScore(tb [4]float64) func(y []int) float64 {
	return func(y []int) float64 { return tb[2*y[0]+y[1]] }
}

// TestPairQUADRef checks the closed form against the reference solver and
// the KKT conditions on random tables (w < 0, w = 0, w > 0) and targets.
func TestPairQUADRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const cases = 3000
	var errs asErrs
	for it := 0; it < cases; it++ {
		spread := []float64{3, 1, 0.3}[(it/3)%3]
		tb := pairRandTable(rng, it%4, []float64{3, 0.5, 10}[(it/9)%3])
		p := slaves.NewPair(tb)
		eta := []float64{0.1, 1, 10}[it%3]
		c := logicRandVec(rng, 4, spread)
		u := make([]float64, 4)
		phiq := p.QUAD(c, eta, u)
		errs.addKKT(t, pairCards, pairScore(tb), c, eta, u, phiq)
		if t.Failed() {
			t.Fatalf("table %v", tb)
		}
	}
	t.Logf("%d random cases: %v", cases, errs)
}

// TestPairQUADIndependent checks a coupling-free table: each variable is
// then the clipped target t_k + b_k/(2 eta).
func TestPairQUADIndependent(t *testing.T) {
	p := slaves.NewPair([4]float64{1, 1.5, 3, 3.5}) // a=1, b0=2, b1=0.5, w=0
	u := make([]float64, 4)
	c := []float64{0.2, 0.4, 1, -1}
	phiq := p.QUAD(c, 2, u)
	z0 := (0.4-0.2+1)/2 + 2/4.0    // 1.1 -> 1
	z1 := (-1.0-1.0+1)/2 + 0.5/4.0 // -0.375 -> 0
	if z0 < 1 || z1 > 0 {
		t.Fatal("bad test")
	}
	want := []float64{0, 1, 1, 0}
	for i := range want {
		if u[i] != want[i] {
			t.Fatalf("u = %v, want %v", u, want)
		}
	}
	if phiq != 3 { // phi(1, 0)
		t.Fatalf("phiq = %v, want 3", phiq)
	}
}

// TestPairMAP checks MAP against brute force and Score against the table.
func TestPairMAP(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for it := 0; it < 1000; it++ {
		tb := pairRandTable(rng, it%4, 3)
		p := slaves.NewPair(tb)
		w := logicRandVec(rng, 4, 3)
		y := make([]int, 2)
		got := p.MAP(w, y)
		want, _ := slavetest.BruteMAP(pairCards, pairScore(tb), w)
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("table %v w %v: MAP %v, brute force %v", tb, w, got, want)
		}
		if v := p.Score(y) + slavetest.Linear(pairCards, w, y); math.Abs(v-got) > 1e-12 {
			t.Fatalf("MAP returned %v, its configuration %v is worth %v", got, y, v)
		}
		for _, y := range slavetest.EnumerateConfigs(pairCards) {
			if p.Score(y) != tb[2*y[0]+y[1]] {
				t.Fatalf("Score(%v) = %v", y, p.Score(y))
			}
		}
	}
	if tb := slaves.NewPair([4]float64{1, 2, 3, 4}).Table(); tb != [4]float64{1, 2, 3, 4} {
		t.Fatalf("Table() = %v", tb)
	}
}

// TestPairFactor checks NewPairFactor against the model's factor score.
func TestPairFactor(t *testing.T) {
	m := model.New([]int{2, 2})
	m.Factors = []model.Factor{{Kind: model.Pair, Vars: []int{0, 1}, Weight: -1.5}}
	p, err := slaves.NewPairFactor(&m.Factors[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, y := range slavetest.EnumerateConfigs(pairCards) {
		if got, want := p.Score(y), m.FactorScore(0, y); got != want {
			t.Errorf("Score(%v) = %v, model says %v", y, got, want)
		}
	}
	if c := p.Cards(); len(c) != 2 || c[0] != 2 || c[1] != 2 {
		t.Errorf("Cards = %v", c)
	}
	for _, f := range []model.Factor{
		{Kind: model.Potts, Vars: []int{0, 1}},
		{Kind: model.Pair, Vars: []int{0}},
		{Kind: model.Pair, Vars: []int{0, 1}, Weight: math.Inf(1)},
	} {
		if _, err := slaves.NewPairFactor(&f); err == nil {
			t.Errorf("NewPairFactor(%+v): no error", f)
		}
	}
}

func TestPairAllocs(t *testing.T) {
	p := slaves.NewPair([4]float64{0.1, -2, 0.3, 1})
	c := []float64{0.5, -1, 2, 0.2}
	u := make([]float64, 4)
	y := make([]int, 2)
	if a := testing.AllocsPerRun(100, func() {
		p.QUAD(c, 1, u)
		p.MAP(c, y)
		p.Score(y)
		p.Cards()
	}); a != 0 {
		t.Errorf("%v allocations per run", a)
	}
}

func BenchmarkPairQUAD(b *testing.B) {
	rng := rand.New(rand.NewPCG(35, 36))
	for _, kind := range []int{1, 2} {
		name := map[int]string{1: "w<0", 2: "w>0"}[kind]
		b.Run(name, func(b *testing.B) {
			p := slaves.NewPair(pairRandTable(rng, kind, 3))
			const nIn = 64
			cs := make([][]float64, nIn)
			for i := range cs {
				cs[i] = logicRandVec(rng, 4, 2)
			}
			u := make([]float64, 4)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.QUAD(cs[i%nIn], 1, u)
			}
		})
	}
}
