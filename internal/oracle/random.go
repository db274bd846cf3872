package oracle

import (
	"math"
	"math/rand/v2"

	"github.com/ddrun/ddrun/model"
)

// TinyOptions configures RandomTinyModel. The zero value gives mixed models
// of 1 to 8 variables, every factor kind, occasional hard constraints, and
// always at least one feasible assignment.
type TinyOptions struct {
	// MaxVars bounds the number of variables (drawn uniformly in
	// [1, MaxVars]); 0 means 8. Values above 12 are lowered to 12.
	MaxVars int
	// MaxFactors bounds the number of factors (drawn uniformly in
	// [0, MaxFactors]); 0 means 2*MaxVars.
	MaxFactors int
	// MaxCard bounds the cardinality of the variables; 0 means 3. About
	// half the variables are binary whatever MaxCard (so logic, Pair and
	// Potts factors find scopes), and a few have cardinality 1.
	MaxCard int
	// MaxAssignments bounds the number of joint assignments, so that
	// BruteForceMAP is instant; 0 means 4096 (2^12). Cardinalities are
	// lowered to 2 until the bound holds.
	MaxAssignments int
	// Kinds restricts the factor kinds drawn; empty means all kinds. A kind
	// that finds no suitable scope (no binary variables for a logic kind,
	// no two variables of equal cardinality for Potts) falls back to Dense.
	// The truncated kinds (model.TruncLinear, model.TruncQuad) are drawn
	// only when listed here.
	Kinds []model.Kind
	// Soft, if set, draws no hard constraints: no -Inf entries in dense
	// tables or unaries, and no logic factors (Kinds is filtered).
	Soft bool
	// IntegerWeights draws all log-potentials as small integers (in
	// [-3, 3]), which makes ties between assignments frequent.
	IntegerWeights bool
	// AllowInfeasible, if set, returns models drawn as they come, some of
	// them without any feasible assignment (their MAP score is -Inf). If
	// not set, infeasible draws are discarded and drawn again.
	AllowInfeasible bool
}

// allKinds lists every factor kind.
var allKinds = []model.Kind{
	model.Dense, model.Pair, model.Potts, model.XOR, model.AtMostOne,
	model.OR, model.OROut, model.ANDOut, model.Budget,
}

// PairwiseOnly drops m's factors over more than two variables (in place)
// and returns m: a random tiny model for a pairwise solver. Dropping
// factors keeps a feasible model feasible.
func PairwiseOnly(m *model.Model) *model.Model {
	kept := m.Factors[:0]
	for _, f := range m.Factors {
		if len(f.Vars) <= 2 {
			kept = append(kept, f)
		}
	}
	m.Factors = kept
	return m
}

// RandomTinyModel draws a random valid model (m.Validate() == nil) small
// enough for BruteForceMAP to enumerate instantly: at most opts.MaxVars (<=
// 12) variables of cardinality 1 to opts.MaxCard, at most
// opts.MaxAssignments joint assignments, random unaries (occasionally -Inf)
// and a random constant, and up to opts.MaxFactors factors of mixed kinds:
// Dense of arity 1 to 3 with occasional -Inf entries, Pair, Potts, and every
// logic kind (arity 1 to 4, 2 to 4 for OROut and ANDOut, random budgets) with
// random negations, scopes drawn at random (factors may share or repeat
// scopes, variables may be in no factor). Unless opts.AllowInfeasible is set
// the model has at least one feasible assignment. The result depends only on
// rng's stream and opts.
func RandomTinyModel(rng *rand.Rand, opts TinyOptions) *model.Model {
	o := opts
	if o.MaxVars <= 0 {
		o.MaxVars = 8
	}
	o.MaxVars = min(o.MaxVars, 12)
	if o.MaxFactors <= 0 {
		o.MaxFactors = 2 * o.MaxVars
	}
	if o.MaxCard <= 0 {
		o.MaxCard = 3
	}
	if o.MaxAssignments <= 0 {
		o.MaxAssignments = 1 << 12
	}
	kinds := o.Kinds
	if len(kinds) == 0 {
		kinds = allKinds
	}
	if o.Soft {
		var soft []model.Kind
		for _, k := range kinds {
			if !k.IsLogic() {
				soft = append(soft, k)
			}
		}
		if len(soft) == 0 {
			soft = []model.Kind{model.Dense}
		}
		kinds = soft
	}
	for try := 0; ; try++ {
		m := drawTiny(rng, &o, kinds, o.Soft || try >= 50)
		if o.AllowInfeasible {
			return m
		}
		if best, _, err := BruteForceMAP(m); err == nil && !math.IsInf(best, -1) {
			return m
		}
	}
}

