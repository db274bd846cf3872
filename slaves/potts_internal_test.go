package slaves

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// pottsMAPRef is the previous Potts MAP (a diagonal pass, then the top two
// of each side by pottsTop2Ref): the one-pass pottsMAP and the fused oracle
// pottsMAPDiff must choose the same configuration, ties included.
func pottsMAPRef(a, b []float64, W float64) (x, y int, v float64) {
	L := len(a)
	kd, bd := 0, a[0]+b[0]
	for k := 1; k < L; k++ {
		if v := a[k] + b[k]; v > bd {
			kd, bd = k, v
		}
	}
	bd += W
	if L == 1 {
		return 0, 0, bd
	}
	i1, i2 := pottsTop2Ref(a)
	j1, j2 := pottsTop2Ref(b)
	oi, oj := i1, j1
	if i1 == j1 {
		if a[i1]+b[j2] >= a[i2]+b[j1] {
			oj = j2
		} else {
			oi = i2
		}
	}
	if off := a[oi] + b[oj]; off > bd {
		return oi, oj, off
	}
	return kd, kd, bd
}

func pottsTop2Ref(a []float64) (i1, i2 int) {
	i1, i2 = 0, 1
	if a[1] > a[0] {
		i1, i2 = 1, 0
	}
	for k := 2; k < len(a); k++ {
		if v := a[k]; v > a[i2] {
			if v > a[i1] {
				i1, i2 = k, i1
			} else {
				i2 = k
			}
		}
	}
	return i1, i2
}

func TestPottsMAPSameChoice(t *testing.T) {
	rng := rand.New(rand.NewPCG(331, 332))
	for it := 0; it < 200000; it++ {
		L := 1 + rng.IntN(9)
		draw := func() float64 {
			switch it % 4 {
			case 0:
				return float64(rng.IntN(3)) // many ties
			case 1:
				return []float64{math.Inf(-1), 0, 1}[rng.IntN(3)]
			}
			return 4*rng.Float64() - 2
		}
		c := make([]float64, 2*L)
		u := make([]float64, 2*L)
		for i := range c {
			c[i] = draw()
			if it%3 == 0 {
				u[i] = float64(rng.IntN(2)) / 2
			}
		}
		W := []float64{0, 1, -1, 4*rng.Float64() - 2}[rng.IntN(4)]
		eta := []float64{1, 0.5, 3}[rng.IntN(3)]
		w := make([]float64, 2*L)
		for i := range w {
			w[i] = eta * (c[i] - u[i])
		}
		x0, y0, v0 := pottsMAPRef(w[:L], w[L:], W)
		x1, y1, v1 := pottsMAP(w[:L], w[L:], W)
		x2, y2, v2 := pottsMAPDiff(c[:L], c[L:], u[:L], u[L:], eta, W)
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if x1 != x0 || y1 != y0 || !same(v1, v0) || x2 != x0 || y2 != y0 || !same(v2, v0) {
			t.Fatalf("w %v W %v: reference (%d,%d) %v, pottsMAP (%d,%d) %v, pottsMAPDiff (%d,%d) %v",
				w, W, x0, y0, v0, x1, y1, v1, x2, y2, v2)
		}
	}
}

// A grid has one Potts slave per edge: its per-slave state is what bounds
// the memory of a large grid (40 bytes here, plus the working-set words:
// 64 bytes for 4 labels, 136 for 8).
func TestPottsSize(t *testing.T) {
	if n := unsafe.Sizeof(Potts{}); n > 40 {
		t.Errorf("Potts is %d bytes, want <= 40", n)
	}
	for _, tc := range []struct{ L, words int }{{4, 8}, {8, 17}, {3, 6}, {16, 31 + 4}, {100, 64 + 16}, {300, 64 + 32}} {
		p := NewPotts(tc.L, 1)
		if n := len(p.words()); n != tc.words {
			t.Errorf("L %d: %d working-set words, want %d", tc.L, n, tc.words)
		}
	}
}
