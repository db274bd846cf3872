package slavetest

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestRefEnumerateConfigs(t *testing.T) {
	got := EnumerateConfigs([]int{2, 3})
	want := [][]int{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EnumerateConfigs = %v, want %v", got, want)
	}
	if got := EnumerateConfigs(nil); len(got) != 1 || len(got[0]) != 0 {
		t.Fatalf("empty scope: %v", got)
	}
	if got := EnumerateConfigs([]int{2, 0}); len(got) != 0 {
		t.Fatalf("zero cardinality: %v", got)
	}
	if got := len(EnumerateConfigs([]int{2, 3, 4, 1})); got != 24 {
		t.Fatalf("count %d, want 24", got)
	}
}

func TestRefBruteMAP(t *testing.T) {
	cards := []int{2, 3}
	score := func(y []int) float64 {
		if y[0] == 1 && y[1] == 2 {
			return math.Inf(-1)
		}
		return float64(y[0] * y[1])
	}
	w := []float64{0, 0.5, 0, 0, 3}
	best, y := BruteMAP(cards, score, w)
	// (0,2): 0 + 0 + 3 = 3; (1,1): 1 + 0.5 + 0 = 1.5; (1,2) infeasible.
	if best != 3 || !reflect.DeepEqual(y, []int{0, 2}) {
		t.Fatalf("BruteMAP = %v %v", best, y)
	}
	none := func([]int) float64 { return math.Inf(-1) }
	if best, y := BruteMAP(cards, none, w); !math.IsInf(best, -1) || y != nil {
		t.Fatalf("infeasible BruteMAP = %v %v", best, y)
	}
}

func TestRefProjectSimplex(t *testing.T) {
	cases := []struct{ v, want []float64 }{
		{[]float64{0.2, 0.3, 0.5}, []float64{0.2, 0.3, 0.5}},
		{[]float64{1, 1}, []float64{0.5, 0.5}},
		{[]float64{3, 0}, []float64{1, 0}},
		{[]float64{-1, -1, -1, -1}, []float64{0.25, 0.25, 0.25, 0.25}},
		{[]float64{0.5, 0.5, -2}, []float64{0.5, 0.5, 0}},
		{[]float64{7}, []float64{1}},
	}
	for _, tc := range cases {
		got := ProjectSimplex(tc.v)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-15 {
				t.Errorf("ProjectSimplex(%v) = %v, want %v", tc.v, got, tc.want)
				break
			}
		}
	}
}

// One variable: the QUAD is the simplex projection of c + score/eta.
func TestRefQUADSingleVariable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for it := 0; it < 200; it++ {
		card := 1 + rng.IntN(6)
		eta := []float64{0.1, 1, 10}[it%3]
		c := make([]float64, card)
		phi := make([]float64, card)
		v := make([]float64, card)
		for i := range c {
			c[i] = 6*rng.Float64() - 3
			phi[i] = 4*rng.Float64() - 2
			v[i] = c[i] + phi[i]/eta
		}
		score := func(y []int) float64 { return phi[y[0]] }
		r := RefQUADFull([]int{card}, score, c, eta)
		want := ProjectSimplex(v)
		wantPhi := 0.0
		for i := range want {
			wantPhi += want[i] * phi[i]
			if math.Abs(r.U[i]-want[i]) > 1e-9 {
				t.Fatalf("card %d eta %v: u = %v, want %v (gap %g)", card, eta, r.U, want, r.Gap)
			}
		}
		if obj := QUADObjective(c, eta, want, wantPhi); math.Abs(obj-r.Obj) > 1e-10 {
			t.Fatalf("objective %v, want %v", r.Obj, obj)
		}
	}
}

// A separable score over independent variables: each marginal is the simplex
// projection of its own c_k + a_k/eta.
func TestRefQUADSeparable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for it := 0; it < 60; it++ {
		cards := make([]int, 1+rng.IntN(3))
		for k := range cards {
			cards[k] = 1 + rng.IntN(4)
		}
		off := offsets(cards)
		eta := []float64{0.1, 1, 10}[it%3]
		c := make([]float64, off[len(cards)])
		a := make([]float64, len(c))
		for i := range c {
			c[i] = 6*rng.Float64() - 3
			a[i] = 4*rng.Float64() - 2
		}
		score := func(y []int) float64 { return Linear(cards, a, y) }
		r := RefQUADFull(cards, score, c, eta)
		for k := range cards {
			v := make([]float64, cards[k])
			for i := range v {
				v[i] = c[off[k]+i] + a[off[k]+i]/eta
			}
			want := ProjectSimplex(v)
			for i := range want {
				if e := math.Abs(r.U[off[k]+i] - want[i]); e > 1e-9 {
					t.Fatalf("cards %v: u = %v, variable %d wants %v (gap %g, %d iterations)", cards, r.U, k, want, r.Gap, r.Iters)
				}
			}
		}
	}
}

