package slaves

import (
	"fmt"
	"math"
	"sync"
)

// Potts is a pairwise factor over two variables with L labels each and
// log-potential phi(x, y) = W [x = y] (W of any sign), plus an optional
// constant (tables of the form off + W [x = y], see ForFactor). Its MAP
// takes O(L) (/work/shared/notes/quad-slaves.md, "Potts pairwise factor")
// and its QUAD is the active-set method with that MAP as oracle (AD3 JMLR
// 2015 Alg. 3), so no oracle call does L^2 work.
//
// A grid model has one Potts slave per edge, so the slave is kept small: its
// QUAD state between calls is only the working set (configurations packed as
// label pairs, and their weights) in a fixed-capacity piece of a shared slab;
// the Cholesky factor and every other array of the active-set method live in
// the Scratch (shared by the slaves of a chunk, see UseScratch) and are
// rebuilt from the working set at the start of each call. See pottsWork for
// the method itself; it is the algorithm of ActiveSet specialised to two
// variables and the Potts oracle, with the same results up to rounding.
type Potts struct {
	w float64
	// The working set between QUAD calls lives in blk[at:] (see words): the
	// weights of its m configurations (float64 bits) in the first k =
	// pottsCap(l) words, then the configurations, packed (pottsPack), then
	// the factor's constant when it has one (pottsHasOff).
	blk     *pottsBlock
	sc      *Scratch
	at      uint32
	l       int32
	maxIter uint16
	m       uint8 // |W|
	flags   uint8 // pottsConv, pottsHasOff
}

// Potts flags.
const (
	pottsConv   = 1 << iota // the last QUAD call ended with an optimality certificate
	pottsHasOff             // the scores have a constant (stored after the configurations)
)

// pottsStructs holds the Potts slaves (see slab).
var pottsStructs = slab[Potts]{per: 512}

// pottsBlock is a block of the slab of Potts working sets: each slave keeps a
// pointer to its block and an offset (12 bytes, where a slice would take 24).
type pottsBlock [8192]uint64

// pottsWords hands out pieces of pottsBlocks (see slab).
var pottsWords struct {
	sync.Mutex
	blk  *pottsBlock
	used int
}

// pottsTakeWords returns a zeroed piece of n <= len(pottsBlock) words.
func pottsTakeWords(n int) (*pottsBlock, uint32) {
	pottsWords.Lock()
	defer pottsWords.Unlock()
	if pottsWords.blk == nil || pottsWords.used+n > len(pottsWords.blk) {
		pottsWords.blk, pottsWords.used = new(pottsBlock), 0
	}
	at := pottsWords.used
	pottsWords.used += n
	return pottsWords.blk, uint32(at)
}

// pottsMaxLabels is the largest L for which configurations pack (pottsPack).
const pottsMaxLabels = math.MaxInt32

// NewPotts returns a Potts factor with L >= 1 labels and coupling w (finite).
func NewPotts(L int, w float64) *Potts {
	return newPotts(L, w, 0)
}

// newPotts returns a Potts factor whose scores are off + w [x = y].
func newPotts(L int, w, off float64) *Potts {
	if L < 1 || L > pottsMaxLabels {
		panic(fmt.Sprintf("slaves: NewPotts: %d labels", L))
	}
	if math.IsNaN(w) || math.IsInf(w, 0) {
		panic(fmt.Sprintf("slaves: NewPotts: weight %v", w))
	}
	p := &pottsStructs.take(1)[0]
	p.w, p.l = w, int32(L)
	p.maxIter = DefaultActiveSetIter
	k := pottsCap(L)
	_, words := pottsPack(L, k)
	n := k + words
	if off != 0 {
		p.flags |= pottsHasOff
		n++
	}
	p.blk, p.at = pottsTakeWords(n)
	if off != 0 {
		p.blk[int(p.at)+n-1] = math.Float64bits(off)
	}
	return p
}

