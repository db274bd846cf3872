package indexed

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/ddrun/ddrun/model"
)

// Card reads variable v's cardinality: 4 bytes of the structure section,
// by one read at its place (no pass over the other variables). As
// ReadRecords, it cannot verify the structure's checksum (a Walk does); it
// checks the value (>= 1, within the limit).
func (s *Scanner) Card(v int) (int, error) {
	if v < 0 || v >= s.nvars {
		return 0, errf(s.name, "variable %d out of range [0,%d)", v, s.nvars)
	}
	var b [4]byte
	if err := readAt(s.r, b[:], s.structOff()+structHead+4*int64(v)); err != nil {
		return 0, errf(s.name, "reading variable %d's cardinality: %v", v, err)
	}
	c := int64(binary.LittleEndian.Uint32(b[:]))
	if c < 1 || c > int64(s.limit) {
		return 0, errf(s.name, "variable %d has cardinality %d (corrupt file)", v, c)
	}
	return int(c), nil
}

// Score returns the score of the full assignment x of the file's model,
// summed as model.Model.Score sums it (the constant, then the unaries in
// variable order, then the factors in order: the same bits as Score on the
// model ReadFile returns), without holding the model: one Walk of the
// structure (which verifies its checksum), then the factor records and
// their payloads in batches (ReadRecords). It holds the cardinalities
// run-length encoded (CardRuns) while it runs, and a batch of records. An
// x that is not an assignment of the model (its length, a state out of
// range) is an error.
func (s *Scanner) Score(x []int) (float64, error) {
	if len(x) != s.nvars {
		return 0, errf(s.name, "assignment of %d variables, model has %d", len(x), s.nvars)
	}
	score := s.constant
	var cards CardRuns
	first := int64(-1) // where factor 0's record starts
	err := s.Walk(Visitor{
		Cards: func(from, n, card int) error {
			cards.Append(n, card)
			for i := from; i < from+n; i++ {
				if x[i] < 0 || x[i] >= card {
					return errf(s.name, "variable %d in state %d of %d", i, x[i], card)
				}
			}
			return nil
		},
		Unaries: func(i int, u []float64) error {
			score += u[x[i]]
			return nil
		},
		Factor: func(a int, rec Record, _ *model.Factor) error {
			if a == 0 {
				first = rec.Pos
			}
			return nil
		},
	})
	if err != nil {
		return 0, err
	}
	if s.NumFactors() == 0 {
		return score, nil
	}
	// A factor scored as the one factor of a model over its own scope.
	var one model.Model
	var y, local []int // local: 0, 1, 2, ...
	err = s.ReadRecords(first, 0, s.NumFactors(), cards.Card, func(_ int, f *model.Factor) error {
		one.Cards, y = one.Cards[:0], y[:0]
		for len(local) < len(f.Vars) {
			local = append(local, len(local))
		}
		for _, v := range f.Vars {
			one.Cards = append(one.Cards, cards.Card(v))
			y = append(y, x[v])
		}
		g := *f
		g.Vars = local[:len(f.Vars)]
		one.Factors = append(one.Factors[:0], g)
		sc := one.FactorScore(0, y)
		if math.IsNaN(sc) {
			return errors.New("NaN factor score")
		}
		score += sc
		return nil
	})
	if err != nil {
		return 0, err
	}
	return score, nil
}