// XOR over binary variables: with u_k = (1 - z_k, z_k) the QUAD is the
// simplex projection of t_k = (c_k[1] - c_k[0] + 1)/2 (AD3 Sect. 4.2).
func TestRefQUADXORClosedForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for it := 0; it < 100; it++ {
		n := 1 + rng.IntN(6)
		cards := make([]int, n)
		for k := range cards {
			cards[k] = 2
		}
		c := make([]float64, 2*n)
		for i := range c {
			c[i] = 6*rng.Float64() - 3
		}
		xor := func(y []int) float64 {
			s := 0
			for _, v := range y {
				s += v
			}
			if s == 1 {
				return 0
			}
			return math.Inf(-1)
		}
		tt := make([]float64, n)
		for k := range tt {
			tt[k] = (c[2*k+1] - c[2*k] + 1) / 2
		}
		z := ProjectSimplex(tt)
		r := RefQUADFull(cards, xor, c, 1)
		for k := range z {
			if math.Abs(r.U[2*k+1]-z[k]) > 1e-7 || math.Abs(r.U[2*k]-(1-z[k])) > 1e-7 {
				t.Fatalf("c %v: u %v, want z %v", c, r.U, z)
			}
		}
		if r.PhiQ != 0 {
			t.Fatalf("phiq %v", r.PhiQ)
		}
	}
}

// Random tables with hard constraints: the reference certifies its own
// optimality (tiny duality gap) and passes the checkers.
func TestRefQUADRandomTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	maxGap, maxIters := 0.0, 0
	shapes := [][]int{{2, 2}, {3, 2}, {2, 2, 2}, {3, 3, 3}, {2, 2, 2, 2, 2, 2}, {4, 4, 4}, {3, 3, 3, 3}}
	for it := 0; it < 140; it++ {
		cards := shapes[it%len(shapes)]
		configs := EnumerateConfigs(cards)
		table := make(map[string]float64)
		feasible := 0
		for _, y := range configs {
			v := 4*rng.Float64() - 2
			if rng.IntN(4) == 0 {
				v = math.Inf(-1)
			} else {
				feasible++
			}
			if it%5 == 0 { // many ties
				v = math.Round(v)
			}
			table[key(y)] = v
		}
		score := func(y []int) float64 { return table[key(y)] }
		eta := []float64{0.1, 1, 10}[it%3]
		c := make([]float64, len(offsetsOf(cards)))
		for i := range c {
			c[i] = 6*rng.Float64() - 3
		}
		r := RefQUADFull(cards, score, c, eta)
		if feasible == 0 {
			if r.U != nil {
				t.Fatalf("infeasible factor: %v", r.U)
			}
			continue
		}
		if r.Gap > 1e-12 {
			t.Errorf("cards %v eta %v: gap %g after %d iterations", cards, eta, r.Gap, r.Iters)
		}
		maxGap = math.Max(maxGap, r.Gap)
		maxIters = max(maxIters, r.Iters)
		CheckKKT(t, cards, score, c, eta, r.U, r.PhiQ, 1e-9)
		if d := HullDistance(cards, score, r.U); d > 1e-7 {
			t.Errorf("reference u at distance %g from the hull", d)
		}
		// A perturbed candidate must fail the objective check.
		bad := append([]float64(nil), r.U...)
		bad[0] += 1e-3
		bad[1] -= 1e-3
		ft := &fakeT{}
		CheckQUAD(ft, cards, score, c, eta, bad, r.PhiQ, 1e-6, 1e-9)
		if !ft.failed {
			t.Errorf("CheckQUAD accepted a perturbed solution")
		}
	}
	t.Logf("max gap %.3g, max iterations %d", maxGap, maxIters)
}

// offsetsOf returns a slice of length sum(cards).
func offsetsOf(cards []int) []int { return make([]int, offsets(cards)[len(cards)]) }

func key(y []int) string {
	b := make([]byte, len(y))
	for i, v := range y {
		b[i] = byte('0' + v)
	}
	return string(b)
}

// fakeT records failures instead of reporting them.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true; panic("fatal") }
func (f *fakeT) Logf(string, ...any)   {}
func (f *fakeT) Failed() bool          { return f.failed }
