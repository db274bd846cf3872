package generate

import (
	"fmt"

	"math/rand/v2"

	"github.com/ddrun/ddrun/model"
)

// GridStream is a Potts or Ising grid given piece by piece instead of as a
// model.Model, so that grids too big to hold can be written in bounded
// memory (see uai.WriteStream and native.WriteStream, whose Source it is).
// Every pass regenerates its pieces from the seed, with the same draws as
// Potts and Ising: the same options give the same model, piece for piece.
type GridStream struct {
	o      GridOptions
	ising  bool
	labels int
}

// PottsStream returns the streamed form of Potts(o); it panics if o.Validate
// fails.
func PottsStream(o GridOptions) *GridStream {
	mustValid("PottsStream", o.ValidateStream())
	return &GridStream{o: o, labels: o.labels()}
}

// IsingStream returns the streamed form of Ising(o); it panics if o.Validate
// fails.
func IsingStream(o GridOptions) *GridStream {
	mustValid("IsingStream", o.ValidateStream())
	return &GridStream{o: o, ising: true, labels: 2}
}

// NumVars returns the number of variables, Height*Width.
func (s *GridStream) NumVars() int { return s.o.Height * s.o.Width }

// Card returns variable i's number of states.
func (s *GridStream) Card(int) int { return s.labels }

// NumFactors returns the number of edges, one factor each.
func (s *GridStream) NumFactors() int {
	h, w := s.o.Height, s.o.Width
	return h*(w-1) + (h-1)*w
}

// EachUnaries calls fn with each variable's unaries in order; u is reused
// from call to call.
func (s *GridStream) EachUnaries(fn func(i int, u []float64)) {
	r := newRand(s.o.Seed)
	u := make([]float64, s.labels)
	for i := range s.NumVars() {
		if s.ising {
			u[1] = uniform(r, -1, 1)
		} else {
			fill(r, u, 1)
		}
		fn(i, u)
	}
}

// EachFactor calls fn with each edge's factor (Potts, or the grid's
// GridOptions.Pair term) in order (see the
// grid's edge order above); f, its Vars and its Table are reused from call
// to call.
func (s *GridStream) EachFactor(fn func(a int, f *model.Factor)) {
	kind, trunc := model.Potts, 0.0
	var tab []float64
	var tr *rand.Rand
	if !s.ising {
		kind = s.o.Pair.kind()
		switch kind {
		case model.Dense:
			tab, tr = make([]float64, s.labels*s.labels), rand.New(rand.NewPCG(uint64(s.o.Seed), 1))
		case model.TruncLinear, model.TruncQuad:
			trunc = s.o.Trunc
		}
	}
	s.eachCoupling(func(a int, uv [2]int, j float64) {
		f := model.Factor{Kind: kind, Vars: uv[:], Weight: s.weight(j), Trunc: trunc}
		if tab != nil {
			fill(tr, tab, s.o.Rho)
			f.Table, f.Weight = tab, 0
		}
		fn(a, &f)
	})
}

// Constant returns the model's constant: 0 for Potts, minus the sum of the
// couplings for Ising (see Ising).
func (s *GridStream) Constant() float64 {
	c := 0.0
	if s.ising {
		s.eachCoupling(func(_ int, _ [2]int, j float64) { c -= j })
	}
	return c
}

// weight returns the Potts weight of coupling j.
func (s *GridStream) weight(j float64) float64 {
	if s.ising {
		return 2 * j
	}
	return j
}

// eachCoupling calls fn with each edge and its coupling draw, in order.
func (s *GridStream) eachCoupling(fn func(a int, uv [2]int, j float64)) {
	r := newRand(s.o.Seed)
	skip := s.NumVars() // the unary draws come first: one per variable for Ising
	if !s.ising {
		skip *= s.labels
	}
	skipDraws(r, skip)
	a := 0
	eachEdge(s.o.Height, s.o.Width, func(uv [2]int) {
		fn(a, uv, uniform(r, -s.o.Rho, s.o.Rho))
		a++
	})
}

// skipDraws advances r past n draws of uniform (one Uint64 each).
func skipDraws(r *rand.Rand, n int) {
	for range n {
		r.Uint64()
	}
}

// Model returns the whole model, as Potts or Ising does.
func (s *GridStream) Model() *model.Model {
	m := newGrid(s.o, s.labels)
	s.EachUnaries(func(i int, u []float64) { copy(m.Unaries(i), u) })
	m.Factors = make([]model.Factor, s.NumFactors())
	vars := make([]int, 2*len(m.Factors)) // one arena for the scopes
	var tabs []float64                    // and one for dense tables
	if !s.ising && s.o.Pair == PairDense {
		tabs = make([]float64, len(m.Factors)*s.labels*s.labels)
	}
	s.EachFactor(func(a int, f *model.Factor) {
		m.Factors[a] = *f
		m.Factors[a].Vars = vars[2*a : 2*a+2 : 2*a+2]
		copy(m.Factors[a].Vars, f.Vars)
		if f.Table != nil {
			k := len(f.Table)
			m.Factors[a].Table = tabs[a*k : (a+1)*k : (a+1)*k]
			copy(m.Factors[a].Table, f.Table)
		}
	})
	m.Constant = s.Constant()
	return m
}

// Family is the model of a named family as gen writes it, its options
// validated: a grid family (potts, ising) as a stream, written in bounded
// memory whatever its size; logic built whole, refused when its variable
// states exceed maxEntries, the budget of what one process may hold
// (model.EntryLimit: not positive is the default). The other is nil.
func Family(name string, grid GridOptions, logic LogicOptions, maxEntries int) (*GridStream, *model.Model, error) {
	switch name {
	case "logic":
		if err := logic.Validate(); err != nil {
			return nil, nil, err
		}
		if limit := model.EntryLimit(maxEntries); 2*logic.Vars > limit {
			return nil, nil, fmt.Errorf("a logic model is built whole: %d variable states, over the budget of %d", 2*logic.Vars, limit)
		}
		return nil, Logic(logic), nil
	case "potts", "ising":
		if err := grid.ValidateStream(); err != nil {
			return nil, nil, err
		}
		if name == "ising" {
			return IsingStream(grid), nil, nil
		}
		return PottsStream(grid), nil, nil
	}
	return nil, nil, fmt.Errorf("unknown family %q (want potts, ising or logic)", name)
}
