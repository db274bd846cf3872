package convexmp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestProjectMargin checks projectMargin against the optimality condition
// of a Euclidean projection onto a polytope: the result b is feasible and
// (y - b) . (v - b) <= 0 for every vertex v (the corners inside the margin
// and the edge points where the margin is tight).
func TestProjectMargin(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var ps projScratch
	for it := 0; it < 5000; it++ {
		n := 1 + rng.IntN(9)
		y := make([]float64, n)
		g := make([]float64, n)
		for j := range y {
			y[j] = rng.NormFloat64() * math.Pow(10, rng.Float64()*2-1)
			g[j] = math.Abs(rng.NormFloat64())
			if rng.IntN(8) == 0 {
				g[j] = math.Inf(1)
			}
			if rng.IntN(8) == 0 {
				g[j] = 0
			}
		}
		g[rng.IntN(n)] = 0
		eps := math.Pow(10, -8*rng.Float64())
		if rng.IntN(10) == 0 {
			eps = 0
		}
		b := append([]float64(nil), y...)
		hint := 0.0
		if rng.IntN(2) == 0 {
			hint = math.Abs(rng.NormFloat64()) * math.Pow(10, 4*rng.Float64()-2)
		}
		var prev []float64
		if rng.IntN(2) == 0 {
			// The exact projection of a nearby point, or a random support.
			prev = make([]float64, n)
			if rng.IntN(2) == 0 {
				for j := range prev {
					prev[j] = y[j] + 0.01*rng.NormFloat64()
				}
				hint = ps.projectMargin(prev, g, eps, 0, nil)
			} else {
				for j := range prev {
					prev[j] = float64(rng.IntN(2))
				}
			}
		}
		ps.projectMargin(b, g, eps, hint, prev)
		sum, margin := 0.0, 0.0
		for j, v := range b {
			if v < 0 || (math.IsInf(g[j], 1) && v != 0) {
				t.Fatalf("y=%v g=%v: b=%v", y, g, b)
			}
			sum += v
			if v > 0 {
				margin += g[j] * v
			}
		}
		if math.Abs(sum-1) > 1e-12 || margin > eps*(1+1e-9)+1e-13 {
			t.Fatalf("y=%v g=%v eps=%v: b=%v infeasible (sum %v, margin %v)", y, g, eps, b, sum, margin)
		}
		worst := 0.0
		vertex := func(j, k int, w float64) {
			x := 0.0
			for i := range b {
				v := 0.0
				if i == j {
					v += w
				}
				if i == k {
					v += 1 - w
				}
				x += (y[i] - b[i]) * (v - b[i])
			}
			worst = max(worst, x)
		}
		for j := range g {
			if g[j] > eps {
				continue
			}
			vertex(j, j, 1)
			for k := range g {
				if g[k] > eps && !math.IsInf(g[k], 1) {
					vertex(j, k, (g[k]-eps)/(g[k]-g[j]))
				}
			}
		}
		if worst > 1e-9 {
			t.Fatalf("y=%v g=%v eps=%v: b=%v is not the projection (%v)", y, g, eps, b, worst)
		}
	}
}
