package trws

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// withHoles sets about one in frac unary and table entries of m to -Inf
// (hard constraints, state 0 of every variable left alone by the unaries;
// the tables may make the model infeasible).
func withHoles(rng *rand.Rand, m *model.Model, frac int) *model.Model {
	for v := range m.Cards {
		for j := m.UnaryOff[v] + 1; j < m.UnaryOff[v+1]; j++ {
			if rng.IntN(frac) == 0 {
				m.Unary[j] = negInf
			}
		}
	}
	for a := range m.Factors {
		for j := range m.Factors[a].Table {
			if rng.IntN(frac) == 0 {
				m.Factors[a].Table[j] = negInf
			}
		}
	}
	return m
}

// pottsGrid returns an h x w Potts grid of l labels with couplings of
// both signs (sign 0), >= 0 (1) or < 0 (-1), with about one edge in dense
// made a dense table (none when dense is 0).
func pottsGrid(rng *rand.Rand, h, w, l, sign, dense int) *model.Model {
	m := generate.Potts(generate.GridOptions{Height: h, Width: w, Labels: l, Rho: 2, Seed: rng.Int64()})
	for a := range m.Factors {
		f := &m.Factors[a]
		if f.Kind != model.Potts {
			continue
		}
		switch sign {
		case 1:
			f.Weight = math.Abs(f.Weight)
		case -1:
			f.Weight = -math.Abs(f.Weight) - 0.01
		}
		if dense > 0 && rng.IntN(dense) == 0 {
			f.Table = m.DenseTable(a)
			f.Kind = model.Dense
		}
	}
	return m
}

// TestKernelsBitIdentical: the unrolled node steps (kernels_gen.go) give
// the iterates of the general code bit for bit (kernels.go): the same
// bound after every pass, labelling, labelling score and messages, on
// dense grids of every unrolled size (with and without -Inf entries),
// grids where some nodes take the unrolled step and some the general code
// (another state count), Potts grids of every unrolled size (couplings of
// both signs, -Inf unaries, some dense edges), and random trees, on 1 and 2
// threads; with prefetching (pass.go) against without.
func TestKernelsBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	type tc struct {
		name   string
		m      *model.Model
		kernel bool // some node must take an unrolled step
		raw    bool // not reduced: -Inf unary states stay
	}
	var cases []tc
	for _, l := range []int{2, 3, 4, 8} {
		cases = append(cases,
			tc{"dense", denseGrid(rng, 7, 9, l), true, false},
			tc{"hard", withHoles(rng, denseGrid(rng, 6, 8, l), 12), true, false},
			tc{"hard-raw", withHoles(rng, denseGrid(rng, 6, 8, l), 6), true, true},
			tc{"veryhard", withHoles(rng, denseGrid(rng, 5, 5, l), 3), false, false})
	}
	// Mixed: a dense 4-label grid with a few 3-label variables and Potts
	// edges.
	mixed := denseGrid(rng, 8, 8, 4)
	for _, v := range []int{9, 30, 31, 50} {
		mixed.Cards[v] = 3
	}
	mixed = model.New(mixed.Cards) // rebuilt below with consistent tables
	for j := range mixed.Unary {
		mixed.Unary[j] = rng.NormFloat64()
	}
	for r := range 8 {
		for c := range 8 {
			u := r*8 + c
			for _, v := range []int{u + 1, u + 8} {
				if (v == u+1 && c == 7) || v >= 64 {
					continue
				}
				if rng.IntN(5) == 0 && mixed.Cards[u] == mixed.Cards[v] {
					mixed.Factors = append(mixed.Factors, model.Factor{Kind: model.Potts, Vars: []int{u, v}, Weight: rng.NormFloat64()})
					continue
				}
				tab := make([]float64, mixed.Cards[u]*mixed.Cards[v])
				for j := range tab {
					tab[j] = 2 * rng.NormFloat64()
				}
				mixed.Factors = append(mixed.Factors, model.Factor{Kind: model.Dense, Vars: []int{u, v}, Table: tab})
			}
		}
	}
	cases = append(cases, tc{"mixed", mixed, true, false},
		tc{"potts", generate.Potts(generate.GridOptions{Height: 6, Width: 6, Labels: 4, Rho: 2, Seed: 3}), true, false})
	// Potts grids of every unrolled size (forwardMixK): couplings of both
	// signs, only >= 0, only < 0; with -Inf unaries, reduced and raw; and
	// Potts mixed with dense tables, some -Inf (all-dead messages).
	for _, l := range []int{2, 3, 4, 8} {
		for _, sign := range []int{0, 1, -1} {
			cases = append(cases,
				tc{"potts-grid", pottsGrid(rng, 7, 9, l, sign, 0), true, false},
				tc{"potts-hard", withHoles(rng, pottsGrid(rng, 6, 8, l, sign, 0), 4), false, false},
				tc{"potts-hard-raw", withHoles(rng, pottsGrid(rng, 6, 8, l, sign, 0), 2), true, true},
				tc{"potts-dense", pottsGrid(rng, 7, 9, l, sign, 3), true, false},
				tc{"potts-dense-hard-raw", withHoles(rng, pottsGrid(rng, 6, 8, l, sign, 3), 3), true, true})
		}
	}
	for range 10 {
		cases = append(cases, tc{"tree", randomTree(rng, 25, 5, true, false), false, false})
	}
	for _, c := range cases {
		if err := c.m.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		m := c.m // also unreduced when Reduce proves it infeasible: the passes must still agree
		if red, err := model.Reduce(c.m, nil); err == nil && !c.raw {
			m = red.Model
		}
		for _, threads := range []int{1, 2} {
			fast := testGraph(t, m, threads)
			plain := testGraph(t, m, threads)
			clear(plain.kern)
			fast.prefetch, plain.prefetch = true, false // prefetching changes nothing either
			n := 0
			for _, k := range fast.kern {
				if k != 0 {
					n++
				}
			}
			if c.kernel && n == 0 {
				t.Fatalf("%s, %d threads: no node takes an unrolled step", c.name, threads)
			}
			o := DefaultOptions()
			o.Threads = threads
			rf, rp := newRun(fast, o), newRun(plain, o)
			same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) || a == b }
			for it := range 15 {
				fb, fs := rf.forward()
				pb, ps := rp.forward()
				if !same(fb, pb) || !same(fs, ps) {
					t.Fatalf("%s, %d threads, iteration %d: forward bound %v score %v, general code %v, %v", c.name, threads, it, fb, fs, pb, ps)
				}
				for s := range rf.x {
					if rf.x[s] != rp.x[s] {
						t.Fatalf("%s, %d threads, iteration %d: label of node %d is %d, general code %d", c.name, threads, it, s, rf.x[s], rp.x[s])
					}
				}
				if fb, pb := rf.backward(), rp.backward(); !same(fb, pb) {
					t.Fatalf("%s, %d threads, iteration %d: backward bound %v, general code %v", c.name, threads, it, fb, pb)
				}
			}
			for i := range fast.data {
				if !same(fast.data[i], plain.data[i]) {
					t.Fatalf("%s, %d threads: data[%d] = %v, general code %v", c.name, threads, i, fast.data[i], plain.data[i])
				}
			}
			rf.close()
			rp.close()
		}
	}
}