// drawTiny draws one model; soft forbids -Inf entries and logic factors.
func drawTiny(rng *rand.Rand, o *TinyOptions, kinds []model.Kind, soft bool) *model.Model {
	weight := func() float64 {
		if o.IntegerWeights {
			return float64(rng.IntN(7) - 3)
		}
		return 2 * rng.NormFloat64()
	}
	n := 1 + rng.IntN(o.MaxVars)
	cards := make([]int, n)
	total := 1
	for i := range cards {
		switch r := rng.Float64(); {
		case r < 0.05:
			cards[i] = 1
		case r < 0.55 || o.MaxCard < 2:
			cards[i] = min(2, o.MaxCard)
		default:
			cards[i] = 2 + rng.IntN(o.MaxCard-1)
		}
		total *= cards[i]
	}
	for i := n - 1; i >= 0 && total > o.MaxAssignments; i-- {
		if cards[i] > 2 {
			total = total / cards[i] * 2
			cards[i] = 2
		}
	}
	for n > 1 && total > o.MaxAssignments { // only binary left: drop variables
		n--
		total /= cards[n]
		cards = cards[:n]
	}
	m := model.New(cards)
	m.Constant = weight()
	for j := range m.Unary {
		if !soft && rng.Float64() < 0.03 {
			m.Unary[j] = math.Inf(-1)
		} else {
			m.Unary[j] = weight()
		}
	}
	var binary []int
	for i, c := range cards {
		if c == 2 {
			binary = append(binary, i)
		}
	}
	// pick returns k distinct variables drawn from pool.
	pick := func(pool []int, k int) []int {
		p := rng.Perm(len(pool))[:k]
		vs := make([]int, k)
		for j, q := range p {
			vs[j] = pool[q]
		}
		return vs
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	nf := rng.IntN(o.MaxFactors + 1)
	for range nf {
		kind := kinds[rng.IntN(len(kinds))]
		if soft && kind.IsLogic() {
			kind = model.Dense
		}
		f := model.Factor{Kind: kind}
		switch {
		case kind == model.Pair && len(binary) >= 2:
			f.Vars = pick(binary, 2)
			f.Weight = weight()
		case kind == model.Potts || kind.IsTruncated():
			u := rng.IntN(n)
			var same []int
			for i, c := range cards {
				if i != u && c == cards[u] {
					same = append(same, i)
				}
			}
			if len(same) == 0 {
				f.Kind = model.Dense
				break
			}
			f.Vars = []int{u, same[rng.IntN(len(same))]}
			if rng.IntN(2) == 0 {
				f.Vars[0], f.Vars[1] = f.Vars[1], f.Vars[0]
			}
			f.Weight = weight()
			if kind.IsTruncated() {
				// Integers and halves, below and above the largest
				// distance.
				f.Trunc = float64(1+rng.IntN(2*cards[u]*cards[u])) / 2
			}
		case kind.IsLogic():
			lo := 1
			if kind == model.OROut || kind == model.ANDOut {
				lo = 2
			}
			if len(binary) < lo {
				f.Kind = model.Dense
				break
			}
			k := lo + rng.IntN(min(4, len(binary))-lo+1)
			f.Vars = pick(binary, k)
			if rng.IntN(3) > 0 {
				neg := make([]bool, k)
				for j := range neg {
					neg[j] = rng.IntN(3) == 0
				}
				f.SetNegated(neg)
			}
			if kind == model.Budget {
				f.SetBudget(rng.IntN(k + 1))
			}
		default:
			f.Kind = model.Dense
		}
		if f.Kind == model.Dense {
			k := 1 + rng.IntN(min(3, n))
			f.Vars = pick(all, k)
			size := 1
			for _, v := range f.Vars {
				size *= cards[v]
			}
			f.Table = make([]float64, size)
			for j := range f.Table {
				if !soft && rng.Float64() < 0.1 {
					f.Table[j] = math.Inf(-1)
				} else {
					f.Table[j] = weight()
				}
			}
		}
		m.Factors = append(m.Factors, f)
	}
	return m
}
