package generate

import (
	"math/rand/v2"

	"github.com/ddrun/ddrun/model"
)

// logicKinds are the kinds Logic cycles through.
var logicKinds = [...]model.Kind{model.XOR, model.AtMostOne, model.OR, model.OROut, model.ANDOut, model.Budget}

// Logic returns a random model over o.Vars binary variables, feasible by
// construction:
//
//   - a hidden assignment h is drawn first, uniformly;
//   - unaries theta_i(0) = 0, theta_i(1) ~ U[-1, 1];
//   - o.Factors logic factors, factor a of kind XOR, AtMostOne, OR, OROut,
//     ANDOut, Budget in turn (a mod 6), over k distinct random variables
//     with k uniform in [1, MaxArity] ([2, MaxArity] for OROut and ANDOut;
//     the output is the last). The factor's literals (inputs after
//     negation) are drawn so that h satisfies it: XOR has one true literal,
//     AtMostOne none or one, OR at least one (random, fixed up if none),
//     OROut and ANDOut random inputs with the output literal their OR or
//     AND, Budget random literals with a bound between their count and k.
//     The negations follow from the literals and h; Negated is nil when no
//     input is negated;
//   - o.Couplings factors over 2 distinct random variables, each a Pair or
//     a Potts (even odds) of weight ~ U[-Rho, Rho].
//
// The draws happen in the order of this list. Logic panics if o.Validate
// fails.
func Logic(o LogicOptions) *model.Model {
	m, _ := logic(o)
	return m
}

// logic is Logic, also returning the hidden assignment.
func logic(o LogicOptions) (*model.Model, []int) {
	mustValid("Logic", o.Validate())
	r := newRand(o.Seed)
	hidden := make([]int, o.Vars)
	for i := range hidden {
		hidden[i] = r.IntN(2)
	}
	cards := make([]int, o.Vars)
	for i := range cards {
		cards[i] = 2
	}
	m := model.New(cards)
	for i := range cards {
		m.Unaries(i)[1] = uniform(r, -1, 1)
	}
	perm := make([]int, o.Vars)
	for i := range perm {
		perm[i] = i
	}
	m.Factors = make([]model.Factor, 0, o.Factors+o.Couplings)
	for a := range o.Factors {
		m.Factors = append(m.Factors, logicFactor(r, logicKinds[a%len(logicKinds)], o.MaxArity, perm, hidden))
	}
	for range o.Couplings {
		f := model.Factor{Kind: model.Pair, Vars: sample(r, perm, 2)}
		if r.IntN(2) == 1 {
			f.Kind = model.Potts
		}
		f.Weight = uniform(r, -o.Rho, o.Rho)
		m.Factors = append(m.Factors, f)
	}
	return m, hidden
}

// sample returns k distinct variables: a partial Fisher-Yates shuffle of
// perm, which keeps its state from call to call.
func sample(r *rand.Rand, perm []int, k int) []int {
	for j := range k {
		s := j + r.IntN(len(perm)-j)
		perm[j], perm[s] = perm[s], perm[j]
	}
	return append([]int(nil), perm[:k]...)
}

// logicFactor draws a factor of kind k that the hidden assignment satisfies.
func logicFactor(r *rand.Rand, kind model.Kind, maxArity int, perm, hidden []int) model.Factor {
	lo := 1
	if kind == model.OROut || kind == model.ANDOut {
		lo = 2
	}
	k := lo + r.IntN(maxArity-lo+1)
	f := model.Factor{Kind: kind, Vars: sample(r, perm, k)}
	lit := make([]bool, k) // the literals' values under hidden
	random := func(n int) {
		for j := range n {
			lit[j] = r.IntN(2) == 1
		}
	}
	switch kind {
	case model.XOR:
		lit[r.IntN(k)] = true
	case model.AtMostOne:
		if t := r.IntN(k+1) - 1; t >= 0 {
			lit[t] = true
		}
	case model.OR:
		random(k)
		if count(lit) == 0 {
			lit[r.IntN(k)] = true
		}
	case model.OROut:
		random(k - 1)
		lit[k-1] = count(lit[:k-1]) > 0
	case model.ANDOut:
		random(k - 1)
		lit[k-1] = count(lit[:k-1]) == k-1
	case model.Budget:
		random(k)
		c := count(lit)
		f.SetBudget(c + r.IntN(k-c+1))
	}
	neg := make([]bool, k)
	some := false
	for j, v := range f.Vars {
		neg[j] = (hidden[v] == 1) != lit[j]
		some = some || neg[j]
	}
	if some {
		f.SetNegated(neg)
	}
	return f
}

func count(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}
