package convexmp

import (
	"errors"
	"fmt"
	"math"

	"github.com/ddrun/ddrun/internal/localsearch"
	"github.com/ddrun/ddrun/model"
)

// errInfeasible marks a problem without any feasible configuration.
var errInfeasible = errors.New("infeasible")

// factor is one factor of the problem: a dense table over at least two
// variables, last variable fastest; -Inf entries are forbidden
// configurations. Every state of every scope variable has at least one
// finite entry (the problem is arc consistent).
type factor struct {
	vars    []int
	cards   []int
	strides []int
	lamOff  []int // lam[lamOff[k]+s] is lambda_{vars[k] -> a}(s)
	table   []float64
}

// incidence is one (factor, scope position) pair of a variable.
type incidence struct{ a, k int }

// problem is the model the dual works on: the reduced model with every
// factor a dense table, Sequence factors split into their pairwise links,
// states that no feasible configuration supports removed (generalised arc
// consistency, which leaves the local-polytope LP unchanged), and factors
// over fewer than two free variables folded into unaries and the constant.
type problem struct {
	cards    []int
	uoff     []int
	unary    []float64 // finite
	constant float64
	facs     []factor
	inc      [][]incidence
	lamSize  int
	maxCard  int
	maxTable int // largest factor table
	// states[i][s] is the state of the reduced model's variable i that
	// the problem's state s stands for.
	states [][]int
	local  *localsearch.Local // ICM's local scores (over asModel)
}

func (p *problem) numVars() int { return len(p.cards) }

// rawFactor is a dense factor before pruning.
type rawFactor struct {
	vars  []int
	table []float64
}

// buildProblem prepares the reduced model r for the dual. It returns
// errInfeasible when the hard constraints leave nothing, and an error when a
// factor's table would exceed maxTable entries.
func buildProblem(r *model.Model, maxTable int) (*problem, error) {
	n := r.NumVars()
	unary := append([]float64(nil), r.Unary...)
	constant := r.Constant
	var raws []rawFactor
	for a := range r.Factors {
		f := &r.Factors[a]
		if f.Kind == model.Sequence {
			// The local polytope of a chain factor projects onto the
			// local polytope of its links (a chain is a tree), so the LP
			// is unchanged by splitting it.
			shared, offs, err := model.SequenceTransitions(r, f)
			if err != nil {
				return nil, fmt.Errorf("cmp: factor %d (%s): %w", a, f.Kind, err)
			}
			eoff, emission := 0, f.EmissionScores()
			for k, v := range f.Vars {
				if emission != nil {
					u := unary[r.UnaryOff[v]:r.UnaryOff[v+1]]
					for s := range u {
						u[s] += emission[eoff+s]
					}
				}
				eoff += r.Cards[v]
				if k+1 < len(f.Vars) {
					w := f.Vars[k+1]
					size := r.Cards[v] * r.Cards[w]
					t := 0
					if !shared {
						t = offs[k]
					}
					raws = append(raws, rawFactor{vars: []int{v, w}, table: f.Table[t : t+size]})
				}
			}
			continue
		}
		size, err := r.TableSize(f.Vars)
		if err != nil || size > maxTable {
			return nil, fmt.Errorf("cmp: factor %d (%s) over %d variables has more than %d configurations (Options.MaxTable)", a, f.Kind, len(f.Vars), maxTable)
		}
		raws = append(raws, rawFactor{vars: f.Vars, table: r.DenseTable(a)})
	}

	// Generalised arc consistency: a state is alive while its unary is
	// finite and every factor over its variable has a finite entry that
	// agrees with it and uses alive states only.
	alive := make([][]bool, n)
	for i := range alive {
		alive[i] = make([]bool, r.Cards[i])
		for s := range alive[i] {
			alive[i][s] = !math.IsInf(unary[r.UnaryOff[i]+s], -1)
		}
	}
	supp := make([][]bool, 0, 8)
	for changed := true; changed; {
		changed = false
		for _, f := range raws {
			supp = supp[:0]
			for _, v := range f.vars {
				supp = append(supp, make([]bool, r.Cards[v]))
			}
			forEachEntry(r.Cards, f.vars, func(e int, x []int) {
				if math.IsInf(f.table[e], -1) {
					return
				}
				for k, v := range f.vars {
					if !alive[v][x[k]] {
						return
					}
				}
				for k := range f.vars {
					supp[k][x[k]] = true
				}
			})
			for k, v := range f.vars {
				for s := range alive[v] {
					if alive[v][s] && !supp[k][s] {
						alive[v][s] = false
						changed = true
					}
				}
			}
		}
	}

	p := &problem{constant: constant}
	p.cards = make([]int, n)
	p.uoff = make([]int, n+1)
	p.states = make([][]int, n)
	for i := 0; i < n; i++ {
		for s, ok := range alive[i] {
			if ok {
				p.states[i] = append(p.states[i], s)
			}
		}
		if len(p.states[i]) == 0 {
			return nil, errInfeasible
		}
		p.cards[i] = len(p.states[i])
		p.uoff[i+1] = p.uoff[i] + p.cards[i]
		p.maxCard = max(p.maxCard, p.cards[i])
	}
	p.unary = make([]float64, p.uoff[n])
	for i := 0; i < n; i++ {
		for s, o := range p.states[i] {
			p.unary[p.uoff[i]+s] = unary[r.UnaryOff[i]+o]
		}
	}
	p.inc = make([][]incidence, n)
	for _, f := range raws {
		p.addSliced(r.Cards, f)
	}
	if math.IsInf(p.constant, -1) { // a factor over no variable forbids all
		return nil, errInfeasible
	}
	p.local = localsearch.New(p.asModel())
	return p, nil
}

