package slaves

import (
	"fmt"
	"math"
)

// Potts is a pairwise factor over two variables with L labels each and
// log-potential phi(x, y) = W [x = y] (W of any sign). Its MAP takes O(L)
// (/work/shared/notes/quad-slaves.md, "Potts pairwise factor") and its QUAD
// is the active-set method with that MAP as oracle (AD3 JMLR 2015 Alg. 3),
// so no oracle call does L^2 work.
type Potts struct {
	l     int
	w     float64
	cards []int
	as    *ActiveSet
}

// NewPotts returns a Potts factor with L >= 1 labels and coupling w (finite).
func NewPotts(L int, w float64) *Potts {
	if L < 1 {
		panic(fmt.Sprintf("slaves: NewPotts: %d labels", L))
	}
	if math.IsNaN(w) || math.IsInf(w, 0) {
		panic(fmt.Sprintf("slaves: NewPotts: weight %v", w))
	}
	p := &Potts{l: L, w: w, cards: []int{L, L}}
	p.as = NewActiveSet(p, 0)
	return p
}

// Cards returns [L, L].
func (p *Potts) Cards() []int { return p.cards }

// Weight returns the coupling W.
func (p *Potts) Weight() float64 { return p.w }

// ActiveSet returns the factor's QUAD solver, for tuning and statistics.
func (p *Potts) ActiveSet() *ActiveSet { return p.as }

// Score returns W if y[0] = y[1], else 0.
func (p *Potts) Score(y []int) float64 {
	if y[0] == y[1] {
		return p.w
	}
	return 0
}

// pottsTop2 returns the indices of the largest and second largest entries of a
// (len(a) >= 2; the first index wins ties).
func pottsTop2(a []float64) (i1, i2 int) {
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

// MAP maximises W [x = y] + w_0(x) + w_1(y) in O(L): the best diagonal pair
// is max_k w_0(k) + w_1(k) + W; the best off-diagonal pair is the pair of
// argmaxes when they differ, else the better of (first of w_0, second of w_1)
// and (second of w_0, first of w_1). The diagonal wins ties.
func (p *Potts) MAP(w []float64, y []int) float64 {
	L := p.l
	a, b := w[:L:L], w[L:2*L:2*L]
	kd, bd := 0, a[0]+b[0]
	for k := 1; k < L; k++ {
		if v := a[k] + b[k]; v > bd {
			kd, bd = k, v
		}
	}
	bd += p.w
	if L == 1 {
		y[0], y[1] = 0, 0
		return bd
	}
	i1, i2 := pottsTop2(a)
	j1, j2 := pottsTop2(b)
	oi, oj := i1, j1
	if i1 == j1 {
		if a[i1]+b[j2] >= a[i2]+b[j1] {
			oj = j2
		} else {
			oi = i2
		}
	}
	if off := a[oi] + b[oj]; off > bd {
		y[0], y[1] = oi, oj
		return off
	}
	y[0], y[1] = kd, kd
	return bd
}

// QUAD solves the factor's QUAD subproblem with the active-set method (see
// ActiveSet.QUAD), warm-started from the previous call.
func (p *Potts) QUAD(c []float64, eta float64, u []float64) float64 {
	return p.as.QUAD(c, eta, u)
}

var _ Slave = (*Potts)(nil)

// UseScratch implements ScratchUser.
func (p *Potts) UseScratch(sc *Scratch) { p.as.UseScratch(sc) }
