package oracle

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
)

// factorTable returns factor a's log-potentials over all configurations of
// its scope, laid out like a Dense table (last variable fastest), with -Inf
// for the configurations a hard constraint forbids. Dense tables are returned
// as is (not copied): callers must not modify the result. It fails when the
// table would have more than limit entries.
func factorTable(m *model.Model, a int, limit int) ([]float64, error) {
	f := &m.Factors[a]
	size := 1
	for _, v := range f.Vars {
		c := m.Cards[v]
		if size > limit/c {
			return nil, fmt.Errorf("factor %d (%s): more than %d configurations", a, f.Kind, limit)
		}
		size *= c
	}
	if size > limit {
		return nil, fmt.Errorf("factor %d (%s): more than %d configurations", a, f.Kind, limit)
	}
	switch f.Kind {
	case model.Dense:
		return f.Table, nil
	case model.Pair:
		return []float64{0, 0, 0, f.Weight}, nil
	case model.Potts:
		c := m.Cards[f.Vars[0]]
		t := make([]float64, c*c)
		for s := 0; s < c; s++ {
			t[s*c+s] = f.Weight
		}
		return t, nil
	case model.TruncLinear, model.TruncQuad:
		// By the definition, written out here rather than through
		// model.TruncScore.
		c := m.Cards[f.Vars[0]]
		t := make([]float64, c*c)
		for x := 0; x < c; x++ {
			for y := 0; y < c; y++ {
				d := math.Abs(float64(x - y))
				if f.Kind == model.TruncQuad {
					d *= d
				}
				t[x*c+y] = -f.Weight * math.Min(d, f.Trunc)
			}
		}
		return t, nil
	case model.Sequence:
		// Independent of the model's own scoring only in layout: enumerate
		// and score by the definition.
		return m.DenseTable(a), nil
	}
	n := len(f.Vars)
	t := make([]float64, size)
	for idx := range t {
		// Variable k is bit n-1-k of idx: the last variable changes fastest.
		ok := model.LogicSatisfied(f, func(k int) bool { return idx>>(n-1-k)&1 == 1 })
		if !ok {
			t[idx] = math.Inf(-1)
		}
	}
	return t, nil
}

// strides returns, for each position of the scope vars, the step of the
// table index when that variable's state grows by one.
func strides(m *model.Model, vars []int) []int {
	st := make([]int, len(vars))
	s := 1
	for k := len(vars) - 1; k >= 0; k-- {
		st[k] = s
		s *= m.Cards[vars[k]]
	}
	return st
}
