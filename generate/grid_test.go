package generate

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// fingerprint hashes a model's content, floats bit for bit.
func fingerprint(m *model.Model) uint64 {
	h := fnv.New64a()
	put := func(u uint64) {
		var b [8]byte
		for i := range b {
			b[i] = byte(u >> (8 * i))
		}
		h.Write(b[:])
	}
	for _, c := range m.Cards {
		put(uint64(c))
	}
	for _, v := range m.Unary {
		put(math.Float64bits(v))
	}
	put(math.Float64bits(m.Constant))
	for _, f := range m.Factors {
		put(uint64(f.Kind))
		for _, v := range f.Vars {
			put(uint64(v))
		}
		for _, n := range f.NegatedInputs() {
			if n {
				put(1)
			} else {
				put(0)
			}
		}
		for _, v := range f.Table {
			put(math.Float64bits(v))
		}
		put(math.Float64bits(f.Weight))
		put(uint64(f.BudgetBound()))
	}
	return h.Sum64()
}

func TestGridEdges(t *testing.T) {
	got := gridEdges(2, 3)
	want := [][2]int{{0, 1}, {1, 2}, {0, 3}, {1, 4}, {2, 5}, {3, 4}, {4, 5}}
	if len(got) != len(want) {
		t.Fatalf("edges %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("edges %v, want %v", got, want)
		}
	}
	for _, hw := range [][2]int{{1, 1}, {1, 5}, {5, 1}, {30, 30}, {7, 3}} {
		h, w := hw[0], hw[1]
		if n := len(gridEdges(h, w)); n != h*(w-1)+(h-1)*w {
			t.Errorf("%dx%d: %d edges", h, w, n)
		}
	}
}

// TestIsingSpinScore checks that Score is the spin model's score
// sum_i theta_i(x_i) + sum_(ij) J_ij s_i s_j, with theta and J redrawn in the
// documented order.
func TestIsingSpinScore(t *testing.T) {
	o := GridOptions{Height: 6, Width: 7, Rho: 1.5, Seed: 3}
	m := Ising(o)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	r := newRand(o.Seed)
	n := o.Height * o.Width
	theta := make([]float64, n)
	for i := range theta {
		theta[i] = uniform(r, -1, 1)
	}
	edges := gridEdges(o.Height, o.Width)
	J := make([]float64, len(edges))
	for e := range J {
		J[e] = uniform(r, -o.Rho, o.Rho)
	}
	for e, f := range m.Factors {
		if f.Kind != model.Potts || f.Vars[0] != edges[e][0] || f.Vars[1] != edges[e][1] || f.Weight != 2*J[e] {
			t.Fatalf("factor %d: %+v, want Potts over %v of weight %v", e, f, edges[e], 2*J[e])
		}
	}
	rng := rand.New(rand.NewPCG(9, 9))
	x := make([]int, n)
	for trial := range 200 {
		for i := range x {
			x[i] = rng.IntN(2)
			if trial == 0 {
				x[i] = 0
			}
		}
		spin := 0.0
		for i := range x {
			spin += theta[i] * float64(x[i])
		}
		for e, uv := range edges {
			spin += J[e] * float64(2*x[uv[0]]-1) * float64(2*x[uv[1]]-1)
		}
		if got := m.Score(x); math.Abs(got-spin) > 1e-12*(1+math.Abs(spin))*float64(len(edges)) {
			t.Fatalf("x=%v: Score %v, spin score %v", x, got, spin)
		}
	}
}

func TestIsingShape(t *testing.T) {
	o := GridOptions{Height: 30, Width: 30, Labels: 5, Rho: 2, Seed: 1}
	m := Ising(o)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.NumVars() != 900 || len(m.Factors) != 2*30*29 {
		t.Fatalf("%d variables and %d factors", m.NumVars(), len(m.Factors))
	}
	for i := range m.Cards {
		u := m.Unaries(i)
		if len(u) != 2 || u[0] != 0 || u[1] < -1 || u[1] >= 1 {
			t.Fatalf("variable %d: unaries %v", i, u)
		}
	}
	for _, f := range m.Factors {
		if math.Abs(f.Weight) > 2*o.Rho {
			t.Fatalf("weight %v out of [-2rho, 2rho]", f.Weight)
		}
	}
}