// words returns the slave's working-set words: k weights, then the packed
// configurations.
func (p *Potts) words() []uint64 {
	L := int(p.l)
	k := pottsCap(L)
	_, words := pottsPack(L, k)
	at := int(p.at)
	return p.blk[at : at+k+words : at+k+words]
}

// offset returns the constant of the slave's scores.
func (p *Potts) offset() float64 {
	if p.flags&pottsHasOff == 0 {
		return 0
	}
	L := int(p.l)
	k := pottsCap(L)
	_, words := pottsPack(L, k)
	return math.Float64frombits(p.blk[int(p.at)+k+words])
}

// pottsCap is the capacity of a Potts working set: the affine bound
// sum_k (card_k - 1) + 1 = 2L - 1, at most DefaultActiveSetConfigs (the
// capacity NewActiveSet gives the same factor).
func pottsCap(L int) int { return max(1, min(2*L-1, DefaultActiveSetConfigs)) }

// pottsPack returns how configurations (x, y) of an L-label Potts factor are
// packed in a working set of capacity k: each is x<<shift | y in 2*shift
// bits (8, 16, 32 or 64), 64/(2*shift) to a word, in words words.
func pottsPack(L, k int) (shift uint, words int) {
	shift = pottsShift(L)
	return shift, (k*int(2*shift) + 63) / 64
}

// pottsShift is pottsPack's shift.
func pottsShift(L int) uint {
	switch {
	case L <= 1<<4:
		return 4
	case L <= 1<<8:
		return 8
	case L <= 1<<16:
		return 16
	}
	return 32
}

// pottsCards holds [L, L] at [2L, 2L+2) for small L, so that Cards needs no
// per-slave storage.
var pottsCards = func() (t [2 * 257]int) {
	for i := range t {
		t[i] = i / 2
	}
	return
}()

// Cards returns [L, L] (shared: do not modify).
func (p *Potts) Cards() []int {
	L := int(p.l)
	if 2*L+2 <= len(pottsCards) {
		return pottsCards[2*L : 2*L+2 : 2*L+2]
	}
	return []int{L, L}
}

// Weight returns the coupling W.
func (p *Potts) Weight() float64 { return p.w }

// Score returns W if y[0] = y[1], else 0 (plus the constant of tables of the
// form off + W [x = y]).
func (p *Potts) Score(y []int) float64 {
	if y[0] == y[1] {
		return p.w + p.offset()
	}
	return p.offset()
}

// pottsMAP maximises W [x = y] + a(x) + b(y) (len(a) = len(b) >= 1) in O(L),
// in one pass: the best diagonal pair is max_k a(k) + b(k) + W; the best
// off-diagonal pair is the pair of argmaxes when they differ, else the
// better of (first of a, second of b) and (second of a, first of b), the
// second ones found by another pass (probability about 1/L). The diagonal
// wins ties, and among equal scores the first index wins.
func pottsMAP(a, b []float64, W float64) (x, y int, v float64) {
	L := len(a)
	b = b[:L]
	kd, bd := 0, a[0]+b[0]
	i1, va := 0, a[0]
	j1, vb := 0, b[0]
	for k := 1; k < L; k++ {
		ak, bk := a[k], b[k]
		if d := ak + bk; d > bd {
			kd, bd = k, d
		}
		if ak > va {
			i1, va = k, ak
		}
		if bk > vb {
			j1, vb = k, bk
		}
	}
	bd += W
	if L == 1 {
		return 0, 0, bd
	}
	oi, oj, off := i1, j1, va+vb
	if i1 == j1 {
		i2, j2 := pottsArgmaxExcept(a, i1), pottsArgmaxExcept(b, j1)
		if va+b[j2] >= a[i2]+vb {
			oj, off = j2, va+b[j2]
		} else {
			oi, off = i2, a[i2]+vb
		}
	}
	if off > bd {
		return oi, oj, off
	}
	return kd, kd, bd
}

// pottsArgmaxExcept returns the first index of the largest entry of a other
// than a[ex] (len(a) >= 2).
func pottsArgmaxExcept(a []float64, ex int) int {
	i := 0
	if ex == 0 {
		i = 1
	}
	for k := i + 1; k < len(a); k++ {
		if k != ex && a[k] > a[i] {
			i = k
		}
	}
	return i
}

