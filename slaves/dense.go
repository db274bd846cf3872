package slaves

import (
	"fmt"
	"math"
)

// Dense is a factor given by a full table of log-potentials over its scope
// (any arity, multi-valued variables), the last variable changing fastest;
// -Inf entries are hard constraints. MAP is by enumeration of the table and
// QUAD is the active-set method with the table's own MAP as oracle (AD3 JMLR
// 2015 Alg. 3; /work/shared/notes/quad-slaves.md, "Dense factors").
type Dense struct {
	cards  []int
	off    []int
	stride []int // table stride of each variable
	table  []float64
	activeSetQUAD

	// MAP scratch.
	odo []int     // odometer over the first n-1 variables
	pre []float64 // pre[k] = sum_{t<k} w_t(odo_t)
}

// NewDense returns a dense factor over variables with the given
// cardinalities (each >= 1) and log-potential table (len = product of cards,
// last variable fastest; entries finite or -Inf). The table is kept, not
// copied: the caller must not modify it afterwards. It panics on a size
// mismatch or a NaN or +Inf entry.
func NewDense(cards []int, table []float64) *Dense {
	n := len(cards)
	size := 1
	for _, c := range cards {
		if c < 1 {
			panic(fmt.Sprintf("slaves: NewDense: cardinality %d < 1", c))
		}
		size *= c
	}
	if len(table) != size {
		panic(fmt.Sprintf("slaves: NewDense: table has %d entries, cards %v need %d",
			len(table), cards, size))
	}
	for i, v := range table {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			panic(fmt.Sprintf("slaves: NewDense: table[%d] = %v", i, v))
		}
	}
	d := &Dense{
		cards:  append([]int(nil), cards...),
		off:    Offsets(cards),
		stride: make([]int, n),
		table:  table,
		odo:    make([]int, n),
		pre:    make([]float64, n+1),
	}
	st := 1
	for k := n - 1; k >= 0; k-- {
		d.stride[k] = st
		st *= cards[k]
	}
	d.as = NewActiveSet(d, 0)
	return d
}

// Cards returns the scope's cardinalities.
func (d *Dense) Cards() []int { return d.cards }

// Table returns the log-potential table (not a copy).
func (d *Dense) Table() []float64 { return d.table }

// Score returns the table entry of y.
func (d *Dense) Score(y []int) float64 {
	i := 0
	for k, s := range d.stride {
		i += y[k] * s
	}
	return d.table[i]
}

// MAP maximises table(y) + sum_k w_k(y_k) by enumeration: an odometer over
// all variables but the last keeps the partial sums of w, and the innermost
// loop runs over a contiguous row of the table. It writes the first maximiser
// in table order into y and returns the maximum, or -Inf (y all zeros) when
// every entry is -Inf.
func (d *Dense) MAP(w []float64, y []int) float64 {
	n := len(d.cards)
	if n == 0 {
		return d.table[0]
	}
	last := n - 1
	cl := d.cards[last]
	wl := w[d.off[last] : d.off[last]+cl]
	odo, pre := d.odo, d.pre
	for k := 0; k < last; k++ {
		odo[k] = 0
		pre[k+1] = pre[k] + w[d.off[k]]
	}
	best, bi := math.Inf(-1), -1
	tab := d.table
	for t := 0; t+cl <= len(tab); t += cl {
		base := pre[last]
		for j, v := range tab[t : t+cl] {
			if x := v + base + wl[j]; x > best {
				best, bi = x, t+j
			}
		}
		// Advance the odometer and refresh the partial sums from the
		// highest digit that changed.
		k := last - 1
		for ; k >= 0; k-- {
			odo[k]++
			if odo[k] < d.cards[k] {
				break
			}
			odo[k] = 0
		}
		if k < 0 {
			break
		}
		for ; k < last; k++ {
			pre[k+1] = pre[k] + w[d.off[k]+odo[k]]
		}
	}
	if bi < 0 {
		for k := range y[:n] {
			y[k] = 0
		}
		return best
	}
	for k, s := range d.stride {
		y[k] = bi / s
		bi %= s
	}
	return best
}

var _ Slave = (*Dense)(nil)
