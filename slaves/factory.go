package slaves

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
)

// ForFactor builds the slave for factor a of m, choosing the fastest exact
// solver for its kind and table: a binary pair with a finite table uses the
// closed form of AD3 Sect. 4.1; a Potts-structured table (one value on the
// diagonal, one off it) uses the O(L) Potts oracle; the truncated kinds use
// distance-transform messages (Trunc); logic kinds use their
// sort-based projections; a Sequence is a Chain (column-generation Viterbi
// as its MAP oracle); anything else is a Dense active-set slave.
func ForFactor(m *model.Model, a int) (Slave, error) {
	f := &m.Factors[a]
	switch f.Kind {
	case model.Pair, model.Potts:
		return ForPairwise(f.Kind, m.Cards[f.Vars[0]], f.Weight)
	case model.Dense:
		if len(f.Vars) == 2 {
			// No cards slice for the common pairwise tables: a grid has one
			// per edge.
			if s := forPairTable(m.Cards[f.Vars[0]], m.Cards[f.Vars[1]], f.Table); s != nil {
				return s, nil
			}
		}
		cards := make([]int, len(f.Vars))
		for k, v := range f.Vars {
			cards[k] = m.Cards[v]
		}
		return NewDense(cards, f.Table), nil
	case model.Sequence:
		return sequenceChain(m, f)
	case model.TruncLinear, model.TruncQuad:
		return NewTrunc(f.Kind, m.Cards[f.Vars[0]], f.Weight, f.Trunc), nil
	}
	if f.Kind.IsLogic() {
		return NewLogic(f)
	}
	return nil, fmt.Errorf("no slave for factor kind %s", f.Kind)
}

// ForPairwise builds the slave of a Pair or Potts factor of weight w over
// two variables of card states each (what ForFactor builds for it), for
// callers that keep such factors flat instead of as model.Factors.
func ForPairwise(kind model.Kind, card int, w float64) (Slave, error) {
	switch kind {
	case model.Pair:
		return NewPair([4]float64{0, 0, 0, w}), nil
	case model.Potts:
		if card != 2 {
			return NewPotts(card, w), nil
		}
		return NewPair([4]float64{w, 0, 0, w}), nil
	}
	return nil, fmt.Errorf("no pairwise slave for factor kind %s", kind)
}

// forPairTable returns the specialised slave of a finite c0 x c1 table: a
// Pair for 2 x 2, a Potts for a Potts-structured L x L with L > 2; else nil.
func forPairTable(c0, c1 int, table []float64) Slave {
	for _, v := range table {
		if math.IsInf(v, 0) {
			return nil
		}
	}
	if c0 == 2 && c1 == 2 {
		return NewPair([4]float64{table[0], table[1], table[2], table[3]})
	}
	if c0 == c1 && c0 > 2 {
		if diag, off, ok := pottsStructure(c0, table); ok {
			return newPotts(c0, diag-off, off)
		}
	}
	return nil
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