// MAP maximises phi(x, y) + w_0(x) + w_1(y) in O(L) (see pottsMAP).
func (p *Potts) MAP(w []float64, y []int) float64 {
	L := int(p.l)
	x0, x1, v := pottsMAP(w[:L:L], w[L:2*L:2*L], p.w)
	y[0], y[1] = x0, x1
	return v + p.offset()
}

var _ Slave = (*Potts)(nil)

// UseScratch implements ScratchUser: the QUAD working space (and the work
// counters, see Stats) is sc's, shared with the other slaves that use sc.
func (p *Potts) UseScratch(sc *Scratch) { p.sc = sc }

// SetMaxIter sets the cap on active-set iterations (KKT solves) per QUAD
// call, at most 65535; k <= 0 restores DefaultActiveSetIter.
func (p *Potts) SetMaxIter(k int) {
	if k <= 0 {
		k = DefaultActiveSetIter
	}
	p.maxIter = uint16(min(k, math.MaxUint16))
}

// MaxConfigs returns the capacity of the working set.
func (p *Potts) MaxConfigs() int { return pottsCap(int(p.l)) }

// Reset empties the working set: the next QUAD call starts cold, from the
// MAP at c.
func (p *Potts) Reset() {
	p.m = 0
	p.flags &^= pottsConv
}

// Converged reports whether the last QUAD call ended with an optimality
// certificate (Frank-Wolfe gap 0 up to rounding) rather than on a cap.
func (p *Potts) Converged() bool { return p.flags&pottsConv != 0 }

// NumActive returns |W|, the number of configurations in the working set.
func (p *Potts) NumActive() int { return int(p.m) }

// Active returns configuration j of the working set (a new slice) and its
// weight q_j; 0 <= j < NumActive().
func (p *Potts) Active(j int) (y []int, q float64) {
	if j < 0 || j >= int(p.m) {
		panic(fmt.Sprintf("slaves: Potts.Active(%d) with %d configurations", j, p.m))
	}
	x0, x1 := p.config(j)
	return []int{x0, x1}, math.Float64frombits(p.words()[j])
}

// config returns configuration j of the stored working set.
func (p *Potts) config(j int) (x, y int) {
	L := int(p.l)
	k := pottsCap(L)
	shift := pottsShift(L)
	bits := 2 * shift
	v := p.words()[k+j*int(bits)/64] >> (uint(j) * bits % 64)
	mask := uint64(1)<<shift - 1
	return int(v >> shift & mask), int(v & mask)
}

// Stats returns the work counters of the solver's scratch: its own unless
// it shares a Scratch with other slaves (UseScratch), whose work it then
// counts too. Every call rebuilds the Cholesky factor; Refactors counts the
// rebuilds that found the working set numerically dependent.
func (p *Potts) Stats() ActiveSetStats {
	if p.sc == nil {
		return ActiveSetStats{}
	}
	return p.sc.potts.stats
}

// ResetStats zeroes the work counters (those of the scratch, see Stats).
func (p *Potts) ResetStats() {
	if p.sc != nil {
		p.sc.potts.stats = ActiveSetStats{}
	}
}

// QUAD solves the factor's QUAD subproblem with the active-set method,
// warm-started from the previous call: see ActiveSet.QUAD, whose results it
// reproduces up to rounding, and pottsWork.
func (p *Potts) QUAD(c []float64, eta float64, u []float64) float64 {
	if p.sc == nil {
		p.sc = new(Scratch)
	}
	wk := &p.sc.potts
	L := int(p.l)
	wk.begin(p)
	phiq := wk.quad(c[:2*L:2*L], eta, int(p.maxIter))
	p.flags &^= pottsConv
	if wk.converged {
		p.flags |= pottsConv
	}
	wk.end(p)
	if math.IsInf(phiq, -1) {
		return phiq
	}
	copy(u[:2*L], wk.u)
	return phiq + p.offset()
}
