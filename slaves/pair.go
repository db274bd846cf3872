package slaves

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
)

// Pair is a factor over two binary variables with any finite table of
// log-potentials phi(y0, y1) = Table[2*y0 + y1]. Layout: variable 0 occupies
// entries 0 (state 0) and 1 (state 1) of the flattened vectors, variable 1
// entries 2 and 3.
//
// QUAD uses the closed form of AD3 (Martins et al. ICML 2011) Sect. 4.1.
// Reparametrise phi(y) = a + b0 y0 + b1 y1 + w y0 y1 with
// a = phi(0,0), b0 = phi(1,0) - a, b1 = phi(0,1) - a and
// w = phi(1,1) - phi(1,0) - phi(0,1) + a. With u_k = (1 - z_k, z_k) and
// z01 = q(1,1), the QUAD objective is
//
//	sum_k (z_k - t_k)^2 - (1/eta)(a + b0 z0 + b1 z1 + w z01) + const
//	  = 2 [1/2 sum_k (z_k - t'_k)^2 - c12 z01] + const,
//
// with t_k = (c_k[1] - c_k[0] + 1)/2, t'_k = t_k + b_k/(2 eta) and
// c12 = w/(2 eta): the paper's problem over (z0, z1, z01) in [0,1]^3 with
// z01 <= z0, z01 <= z1, z01 >= z0 + z1 - 1. For c12 >= 0, z01 = min(z0, z1)
// and (z0, z1) is the paper's three-case clipped closed form; for c12 < 0
// the paper's change of variables z1' = 1 - z1, z01' = z0 - z01 (targets
// t0 + c12, 1 - t1, coupling -c12) reduces to that case.
type Pair struct {
	table [4]float64
	// Reparametrisation phi = a + b0 y0 + b1 y1 + w y0 y1.
	a, b0, b1, w float64
	cards        [2]int
}

// NewPair returns the pairwise factor with the given table,
// phi(y0, y1) = table[2*y0 + y1]. It panics if an entry is not finite.
func NewPair(table [4]float64) *Pair {
	for i, v := range table {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			panic(fmt.Sprintf("slaves: Pair table entry %d is %v", i, v))
		}
	}
	a := table[0]
	return &Pair{
		table: table,
		a:     a,
		b0:    table[2] - a,
		b1:    table[1] - a,
		w:     table[3] - table[2] - table[1] + a,
		cards: [2]int{2, 2},
	}
}

// NewPairFactor returns the slave of a model.Pair factor (score Weight when
// both variables are 1, else 0). The variables must be binary (the caller's
// to check; model.Validate does).
func NewPairFactor(f *model.Factor) (*Pair, error) {
	if f.Kind != model.Pair {
		return nil, fmt.Errorf("slaves: NewPairFactor on %s factor", f.Kind)
	}
	if len(f.Vars) != 2 {
		return nil, fmt.Errorf("slaves: pair factor has %d variables", len(f.Vars))
	}
	if math.IsNaN(f.Weight) || math.IsInf(f.Weight, 0) {
		return nil, fmt.Errorf("slaves: pair weight %v is not finite", f.Weight)
	}
	return NewPair([4]float64{0, 0, 0, f.Weight}), nil
}

// Table returns the factor's log-potentials.
func (p *Pair) Table() [4]float64 { return p.table }

// Cards returns {2, 2}.
func (p *Pair) Cards() []int { return p.cards[:] }

// MAP enumerates the four configurations.
func (p *Pair) MAP(w []float64, y []int) float64 {
	best, by0, by1 := math.Inf(-1), 0, 0
	for y0 := 0; y0 < 2; y0++ {
		for y1 := 0; y1 < 2; y1++ {
			if v := p.table[2*y0+y1] + w[y0] + w[2+y1]; v > best {
				best, by0, by1 = v, y0, y1
			}
		}
	}
	y[0], y[1] = by0, by1
	return best
}

// Score returns phi(y).
func (p *Pair) Score(y []int) float64 { return p.table[2*y[0]+y[1]] }

// QUAD solves the pair's quadratic subproblem in closed form (Sect. 4.1) and
// returns phi . q.
func (p *Pair) QUAD(c []float64, eta float64, u []float64) float64 {
	t0 := (c[1]-c[0]+1)/2 + p.b0/(2*eta)
	t1 := (c[3]-c[2]+1)/2 + p.b1/(2*eta)
	c12 := p.w / (2 * eta)
	var z0, z1, z01 float64
	if c12 >= 0 {
		z0, z1 = pairClosedForm(t0, t1, c12)
		z01 = math.Min(z0, z1)
	} else {
		// z1' = 1 - z1, z01' = z0 - z01: targets t0 + c12, 1 - t1 and
		// coupling -c12 > 0.
		var z1n float64
		z0, z1n = pairClosedForm(t0+c12, 1-t1, -c12)
		z1 = 1 - z1n
		z01 = z0 - math.Min(z0, z1n)
	}
	u[0], u[1] = 1-z0, z0
	u[2], u[3] = 1-z1, z1
	return p.a + p.b0*z0 + p.b1*z1 + p.w*z01
}

// pairClosedForm minimises 1/2(z0 - c0)^2 + 1/2(z1 - c1)^2 - c12 min(z0, z1)
// over [0,1]^2 for c12 >= 0 (AD3 Sect. 4.1).
func pairClosedForm(c0, c1, c12 float64) (z0, z1 float64) {
	switch {
	case c0 > c1+c12:
		return clipU(c0), clipU(c1 + c12)
	case c1 > c0+c12:
		return clipU(c0 + c12), clipU(c1)
	default:
		m := clipU((c0 + c1 + c12) / 2)
		return m, m
	}
}

// clipU clips x to [0,1].
func clipU(x float64) float64 { return math.Min(math.Max(x, 0), 1) }

var _ Slave = (*Pair)(nil)