func TestPottsShape(t *testing.T) {
	o := GridOptions{Height: 20, Width: 20, Rho: 10, Seed: 7} // the paper's setting, default labels
	m := Potts(o)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.NumVars() != 400 || len(m.Factors) != 2*20*19 || m.Constant != 0 {
		t.Fatalf("%d variables, %d factors, constant %v", m.NumVars(), len(m.Factors), m.Constant)
	}
	for i, c := range m.Cards {
		if c != DefaultPottsLabels {
			t.Fatalf("variable %d has %d states", i, c)
		}
	}
	for _, v := range m.Unary {
		if v < -1 || v >= 1 {
			t.Fatalf("unary %v out of [-1, 1)", v)
		}
	}
	edges := gridEdges(20, 20)
	pos, neg := 0, 0
	for e, f := range m.Factors {
		if f.Kind != model.Potts || f.Vars[0] != edges[e][0] || f.Vars[1] != edges[e][1] || math.Abs(f.Weight) > o.Rho {
			t.Fatalf("factor %d: %+v", e, f)
		}
		if f.Weight > 0 {
			pos++
		} else {
			neg++
		}
	}
	if pos < 300 || neg < 300 {
		t.Errorf("weights not mixed: %d positive, %d negative", pos, neg)
	}
	if m3 := Potts(GridOptions{Height: 2, Width: 2, Labels: 3, Rho: 1}); m3.Cards[0] != 3 {
		t.Errorf("Labels 3 gives %d states", m3.Cards[0])
	}
}

func TestGridDeterminism(t *testing.T) {
	o := GridOptions{Height: 5, Width: 4, Labels: 3, Rho: 1, Seed: 11}
	for name, gen := range map[string]func(GridOptions) *model.Model{"Ising": Ising, "Potts": Potts} {
		a, b := gen(o), gen(o)
		if fingerprint(a) != fingerprint(b) {
			t.Errorf("%s: the same seed gives different models", name)
		}
		o2 := o
		o2.Seed++
		if fingerprint(a) == fingerprint(gen(o2)) {
			t.Errorf("%s: seeds %d and %d give the same model", name, o.Seed, o2.Seed)
		}
	}
}

// TestGolden pins the models of fixed seeds, so that a change of draw order
// or of the random source shows up (the same seed must give the same model
// everywhere).
func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		m    *model.Model
		want uint64
	}{
		{"ising", Ising(GridOptions{Height: 4, Width: 5, Rho: 2, Seed: 42}), 0xdd58a59923fec88e},
		{"potts", Potts(GridOptions{Height: 4, Width: 5, Labels: 3, Rho: 10, Seed: 42}), 0x854f732419fea110},
		{"logic", Logic(LogicOptions{Vars: 12, Factors: 20, Couplings: 5, MaxArity: 4, Rho: 1, Seed: 42}), 0xae77d3ee746c648f},
	}
	for _, c := range cases {
		if got := fingerprint(c.m); got != c.want {
			t.Errorf("%s: fingerprint %#x, want %#x", c.name, got, c.want)
		}
	}
}

func TestGridValidate(t *testing.T) {
	bad := []struct {
		o    GridOptions
		want string
	}{
		{GridOptions{Height: 0, Width: 3, Labels: 2}, "sizes must be at least 1"},
		{GridOptions{Height: 3, Width: -1, Labels: 2}, "sizes must be at least 1"},
		{GridOptions{Height: 3, Width: 3, Labels: 1}, "want at least 2"},
		{GridOptions{Height: 3, Width: 3, Labels: -4}, "want at least 2"},
		{GridOptions{Height: 3, Width: 3, Labels: 2, Rho: -1}, "rho -1"},
		{GridOptions{Height: 3, Width: 3, Labels: 2, Rho: math.NaN()}, "rho NaN"},
		{GridOptions{Height: 3, Width: 3, Labels: 2, Rho: math.Inf(1)}, "rho +Inf"},
		{GridOptions{Height: 1 << 20, Width: 1 << 20, Labels: 2}, "too big"},
		{GridOptions{Height: math.MaxInt, Width: math.MaxInt, Labels: math.MaxInt}, "too big"},
	}
	for _, c := range bad {
		err := c.o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
		for name, gen := range map[string]func(GridOptions) *model.Model{"Ising": Ising, "Potts": Potts} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s(%+v) did not panic", name, c.o)
					}
				}()
				gen(c.o)
			}()
		}
	}
	for _, o := range []GridOptions{{Height: 1, Width: 1}, {Height: 2, Width: 3, Labels: 2, Rho: 0}} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