// addSliced restricts raw factor f to the alive states and adds it: as a
// factor over its variables with more than one state, or folded into a
// unary or the constant.
func (p *problem) addSliced(origCards []int, f rawFactor) {
	ost := make([]int, len(f.vars))
	st := 1
	for k := len(f.vars) - 1; k >= 0; k-- {
		ost[k] = st
		st *= origCards[f.vars[k]]
	}
	var free []int // scope positions kept
	base := 0      // offset of the fixed positions' states
	for k, v := range f.vars {
		if p.cards[v] > 1 {
			free = append(free, k)
		} else {
			base += p.states[v][0] * ost[k]
		}
	}
	vars := make([]int, len(free))
	for j, k := range free {
		vars[j] = f.vars[k]
	}
	table := make([]float64, 0, 1)
	forEachEntry(p.cards, vars, func(_ int, x []int) {
		off := base
		for j, k := range free {
			off += p.states[vars[j]][x[j]] * ost[k]
		}
		table = append(table, f.table[off])
	})
	switch len(vars) {
	case 0:
		p.constant += table[0]
	case 1:
		u := p.unary[p.uoff[vars[0]]:p.uoff[vars[0]+1]]
		for s := range u {
			u[s] += table[s]
		}
	default:
		a := len(p.facs)
		fc := factor{vars: vars, table: table}
		p.maxTable = max(p.maxTable, len(table))
		fc.cards = make([]int, len(vars))
		fc.strides = make([]int, len(vars))
		fc.lamOff = make([]int, len(vars))
		st := 1
		for k := len(vars) - 1; k >= 0; k-- {
			fc.cards[k] = p.cards[vars[k]]
			fc.strides[k] = st
			st *= fc.cards[k]
		}
		for k, v := range vars {
			fc.lamOff[k] = p.lamSize
			p.lamSize += fc.cards[k]
			p.inc[v] = append(p.inc[v], incidence{a, k})
		}
		p.facs = append(p.facs, fc)
	}
}

// forEachEntry calls fn for every configuration x of vars (cardinalities
// from cards), in table order (last variable fastest), with its index e.
func forEachEntry(cards []int, vars []int, fn func(e int, x []int)) {
	x := make([]int, len(vars))
	size := 1
	for _, v := range vars {
		size *= cards[v]
	}
	for e := 0; e < size; e++ {
		fn(e, x)
		for k := len(vars) - 1; k >= 0; k-- {
			if x[k]++; x[k] < cards[vars[k]] {
				break
			}
			x[k] = 0
		}
	}
}

// expand maps a problem assignment to the reduced model's states.
func (p *problem) expand(x []int) []int {
	out := make([]int, len(x))
	for i, s := range x {
		out[i] = p.states[i][s]
	}
	return out
}
