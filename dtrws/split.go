package dtrws

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/model"
)

// Split is a model cut into parts: Models[p] is part p's model over the
// variables Vars[p] (global indices, increasing; local variable i of part
// p is Vars[p][i]). Every factor of the model is in exactly one part, the
// constant in part 0, and the unaries of a variable in c parts are split
// 1/c to each copy (-Inf stays -Inf in every copy), so for every
// assignment x the parts' scores add up to the model's.
type Split struct {
	Models []*model.Model
	Vars   [][]int
	// Shared are the variables in several parts, increasing; Copies[j]
	// lists the copies of Shared[j] (part and local index), by part.
	Shared []int
	Copies [][]Copy
	// Owner[v] is the part that owns variable v (contiguous ranges); its
	// labelling decides v when v is not shared.
	Owner []int32
	// OwnerLocal[v] is v's local index in part Owner[v].
	OwnerLocal []int32
}

// Copy is one part's copy of a shared variable.
type Copy struct {
	Part  int32
	Local int32
}

// NewSplit cuts m into k parts (1 <= k; more parts than variables are
// clamped): part p owns the variables [p*n/k, (p+1)*n/k) and every factor
// whose first variable it owns.
func NewSplit(m *model.Model, k int) (*Split, error) {
	n := m.NumVars()
	if k < 1 {
		return nil, fmt.Errorf("dtrws: %d parts (need >= 1)", k)
	}
	k = max(1, min(k, n))
	s := &Split{Models: make([]*model.Model, k), Vars: make([][]int, k), Owner: make([]int32, n)}
	for p := range k {
		for v := p * n / k; v < (p+1)*n/k; v++ {
			s.Owner[v] = int32(p)
		}
	}
	// in[v] lists the parts holding v, increasing.
	in := make([][]int32, n)
	add := func(v int, p int32) {
		if l := in[v]; len(l) == 0 || l[len(l)-1] != p {
			for _, q := range l {
				if q == p {
					return
				}
			}
			in[v] = append(l, p)
		}
	}
	for v := range n {
		add(v, s.Owner[v])
	}
	fpart := make([]int32, len(m.Factors))
	for a := range m.Factors {
		f := &m.Factors[a]
		if len(f.Vars) == 0 {
			return nil, fmt.Errorf("dtrws: factor %d has no variables", a)
		}
		p := s.Owner[f.Vars[0]]
		fpart[a] = p
		for _, v := range f.Vars {
			add(v, p)
		}
	}
	// loc[v][i] is v's local index in part in[v][i].
	loc := make([][]int32, n)
	local := func(v int, p int32) int32 {
		for i, q := range in[v] {
			if q == p {
				return loc[v][i]
			}
		}
		return -1 // not reached: every factor's part holds its variables
	}
	s.OwnerLocal = make([]int32, n)
	for v := range n {
		s.OwnerLocal[v] = int32(len(s.Vars[s.Owner[v]]))
		loc[v] = make([]int32, len(in[v]))
		for i, p := range in[v] {
			loc[v][i] = int32(len(s.Vars[p]))
			s.Vars[p] = append(s.Vars[p], v)
		}
		if len(in[v]) > 1 {
			cs := make([]Copy, len(in[v]))
			for i, p := range in[v] {
				cs[i] = Copy{Part: p, Local: loc[v][i]}
			}
			s.Shared = append(s.Shared, v)
			s.Copies = append(s.Copies, cs)
		}
	}
	for p := range k {
		vars := s.Vars[p]
		pm := &model.Model{Cards: make([]int, len(vars)), UnaryOff: make([]int, len(vars)+1)}
		for i, v := range vars {
			pm.Cards[i] = m.Cards[v]
			pm.UnaryOff[i+1] = pm.UnaryOff[i] + m.Cards[v]
		}
		pm.Unary = make([]float64, pm.UnaryOff[len(vars)])
		for i, v := range vars {
			share := 1 / float64(len(in[v]))
			dst := pm.Unary[pm.UnaryOff[i]:pm.UnaryOff[i+1]]
			for j, u := range m.Unaries(v) {
				if math.IsInf(u, -1) {
					dst[j] = u
				} else {
					dst[j] = u * share
				}
			}
		}
		if p == 0 {
			pm.Constant = m.Constant
		}
		s.Models[p] = pm
	}
	for a := range m.Factors {
		p := fpart[a]
		f := m.Factors[a] // shares the tables and rare fields: read only
		f.Vars = make([]int, len(m.Factors[a].Vars))
		for i, v := range m.Factors[a].Vars {
			f.Vars[i] = int(local(v, p))
		}
		s.Models[p].Factors = append(s.Models[p].Factors, f)
	}
	return s, nil
}
