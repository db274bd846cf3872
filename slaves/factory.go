package slaves

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
)

// ForFactor builds the slave for factor a of m, choosing the fastest exact
// solver for its kind and table: a binary pair with a finite table uses the
// closed form of AD3 Sect. 4.1; a Potts-structured table (one value on the
// diagonal, one off it) uses the O(L) Potts oracle; logic kinds use their
// sort-based projections; a Sequence is a Chain (column-generation Viterbi
// as its MAP oracle); anything else is a Dense active-set slave.
func ForFactor(m *model.Model, a int) (Slave, error) {
	f := &m.Factors[a]
	cards := make([]int, len(f.Vars))
	for k, v := range f.Vars {
		cards[k] = m.Cards[v]
	}
	switch f.Kind {
	case model.Pair:
		return NewPair([4]float64{0, 0, 0, f.Weight}), nil
	case model.Potts:
		if cards[0] == 2 {
			return NewPair([4]float64{f.Weight, 0, 0, f.Weight}), nil
		}
		return NewPotts(cards[0], f.Weight), nil
	case model.Dense:
		return forTable(cards, f.Table), nil
	case model.Sequence:
		return sequenceChain(m, f)
	}
	if f.Kind.IsLogic() {
		return NewLogic(f)
	}
	return nil, fmt.Errorf("no slave for factor kind %s", f.Kind)
}

func forTable(cards []int, table []float64) Slave {
	finite := true
	for _, v := range table {
		if math.IsInf(v, 0) {
			finite = false
			break
		}
	}
	if finite && len(cards) == 2 && cards[0] == 2 && cards[1] == 2 {
		return NewPair([4]float64{table[0], table[1], table[2], table[3]})
	}
	if finite && len(cards) == 2 && cards[0] == cards[1] && cards[0] > 2 {
		if diag, off, ok := pottsStructure(cards[0], table); ok {
			return &pottsOffset{Potts: NewPotts(cards[0], diag-off), off: off}
		}
	}
	return NewDense(cards, table)
}

// pottsStructure reports whether an L x L table is off + w*[x == y].
func pottsStructure(l int, t []float64) (diag, off float64, ok bool) {
	diag, off = t[0], t[1]
	for x := 0; x < l; x++ {
		for y := 0; y < l; y++ {
			want := off
			if x == y {
				want = diag
			}
			if t[x*l+y] != want {
				return 0, 0, false
			}
		}
	}
	return diag, off, true
}

// pottsOffset is a Potts slave plus a constant added to every
// configuration's score (tables of the form off + w*[x == y]).
type pottsOffset struct {
	*Potts
	off float64
}

func (o *pottsOffset) MAP(w []float64, y []int) float64 { return o.Potts.MAP(w, y) + o.off }
func (o *pottsOffset) QUAD(c []float64, eta float64, u []float64) float64 {
	return o.Potts.QUAD(c, eta, u) + o.off
}
func (o *pottsOffset) Score(y []int) float64 { return o.Potts.Score(y) + o.off }