// TestSendSIMD: the send steps of kernels_amd64.s (or their stand-ins)
// equal sendRef on random data with -Inf in hat, message and table (a
// dead state whose message is -Inf too, entries -Inf everywhere, a message
// -Inf everywhere), and never produce NaN.
func TestSendSIMD(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	draw := func(v []float64, holes int) {
		for i := range v {
			v[i] = 3 * rng.NormFloat64()
			if holes > 0 && rng.IntN(holes) == 0 {
				v[i] = negInf
			}
		}
	}
	for it := range 4000 {
		holes := []int{0, 2, 5, 1}[it%4]
		for _, k := range []int{4, 8} {
			m, tab, h := make([]float64, k), make([]float64, k*k), make([]float64, k)
			draw(tab, holes)
			draw(h, holes)
			for i := range k { // a message is -Inf only where hat is
				m[i] = rng.NormFloat64()
				if h[i] == negInf && rng.IntN(2) == 0 {
					m[i] = negInf
				}
			}
			gm := []float64{1, 0.5, 0.25, 1.0 / 3}[rng.IntN(4)]
			for _, cols := range []bool{true, false} {
				want := append([]float64(nil), m...)
				cw := sendRef(want, tab, h, gm, cols)
				got := append([]float64(nil), m...)
				tc := append([]float64(nil), tab...)
				var c float64
				switch {
				case k == 4 && cols:
					c = sendCols4((*[4]float64)(got), (*[16]float64)(tc), (*[4]float64)(h), gm)
				case k == 4:
					c = sendRows4((*[4]float64)(got), (*[16]float64)(tc), (*[4]float64)(h), gm)
				case cols:
					c = sendCols8((*[8]float64)(got), (*[64]float64)(tc), (*[8]float64)(h), gm)
				default:
					c = sendRows8((*[8]float64)(got), (*[64]float64)(tc), (*[8]float64)(h), gm)
				}
				if c != cw || math.IsNaN(c) {
					t.Fatalf("k %d cols %v: c' %v, reference %v", k, cols, c, cw)
				}
				for i := range got {
					if got[i] != want[i] || math.IsNaN(got[i]) {
						t.Fatalf("k %d cols %v: m[%d] = %v, reference %v (h %v)", k, cols, i, got[i], want[i], h)
					}
				}
				for i := range tc {
					if math.Float64bits(tc[i]) != math.Float64bits(tab[i]) {
						t.Fatalf("k %d cols %v: the send step wrote the table at %d", k, cols, i)
					}
				}
			}
		}
	}
}

// TestGeneratedKernels: kernels_gen.go and kernels_amd64.s are what
// genkernels.go writes now (run go generate ./trws after changing it).
func TestGeneratedKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	dir := t.TempDir()
	if out, err := exec.Command(goTool, "run", "genkernels.go", "-o", dir).CombinedOutput(); err != nil {
		t.Fatalf("go run genkernels.go: %v\n%s", err, out)
	}
	for _, f := range []string{"kernels_gen.go", "kernels_amd64.s"} {
		want, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from genkernels.go's output: run go generate ./trws", f)
		}
	}
}
